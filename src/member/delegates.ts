// The one index of this virtual node's delegates in its member: host key (proxy namespace/name) → member pod,
// kept from the member's pod informer. The provider, the kubelet API's runtime and the stats all look
// delegates up here; nothing else maps between host and member pods.
import { Subject, type Observable, type Subscription } from 'rxjs';
import { LRUCache } from 'lru-cache';
import { upTo } from '../util/lru.ts';
import type { V1Pod } from '@kubernetes/client-node';
import type { Informer } from '../kube/informer.ts';
import { hostRefOf, virtualNodeOf, type HostRef, type Owner } from '../forge/owner.ts';

/**
 * A delegate changed: `lifecycle` when it appeared, went, or began terminating (else only its status changed);
 * `appearedAt`, when it appeared (its ADDED event), the resourceVersion it appeared at.
 */
export interface DelegateChange {
  hostKey: string;
  memberKey: string;
  lifecycle: boolean;
  appearedAt: string | undefined;
  /** The virtual node of the delegate's proxy (forge/owner.ts virtualNodeOf), as the delegate said last. */
  virtualNode: string | undefined;
}

export class DelegateIndex {
  readonly owner: Owner;
  readonly changes$: Observable<DelegateChange>;
  #pods: Informer<V1Pod>;
  /** host key → member key of its delegate. */
  #byHost = new Map<string, string>();
  /** virtual node → host keys of its delegates (a member's delegates are spread over its virtual nodes), and back. */
  #byNode = new Map<string, Set<string>>();
  #nodeOf = new Map<string, string>();
  /** member key → host ref, kept a while after the delegate is gone so its last events still map. */
  #recent = new LRUCache<string, HostRef>(upTo(20_000));
  #changes = new Subject<DelegateChange>();
  #sub: Subscription | undefined;

  constructor(pods: Informer<V1Pod>, owner: Owner) {
    this.#pods = pods;
    this.owner = owner;
    this.changes$ = this.#changes.asObservable();
  }

  /** Subscribes to the informer: call in the same tick as the informer starts, so no event is missed. */
  start(): void {
    this.#sub ??= this.#pods.events$.subscribe((ev) => {
      const ref = hostRefOf(ev.object, this.owner);
      if (!ref) return;
      const hostKey = `${ref.namespace}/${ref.name}`;
      this.#recent.set(ev.key, ref);
      const node = virtualNodeOf(ev.object);
      if (ev.type === 'DELETED') {
        if (this.#byHost.get(hostKey) === ev.key) {
          this.#byHost.delete(hostKey);
          this.#index(hostKey, undefined);
        }
      } else if (this.#takes(hostKey, ev.key, ev.object)) {
        this.#byHost.set(hostKey, ev.key);
        this.#index(hostKey, node);
      }
      const lifecycle = ev.type !== 'MODIFIED'
        || (ev.old?.metadata?.deletionTimestamp === undefined) !== (ev.object.metadata?.deletionTimestamp === undefined);
      const appearedAt = ev.type === 'ADDED' ? ev.object.metadata?.resourceVersion : undefined;
      this.#changes.next({ hostKey, memberKey: ev.key, lifecycle, appearedAt, virtualNode: node });
    });
  }

  /**
   * Whether a delegate's event makes it the one its proxy maps to: yes, unless another delegate of that proxy (in
   * another member namespace) maps now, runs, and this one is being deleted (its end must not hide the one that runs).
   */
  #takes(hostKey: string, memberKey: string, pod: V1Pod): boolean {
    const current = this.#byHost.get(hostKey);
    if (current === undefined || current === memberKey || pod.metadata?.deletionTimestamp === undefined) return true;
    const other = this.#pods.get(current);
    return other === undefined || other.metadata?.deletionTimestamp !== undefined;
  }

  /** Files the host key under the virtual node of its delegate (the one #byHost names), and under no other. */
  #index(hostKey: string, node: string | undefined): void {
    const before = this.#nodeOf.get(hostKey);
    if (before === node) return;
    const keys = before === undefined ? undefined : this.#byNode.get(before);
    if (keys && before !== undefined) {
      keys.delete(hostKey);
      if (keys.size === 0) this.#byNode.delete(before);
    }
    if (node === undefined) {
      this.#nodeOf.delete(hostKey);
      return;
    }
    this.#nodeOf.set(hostKey, node);
    let now = this.#byNode.get(node);
    if (!now) this.#byNode.set(node, (now = new Set()));
    now.add(hostKey);
  }

  stop(): void {
    this.#sub?.unsubscribe();
    this.#sub = undefined;
    this.#changes.complete();
  }

  get hasSynced(): boolean { return this.#pods.hasSynced; }
  waitSynced(): Promise<void> { return this.#pods.waitSynced(); }

  /** The delegate of the proxy `namespace/name` (host coordinates), if one exists. */
  get(namespace: string, name: string): V1Pod | undefined {
    const key = this.#byHost.get(`${namespace}/${name}`);
    return key ? this.#pods.get(key) : undefined;
  }

  /** The delegate of the proxy with this UID, if the one that exists is for it (not for an earlier pod of that name). */
  forProxy(namespace: string, name: string, uid: string): V1Pod | undefined {
    const d = this.get(namespace, name);
    return d && hostRefOf(d, this.owner)?.uid === uid ? d : undefined;
  }

  /** The proxy a member pod (`namespace/name` in the member) is or was the delegate of, if this node's. */
  hostRefOf(memberKey: string): HostRef | undefined {
    const recent = this.#recent.get(memberKey);
    if (recent) return recent;
    const p = this.#pods.get(memberKey);
    return p ? hostRefOf(p, this.owner) : undefined;
  }

  /** Host keys of every delegate. */
  hostKeys(): string[] { return [...this.#byHost.keys()]; }

  /** Host keys of the delegates of one virtual node's proxies. */
  hostKeysOf(virtualNode: string): string[] { return [...this.#byNode.get(virtualNode) ?? []]; }

  /** The virtual nodes that have delegates. */
  virtualNodes(): string[] { return [...this.#byNode.keys()]; }

  /** How many delegates one virtual node's proxies have. */
  sizeOf(virtualNode: string): number { return this.#byNode.get(virtualNode)?.size ?? 0; }

  /** The virtual node whose proxy the delegate of `namespace/name` (host coordinates) stands for, if one exists. */
  virtualNodeOf(namespace: string, name: string): string | undefined { return virtualNodeOf(this.get(namespace, name)); }

  /** Every delegate with the proxy it stands for. */
  *entries(): Generator<[HostRef, V1Pod]> {
    for (const memberKey of this.#byHost.values()) {
      const pod = this.#pods.get(memberKey);
      const ref = pod && hostRefOf(pod, this.owner);
      if (ref) yield [ref, pod];
    }
  }

  get size(): number { return this.#byHost.size; }
}
