// The lifecycle of one virtual node's pods: keeps a pod in the provider for each proxy (created, updated, replaced,
// deleted), sets the proxy's Offloaded condition, and runs the deletion protocol:
//   proxy marked for deletion → provider pod deleted with the same grace period → proxy removed (grace 0).
import type { V1Pod } from '@kubernetes/client-node';
import { DISCARD } from '../../kube/client.ts';
import { objectKey, splitKey, type Informer } from '../../kube/informer.ts';
import { isGone, refusedByFence, toKubeError } from '../../kube/errors.ts';
import { priorityNames, WorkQueue, type HandlerResult, type Priority } from '../../util/workqueue.ts';
import { isDaemonSetPod, isTerminal } from '../../forge/pod.ts';
import { restartsAfterLoss } from '../../forge/status.ts';
import { OFFLOADED_CONDITION } from '../../forge/keys.ts';
import { WAITING_FOR_SCALE_UP } from '../../forge/fit.ts';
import { forgeProxyStatusForLostDelegate, proxyStatusWhileRestarting } from './status.ts';
import { PodNotReadyError, PodRejectedError } from '../../provider/errors.ts';
import { delegateOf, type PodNotice, type PodProvider, type ProviderPod } from '../../provider/pod.ts';
import type { Logger } from '../../log.ts';
import { FENCED_RETRY_MS, type PodHost, type ProxyWriter } from './writer.ts';
import { objectId } from '../../forge/meta.ts';
import { daemonSetMessage, delegateLostMessage, offloadFailingMessage, rejectedMessage } from './messages.ts';

/** Consecutive failed syncs of a pod after which the failure shows on the proxy (condition + Warning event). */
const FAILURES_BEFORE_REPORT = 3;

/**
 * How often at most a rejection whose message changes with the member's state (PodRejectedError.changing, such as
 * NoMemberNodeFits with the member's free room) is written again for a change of message alone: a change of reason
 * is written at once.
 */
const CHANGING_MESSAGE_REFRESH_MS = 600_000;

/** How soon a proxy being deleted looks again while its new delegate has not shown (provider.creating). */
const UNSHOWN_RETRY_MS = 5_000;

/**
 * The lifecycle queue's priorities: first the deletion protocol (a pod being deleted is awaited by whoever deletes
 * it, and holds its place in the member until it is gone), its first step before its last so that the member
 * removes delegates while proxies are removed; then creations and updates; then the periodic resyncs.
 */
export const LIFECYCLE = { resync: 0, change: 1, removeProxy: 2, deleteDelegate: 3 } as const satisfies Record<string, Priority>;

export interface PodLifecycleOptions {
  queueName: string;
  nodeName: string;
  member: string;
  workers: number;
  /** How soon a proxy being deleted looks again while its new delegate has not shown; default UNSHOWN_RETRY_MS. */
  unshownRetryMs?: number;
  now: () => number;
}

export class PodLifecycle {
  readonly queue: WorkQueue;
  #host: PodHost;
  #proxies: Informer<V1Pod>;
  #provider: PodProvider;
  #writer: ProxyWriter;
  #log: Logger;
  #opts: PodLifecycleOptions;
  /**
   * The UID of each proxy this lifecycle removes (its final delete sent), by key, until the informer shows it gone: a
   * sync in between (the member's late word on the pod) sends no second delete, and the removal's own watch events
   * queue no sync (isOwnRemoval).
   */
  #removed = new Map<string, string>();
  /** When each key's sync last ran (options.now): the periodic resync leaves out the keys synced within its period. */
  readonly lastSync = new Map<string, number>();

  constructor(host: PodHost, proxies: Informer<V1Pod>, provider: PodProvider, writer: ProxyWriter, log: Logger,
    opts: PodLifecycleOptions) {
    this.#host = host;
    this.#proxies = proxies;
    this.#provider = provider;
    this.#writer = writer;
    this.#log = log;
    this.#opts = opts;
    // A step of the deletion protocol is one request: it has workers of its own, and never waits behind creations.
    this.queue = new WorkQueue({ name: opts.queueName, workers: opts.workers, log, maxDelayMs: 60_000,
      priorityNames: priorityNames(LIFECYCLE), urgent: { priority: LIFECYCLE.removeProxy, workers: 2 * opts.workers } });
  }

