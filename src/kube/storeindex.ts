// An informer's keys grouped by a value of their objects (e.g. their namespace): what a handler on a hot path
// looks up instead of going over the whole store.
import type { Subscription } from 'rxjs';
import type { KubernetesObject } from '@kubernetes/client-node';
import { objectKey, type Informer } from './informer.ts';

export class StoreIndex<T extends KubernetesObject> {
  #informer: Informer<T>;
  #indexOf: (obj: T) => string | undefined;
  /** index value → keys of the store's objects that have it. */
  #keys = new Map<string, Set<string>>();
  /** key → its index value. */
  #valueOf = new Map<string, string>();
  #sub: Subscription | undefined;

  /** `indexOf`: the value an object is found under (undefined: not indexed). */
  constructor(informer: Informer<T>, indexOf: (obj: T) => string | undefined) {
    this.#informer = informer;
    this.#indexOf = indexOf;
  }

  /**
   * Indexes what the store holds and follows its events. Start it before whatever subscribes to the informer and
   * reads the index, so that they see it updated.
   */
  start(): void {
    if (this.#sub) return;
    for (const obj of this.#informer.list()) this.#set(objectKey(obj), obj);
    this.#sub = this.#informer.events$.subscribe((ev) => this.#set(ev.key, ev.type === 'DELETED' ? undefined : ev.object));
  }

  stop(): void {
    this.#sub?.unsubscribe();
    this.#sub = undefined;
    this.#keys.clear();
    this.#valueOf.clear();
  }

  /** The keys of the objects found under `value`. */
  keys(value: string): string[] { return [...this.#keys.get(value) ?? []]; }

  /** The objects found under `value`. */
  list(value: string): T[] {
    const objs: T[] = [];
    for (const key of this.#keys.get(value) ?? []) {
      const obj = this.#informer.get(key);
      if (obj) objs.push(obj);
    }
    return objs;
  }

  #set(key: string, obj: T | undefined): void {
    const before = this.#valueOf.get(key);
    const after = obj && this.#indexOf(obj);
    if (before === after) return;
    if (before !== undefined) {
      const keys = this.#keys.get(before);
      keys?.delete(key);
      if (keys?.size === 0) this.#keys.delete(before);
      this.#valueOf.delete(key);
    }
    if (after !== undefined) {
      let keys = this.#keys.get(after);
      if (!keys) this.#keys.set(after, keys = new Set());
      keys.add(key);
      this.#valueOf.set(key, after);
    }
  }
}

/** The namespace of an object: the index value of a store indexed by namespace. */
export const byNamespace = (obj: KubernetesObject): string | undefined => obj.metadata?.namespace;
