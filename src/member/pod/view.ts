// One virtual node's share of its member's pod provider. A member shown as several virtual nodes (a pool's, a member
// node's: forge/groups.ts) has one provider, one set of member watches and one delegate index; each virtual node's pod
// controller sees through this view only the delegates of its own proxies, so that none of them takes another's
// delegate for an orphan, and creates its delegates labelled with it and kept in its group.
import { filter, map, type Observable } from 'rxjs';
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import type { CreateOptions, PodChange, PodEvent, PodNotice, PodProvider, ProviderPod } from '../../provider/pod.ts';
import type { MemberPodProvider, VirtualNodeTarget } from './provider.ts';
import type { DelegateIndex } from '../delegates.ts';

/** The proxies a view's pod controller has, by host key. */
export interface ProxyLookup { get(key: string): unknown }

export class VirtualNodePods implements PodProvider {
  readonly podChanges$: Observable<PodChange>;
  readonly podEvents$: Observable<PodEvent>;
  readonly resync$: Observable<void>;
  readonly unreachable$: Observable<void>;
  readonly target: VirtualNodeTarget;
  #provider: MemberPodProvider;
  #delegates: DelegateIndex;

  /**
   * `proxies`: the proxies of this node's controller. A delegate's lifecycle change reaches the view of its proxy's
   * node whatever node the delegate was of (a pod of that name recreated on another node waits for the old delegate to
   * go, and is told when it does).
   */
  constructor(provider: MemberPodProvider, delegates: DelegateIndex, target: VirtualNodeTarget, proxies?: ProxyLookup) {
    this.#provider = provider;
    this.#delegates = delegates;
    this.target = target;
    const name = target.name;
    // A change that names no virtual node (an object a waiting pod needs appeared, a resize refused, room for a pod
    // that did not fit) goes to every view: a controller without that proxy does nothing with it.
    this.podChanges$ = provider.podChanges$.pipe(
      filter((c) => c.virtualNode === undefined || c.virtualNode === name || (c.lifecycle && proxies?.get(c.key) !== undefined)),
      map(({ virtualNode: _, ...c }) => c),
    );
    // The member's events about this node's delegates (and about pods whose delegate is gone, which only the
    // controller that has the proxy writes).
    this.podEvents$ = provider.podEvents$.pipe(filter((e) => {
      const node = delegates.virtualNodeOf(e.namespace, e.name);
      return node === undefined || node === name;
    }));
    this.resync$ = provider.resync$;
    this.unreachable$ = provider.unreachable$;
  }

  /** The delegate of the key is this virtual node's (or there is none). */
  #mine(namespace: string, name: string): boolean {
    const node = this.#delegates.virtualNodeOf(namespace, name);
    return node === undefined || node === this.target.name;
  }

  hasSynced(): boolean { return this.#provider.hasSynced(); }
  waitSynced(): Promise<void> { return this.#provider.waitSynced(); }
  available(): boolean { return this.#provider.available(); }
  listPodKeys(): string[] { return this.#delegates.hostKeysOf(this.target.name); }
  podCount(): number { return this.#delegates.sizeOf(this.target.name); }

  getPod(namespace: string, name: string): ProviderPod | undefined {
    return this.#mine(namespace, name) ? this.#provider.getPod(namespace, name) : undefined;
  }

  getPodStatus(namespace: string, name: string): V1PodStatus | undefined {
    return this.#mine(namespace, name) ? this.#provider.getPodStatus(namespace, name) : undefined;
  }

  creating(namespace: string, name: string): boolean { return this.#provider.creating(namespace, name); }

  /**
   * Creates the proxy's delegate for this node. While a delegate of another node's pod of that name is there (its pod
   * deleted, its controller deleting it), the create waits: it fails, to be retried, and the change of that delegate's
   * end wakes this node's controller.
   */
  createPod(proxy: V1Pod, opts?: CreateOptions): Promise<PodNotice[]> {
    const { namespace = '', name = '' } = proxy.metadata ?? {};
    const other = this.#delegates.virtualNodeOf(namespace, name);
    if (other !== undefined && other !== this.target.name) {
      return Promise.reject(new Error(`the delegate of an earlier pod ${namespace}/${name}, of virtual node ${other}, is still there: `
        + 'this one is created once it is gone'));
    }
    return this.#provider.createPod(proxy, opts, this.target);
  }

  async updatePod(proxy: V1Pod): Promise<PodNotice[]> {
    const { namespace = '', name = '' } = proxy.metadata ?? {};
    return this.#mine(namespace, name) ? this.#provider.updatePod(proxy, this.target) : [];
  }

  /** Deletes this node's delegate of the key; another virtual node's is left alone (its controller judges it). */
  async deletePod(namespace: string, name: string, gracePeriodSeconds?: number): Promise<void> {
    if (this.#mine(namespace, name)) await this.#provider.deletePod(namespace, name, gracePeriodSeconds);
  }
}
