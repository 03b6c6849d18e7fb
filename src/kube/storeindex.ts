// An informer's keys grouped by a value of their objects (e.g. their namespace): what a handler on a hot path
// looks up instead of going over the whole store.
import type { Subscription } from 'rxjs';
import type { KubernetesObject } from '@kubernetes/client-node';
import { objectKey, type Cache } from './informer.ts';
import { RefIndex } from '../util/refindex.ts';

export class StoreIndex<T extends KubernetesObject> {
  #informer: Cache<T>;
  #indexOf: (obj: T) => string | undefined;
  /** Each object's key refers to its index value. */
  #refs = new RefIndex();
  #sub: Subscription | undefined;

  /** `indexOf`: the value an object is found under (undefined: not indexed). */
  constructor(informer: Cache<T>, indexOf: (obj: T) => string | undefined) {
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
    this.#refs = new RefIndex();
  }

  /** The keys of the objects found under `value`. */
  keys(value: string): string[] { return [...this.#refs.holders(value)]; }

  /** The objects found under `value`. */
  list(value: string): T[] {
    const objs: T[] = [];
    for (const key of this.#refs.holders(value)) {
      const obj = this.#informer.get(key);
      if (obj) objs.push(obj);
    }
    return objs;
  }

  #set(key: string, obj: T | undefined): void {
    const value = obj && this.#indexOf(obj);
    this.#refs.update(key, value === undefined ? [] : [value], undefined);
  }
}

/** The namespace of an object: the index value of a store indexed by namespace. */
export const byNamespace = (obj: KubernetesObject): string | undefined => obj.metadata?.namespace;
