// The host side of offloading for one virtual node: watches the proxy pods bound to it and routes what changes to the
// three flows that act on them, each its own file and state:
//   lifecycle.ts      a pod in the provider for each proxy, the Offloaded condition, the deletion protocol
//   status-mirror.ts  each delegate's status onto its proxy, set back whatever else wrote it
//   event-mirror.ts   the member's events about a delegate onto its proxy
// and the periodic resync, which looks at every key not synced within its period. It talks to the back end only
// through the PodProvider interface; writer.ts holds the host writes the flows share.
import { interval, type Observable, type Subscription } from 'rxjs';
import type { V1Pod } from '@kubernetes/client-node';
import { Informer, storedSpecs } from '../../kube/informer.ts';
import { listWatch } from '../../kube/listwatch.ts';
import type { WorkQueue } from '../../util/workqueue.ts';
import { delegateOf, type PodProvider } from '../../provider/pod.ts';
import { offloadedPods } from '../../metrics.ts';
import { sameValue } from '../../forge/objects.ts';
import type { Logger } from '../../log.ts';
import { ProxyWriter, type PodHost } from './writer.ts';
import { PodLifecycle } from './lifecycle.ts';
import { STATUS, StatusMirror } from './status-mirror.ts';
import { statusEqual } from './status.ts';
import { mirrorEvents } from './event-mirror.ts';
import { settleOrExit } from '../../util/settle.ts';

/** How often every key is synced again that was not synced meanwhile (#resync). */
const RESYNC_MS = 300_000;
/**
 * The share of the resync period within which a key's last sync counts as recent (#resync). Below 1: a key the last
 * tick queued ran a little after it, and ticks drift; at 1, each quiet key was synced by every other tick only.
 */
const RESYNC_FRESH = 0.9;

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
  /**
   * What its queues are named after on /metrics (default the node's name): the nodes of a member's pools or member
   * nodes share one name, so that hundreds of nodes do not make hundreds of series sets.
   */
  queueName?: string;
  /** How soon a proxy being deleted looks again while its new delegate has not shown; default UNSHOWN_RETRY_MS. */
  unshownRetryMs?: number;
}

/** The names of a virtual node's two pod queues (and of their series on /metrics): lifecycle and status. */
export function podQueueNames(nodeName: string): { lifecycle: string; status: string } {
  return { lifecycle: `pods-${nodeName}`, status: `pod-status-${nodeName}` };
}

/** The proxy pods bound to a node: a watch of the host's pods with spec.nodeName=<node>. */
export function proxyInformer(host: PodHost, nodeName: string, log: Logger, watchSilenceMs?: number): Informer<V1Pod> {
  const proxies: Informer<V1Pod> = new Informer(`proxies-${nodeName}`, listWatch<V1Pod>(host, {
    path: '/api/v1/pods', model: 'V1Pod', resource: 'pods', fieldSelector: `spec.nodeName=${nodeName}`,
    cutManagedFields: true, knownSpec: storedSpecs(() => proxies),
    list: (p) => host.core.listPodForAllNamespaces(p),
  }, { log, silenceMs: watchSilenceMs }));
  return proxies;
}

export class PodController {
  readonly proxies: Informer<V1Pod>;
  #host: PodHost;
  #provider: PodProvider;
  #opts: PodControllerOptions;
  #log: Logger;
  #lifecycle: PodLifecycle;
  #status: StatusMirror;
  #writer: ProxyWriter;
  #subs: Subscription[] = [];
  #stopped = false;

