// One reflector per kind: the store of the objects it may have written (an informer of the target cluster), the
// writes (deletes with a UID precondition), the rule of which existing objects it may change, and a work queue
// with workers. What an object should be, where it goes and when it goes are a policy's (the host → member mirror,
// the member → host exporter): the policy handles each queued key and writes through `apply` and `remove`. The
// reflector hands the policy no key before every cache the policy reads has synced, then every object of its store
// once, and again each one someone changes or deletes. The kinds and their targets are in kube/kinds.ts.
import type { Subscription } from 'rxjs';
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Informer } from '../../kube/informer.ts';
import type { Target } from '../../kube/kinds.ts';
import { ignoreGone, toKubeError } from '../../kube/errors.ts';
import { objectId } from '../../forge/meta.ts';
import { WorkQueue, type HandlerResult } from '../../util/workqueue.ts';
import { metrics } from '../../metrics.ts';
import type { Logger } from '../../log.ts';
import { settleOrExit } from '../../util/settle.ts';

/** Which existing objects a reflector changes, and when. */
export interface UpdateRule<T> {
  /** Whether an existing object is the reflector's: one that is not is a conflict, and never touched. */
  ours(obj: T): boolean;
  /** Whether an existing object already is as desired. */
  matches(desired: T, actual: T): boolean;
  /** Whether an existing object can only become `desired` by being deleted and created again (immutable fields). */
  recreate?(desired: T, actual: T): boolean;
}

/** What a reflector's metrics say it is: `counts` tells which objects of its store it keeps written. */
export interface ReflectorMetrics<T> {
  member: string;
  kind: string;
  /** to-member: copies of host objects; to-host: member objects exported. */
  direction: 'to-member' | 'to-host';
  counts(obj: T): boolean;
}

/** A cache a policy reads. */
export interface Synced { waitSynced(): Promise<void> }

export interface ReflectorOptions<T extends KubernetesObject> {
  /** Of the queue, for logs and metrics. */
  name: string;
  workers: number;
  target: Target<T>;
  /** Without one, an existing object of the name will do as it is: only its existence matters. */
  update?: UpdateRule<T>;
  /** The policy's handling of one key; a failure is retried with backoff (and counted), a result may ask for a requeue. */
  sync(key: string): Promise<HandlerResult | void>;
  /** The policy's key of an object of the store (undefined: none). */
  keyOf(obj: T): string | undefined;
  /** The caches `sync` reads besides the store: keys wait until they all have synced. */
  reads?: readonly Synced[];
  /** Keys to handle once they have, besides every stored object's (what the policy may have to write). */
  startKeys?(): Iterable<string>;
  /** Objects reflected (a gauge) and failed syncs (a counter), under these labels. */
  metrics?: ReflectorMetrics<T>;
  log: Logger;
}

/** What `apply` did. `conflict`: an object of that name is not the reflector's; it was left untouched. */
export type Applied = 'created' | 'updated' | 'unchanged' | 'conflict';

export class Reflector<T extends KubernetesObject> {
  readonly store: Informer<T>;
  #target: Target<T>;
  #update: UpdateRule<T> | undefined;
  #sync: (key: string) => Promise<HandlerResult | void>;
  #keyOf: (obj: T) => string | undefined;
  #reads: readonly Synced[];
  #startKeys: () => Iterable<string>;
  #log: Logger;
  #queue: WorkQueue;
  #metrics: { labels: { member: string; kind: string; direction: string }; counts(obj: T): boolean } | undefined;
  /** Keys of the store's objects that `metrics.counts`. */
  #counted = new Set<string>();
  #sub: Subscription | undefined;
  #stopped = false;

