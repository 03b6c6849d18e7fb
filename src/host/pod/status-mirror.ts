// The status mirror of one virtual node: writes each delegate's status onto its proxy (status.ts decides what), sets
// back what another writer changed, marks every proxy NotReady while the member does not answer, and compares every
// proxy again after a start or an outage. Its own queue, so a burst of creations never delays it.
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import type { Informer } from '../../kube/informer.ts';
import { refusedByFence } from '../../kube/errors.ts';
import { priorityNames, WorkQueue, type HandlerResult, type Priority } from '../../util/workqueue.ts';
import { isTerminal } from '../../forge/pod.ts';
import { proxyStatusUpdate } from './status.ts';
import { delegateOf, type PodProvider, type ProviderPod } from '../../provider/pod.ts';
import { metrics } from '../../metrics.ts';
import type { Logger } from '../../log.ts';
import { FENCED_RETRY_MS, type ProxyWriter } from './writer.ts';
import { objectId } from '../../forge/meta.ts';

/** After a start or an outage, every proxy's status is compared again this long after (see recheckLater). */
const STATUS_RECHECK_MS = [4_000, 10_000];

/** How long the status of a pod still Pending in the back end waits for its next change, to be written once. */
const PENDING_STATUS_DELAY_MS = 1000;

/**
 * The status queue's priorities: first what the user waits for (the proxy's phase or readiness about to change: a
 * pod becoming Ready, or finishing), then any other change, then the rechecks of every proxy (start, outage, resync).
 */
export const STATUS = { recheck: 0, change: 1, visible: 2 } as const satisfies Record<string, Priority>;

export interface StatusMirrorOptions {
  queueName: string;
  workers: number;
  member: string;
  /** When every proxy's status is compared again after a start or an outage's end; default STATUS_RECHECK_MS. */
  recheckMs?: readonly number[];
  now: () => number;
  stopped: () => boolean;
}

export class StatusMirror {
  readonly queue: WorkQueue;
  #proxies: Informer<V1Pod>;
  #provider: PodProvider;
  #writer: ProxyWriter;
  #log: Logger;
  #opts: StatusMirrorOptions;
  #timers: NodeJS.Timeout[] = [];
  /** The back end said it does not answer (unreachable$), and has not answered since (resync$). */
  #unreachable = false;
  /** When the latest delegate status change not yet written to its proxy was seen, by key (performance.now()). */
  #seen = new Map<string, number>();
  /** When each key's status sync last ran (options.now): the periodic resync leaves out the keys synced within its period. */
  readonly lastSync = new Map<string, number>();

  constructor(proxies: Informer<V1Pod>, provider: PodProvider, writer: ProxyWriter, log: Logger, opts: StatusMirrorOptions) {
    this.#proxies = proxies;
    this.#provider = provider;
    this.#writer = writer;
    this.#log = log;
    this.#opts = opts;
    // Status writes wait on the host API server rather than on us: twice the workers keep them flowing.
    this.queue = new WorkQueue({ name: opts.queueName, workers: 2 * opts.workers, log, maxDelayMs: 10_000, priorityNames: priorityNames(STATUS) });
  }