  start(): void { this.queue.start((key) => this.#sync(key)); }
  stop(): void { this.queue.shutdown(); }

  /** Queues a sync of `key`, where it stands in the deletion protocol. */
  add(key: string): void { this.queue.add(key, this.priority(key)); }

  /** Where the key's next sync stands in the deletion protocol (its proxy gone or being deleted), if it does. */
  priority(key: string): Priority {
    const proxy = this.#proxies.get(key);
    if (proxy && !proxy.metadata?.deletionTimestamp) return LIFECYCLE.change;
    const delegate = delegateOf(this.#provider, key);
    return delegate && !delegate.terminating ? LIFECYCLE.deleteDelegate : LIFECYCLE.removeProxy;
  }

  /** A resync goes last, but for a key in the deletion protocol (an orphan delegate found by the resync included). */
  resyncPriority(key: string): Priority {
    const p = this.priority(key);
    return p === LIFECYCLE.change ? LIFECYCLE.resync : p;
  }

  /** Whether `running` is the delegate of `key`'s proxy as the host shows it, and that proxy is not being deleted. */
  createdFor(key: string, running: ProviderPod | undefined): boolean {
    const proxy = this.#proxies.get(key);
    return !!running && !!proxy && proxy.metadata?.uid === running.proxyUID && !proxy.metadata.deletionTimestamp;
  }

  /**
   * Whether an event of `key`'s proxy is one of its removal by this lifecycle (#removed: the grace period set to 0,
   * then DELETED), with no delegate left for the key: a sync would find nothing to do. A DELETED one ends the mark.
   */
  isOwnRemoval(key: string, proxy: V1Pod, type: string): boolean {
    if (this.#removed.get(key) !== proxy.metadata?.uid || delegateOf(this.#provider, key)) return false;
    if (type === 'DELETED') this.#removed.delete(key);
    return true;
  }

  async #sync(key: string): Promise<HandlerResult | void> {
    if (!this.#proxies.hasSynced || !this.#provider.hasSynced()) return;
    this.lastSync.set(key, this.#opts.now());
    const proxy = this.#proxies.get(key);
    try {
      return await this.#syncKey(key, proxy);
    } catch (err) {
      if (refusedByFence(err)) return { requeueAfterMs: FENCED_RETRY_MS };
      // The back end cannot judge it yet: nothing to show, looked at again soon.
      if (err instanceof PodNotReadyError) return { requeueAfterMs: err.retryAfterMs };
      // A sync that keeps failing shows on the proxy, not only in the log.
      if (proxy && !proxy.metadata?.deletionTimestamp && !(err instanceof PodRejectedError)
        && this.queue.failures(key) + 1 >= FAILURES_BEFORE_REPORT) {
        await this.#writer.setOffloaded(proxy, 'False', 'OffloadFailing',
          offloadFailingMessage(this.#opts.member, this.#opts.nodeName, (err as Error).message), 'Warning')
          .catch(() => undefined);
      }
      throw err;
    }
  }

  async #syncKey(key: string, proxy: V1Pod | undefined): Promise<HandlerResult | void> {
    const { namespace, name } = splitKey(key);
    const running = this.#provider.getPod(namespace, name);
    if (!proxy) {
      this.#removed.delete(key);
      // Deleted (or force-deleted) on the host, or an orphan left by an earlier run: remove it.
      if (running && !running.terminating) await this.#provider.deletePod(namespace, name);
      return;
    }
    if (running && running.proxyUID !== proxy.metadata?.uid) {
      // A delegate of an earlier pod of the same name (a StatefulSet's, say): replace it.
      if (!running.terminating) await this.#provider.deletePod(namespace, name, 0);
      return;
    }
    if (proxy.metadata?.deletionTimestamp) return await this.#syncDeleting(key, proxy, running);
    if (isDaemonSetPod(proxy)) {
      return await this.#writer.setOffloaded(proxy, 'False', 'DaemonSetPodNotOffloaded', daemonSetMessage(this.#opts.member), 'Warning');
    }
    if (!running) return await this.#syncMissing(proxy);
    if (isTerminal(proxy)) {
      // A finished proxy never has a live delegate (its replacement, if any, runs elsewhere): stop it.
      if (!running.terminating && running.phase !== 'Succeeded' && running.phase !== 'Failed') {
        this.#log.info({ namespace, pod: name, phase: proxy.status?.phase }, 'the proxy is finished: deleting its live delegate');
        await this.#provider.deletePod(namespace, name);
      }
      return;
    }
    // Its resources too (an in-place resize); what the back end refused comes back as notices.
    const notices = await this.#provider.updatePod(proxy);
    for (const n of notices) await this.#writer.event(proxy, n.type, n.reason, n.message);
    await this.#offloadedAgain(proxy, running);
  }

  /**
   * The Offloaded condition back to True with DelegateCreated, where an earlier try set it otherwise (a proxy never
   * refused has none), as the proxy shows or as this controller last wrote it (which the proxy read may not show
   * yet); or, with a notice that says what the created pod waits for (PodNotice.offloaded), True with that reason.
   * A pod that waited for the member to add a node is DelegateCreated once its delegate is bound to one.
   */
  async #offloadedAgain(proxy: V1Pod, running?: ProviderPod, waiting?: PodNotice): Promise<void> {
    if (waiting) {
      await this.#writer.setOffloaded(proxy, 'True', waiting.reason, waiting.message, waiting.type);
      return;
    }
    const offloaded = proxy.status?.conditions?.find((c) => c.type === OFFLOADED_CONDITION);
    if ((offloaded && offloaded.status !== 'True') || this.#writer.notOffloaded(objectKey(proxy))
      || (offloaded?.reason === WAITING_FOR_SCALE_UP && running?.scheduled === true)) {
      await this.#writer.setOffloaded(proxy, 'True', 'DelegateCreated', `running in member ${this.#opts.member}`);
    }
  }

  async #syncDeleting(key: string, proxy: V1Pod, running: ProviderPod | undefined): Promise<HandlerResult | void> {
    const { namespace, name, uid } = objectId(proxy);
    if (running) {
      if (!running.terminating) await this.#provider.deletePod(namespace, name, proxy.metadata?.deletionGracePeriodSeconds ?? undefined);
      return;
    }
    // A delegate just created that the member's watch has not shown yet: its appearance queues the sync that deletes
    // it; looked at again meanwhile, as the provider waits for it a while only.
    if (this.#provider.creating(namespace, name)) return { requeueAfterMs: this.#opts.unshownRetryMs ?? UNSHOWN_RETRY_MS };
    // Nothing runs any more: finish the deletion, as a kubelet does once its containers are gone.
    if (this.#removed.get(key) === uid) return;
    // Marked before the request: its watch events (the grace period set to 0, then DELETED) may come before its answer.
    this.#removed.set(key, uid);
    try {
      await this.#host.core.deleteNamespacedPod({
        namespace, name, gracePeriodSeconds: 0, body: { gracePeriodSeconds: 0, preconditions: { uid } },
      }, DISCARD);
      this.#writer.counted('deleted');
    } catch (err) {
      if (!isGone(err)) {
        this.#removed.delete(key);
        throw toKubeError(err);
      }
    }
  }

  /** No delegate: create one, unless the proxy is finished or its lost delegate is not to be restarted. */
  async #syncMissing(proxy: V1Pod): Promise<HandlerResult | void> {
    if (isTerminal(proxy)) return;
    const member = this.#opts.member;
    if (hadDelegate(proxy) && (proxy.spec?.restartPolicy ?? 'Always') === 'Never') {
      const status = forgeProxyStatusForLostDelegate(proxy, 'DelegateLost', delegateLostMessage(member, false));
      await this.#writer.patchStatus(proxy, status);
      await this.#writer.event(proxy, 'Warning', 'DelegateLost', status.message ?? 'delegate lost');
      return;
    }
    const restarts = hadDelegate(proxy) ? restartsAfterLoss(proxy) : undefined;
    // Shown at once, before the creation and whether or not it succeeds: nothing runs the pod's containers now.
    const restarting = restarts && proxyStatusWhileRestarting(proxy, restarts);
    if (restarting) {
      // Its own watch event needs no status check: without a delegate, a check writes nothing.
      await this.#writer.patchStatus(proxy, restarting, true);
      await this.#writer.event(proxy, 'Warning', 'DelegateLost', delegateLostMessage(member, true));
    }
    try {
      const notices = await this.#provider.createPod(proxy, { restarts });
      this.#writer.counted('created');
      for (const n of notices) if (!n.offloaded) await this.#writer.event(proxy, n.type, n.reason, n.message);
      // Here, not on the delegate's appearance: that queues no sync (PodChange.lifecycle).
      await this.#offloadedAgain(proxy, undefined, notices.find((n) => n.offloaded));
    } catch (err) {
      if (!(err instanceof PodRejectedError)) throw err;
      this.#writer.counted('rejected');
      await this.#writer.setOffloaded(proxy, 'False', err.reason, rejectedMessage(member, err.message, err.retry), 'Warning',
        err.changing ? { messageRefreshMs: CHANGING_MESSAGE_REFRESH_MS } : {});
      // Retried with capped backoff by the queue (or as soon as it says); one only a new configuration can fix waits
      // for the pod to change.
      if (err.retry && err.retryAfterMs !== undefined) return { requeueAfterMs: err.retryAfterMs };
      if (err.retry) throw err;
    }
  }
}

/** Whether the proxy once had a running delegate (only a delegate's status sets these). */
function hadDelegate(proxy: V1Pod): boolean {
  return proxy.status?.startTime !== undefined || (proxy.status?.containerStatuses?.length ?? 0) > 0;
}

