// The host side of offloading for one virtual node: watches the proxy pods bound to it, keeps a pod in
// the provider for each, mirrors status and events back, and runs the deletion protocol:
//   proxy marked for deletion → provider pod deleted with the same grace period → proxy removed (grace 0).
// It talks to the back end only through the PodProvider interface.
import { interval, map, mergeMap, type Observable, type Subscription } from 'rxjs';
import type { V1Pod, V1PodCondition, V1PodStatus } from '@kubernetes/client-node';
import { DISCARD, PATCH, type ClusterClient } from '../../kube/client.ts';
import { Informer, objectKey, splitKey, storedSpecs } from '../../kube/informer.ts';
import { listWatch } from '../../kube/listwatch.ts';
import { isGone, refusedByFence, toKubeError } from '../../kube/errors.ts';
import { writeEvent, writeOwnEvent, type EventSubject } from '../../kube/events.ts';
import { priorityNames, WorkQueue, type HandlerResult, type Priority } from '../../util/workqueue.ts';
import { backoffDelay } from '../../util/backoff.ts';
import { isDaemonSetPod, isTerminal } from '../../forge/pod.ts';
import { restartsAfterLoss } from '../../forge/status.ts';
import { forgeProxyStatusForLostDelegate, proxyStatusUpdate, statusEqual } from './status.ts';
import { PodRejectedError } from '../../provider/errors.ts';
import type { PodEvent, PodProvider, ProviderPod } from '../../provider/pod.ts';
import { metrics, offloadedPods } from '../../metrics.ts';
import { OFFLOADED_CONDITION } from '../../forge/keys.ts';
import { sameValue } from '../../forge/objects.ts';
import type { Logger } from '../../log.ts';

/** Consecutive failed syncs of a pod after which the failure shows on the proxy (condition + Warning event). */
const FAILURES_BEFORE_REPORT = 3;

/** After a start or an outage, every proxy's status is compared again this long after (see #recheckStatusLater). */
const STATUS_RECHECK_MS = [4_000, 10_000];

/**
 * How soon a sync whose write the replica's fence refused (kube/client.ts: it could not be sure it still led the member,
 * its Lease renewal late) runs again. Not a failure of the pod: no backoff, which would hold every pod written during
 * the blip for up to a minute after the next renewal reopens the fence. Leadership lost for good stops the controller.
 */
const FENCED_RETRY_MS = 1000;
/** How often every key is synced again that was not synced meanwhile (#resync). */
const RESYNC_MS = 300_000;
/**
 * The share of the resync period within which a key's last sync counts as recent (#resync). Below 1: a key the last
 * tick queued ran a little after it, and ticks drift; at 1, each quiet key was synced by every other tick only.
 */
const RESYNC_FRESH = 0.9;
/** How soon a proxy being deleted looks again while its new delegate has not shown (provider.creating). */
const UNSHOWN_RETRY_MS = 5_000;

/** How long the status of a pod still Pending in the back end waits for its next change, to be written once. */
const PENDING_STATUS_DELAY_MS = 1000;

/** Attempts at writing a mirrored member event onto the host, while the host answers with a transient error. */
const EVENT_WRITE_ATTEMPTS = 5;

/** The longest a mirrored event waits for the status writes under way (see the podEvents$ subscription). */
const EVENT_YIELD_MAX_MS = 5_000;

/**
 * The status queue's priorities: first what the user waits for (the proxy's phase or readiness about to change: a
 * pod becoming Ready, or finishing), then any other change, then the rechecks of every proxy (start, outage, resync).
 */
const STATUS = { recheck: 0, change: 1, visible: 2 } as const satisfies Record<string, Priority>;

/**
 * The lifecycle queue's priorities: first the deletion protocol (a pod being deleted is awaited by whoever deletes
 * it, and holds its place in the member until it is gone), its first step before its last so that the member
 * removes delegates while proxies are removed; then creations and updates; then the periodic resyncs.
 */
const LIFECYCLE = { resync: 0, change: 1, removeProxy: 2, deleteDelegate: 3 } as const satisfies Record<string, Priority>;