  constructor(opts: ReflectorOptions<T>) {
    this.store = opts.target.store;
    this.#target = opts.target;
    this.#update = opts.update;
    this.#sync = opts.sync;
    this.#keyOf = opts.keyOf;
    this.#reads = opts.reads ?? [];
    this.#startKeys = opts.startKeys ?? (() => []);
    this.#log = opts.log;
    const m = opts.metrics;
    this.#metrics = m && { labels: { member: m.member, kind: m.kind, direction: m.direction }, counts: m.counts };
    this.#queue = new WorkQueue({ name: opts.name, workers: opts.workers, log: opts.log, maxDelayMs: 30_000 });
  }

  start(): void {
    const m = this.#metrics;
    if (m) metrics.objectsReflected.set(m.labels, 0);
    this.#sub = this.store.events$.subscribe((ev) => {
      // Changed or deleted by someone (or by us): set back, or removed if no longer wanted.
      this.#addKeyOf(ev.object);
      if (!m) return;
      if (ev.type !== 'DELETED' && m.counts(ev.object)) this.#counted.add(ev.key);
      else this.#counted.delete(ev.key);
      metrics.objectsReflected.set(m.labels, this.#counted.size);
    });
    this.store.start();
    // Keys queued meanwhile wait: the policy judges nothing on a partial view.
    settleOrExit(Promise.all([this.store.waitSynced(), ...this.#reads.map((r) => r.waitSynced())]).then(() => {
      if (this.#stopped) return;
      for (const obj of this.store.list()) this.#addKeyOf(obj);
      for (const key of this.#startKeys()) this.add(key);
      this.#queue.start(async (key) => {
        try {
          return await this.#sync(key);
        } catch (err) {
          if (m) metrics.reflectionErrors.inc(m.labels);
          throw err;
        }
      });
    }), this.#log, 'reflector: starting its queue failed');
  }

  stop(): void {
    this.#stopped = true;
    this.#queue.shutdown();
    this.#sub?.unsubscribe();
    this.store.stop();
    this.#counted.clear();
    if (this.#metrics) metrics.objectsReflected.remove(this.#metrics.labels);
  }

  #addKeyOf(obj: T): void {
    const key = this.#keyOf(obj);
    if (key !== undefined) this.add(key);
  }

  /** Has the policy handle `key` (once, however often it is added before it runs). */
  add(key: string): void { this.#queue.add(key); }

  /** Makes `namespace/name` what `forge` makes of the object there (undefined: there is none). */
  async apply(namespace: string, name: string, forge: (existing: T | undefined) => T): Promise<Applied> {
    let existing = this.store.get(`${namespace}/${name}`);
    if (!existing) {
      try {
        await this.#target.create(namespace, forge(undefined));
        return 'created';
      } catch (err) {
        if (toKubeError(err).kind !== 'AlreadyExists') throw toKubeError(err);
      }
    }
    if (!this.#update) return 'unchanged';
    // Not in the store: someone else's, or ours and the store is behind.
    existing ??= await this.#target.read(namespace, name);
    // Gone again meanwhile: nothing to update.
    if (!existing) return 'unchanged';
    if (!this.#update.ours(existing)) return 'conflict';
    const desired = forge(existing);
    if (this.#update.matches(desired, existing)) return 'unchanged';
    if (this.#update.recreate?.(desired, existing)) {
      await this.#recreate(namespace, existing, desired);
      return 'updated';
    }
    try {
      await this.#target.replace(namespace, name,
        { ...desired, metadata: { ...desired.metadata, resourceVersion: existing.metadata?.resourceVersion } });
    } catch (err) {
      // An immutable object cannot change: replace it.
      if (toKubeError(err).kind !== 'Invalid') throw toKubeError(err);
      await this.#recreate(namespace, existing, desired);
    }
    return 'updated';
  }

  async #recreate(namespace: string, existing: T, desired: T): Promise<void> {
    await this.remove(existing);
    await this.#target.create(namespace, desired);
  }

  /** Deletes this very object (by UID): gone already, or replaced by a newer one of the name, is fine. */
  async remove(obj: T): Promise<void> {
    const { namespace, name, uid } = objectId(obj);
    await this.#target.remove(namespace, name, uid).catch(ignoreGone);
  }
}
