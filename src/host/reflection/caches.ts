// Host objects of one kind (ConfigMaps or Secrets) shared by every member, of which only those some member wants
// are kept: one cluster-wide watch, and nothing unrelated held in memory (a Helm release Secret nobody offloads
// never stays here). An Informer narrowed to the keys with interest, and the interest counted per key: the mirror's
// HostObjectCache (provider/reflection.ts).
import type { Observable } from 'rxjs';
import type { KubernetesObject } from '@kubernetes/client-node';
import { Informer, splitKey, type StoreEvent } from '../../kube/informer.ts';
import type { ListWatchEvent } from '../../kube/listwatch.ts';
import { ignoreNotFound } from '../../kube/errors.ts';
import type { ClusterClient } from '../../kube/client.ts';
import { KINDS, watchKind, type Kind, type ObjectOf, type Selectors } from '../../kube/kinds.ts';
import type { HostObjectCache } from '../../provider/reflection.ts';
import type { Logger } from '../../log.ts';

export class HostObjects<T extends KubernetesObject> implements HostObjectCache<T> {
  #informer: Informer<T>;
  #read: (namespace: string, name: string) => Promise<T>;
  /** key → how many interested parties. */
  #interest = new Map<string, number>();

  /** `read` fetches one object on a miss (it throws when there is none, as the API does). */
  constructor(name: string, source: Observable<ListWatchEvent<T>>, read: (namespace: string, name: string) => Promise<T>) {
    this.#informer = new Informer(name, source, { keep: (key) => this.#interest.has(key) });
    this.#read = read;
  }

  /** Changes of wanted objects (ADDED includes an object appearing that was wanted while missing). */
  get events$(): Observable<StoreEvent<T>> { return this.#informer.events$; }

  start(): void { this.#informer.start(); }
  stop(): void { this.#informer.stop(); }

  /** Registers interest in a key: from now on it is kept and its changes are reported. */
  want(key: string): void {
    this.#interest.set(key, (this.#interest.get(key) ?? 0) + 1);
  }

  release(key: string): void {
    const n = (this.#interest.get(key) ?? 0) - 1;
    if (n > 0) { this.#interest.set(key, n); return; }
    this.#interest.delete(key);
    this.#informer.forget(key);
  }

  /** The object, from the store or read from the API on a miss (and kept if wanted); undefined if it does not exist. */
  async lookup(key: string): Promise<T | undefined> {
    const cached = this.#informer.get(key);
    if (cached) return cached;
    const { namespace, name } = splitKey(key);
    const obj = await ignoreNotFound(() => this.#read(namespace, name));
    if (!obj) return undefined;
    this.#informer.seed(obj);
    // The watch may have delivered a newer version meanwhile.
    return this.#informer.get(key) ?? obj;
  }
}

/** The host's objects of a kind (matching `selectors`), read and watched through `client`. */
export function hostObjects<K extends Kind>(client: ClusterClient, kind: K, selectors: Selectors, log: Logger): HostObjects<ObjectOf<K>> {
  const read: (c: ClusterClient, namespace: string, name: string) => Promise<ObjectOf<K>> = KINDS[kind].read;
  return new HostObjects(`host-${kind}`, watchKind(client, kind, selectors, log), (namespace, name) => read(client, namespace, name));
}