  constructor(host: PodHost, provider: PodProvider, log: Logger, opts: PodControllerOptions) {
    this.#host = host;
    this.#provider = provider;
    this.#opts = opts;
    this.#log = log;
    this.proxies = opts.proxies ?? proxyInformer(host, opts.nodeName, log, opts.watchSilenceMs);
    const names = podQueueNames(opts.queueName ?? opts.nodeName);
    const now = (): number => this.#now();
    const stopped = (): boolean => this.#stopped;
    const writer = new ProxyWriter(host, this.proxies, { nodeName: opts.nodeName, member: opts.member, stopped, now });
    this.#lifecycle = new PodLifecycle(host, this.proxies, provider, writer, log, { queueName: names.lifecycle, nodeName: opts.nodeName,
      member: opts.member, workers: opts.workers, unshownRetryMs: opts.unshownRetryMs, now });
    this.#status = new StatusMirror(this.proxies, provider, writer, log, { queueName: names.status, workers: opts.workers,
      member: opts.member, recheckMs: opts.statusRecheckMs, now, stopped });
    this.#writer = writer;
  }

  /** The lifecycle's queue. */
  get queue(): WorkQueue { return this.#lifecycle.queue; }

  /**
   * The proxies whose own pod the provider runs, as the host knows them (name, namespace, UID and all): what
   * virtual-kubelet's /runningpods/ lists (node/api/pods.go, the provider's GetPods). A proxy the provider has no pod
   * for is not among them: one waiting for a mandatory ConfigMap, say, as virtual-kubelet never hands such a pod to
   * its provider (node/pod.go createOrUpdatePod; its e2e TestCreatePodWithMandatoryInexistentConfigMap).
   */
  running(): V1Pod[] {
    const out: V1Pod[] = [];
    for (const key of this.#provider.listPodKeys()) {
      const proxy = this.proxies.get(key);
      if (proxy && delegateOf(this.#provider, key)?.proxyUID === proxy.metadata?.uid) out.push(proxy);
    }
    return out;
  }

  /** The count clusterlet_pods_offloaded reads at scrape while this controller runs (metrics.ts offloadedPods). */
  #offloaded = (): number => this.#provider.podCount();

  start(): void {
    if (!this.#opts.proxies) this.proxies.start();
    offloadedPods.set(this.#offloaded, this.#opts.member);
    this.#lifecycle.start();
    this.#status.start();
    this.#subs.push(
      this.proxies.events$.subscribe((ev) => {
        // Status-only changes (most of them our own writes) are no business of the lifecycle, nor are the events of
        // a proxy the lifecycle removed.
        if ((!ev.old || ev.type === 'DELETED' || !onlyStatusChanged(ev.old, ev.object)) && !this.#lifecycle.isOwnRemoval(ev.key, ev.object, ev.type)) {
          this.#lifecycle.add(ev.key);
        }
        // Someone else changed the proxy's status: set it back to what the provider reports.
        if (ev.old && !statusEqual(ev.object.status, ev.old.status) && !this.#writer.isOwnWrite(ev.key, ev.object)) {
          this.#status.proxyStatusChanged(ev.key);
        }
        if (ev.type === 'DELETED') this.#writer.forget(ev.key);
      }),
      this.#provider.podChanges$.subscribe((change) => {
        const running = delegateOf(this.#provider, change.key);
        // A delegate terminating asks nothing of the lifecycle (every step of it waits for the delegate to be gone, or
        // leaves it be): the change that does is its end. Nor does one appearing as created for the live proxy it
        // was created for: that sync has had the create's answer.
        if (change.lifecycle && !running?.terminating && !(change.created && this.#lifecycle.createdFor(change.key, running))) {
          this.#lifecycle.add(change.key);
        }
        this.#status.delegateChanged(change.key, running);
      }),
      mirrorEvents(this.#host, this.proxies, this.#provider, this.#status.queue, this.#log,
        { nodeName: this.#opts.nodeName, member: this.#opts.member, yieldMs: this.#opts.eventYieldMs, stopped: () => this.#stopped }),
      this.#provider.unreachable$.subscribe(() => {
        this.#log.info({ proxies: this.proxies.size }, 'member unreachable; marking its pods NotReady');
        this.#status.unreachable();
      }),
      // The back end is back after an outage: every proxy is checked against it again, whatever wrote it meanwhile.
      this.#provider.resync$.subscribe(() => {
        this.#status.reachable();
        this.#log.info({ proxies: this.proxies.size }, 'member reachable again; syncing every pod');
        this.#enqueueAll();
        this.#status.recheckLater();
      }),
      (this.#opts.resyncTicks ?? interval(this.#resyncMs)).subscribe(() => this.#resync()),
    );
    // Orphans are judged only once both views are complete, never on a half-synced cache.
    settleOrExit(Promise.all([this.proxies.waitSynced(), this.#provider.waitSynced()]).then(() => {
      this.#log.info({ proxies: this.proxies.size, delegates: this.#provider.podCount() }, 'pod caches synced');
      this.#enqueueAll();
      this.#status.recheckLater();
    }), this.#log, 'pod cache sync failed');
  }

  /** Resolves once neither queue has a key queued or under way (keys waiting for a retry do not count): what tests await. */
  async idle(): Promise<void> { await Promise.all([this.#lifecycle.queue.idle(), this.#status.queue.idle()]); }

  stop(): void {
    this.#stopped = true;
    offloadedPods.delete(this.#offloaded);
    for (const s of this.#subs.splice(0)) s.unsubscribe();
    this.#lifecycle.stop();
    this.#status.stop();
    if (!this.#opts.proxies) this.proxies.stop();
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
    const keys = new Set([...this.proxies.keys(), ...this.#provider.listPodKeys()]);
    for (const k of keys) {
      if (stale(this.#lifecycle.lastSync.get(k))) this.#lifecycle.queue.add(k, this.#lifecycle.resyncPriority(k));
      if (!this.proxies.get(k)) continue;
      const priority = this.#status.recheckPriority(k);
      if (priority === STATUS.visible || stale(this.#status.lastSync.get(k))) this.#status.queue.add(k, priority);
    }
    for (const times of [this.#lifecycle.lastSync, this.#status.lastSync]) {
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
}

/** Whether only the status (and resourceVersion) of a pod changed between two versions. */
function onlyStatusChanged(a: V1Pod, b: V1Pod): boolean {
  const ma = a.metadata;
  const mb = b.metadata;
  return ma?.generation === mb?.generation && sameValue(ma?.deletionTimestamp, mb?.deletionTimestamp)
    && sameValue(ma?.labels, mb?.labels) && sameValue(ma?.annotations, mb?.annotations) && sameValue(a.spec, b.spec);
}
