// A store kept by one list-watch stream: latest object per key, change events, and `synced`.
// A relist (SYNC) is diffed against the store, so deletions missed while disconnected still surface.
import { Subject, type Observable, type Subscription } from 'rxjs';
import type { KubernetesObject } from '@kubernetes/client-node';
import type { ListWatchEvent } from './listwatch.ts';
import type { KnownSpec } from './eventline.ts';

export interface StoreEvent<T> {
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  key: string;
  object: T;
  old?: T;
}

/** `namespace/name`, or `name` for cluster-scoped objects. */
export function objectKey(o: KubernetesObject): string {
  return keyOf(o.metadata?.namespace, o.metadata?.name);
}

/** The key of the object `name` in `namespace` (none or empty: cluster-scoped); splitKey's inverse. */
export function keyOf(namespace: string | undefined, name: string | undefined): string {
  return namespace ? `${namespace}/${name}` : `${name}`;
}

/**
 * The specs an informer's store has, as its own list-watch asks for them (ListWatchSpec.knownSpec): `informer` is
 * called at each event, once the informer exists.
 */
export function storedSpecs<T extends KubernetesObject & { spec?: object }>(informer: () => Informer<T>): KnownSpec {
  return (namespace, name) => informer().get(keyOf(namespace, name))?.spec;
}

export function splitKey(key: string): { namespace: string; name: string } {
  const i = key.indexOf('/');
  return i < 0 ? { namespace: '', name: key } : { namespace: key.slice(0, i), name: key.slice(i + 1) };
}

/** What a reader uses of an informer's store: the latest object per key, its changes, and when it is complete. */
export type Cache<T extends KubernetesObject> = Pick<Informer<T>, 'get' | 'list' | 'events$' | 'waitSynced'>;

export interface InformerOptions<T extends KubernetesObject = KubernetesObject> {
  /**
   * Which keys the store keeps (default: every key). Objects of other keys are neither stored nor reported, as if
   * the source did not have them: one watch can serve a few objects of interest among many. Whoever narrows the
   * store tells it when a key stops being kept (`forget`) and may hand it an object read elsewhere (`seed`).
   */
  keep?: (key: string) => boolean;
  /**
   * What the store keeps of each object, and what its events carry (default: the object, managedFields dropped). As
   * client-go's SetTransform: a store of many objects of which only a few fields are read keeps only those.
   */
  transform?: (obj: T) => T;
}

export class Informer<T extends KubernetesObject> {
  readonly name: string;
  #source: Observable<ListWatchEvent<T>>;
  #keep: (key: string) => boolean;
  #transform: (obj: T) => T;
  #store = new Map<string, T>();
  #events = new Subject<StoreEvent<T>>();
  #sub: Subscription | undefined;
  #synced = false;
  #relists = 0;
  #syncWaiters: (() => void)[] = [];

  constructor(name: string, source: Observable<ListWatchEvent<T>>, opts: InformerOptions<T> = {}) {
    this.name = name;
    this.#source = source;
    this.#keep = opts.keep ?? (() => true);
    const transform = opts.transform;
    this.#transform = transform ? (obj) => transform(slim(obj)) : slim;
  }

  /** Changes, after the store has been updated. */
  get events$(): Observable<StoreEvent<T>> { return this.#events.asObservable(); }
  get hasSynced(): boolean { return this.#synced; }
  get size(): number { return this.#store.size; }
  /**
   * Lists applied so far (the first, and each relist after a watch could not resume). A relist reports only where the
   * store ends up: changes made between two of its events may have left no event of their own.
   */
  get relists(): number { return this.#relists; }

  start(): this {
    this.#sub ??= this.#source.subscribe({
      next: (ev) => this.#apply(ev),
      // listWatch retries forever; an error here is a bug worth surfacing.
      error: (err: unknown) => this.#events.error(err),
    });
    return this;
  }

  stop(): void {
    this.#sub?.unsubscribe();
    this.#sub = undefined;
    this.#events.complete();
  }

  /** Resolves once the first LIST has been applied. */
  waitSynced(): Promise<void> {
    if (this.#synced) return Promise.resolve();
    return new Promise((resolve) => this.#syncWaiters.push(resolve));
  }

  get(key: string): T | undefined { return this.#store.get(key); }
  list(): T[] { return [...this.#store.values()]; }
  keys(): IterableIterator<string> { return this.#store.keys(); }

  /** Drops a key that is no longer kept (see `keep`), without an event: the object itself did not change. */
  forget(key: string): void { this.#store.delete(key); }

  /**
   * Stores an object read from the API for a kept key the watch has not reported since it became kept. Without
   * an event (nothing changed); ignored if the store has the key already (the watch's version is as new).
   */
  seed(obj: T): void {
    const key = objectKey(obj);
    if (this.#keep(key) && !this.#store.has(key)) this.#store.set(key, this.#transform(obj));
  }

  #apply(ev: ListWatchEvent<T>): void {
    if (ev.type === 'SYNC') {
      this.#relists++;
      const seen = new Set<string>();
      for (const obj of ev.items) {
        const key = objectKey(obj);
        seen.add(key);
        if (this.#keep(key)) this.#put(key, this.#transform(obj));
      }
      for (const [key, old] of this.#store) {
        if (!seen.has(key)) {
          this.#store.delete(key);
          this.#events.next({ type: 'DELETED', key, object: old, old });
        }
      }
      if (!this.#synced) {
        this.#synced = true;
        for (const w of this.#syncWaiters.splice(0)) w();
      }
      return;
    }
    const key = objectKey(ev.object);
    if (!this.#keep(key)) return;
    const obj = this.#transform(ev.object);
    if (ev.type === 'DELETED') {
      const old = this.#store.get(key);
      this.#store.delete(key);
      this.#events.next({ type: 'DELETED', key, object: obj, old });
      return;
    }
    this.#put(key, obj);
  }

  #put(key: string, obj: T): void {
    const old = this.#store.get(key);
    if (old && old.metadata?.resourceVersion === obj.metadata?.resourceVersion) return;
    this.#store.set(key, obj);
    this.#events.next({ type: old ? 'MODIFIED' : 'ADDED', key, object: obj, old });
  }
}

/** managedFields are the largest part of most objects and nothing here reads them. */
function slim<T extends KubernetesObject>(obj: T): T {
  if (obj.metadata?.managedFields) delete obj.metadata.managedFields;
  return obj;
}