export interface PodControllerOptions {
  nodeName: string;
  member: string;
  workers: number;
  /** How often the keys not synced meanwhile are synced again (#resync); default RESYNC_MS. */
  resyncMs?: number;
  /** When the periodic resync runs; default every resyncMs (tests tick it themselves). */
  resyncTicks?: Observable<unknown>;
  /** The clock of the resync's bookkeeping, ms; default performance.now (tests set it). */
  now?: () => number;
  /** When every proxy's status is compared again after a start or an outage's end; default STATUS_RECHECK_MS. */
  statusRecheckMs?: readonly number[];
  watchSilenceMs?: number;
  /**
   * The node's proxies, from an informer someone else runs and keeps warm (a replica that does not lead the member
   * yet); the controller then neither starts nor stops it. Default: its own.
   */
  proxies?: Informer<V1Pod>;
  /** The longest a mirrored event waits for the status writes under way (default 5 s). */
  eventYieldMs?: number;
  /** How soon a proxy being deleted looks again while its new delegate has not shown; default UNSHOWN_RETRY_MS. */
  unshownRetryMs?: number;
}

/** The names of a virtual node's two pod queues (and of their series on /metrics): lifecycle and status. */
export function podQueueNames(nodeName: string): { lifecycle: string; status: string } {
  return { lifecycle: `pods-${nodeName}`, status: `pod-status-${nodeName}` };
}

/** The proxy pods bound to a node: a watch of the host's pods with spec.nodeName=<node>. */
export function proxyInformer(host: ClusterClient, nodeName: string, log: Logger, watchSilenceMs?: number): Informer<V1Pod> {
  const proxies: Informer<V1Pod> = new Informer(`proxies-${nodeName}`, listWatch<V1Pod>(host, {
    path: '/api/v1/pods', model: 'V1Pod', resource: 'pods', fieldSelector: `spec.nodeName=${nodeName}`,
    cutManagedFields: true, knownSpec: storedSpecs(() => proxies),
    list: (p) => host.core.listPodForAllNamespaces(p),
  }, { log, silenceMs: watchSilenceMs }));
  return proxies;
}

// Status writes: their answer (the whole pod) is not read, and they go before the other writes that wait (events,
// lifecycle retries) for the host's rate limit or a connection: a user waits on them.
const strategic = { ...DISCARD, contentType: PATCH.strategic, priority: 'high' } as const;

export class PodController {
  readonly pods: Informer<V1Pod>;
  #host: ClusterClient;
  #provider: PodProvider;
  #opts: PodControllerOptions;
  #log: Logger;
  /** Creates, updates and deletes provider pods, and runs the deletion protocol. */
  #queue: WorkQueue;
  /** Mirrors provider status onto proxies: its own queue, so a burst of creations never delays it. */
  #statusQueue: WorkQueue;
  #subs: Subscription[] = [];
  #timers: NodeJS.Timeout[] = [];
  #stopped = false;
  /** The back end said it does not answer (unreachable$), and has not answered since (resync$). */
  #unreachable = false;
  /** When the latest delegate status change not yet written to its proxy was seen, by key (performance.now()). */
  #statusSeen = new Map<string, number>();
  /**
   * The UID of each proxy this controller removes (its final delete sent), by key, until the informer shows it gone:
   * a sync in between (the member's late word on the pod) sends no second delete (at N=1,000 that was 0.44 of a delete
   * per pod, each a 404), and the removal's own watch events queue no sync (#isOwnRemoval).
   */
  #removed = new Map<string, string>();
  /**
   * The resourceVersion each proxy was left at by this controller's last write of its whole mirrored status (#syncStatus),
   * with the informer's relist count when it was sent, by key, until the next status change of that proxy comes. The
   * watch event of that write needs no status check: the proxy at that version is what a check would write (a change
   * another writer made before it came as an event of its own, and was checked); a change of the delegate since queues
   * its own. Any other version is checked, and so is any version after a relist, which may fold another writer's change
   * into the event of ours.
   */
  #ownWrites = new Map<string, { rv: string; relists: number }>();
  /** The keys of the proxies this controller last set Offloaded other than True, until it sets True or they go. */
  #notOffloaded = new Set<string>();
  /**
   * When each key's lifecycle sync and status sync last ran (#now()): the periodic resync leaves out the keys synced
   * within its period. Pruned of keys no longer known whenever every key is queued (#enqueueAll).
   */
  #lastSync = new Map<string, number>();
  #lastStatusSync = new Map<string, number>();

