// A host-side cache of one kind (ConfigMaps or Secrets) shared by every member, that keeps only the
// objects some member wants: one cluster-wide watch, and nothing unrelated held in memory
// (a Helm release Secret nobody offloads never stays here).
import { Subject, type Observable, type Subscription } from 'rxjs';
import type { KubernetesObject } from '@kubernetes/client-node';
import { listWatch, type ListWatchSpec } from '../../kube/listwatch.ts';
import { objectKey, splitKey, type StoreEvent } from '../../kube/informer.ts';
import { toKubeError } from '../../kube/errors.ts';
import type { ClusterClient } from '../../kube/client.ts';
import type { Logger } from '../../log.ts';

export interface HostCacheSpec<T> extends ListWatchSpec<T> {
  read(namespace: string, name: string): Promise<T>;
}

export class HostObjectCache<T extends KubernetesObject> {
  readonly kind: string;
  #spec: HostCacheSpec<T>;
  #client: ClusterClient;
  #log: Logger;
  #store = new Map<string, T>();
  /** key → how many interested parties. */
  #wanted = new Map<string, number>();
  #events = new Subject<StoreEvent<T>>();
  #sub: Subscription | undefined;
  #synced = false;
  #syncWaiters: (() => void)[] = [];

  constructor(kind: string, client: ClusterClient, spec: HostCacheSpec<T>, log: Logger) {
    this.kind = kind;
    this.#client = client;
    this.#spec = spec;
    this.#log = log;
  }

  /** Changes of wanted objects (ADDED includes an object appearing that was wanted while missing). */
  get events$(): Observable<StoreEvent<T>> { return this.#events.asObservable(); }

  start(): void {
    this.#sub ??= listWatch<T>(this.#client, this.#spec, { log: this.#log }).subscribe((ev) => {
      if (ev.type === 'SYNC') {
        const seen = new Set<string>();
        for (const o of ev.items) {
          const k = objectKey(o);
          seen.add(k);
          if (this.#wanted.has(k)) this.#put(k, o);
        }
        for (const [k, old] of this.#store) if (!seen.has(k)) this.#drop(k, old);
        if (!this.#synced) {
          this.#synced = true;
          for (const w of this.#syncWaiters.splice(0)) w();
        }
        return;
      }
      const k = objectKey(ev.object);
      if (!this.#wanted.has(k)) return;
      if (ev.type === 'DELETED') this.#drop(k, ev.object);
      else this.#put(k, ev.object);
    });
  }

  stop(): void {
    this.#sub?.unsubscribe();
    this.#sub = undefined;
    this.#events.complete();
  }

  waitSynced(): Promise<void> {
    return this.#synced ? Promise.resolve() : new Promise((r) => this.#syncWaiters.push(r));
  }

  /** Registers interest in a key: from now on the cache keeps it and reports its changes. */
  want(key: string): void {
    this.#wanted.set(key, (this.#wanted.get(key) ?? 0) + 1);
  }

  release(key: string): void {
    const n = (this.#wanted.get(key) ?? 0) - 1;
    if (n > 0) { this.#wanted.set(key, n); return; }
    this.#wanted.delete(key);
    this.#store.delete(key);
  }

  /** The object from the cache, or read from the API on a miss (and kept if wanted); undefined if it does not exist. */
  async lookup(key: string): Promise<T | undefined> {
    const cached = this.#store.get(key);
    if (cached) return cached;
    const { namespace, name } = splitKey(key);
    try {
      const obj = slim(await this.#spec.read(namespace, name));
      // The watch may have delivered a newer version meanwhile.
      const now = this.#store.get(key);
      if (now) return now;
      if (this.#wanted.has(key)) this.#store.set(key, obj);
      return obj;
    } catch (err) {
      if (toKubeError(err).kind === 'NotFound') return undefined;
      throw toKubeError(err);
    }
  }

  get(key: string): T | undefined { return this.#store.get(key); }

  #put(key: string, obj: T): void {
    const old = this.#store.get(key);
    if (old?.metadata?.resourceVersion === obj.metadata?.resourceVersion) return;
    this.#store.set(key, slim(obj));
    this.#events.next({ type: old ? 'MODIFIED' : 'ADDED', key, object: obj, old });
  }

  #drop(key: string, obj: T): void {
    const old = this.#store.get(key);
    this.#store.delete(key);
    this.#events.next({ type: 'DELETED', key, object: obj, old });
  }
}

function slim<T extends KubernetesObject>(obj: T): T {
  if (obj.metadata?.managedFields) delete obj.metadata.managedFields;
  return obj;
}