  start(): void { this.queue.start((key) => this.#sync(key)); }

  stop(): void {
    for (const t of this.#timers.splice(0)) clearTimeout(t);
    this.queue.shutdown();
  }

  /** The delegate of `key` changed (`running`), or went (undefined: what becomes of its proxy is the lifecycle's). */
  delegateChanged(key: string, running: ProviderPod | undefined): void {
    if (!running) {
      this.#seen.delete(key);
      return;
    }
    this.#seen.set(key, performance.now());
    // A pod still Pending in the back end usually changes again within moments (scheduled, then running): its status
    // is written a little later, as one patch. Anything else at once, first if the proxy's phase or readiness changes.
    if (running.phase === 'Pending') {
      this.queue.addAfter(key, PENDING_STATUS_DELAY_MS, STATUS.change);
    } else {
      this.queue.add(key, this.#priority(key, running));
    }
  }

  /** Someone else changed the proxy's status: it is set back to what the provider reports. */
  proxyStatusChanged(key: string): void {
    this.queue.add(key, this.#priority(key, delegateOf(this.#provider, key)));
  }

  /**
   * The back end stopped answering: no one vouches for its pods' readiness any more. The host's node-lifecycle
   * controller would not mark them (it does so only for a node whose status it finds stale, not for one that reports
   * NotReady itself), so every proxy is marked NotReady here, as it would (a Service drops them).
   */
  unreachable(): void {
    this.#unreachable = true;
    for (const k of this.#proxies.keys()) this.queue.add(k, STATUS.visible);
  }

  /** The back end answers again: what it says is the truth again. */
  reachable(): void { this.#unreachable = false; }

  /**
   * Around a start or an outage's end the host's node-lifecycle controller may still be writing the proxies of a
   * node it found unhealthy (it retries its NotReady marks until it sees the node Ready), after clusterlet set them
   * right: every proxy's status is compared again a little later, twice. In-memory, and a write only where it differs.
   */
  recheckLater(): void {
    for (const ms of this.#opts.recheckMs ?? STATUS_RECHECK_MS) {
      const t = setTimeout(() => { for (const k of this.#proxies.keys()) this.queue.add(k, this.recheckPriority(k)); }, ms);
      t.unref();
      this.#timers.push(t);
    }
  }

  /**
   * A recheck of every proxy goes last, but for the proxies that visibly differ from their delegates (marked NotReady
   * during an outage): those go first, as any visible change, or a busy queue could hold them back indefinitely.
   */
  recheckPriority(key: string): Priority {
    return this.#priority(key, delegateOf(this.#provider, key)) === STATUS.visible ? STATUS.visible : STATUS.recheck;
  }

  /** Visible when the proxy's phase or readiness is not the delegate's: a pod becoming Ready, or marked NotReady by someone else. */
  #priority(key: string, running: ProviderPod | undefined): Priority {
    const proxy = this.#proxies.get(key);
    const visible = running && proxy && (running.phase !== proxy.status?.phase || !!running.ready !== isReady(proxy));
    return visible ? STATUS.visible : STATUS.change;
  }

  async #sync(key: string): Promise<HandlerResult | void> {
    if (!this.#proxies.hasSynced) return;
    // An unreachable back end's last word is not the truth: its proxies are NotReady (whoever set them Ready
    // meanwhile) until it answers again, then resync$ brings every proxy back in line.
    if (this.#unreachable) return this.#markNotReady(key);
    if (!this.#provider.hasSynced() || !this.#provider.available()) return;
    this.lastSync.set(key, this.#opts.now());
    const proxy = this.#proxies.get(key);
    const running = proxy && delegateOf(this.#provider, key);
    // Only the proxy's own delegate speaks for it.
    if (!proxy || !running || running.proxyUID !== proxy.metadata?.uid) {
      this.#seen.delete(key);
      return;
    }
    const seen = this.#seen.get(key);
    this.#seen.delete(key);
    let wrote: boolean;
    try {
      wrote = await this.#write(proxy, running);
    } catch (err) {
      if (seen !== undefined && !this.#seen.has(key)) this.#seen.set(key, seen); // retried
      if (refusedByFence(err)) return { requeueAfterMs: FENCED_RETRY_MS };
      throw err;
    }
    if (wrote && seen !== undefined && !this.#opts.stopped()) {
      metrics.statusMirror.observe({ member: this.#opts.member }, (performance.now() - seen) / 1000);
    }
  }

  /**
   * A proxy of an unreachable back end: Ready=False, as the node-lifecycle controller's MarkPodsNotReady sets it (the
   * condition's status and transition time; the rest of the status is left as it was).
   */
  async #markNotReady(key: string): Promise<HandlerResult | void> {
    const proxy = this.#proxies.get(key);
    if (!proxy || isTerminal(proxy) || !isReady(proxy)) return;
    try {
      await this.#writer.patchStatus(proxy, { conditions: [{ type: 'Ready', status: 'False', lastTransitionTime: new Date() }] });
    } catch (err) {
      if (refusedByFence(err)) return { requeueAfterMs: FENCED_RETRY_MS };
      throw err;
    }
  }

  /** Writes the provider's status (of `running`, its pod) onto the proxy if it differs (status.ts decides); true when it wrote. */
  async #write(proxy: V1Pod, running: ProviderPod): Promise<boolean> {
    const { namespace, name } = objectId(proxy);
    const patch = proxyStatusUpdate(proxy, running, this.#provider.getPodStatus(namespace, name));
    if (!patch) return false;
    await this.#writer.patchStatus(proxy, patch, true);
    if (this.#log.isLevelEnabled('debug')) {
      const ready = (st: object) => (st as V1PodStatus).conditions?.find((c) => c.type === 'Ready')?.status;
      this.#log.debug({ namespace, pod: name, phase: patch.phase, ready: ready(patch), was: ready(proxy.status ?? {}) },
        'proxy status written');
    }
    return true;
  }
}

export const isReady = (pod: V1Pod): boolean => pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