  constructor(host: ClusterClient, provider: PodProvider, log: Logger, opts: PodControllerOptions) {
    this.#host = host;
    this.#provider = provider;
    this.#opts = opts;
    this.#log = log;
    this.pods = opts.proxies ?? proxyInformer(host, opts.nodeName, log, opts.watchSilenceMs);
    // A step of the deletion protocol is one request: it has workers of its own, and never waits behind creations.
    const names = podQueueNames(opts.nodeName);
    this.#queue = new WorkQueue({ name: names.lifecycle, workers: opts.workers, log, maxDelayMs: 60_000, priorityNames: priorityNames(LIFECYCLE),
      urgent: { priority: LIFECYCLE.removeProxy, workers: 2 * opts.workers } });
    // Status writes wait on the host API server rather than on us: twice the workers keep them flowing.
    this.#statusQueue = new WorkQueue({ name: names.status, workers: 2 * opts.workers, log, maxDelayMs: 10_000, priorityNames: priorityNames(STATUS) });
  }

  get queue(): WorkQueue { return this.#queue; }

  /**
   * The proxies whose own pod the provider runs, as the host knows them (name, namespace, UID and all): what
   * virtual-kubelet's /runningpods/ lists (node/api/pods.go, the provider's GetPods). A proxy the provider has no pod
   * for is not among them: one waiting for a mandatory ConfigMap, say, as virtual-kubelet never hands such a pod to
   * its provider (node/pod.go createOrUpdatePod; its e2e TestCreatePodWithMandatoryInexistentConfigMap).
   */
  running(): V1Pod[] {
    const out: V1Pod[] = [];
    for (const key of this.#provider.listPodKeys()) {
      const proxy = this.pods.get(key);
      const { namespace, name } = splitKey(key);
      if (proxy && this.#provider.getPod(namespace, name)?.proxyUID === proxy.metadata?.uid) out.push(proxy);
    }
    return out;
  }

  /** The count clusterlet_pods_offloaded reads at scrape while this controller runs (metrics.ts offloadedPods). */
  #offloaded = (): number => this.#provider.podCount();

  start(): void {
    if (!this.#opts.proxies) this.pods.start();
    offloadedPods.set(this.#opts.member, this.#offloaded);
    this.#queue.start((key) => this.#sync(key));
    this.#statusQueue.start((key) => this.#syncStatusKey(key));
    this.#subs.push(
      this.pods.events$.subscribe((ev) => {
        // Status-only changes (most of them our own writes) are no business of the lifecycle, nor are the events of
        // a proxy this controller removed.
        if ((!ev.old || ev.type === 'DELETED' || !onlyStatusChanged(ev.old, ev.object)) && !this.#isOwnRemoval(ev.key, ev.object, ev.type)) {
          this.#queue.add(ev.key, this.#lifecyclePriority(ev.key));
        }
        // Someone else changed the proxy's status: set it back to what the provider reports.
        if (ev.old && !statusEqual(ev.object.status, ev.old.status) && !this.#isOwnWrite(ev.key, ev.object)) {
          this.#statusQueue.add(ev.key, this.#statusPriority(ev.key, this.#delegateOf(ev.key)));
        }
        if (ev.type === 'DELETED') {
          this.#ownWrites.delete(ev.key);
          this.#notOffloaded.delete(ev.key);
        }
      }),
      this.#provider.podChanges$.subscribe((change) => {
        const running = this.#delegateOf(change.key);
        // A delegate terminating asks nothing of the lifecycle (every step of it waits for the delegate to be gone, or
        // leaves it be): the change that does is its end. Nor does one appearing as created for the live proxy it
        // was created for: that sync has had the create's answer.
        if (change.lifecycle && !running?.terminating && !(change.created && this.#createdFor(change.key, running))) {
          this.#queue.add(change.key, this.#lifecyclePriority(change.key));
        }
        // A delegate gone has no status left to mirror: what becomes of its proxy is the lifecycle's.
        if (!running) {
          this.#statusSeen.delete(change.key);
          return;
        }
        this.#statusSeen.set(change.key, performance.now());
        this.#queueStatus(change.key, running);
      }),
      // Events give way to status writes, which the user waits for more: both go to the host API server, and a burst
      // of pods becoming Ready comes with the member's events about them (Scheduled, Pulled, Started…). For a while
      // only, counted from the event's arrival (not from when one of the 4 writers takes it): under a status queue
      // that never drains (thousands of pods changing), events still go, late by that while and no more.
      this.#provider.podEvents$.pipe(
        map((e) => ({ e, yieldUntil: performance.now() + (this.#opts.eventYieldMs ?? EVENT_YIELD_MAX_MS) })),
        mergeMap(async ({ e, yieldUntil }) => {
          await this.#statusQueue.settled(STATUS.change, yieldUntil - performance.now());
          await this.#mirrorEvent(e);
        }, 4),
      ).subscribe(),
      // The back end stopped answering: no one vouches for its pods' readiness any more. The host's node-lifecycle
      // controller would not mark them (it does so only for a node whose status it finds stale, not for one that
      // reports NotReady itself), so every proxy is marked NotReady here, as it would (a Service drops them).
      this.#provider.unreachable$.subscribe(() => {
        this.#unreachable = true;
        this.#log.info({ proxies: this.pods.size }, 'member unreachable; marking its pods NotReady');
        for (const k of this.pods.keys()) this.#statusQueue.add(k, STATUS.visible);
      }),
      // The back end is back after an outage: every proxy is checked against it again, whatever wrote it meanwhile.
      this.#provider.resync$.subscribe(() => {
        this.#unreachable = false;
        this.#log.info({ proxies: this.pods.size }, 'member reachable again; syncing every pod');
        this.#enqueueAll();
        this.#recheckStatusLater();
      }),
      (this.#opts.resyncTicks ?? interval(this.#resyncMs)).subscribe(() => this.#resync()),
    );
    // Orphans are judged only once both views are complete, never on a half-synced cache.
    void Promise.all([this.pods.waitSynced(), this.#provider.waitSynced()]).then(() => {
      this.#log.info({ proxies: this.pods.size, delegates: this.#provider.podCount() }, 'pod caches synced');
      this.#enqueueAll();
      this.#recheckStatusLater();
    });
  }

  /**
   * Around a start or an outage's end the host's node-lifecycle controller may still be writing the proxies of a
   * node it found unhealthy (it retries its NotReady marks until it sees the node Ready), after clusterlet set them
   * right: every proxy's status is compared again a little later, twice. In-memory, and a write only where it differs.
   */
  #recheckStatusLater(): void {
    for (const ms of this.#opts.statusRecheckMs ?? STATUS_RECHECK_MS) {
      const t = setTimeout(() => { for (const k of this.pods.keys()) this.#statusQueue.add(k, this.#recheckPriority(k)); }, ms);
      t.unref();
      this.#timers.push(t);
    }
  }

  /** Resolves once neither queue has a key queued or under way (keys waiting for a retry do not count): what tests await. */
  async idle(): Promise<void> { await Promise.all([this.#queue.idle(), this.#statusQueue.idle()]); }

  /** A sync's outcome, counted while the controller runs (a removed member's series, once dropped, stay so). */
  #counted(result: 'created' | 'deleted' | 'rejected' | 'status'): void {
    if (!this.#stopped) metrics.podSyncs.inc({ member: this.#opts.member, result });
  }

  stop(): void {
    this.#stopped = true;
    if (offloadedPods.get(this.#opts.member) === this.#offloaded) offloadedPods.delete(this.#opts.member);
    for (const s of this.#subs.splice(0)) s.unsubscribe();
    for (const t of this.#timers.splice(0)) clearTimeout(t);
    this.#queue.shutdown();
    this.#statusQueue.shutdown();
    if (!this.#opts.proxies) this.pods.stop();
  }

  /**
   * A pod still Pending in the back end usually changes again within moments (scheduled, then running):
   * its status is written a little later, as one patch. Anything else is written at once, before other status work
   * if the proxy's phase or readiness is about to change.
   */
  #queueStatus(key: string, running: ProviderPod): void {
    if (running.phase === 'Pending') {
      this.#statusQueue.addAfter(key, PENDING_STATUS_DELAY_MS, STATUS.change);
    } else {
      this.#statusQueue.add(key, this.#statusPriority(key, running));
    }
  }

  /** Visible when the proxy's phase or readiness is not the delegate's: a pod becoming Ready, or marked NotReady by someone else. */
  #statusPriority(key: string, running: ProviderPod | undefined): Priority {
    const proxy = this.pods.get(key);
    const visible = running && proxy && (running.phase !== proxy.status?.phase || !!running.ready !== isReady(proxy));
    return visible ? STATUS.visible : STATUS.change;
  }

  #delegateOf(key: string): ProviderPod | undefined {
    const { namespace, name } = splitKey(key);
    return this.#provider.getPod(namespace, name);
  }

  /** Whether `running` is the delegate of `key`'s proxy as the host shows it, and that proxy is not being deleted. */
  #createdFor(key: string, running: ProviderPod | undefined): boolean {
    const proxy = this.pods.get(key);
    return !!running && !!proxy && proxy.metadata?.uid === running.proxyUID && !proxy.metadata.deletionTimestamp;
  }

  /** Where the key's next sync stands in the deletion protocol (its proxy gone or being deleted), if it does. */
  #lifecyclePriority(key: string): Priority {
    const proxy = this.pods.get(key);
    if (proxy && !proxy.metadata?.deletionTimestamp) return LIFECYCLE.change;
    const delegate = this.#delegateOf(key);
    return delegate && !delegate.terminating ? LIFECYCLE.deleteDelegate : LIFECYCLE.removeProxy;
  }

  get #resyncMs(): number { return this.#opts.resyncMs ?? RESYNC_MS; }

  #now(): number { return this.#opts.now?.() ?? performance.now(); }

  /**
   * Queues every key for a lifecycle sync and, if it has a proxy, a status check, each once (a key added for its proxy
   * and again for its delegate ran twice when the first add had been taken by a worker already). Left out: what ran
   * after `since`, except a status check of a proxy that visibly differs from its delegate. At start and once the back
   * end answers again after an outage, nothing is left out.
   */
  #enqueueAll(since = Infinity): void {
    const stale = (at: number | undefined): boolean => at === undefined || at <= since;
    const keys = new Set([...this.pods.keys(), ...this.#provider.listPodKeys()]);
    for (const k of keys) {
      if (stale(this.#lastSync.get(k))) this.#queue.add(k, this.#resyncPriority(k));
      if (!this.pods.get(k)) continue;
      const priority = this.#recheckPriority(k);
      if (priority === STATUS.visible || stale(this.#lastStatusSync.get(k))) this.#statusQueue.add(k, priority);
    }
    for (const times of [this.#lastSync, this.#lastStatusSync]) {
      for (const k of times.keys()) if (!keys.has(k)) times.delete(k);
    }
  }

  /**
   * The periodic resync: the keys not synced within (most of) the period. A key synced since (its own change) was
   * compared then, and a change after that comes as an event: in a burst longer than the period (10,000 pods take
   * minutes) the resync queued a second sync and a status check for nearly every key at once, which compared and wrote
   * nothing. A key left out is looked at by the next one. With some slack: a key the last tick queued was synced a
   * little after that tick, and a tick may come early.
   */
  #resync(): void {
    this.#enqueueAll(this.#now() - RESYNC_FRESH * this.#resyncMs);
  }

  /**
   * A recheck of every proxy goes last, but for the proxies that visibly differ from their delegates (marked NotReady
   * during an outage): those go first, as any visible change, or a busy queue could hold them back indefinitely.
   */
  #recheckPriority(key: string): Priority {
    return this.#statusPriority(key, this.#delegateOf(key)) === STATUS.visible ? STATUS.visible : STATUS.recheck;
  }

  /** A resync goes last, but for a key in the deletion protocol (an orphan delegate found by the resync included). */
  #resyncPriority(key: string): Priority {
    const p = this.#lifecyclePriority(key);
    return p === LIFECYCLE.change ? LIFECYCLE.resync : p;
  }

  async #sync(key: string): Promise<HandlerResult | void> {
    if (!this.pods.hasSynced || !this.#provider.hasSynced()) return;
    this.#lastSync.set(key, this.#now());
    const proxy = this.pods.get(key);
    try {
      return await this.#syncLifecycle(key, proxy);
    } catch (err) {
      if (refusedByFence(err)) return { requeueAfterMs: FENCED_RETRY_MS };
      // A sync that keeps failing shows on the proxy, not only in the log.
      if (proxy && !proxy.metadata?.deletionTimestamp && !(err instanceof PodRejectedError)
        && this.#queue.failures(key) + 1 >= FAILURES_BEFORE_REPORT) {
        await this.#setOffloaded(proxy, 'False', 'OffloadFailing',
          `syncing the pod with member ${this.#opts.member} keeps failing (retried with backoff): ${(err as Error).message}`, 'Warning')
          .catch(() => undefined);
      }
      throw err;
    }
  }

  async #syncLifecycle(key: string, proxy: V1Pod | undefined): Promise<HandlerResult | void> {
    const { namespace, name } = splitKey(key);
    const running = this.#provider.getPod(namespace, name);
    if (!proxy) {
      this.#removed.delete(key);
      // Deleted (or force-deleted) on the host, or an orphan left by an earlier run: remove it.
      if (running && !running.terminating) await this.#provider.deletePod(namespace, name);
      return;
    }
    if (running && running.proxyUID !== proxy.metadata!.uid) {
      // A delegate of an earlier pod of the same name (a StatefulSet's, say): replace it.
      if (!running.terminating) await this.#provider.deletePod(namespace, name, 0);
      return;
    }
    if (proxy.metadata!.deletionTimestamp) return await this.#syncDeleting(key, proxy, running !== undefined, running?.terminating ?? false);
    if (isDaemonSetPod(proxy)) {
      return await this.#setOffloaded(proxy, 'False', 'DaemonSetPodNotOffloaded',
        `DaemonSet pods are not offloaded to member ${this.#opts.member}: they belong on real nodes`, 'Warning');
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
    for (const n of notices) await this.#event(proxy, n.type, n.reason, n.message);
    await this.#offloadedAgain(proxy);
  }

  /**
   * The Offloaded condition back to True, where an earlier try set it otherwise (a proxy never refused has none): as
   * the proxy shows, or as this controller last wrote it, which the proxy read may not show yet.
   */
  async #offloadedAgain(proxy: V1Pod): Promise<void> {
    const offloaded = proxy.status?.conditions?.find((c) => c.type === OFFLOADED_CONDITION);
    if ((offloaded && offloaded.status !== 'True') || this.#notOffloaded.has(objectKey(proxy))) {
      await this.#setOffloaded(proxy, 'True', 'DelegateCreated', `running in member ${this.#opts.member}`);
    }
  }

  async #syncDeleting(key: string, proxy: V1Pod, hasDelegate: boolean, delegateTerminating: boolean): Promise<HandlerResult | void> {
    if (hasDelegate) {
      if (!delegateTerminating) {
        await this.#provider.deletePod(proxy.metadata!.namespace!, proxy.metadata!.name!,
          proxy.metadata!.deletionGracePeriodSeconds ?? undefined);
      }
      return;
    }
    // A delegate just created that the member's watch has not shown yet: its appearance queues the sync that deletes
    // it; looked at again meanwhile, as the provider waits for it a while only.
    if (this.#provider.creating(proxy.metadata!.namespace!, proxy.metadata!.name!)) return { requeueAfterMs: this.#opts.unshownRetryMs ?? UNSHOWN_RETRY_MS };
    // Nothing runs any more: finish the deletion, as a kubelet does once its containers are gone.
    const uid = proxy.metadata!.uid!;
    if (this.#removed.get(key) === uid) return;
    // Marked before the request: its watch events (the grace period set to 0, then DELETED) may come before its answer.
    this.#removed.set(key, uid);
    try {
      await this.#host.core.deleteNamespacedPod({
        namespace: proxy.metadata!.namespace!, name: proxy.metadata!.name!, gracePeriodSeconds: 0,
        body: { gracePeriodSeconds: 0, preconditions: { uid } },
      }, DISCARD);
      this.#counted('deleted');
    } catch (err) {
      if (!isGone(err)) {
        this.#removed.delete(key);
        throw toKubeError(err);
      }
    }
  }

  /**
   * Whether an event of `key`'s proxy is one of its removal by this controller (#removed: the grace period set to 0,
   * then DELETED), with no delegate left for the key: a sync would find nothing to do. A DELETED one ends the mark.
   */
  #isOwnRemoval(key: string, proxy: V1Pod, type: string): boolean {
    if (this.#removed.get(key) !== proxy.metadata?.uid || this.#delegateOf(key)) return false;
    if (type === 'DELETED') this.#removed.delete(key);
    return true;
  }

  /** No delegate: create one, unless the proxy is finished or its lost delegate is not to be restarted. */
  async #syncMissing(proxy: V1Pod): Promise<void> {
    if (isTerminal(proxy)) return;
    if (hadDelegate(proxy) && (proxy.spec?.restartPolicy ?? 'Always') === 'Never') {
      const status = forgeProxyStatusForLostDelegate(proxy, 'DelegateLost',
        `the pod's delegate in member ${this.#opts.member} was deleted or evicted, and restartPolicy is Never`);
      await this.#patchStatus(proxy, status);
      await this.#event(proxy, 'Warning', 'DelegateLost', status.message ?? 'delegate lost');
      return;
    }
    const restarts = hadDelegate(proxy) ? restartsAfterLoss(proxy) : undefined;
    if (restarts) {
      await this.#event(proxy, 'Warning', 'DelegateLost',
        `the pod's delegate in member ${this.#opts.member} was deleted or evicted (its member node may be gone); `
        + 'creating it again: the restart count goes on');
    }
    try {
      const notices = await this.#provider.createPod(proxy, { restarts });
      this.#counted('created');
      for (const n of notices) await this.#event(proxy, n.type, n.reason, n.message);
      // Here, not on the delegate's appearance: that queues no sync (PodChange.lifecycle).
      await this.#offloadedAgain(proxy);
    } catch (err) {
      if (!(err instanceof PodRejectedError)) throw err;
      this.#counted('rejected');
      await this.#setOffloaded(proxy, 'False', err.reason, `member ${this.#opts.member} rejected the pod: ${err.message}`, 'Warning');
      // Retried with capped backoff by the queue; one only a new configuration can fix waits for the pod to change.
      if (err.retry) throw err;
    }
  }

  async #syncStatusKey(key: string): Promise<HandlerResult | void> {
    if (!this.pods.hasSynced) return;
    // An unreachable back end's last word is not the truth: its proxies are NotReady (whoever set them Ready
    // meanwhile) until it answers again, then resync$ brings every proxy back in line.
    if (this.#unreachable) return this.#markNotReady(key);
    if (!this.#provider.hasSynced() || !this.#provider.available()) return;
    this.#lastStatusSync.set(key, this.#now());
    const proxy = this.pods.get(key);
    const running = proxy && this.#delegateOf(key);
    // Only the proxy's own delegate speaks for it.
    if (!proxy || !running || running.proxyUID !== proxy.metadata!.uid) {
      this.#statusSeen.delete(key);
      return;
    }
    const seen = this.#statusSeen.get(key);
    this.#statusSeen.delete(key);
    let wrote: boolean;
    try {
      wrote = await this.#syncStatus(proxy, running);
    } catch (err) {
      if (seen !== undefined && !this.#statusSeen.has(key)) this.#statusSeen.set(key, seen); // retried
      if (refusedByFence(err)) return { requeueAfterMs: FENCED_RETRY_MS };
      throw err;
    }
    if (wrote && seen !== undefined && !this.#stopped) metrics.statusMirror.observe({ member: this.#opts.member }, (performance.now() - seen) / 1000);
  }

  /**
   * A proxy of an unreachable back end: Ready=False, as the node-lifecycle controller's MarkPodsNotReady sets it (the
   * condition's status and transition time; the rest of the status is left as it was).
   */
  async #markNotReady(key: string): Promise<HandlerResult | void> {
    const proxy = this.pods.get(key);
    if (!proxy || isTerminal(proxy) || !isReady(proxy)) return;
    try {
      await this.#patchStatus(proxy, { conditions: [{ type: 'Ready', status: 'False', lastTransitionTime: new Date() }] });
    } catch (err) {
      if (refusedByFence(err)) return { requeueAfterMs: FENCED_RETRY_MS };
      throw err;
    }
  }

  /** Writes the provider's status (of `running`, its pod) onto the proxy if it differs (status.ts decides); true when it wrote. */
  async #syncStatus(proxy: V1Pod, running: ProviderPod): Promise<boolean> {
    const patch = proxyStatusUpdate(proxy, running, this.#provider.getPodStatus(proxy.metadata!.namespace!, proxy.metadata!.name!));
    if (!patch) return false;
    await this.#patchStatus(proxy, patch, true);
    if (this.#log.isLevelEnabled('debug')) {
      const ready = (st: object) => (st as V1PodStatus).conditions?.find((c) => c.type === 'Ready')?.status;
      this.#log.debug({ namespace: proxy.metadata!.namespace, pod: proxy.metadata!.name, phase: patch.phase,
        ready: ready(patch), was: ready(proxy.status ?? {}) }, 'proxy status written');
    }
    return true;
  }

  /** Whether `proxy` (a status change of `key`) is as this controller's last whole-status write left it (#ownWrites). */
  #isOwnWrite(key: string, proxy: V1Pod): boolean {
    const own = this.#ownWrites.get(key);
    if (own === undefined) return false;
    this.#ownWrites.delete(key);
    return own.rv === proxy.metadata?.resourceVersion && own.relists === this.pods.relists;
  }

  /** Patches the proxy's status; `whole`: the patch is its whole mirrored status (proxyStatusPatch), see #ownWrites. */
  async #patchStatus(proxy: V1Pod, status: object, whole = false): Promise<void> {
    const namespace = proxy.metadata!.namespace!;
    const name = proxy.metadata!.name!;
    const uid = proxy.metadata!.uid;
    const key = `${namespace}/${name}`;
    const relists = this.pods.relists;
    // Kept only while the proxy is (its DELETED event may come before this answer: the entry would never go).
    const onVersion = whole
      ? (rv: string) => { if (this.pods.get(key)?.metadata?.uid === uid) this.#ownWrites.set(key, { rv, relists }); }
      : undefined;
    try {
      await this.#host.core.patchNamespacedPodStatus({
        namespace, name, body: { metadata: { uid }, status },
      }, { ...strategic, onVersion });
      this.#counted('status');
    } catch (err) {
      const k = toKubeError(err);
      if (k.kind === 'NotFound') return; // gone meanwhile; its delete event requeues the key
      throw k;
    }
  }

  /** Sets the Offloaded condition (and records an event) when it changes; a no-op otherwise. */
  async #setOffloaded(proxy: V1Pod, status: 'True' | 'False', reason: string, message: string,
    eventType?: 'Warning' | 'Normal'): Promise<void> {
    const cur = proxy.status?.conditions?.find((c) => c.type === OFFLOADED_CONDITION);
    if (cur && cur.status === status && cur.reason === reason && cur.message === message) return;
    const condition: V1PodCondition = {
      type: OFFLOADED_CONDITION, status, reason, message,
      lastTransitionTime: cur?.status === status && cur.lastTransitionTime ? cur.lastTransitionTime : new Date(),
    };
    const conditions = [...(proxy.status?.conditions ?? []).filter((c) => c.type !== OFFLOADED_CONDITION), condition];
    const body: Record<string, unknown> = { status: { conditions } };
    // A pod that cannot be offloaded says so in kubectl's STATUS column too.
    if (status === 'False' && (proxy.status?.phase ?? 'Pending') === 'Pending') {
      (body.status as Record<string, unknown>).reason = reason;
      (body.status as Record<string, unknown>).message = message;
    }
    await this.#patchStatus(proxy, body.status as object);
    if (status === 'True') this.#notOffloaded.delete(objectKey(proxy)); else this.#notOffloaded.add(objectKey(proxy));
    if (eventType) await this.#event(proxy, eventType, reason, message);
  }

  /** Records an event on the proxy; repeated ones (same reason) bump the count of one event object. */
  async #event(proxy: V1Pod, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    await writeOwnEvent(this.#host, proxyRef(proxy.metadata!.namespace!, proxy.metadata!.name!, proxy.metadata!.uid!),
      this.#opts.nodeName, { type, reason, message });
  }

  async #mirrorEvent(e: PodEvent): Promise<void> {
    const result = await this.#writeMirroredEvent(e);
    if (!this.#stopped) metrics.mirroredEvents.inc({ member: this.#opts.member, result });
  }

  async #writeMirroredEvent(e: PodEvent): Promise<'written' | 'skipped' | 'failed'> {
    const proxy = this.pods.get(`${e.namespace}/${e.name}`);
    // Gone by its turn (events give way to status writes): nobody is left to read it.
    if (!proxy) return 'skipped';
    const source = { component: `${e.event.source?.component ?? 'member'} (member ${this.#opts.member})`, host: this.#opts.nodeName };
    for (let attempt = 0; !this.#stopped; attempt++) {
      try {
        await writeEvent(this.#host, proxyRef(e.namespace, e.name, proxy.metadata!.uid!), e.id, { ...e.event, source },
          { bump: false, instance: this.#opts.nodeName });
        return 'written';
      } catch (err) {
        const k = toKubeError(err);
        // A host that is briefly away or busy (or a concurrent write of the same event) is tried again, a few times.
        const again = attempt < EVENT_WRITE_ATTEMPTS - 1 && !this.#stopped
          && (k.kind === 'Unavailable' || k.kind === 'TooManyRequests' || k.kind === 'Conflict' || k.kind === 'Unknown');
        if (!again) {
          this.#log.warn({ namespace: e.namespace, pod: e.name, err: k.message }, 'could not mirror a member event');
          return 'failed';
        }
        await new Promise((r) => setTimeout(r, backoffDelay(attempt, 500, 8_000)).unref());
      }
    }
    return 'failed';
  }
}

const proxyRef = (namespace: string, name: string, uid: string): EventSubject => ({ apiVersion: 'v1', kind: 'Pod', namespace, name, uid });

/** Whether only the status (and resourceVersion) of a pod changed between two versions. */
function onlyStatusChanged(a: V1Pod, b: V1Pod): boolean {
  const ma = a.metadata;
  const mb = b.metadata;
  return ma?.generation === mb?.generation && sameValue(ma?.deletionTimestamp, mb?.deletionTimestamp)
    && sameValue(ma?.labels, mb?.labels) && sameValue(ma?.annotations, mb?.annotations) && sameValue(a.spec, b.spec);
}

const isReady = (pod: V1Pod): boolean => pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

/** Whether the proxy once had a running delegate (only a delegate's status sets these). */
function hadDelegate(proxy: V1Pod): boolean {
  return proxy.status?.startTime !== undefined || (proxy.status?.containerStatuses?.length ?? 0) > 0;
}
