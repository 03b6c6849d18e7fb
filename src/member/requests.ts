// What the member's pods request, summed per node and kept up to date one pod change at a time (each pod's requests
// parsed once per change): the member's own pods (not this node's delegates), so the virtual node's allocatable costs
// O(nodes) to compute however many pods the member runs; and every bound pod, as the member's scheduler counts, for
// the fit of a new delegate (forge/fit.ts).
import type { V1Pod } from '@kubernetes/client-node';
import { isAnyDelegate } from '../forge/owner.ts';
import { sameValue } from '../forge/objects.ts';
import { addRequests, countedOn, podCounts, podRequests, resizeStatus, type RequestsByNode } from '../forge/capacity.ts';
import type { StoreEvent } from '../kube/informer.ts';

interface Contribution {
  node: string;
  requests: Map<string, bigint>;
  /** One of the pods `isOurs` names: in the bound sums only. */
  ours: boolean;
}

export class PodRequests {
  #byPod = new Map<string, Contribution>();
  #byNode = new Map<string, Map<string, bigint>>();
  #boundByNode = new Map<string, Map<string, bigint>>();
  #onInvalid: (key: string, err: Error) => void;
  #isOurs: (pod: V1Pod) => boolean;
  #onBound: () => void;
  #counted = 0;

  /**
   * `isOurs`: the pods this virtual node runs as delegates (they do not count: they are its own load);
   * `onInvalid`: a pod whose requests cannot be parsed (it then counts for nothing); `onBound`: the bound sums
   * changed (a pod of any kind came, went or changed its requests).
   */
  constructor(onInvalid: (key: string, err: Error) => void = () => undefined, isOurs: (pod: V1Pod) => boolean = isAnyDelegate,
    onBound: () => void = () => undefined) {
    this.#onInvalid = onInvalid;
    this.#isOurs = isOurs;
    this.#onBound = onBound;
  }

  /** Requests per node name of the pods that count (not ours); read it, do not keep it (it changes in place). */
  get byNode(): RequestsByNode { return this.#byNode; }

  /**
   * Requests per node name of every bound, non-terminal pod, ours too. A delegate of ours counts its requests as they
   * were when it last changed in a way `requestsRelevant` sees (its resize status alone is not looked at).
   */
  get boundByNode(): RequestsByNode { return this.#boundByNode; }

  /** Pods that count (in byNode). */
  get size(): number { return this.#counted; }

  /** Applies one informer event; true when the sums of the pods that count (byNode) changed. */
  apply(ev: StoreEvent<V1Pod>): boolean {
    if (ev.type === 'MODIFIED' && ev.old && !requestsRelevant(ev.object, ev.old, this.#isOurs)) return false;
    const next = ev.type === 'DELETED' ? undefined : this.#contribution(ev.key, ev.object);
    const prev = this.#byPod.get(ev.key);
    if (!prev && !next) return false;
    if (prev) this.#add(prev, -1n);
    if (next) {
      this.#byPod.set(ev.key, next);
      this.#add(next, 1n);
    } else {
      this.#byPod.delete(ev.key);
    }
    this.#onBound();
    return !(prev?.ours ?? true) || !(next?.ours ?? true);
  }

  #add(c: Contribution, sign: 1n | -1n): void {
    addRequests(this.#boundByNode, c.node, c.requests, sign);
    if (c.ours) return;
    addRequests(this.#byNode, c.node, c.requests, sign);
    this.#counted += sign === 1n ? 1 : -1;
  }

  #contribution(key: string, pod: V1Pod): Contribution | undefined {
    const node = countedOn(pod, () => false);
    if (node === undefined) return undefined;
    try {
      return { node, requests: podRequests(pod), ours: this.#isOurs(pod) };
    } catch (err) {
      this.#onInvalid(key, err as Error);
      return undefined;
    }
  }
}

/**
 * Changes that can move a pod's usage: binding, phase, whether it is a delegate, its spec (requests resized in
 * place bump the generation), and, for a pod that counts, what its status says of a resize (the kubelet's actuated
 * and allocated resources, an infeasible resize). Other status churn of a running pod cannot; nor can deletion,
 * which the scheduler does not count either until the pod is gone.
 */
export function requestsRelevant(pod: V1Pod, old: V1Pod, isOurs: (pod: V1Pod) => boolean = isAnyDelegate): boolean {
  if (pod.spec?.nodeName !== old.spec?.nodeName || pod.status?.phase !== old.status?.phase
    || pod.metadata?.generation !== old.metadata?.generation || isOurs(pod) !== isOurs(old)) return true;
  // Past this point both versions count alike. This runs on every status change of every member pod: the resize
  // comparison (objects built and serialized) only for a pod that counts, never for our delegates.
  return podCounts(pod, isOurs) && !sameValue(resizeStatus(pod), resizeStatus(old));
}
