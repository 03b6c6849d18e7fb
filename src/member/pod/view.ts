// One virtual node's share of its member's pod provider. A member shown as several virtual nodes (a pool's, a member
// node's: forge/groups.ts) has one provider, one set of member watches and one delegate index; each virtual node's pod
// controller sees through this view only the delegates of its own proxies, so that none of them takes another's
// delegate for an orphan, and creates its delegates labelled with it and kept in its group.
import { filter, map, type Observable } from 'rxjs';
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import type { CreateOptions, PodChange, PodEvent, PodNotice, PodProvider, ProviderPod } from '../../provider/pod.ts';
import type { MemberPodProvider, VirtualNodeTarget } from './provider.ts';
import type { DelegateIndex } from '../delegates.ts';

export class VirtualNodePods implements PodProvider {
  readonly podChanges$: Observable<PodChange>;
  readonly podEvents$: Observable<PodEvent>;
  readonly resync$: Observable<void>;
  readonly unreachable$: Observable<void>;
  readonly target: VirtualNodeTarget;
  #provider: MemberPodProvider;
  #delegates: DelegateIndex;

  constructor(provider: MemberPodProvider, delegates: DelegateIndex, target: VirtualNodeTarget) {
    this.#provider = provider;
    this.#delegates = delegates;
    this.target = target;
    const name = target.name;
    // A change that names no virtual node (an object a waiting pod needs appeared, a resize refused, room for a pod
    // that did not fit) goes to every view: a controller without that proxy does nothing with it.
    this.podChanges$ = provider.podChanges$.pipe(
      filter((c) => c.virtualNode === undefined || c.virtualNode === name),
      map(({ virtualNode: _, ...c }) => c),
    );
    // Events are written onto proxies this node's controller has: others' are dropped there.
    this.podEvents$ = provider.podEvents$;
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

  createPod(proxy: V1Pod, opts?: CreateOptions): Promise<PodNotice[]> { return this.#provider.createPod(proxy, opts, this.target); }

  async updatePod(proxy: V1Pod): Promise<PodNotice[]> {
    const { namespace = '', name = '' } = proxy.metadata ?? {};
    return this.#mine(namespace, name) ? this.#provider.updatePod(proxy, this.target) : [];
  }

  /** Deletes this node's delegate of the key; another virtual node's is left alone (its controller judges it). */
  async deletePod(namespace: string, name: string, gracePeriodSeconds?: number): Promise<void> {
    if (this.#mine(namespace, name)) await this.#provider.deletePod(namespace, name, gracePeriodSeconds);
  }
}
