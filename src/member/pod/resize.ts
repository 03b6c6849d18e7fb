// Resizes of offloaded pods: a proxy's new container resources go to its delegate through the member's `resize`
// subresource; the member's kubelet does it and reports it in the delegate's status, which comes back to the proxy. A
// resize the member refuses (more than the delegate's node has, a quota) is what a kubelet shows for one it cannot do:
// PodResizePending/Infeasible on the proxy, and a Warning event once. Tried again on each sync of the proxy (a member
// node may have grown), until the proxy's resources match the delegate's again.
import { Subject, type Observable } from 'rxjs';
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { PATCH } from '../../kube/client.ts';
import { toKubeError } from '../../kube/errors.ts';
import { delegateResize, type ResizePatch } from '../../forge/resize.ts';
import { withResizeInfeasible, type RefusedResize } from '../../forge/status.ts';
import type { PodChange, PodNotice } from '../../provider/pod.ts';
import type { Logger } from '../../log.ts';
import type { MemberCluster } from '../cluster.ts';

/** Answers of the member's API server that refuse a resize for good (admission, validation), not for a while. */
const RESIZE_REFUSALS = new Set(['Forbidden', 'Invalid', 'BadRequest']);

/** A resize the member refused, for the delegate it was asked of. */
interface Refusal extends RefusedResize {
  delegateUID: string;
  /** The refused patch (JSON): the same refusal again is not news. */
  patch: string;
}

export class Resizes {
  /** Host keys whose refused resize came or went: their status changed. */
  readonly changes$: Observable<PodChange>;
  #member: Pick<MemberCluster, 'client' | 'config'>;
  #log: Logger;
  /** Resizes the member refused, by host key: on the proxy as PodResizePending/Infeasible until its resources change. */
  #refused = new Map<string, Refusal>();
  #changes = new Subject<PodChange>();

  constructor(member: Pick<MemberCluster, 'client' | 'config'>, log: Logger) {
    this.#member = member;
    this.#log = log;
    this.changes$ = this.#changes.asObservable();
  }

  /** The delegate's status in host coordinates with the refused resize of `key` on it, if one was refused of this delegate. */
  statusWith(key: string, d: V1Pod, status: V1PodStatus): V1PodStatus {
    const refused = this.#refused.get(key);
    return refused && refused.delegateUID === d.metadata?.uid ? withResizeInfeasible(status, refused) : status;
  }

  /** The delegate of `key` is new or going: a refusal about an earlier one is over (its status follows the delegate). */
  drop(key: string): void { this.#refused.delete(key); }

  /** Applies the proxy's resources to its delegate `d` where they differ; what the member refused comes back as notices. */
  async resize(proxy: V1Pod, d: V1Pod): Promise<PodNotice[]> {
    const key = `${proxy.metadata?.namespace}/${proxy.metadata?.name}`;
    const patch = delegateResize(proxy, d);
    const namespace = d.metadata?.namespace;
    const name = d.metadata?.name;
    if (!patch || !namespace || !name) {
      this.#forget(key);
      return [];
    }
    try {
      await this.#member.client.core.patchNamespacedPodResize({ namespace, name, body: patch }, { contentType: PATCH.strategic });
    } catch (err) {
      const k = toKubeError(err);
      if (k.kind === 'NotFound') return []; // gone meanwhile; its delete event requeues the proxy
      if (!RESIZE_REFUSALS.has(k.kind)) throw k;
      return this.#refuse(key, d, patch, k.message);
    }
    this.#forget(key);
    this.#log.debug({ namespace, pod: name }, 'delegate resized');
    return [];
  }

  #refuse(key: string, d: V1Pod, patch: ResizePatch, reason: string): PodNotice[] {
    const message = `member ${this.#member.config.name} refused the resize: ${reason}`;
    const refusal: Refusal = { delegateUID: d.metadata?.uid ?? '', patch: JSON.stringify(patch), message, at: new Date() };
    const known = this.#refused.get(key);
    if (known && known.delegateUID === refusal.delegateUID && known.patch === refusal.patch && known.message === message) return [];
    this.#refused.set(key, refusal);
    this.#changes.next({ key, lifecycle: false });
    // The kubelet's event for a resize it cannot do.
    return [{ type: 'Warning', reason: 'ResizeInfeasible', message: `Pod resize Infeasible: ${message}` }];
  }

  #forget(key: string): void {
    if (this.#refused.delete(key)) this.#changes.next({ key, lifecycle: false });
  }
}
