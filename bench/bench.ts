// The benchmark: a Deployment of N replicas created directly in the member ("direct"), one created on the host and
// offloaded through clusterlet ("offloaded"), and one bound to a KWOK node of the host ("host-only", the host control
// plane's cost alone), in rotating order, timed by watches; and clusterlet's idle RSS before the first run.
import { readdirSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { AppsV1Api, type V1Deployment, type V1Pod } from '@kubernetes/client-node';
import type { Harness } from '../test/harness/harness.ts';
import { ClusterClient } from '../src/kube/client.ts';
import { loadKubeconfigFile } from '../src/kube/kubeconfig.ts';
import { Informer } from '../src/kube/informer.ts';
import { listWatch } from '../src/kube/listwatch.ts';
import { podQueueNames } from '../src/host/pod/controller.ts';
import { deleteNamespaceAndWait } from '../test/support/env.ts';
import { isReady, waitNode } from '../test/support/objects.ts';

export interface BenchOptions {
  harness: Harness;
  sizes: number[];
  pairs: number;
  /** The clusterlet process to measure, and its /metrics URL. */
  clusterletPid: number;
  metricsURL: string;
  virtualNode: string;
  /** The host KWOK node the host-only runs are bound to (Harness option hostFloorNode). */
  hostOnlyNode: string;
  log?: (line: string) => void;
  /** Called after every run with the results so far (run.ts writes them, so a stopped bench keeps what it measured). */
  onProgress?: (partial: BenchResult) => void;
  /** Rejects if clusterlet exits: the run in progress fails with that. */
  clusterletExited?: Promise<never>;
  /** Per-run bound; a run that takes longer fails the bench. */
  runTimeoutMs?: (n: number) => number;
  /** How the idle RSS is sampled (default IDLE_RSS). */
  idleRss?: IdleRssOptions;
  /** Which of the three ways each pair runs (default all: MODES); e.g. only offloaded, to iterate on clusterlet's costs. */
  modes?: readonly Mode[];
}

/**
 * The three ways a Deployment of N runs: in the member (`direct`), bound to a KWOK node of the host, which the host's
 * own KWOK completes (`hostOnly`: the host control plane's cost alone), and through clusterlet (`offloaded`).
 */
export type Mode = 'direct' | 'hostOnly' | 'offloaded';

export interface RunResult {
  mode: Mode;
  n: number;
  pair: number;
  /** Deployment creation → all N pods Ready, seen by a watch. */
  readyMs: number;
  /** CPU seconds each process used from creation until all N were Ready (clusterlet, etcd, host/*, member/*). */
  cpuToReady: Record<string, number>;
  /**
   * When (ms after creation) the last pod reached each stage, as watches saw it: direct and host-only `bound`,
   * `ready`; offloaded `proxiesBound`, `delegatesCreated`, `delegatesBound`, `delegatesReady`, `proxiesReady`.
   */
  stagesMs?: Record<string, number>;
  /** Deployment deleted → no pod left (offloaded: no delegate left in the member). */
  deleteMs: number;
  /**
   * When (ms after the Deployment's deletion) the last pod reached each stage of its deletion, as watches saw it:
   * direct and host-only `terminating`, `gone`; offloaded `proxiesTerminating`, `delegatesTerminating`,
   * `delegatesGone`, `proxiesGone`.
   */
  deleteStagesMs?: Record<string, number>;
  /** CPU seconds each process used from the Deployment's deletion until no pod was left (as deleteMs). */
  cpuToDeleted?: Record<string, number>;
  /** Direct: clusterlet's peak RSS while the member ran the N pods of its own (it watches every member pod). */
  clusterletPeakRssMB?: number;
}

export interface OffloadedRun extends RunResult {
  mode: 'offloaded';
  addedLatencyMs: { p50: number; p99: number; max: number };
  peakRssMB: number;
  /** clusterlet's CPU over the whole run (create → Ready → delete), and that per pod. */
  cpuSeconds: number;
  cpuMsPerPod: number;
  /** clusterlet's CPU over the two kube-apiservers' in the same run (see cpuPerApiServer). */
  cpuPerApiServer?: number;
  /**
   * clusterlet's CPU seconds over the run by kind of thread (see threadKind). A V8 CPU profile (--cpu-prof) sees the
   * main thread only: V8's helpers (most of the old generation's marking) are this.
   */
  cpuByThread?: Record<ThreadKind, number>;
  /** clusterlet's own path towards the member: proxy seen bound → its delegate seen created (the bench's watches, ms). */
  proxyBoundToDelegateMs: { p50: number; p99: number };
  /** Of the added latency, clusterlet's own part: delegate status seen → proxy status written (its histogram, ms). */
  statusMirrorMs?: { p50?: number; p99?: number };
  /** Latency of clusterlet's status patches to the host (its histogram, ms). */
  hostPatchMs?: { p50?: number; p99?: number };
  /** Latency of clusterlet's delegate creates in the member (its histogram, ms). */
  memberCreateMs?: { p50?: number; p99?: number };
  /**
   * How long keys waited in the virtual node's two pod queues for a worker until all N were Ready (clusterlet's
   * clusterlet_queue_wait_seconds, ms): `lifecycle` (pods-<node>: creations, then) and `status` (pod-status-<node>).
   */
  queueWaitMs?: { lifecycle: { p50?: number; p99?: number }; status: { p50?: number; p99?: number } };
  /** Runs of the two pod queues per pod over the whole run, create → delete (keys workers took: the waits' count). */
  queueRunsPerPod?: { lifecycle: number; status: number };
  /**
   * The status queue's waits until all N were Ready, by the priority keys ran at (ms): `visible` (a proxy's phase or
   * readiness about to change), `change` (any other), `recheck`. The lower ones wait behind the higher by design.
   */
  statusWaitByPriorityMs?: Record<string, { p50?: number; p99?: number }>;
  /**
   * p99 of clusterlet's event loop delay from the Deployment's creation until all N were Ready (ms; its histogram
   * samples every 100 ms and the metric takes that off, where results before 2eed5e4 include 20 ms): how late
   * clusterlet itself was to read what its watches brought.
   */
  loopDelayP99Ms?: number;
  /**
   * Requests that waited for a free connection of their cluster's pool until all N were Ready: the share of the
   * requests, and p50 / p99 of their wait (clusterlet's histogram, ms), by cluster.
   */
  connectionWait?: Record<string, ConnectionWait>;
  /** Member events about the delegates per pod (create → delete), by member, then by what became of them: written, skipped, failed. */
  mirroredEventsPerPod?: Record<string, Record<string, number>>;
  /** clusterlet's watch restarts during the run (create → delete), by `cluster resource reason`: none, when it has none. */
  watchRestarts?: Record<string, number>;
  /** API requests clusterlet made per pod (create → delete), by cluster and verb. */
  requestsPerPod: Record<string, Record<string, number>>;
  /** Watch events clusterlet received per pod (create → delete), by cluster, then by resource and by "resource type". */
  watchEventsPerPod?: Record<string, Record<string, number>>;
  hostWritesPerPod: number;
  hostListsDuringRun: number;
}

export interface SizeSummary {
  n: number;
  /** Medians over the pairs of the time to all Ready. */
  directMedianMs: number;
  hostOnlyMedianMs: number;
  offloadedMedianMs: number;
  /** Offloaded against direct, and against max(host-only, direct), per pair and their medians. */
  ratios: number[];
  ratioMedian: number;
  floorRatios: number[];
  floorRatioMedian: number;
  /** clusterlet's CPU-ms per pod lifecycle, per offloaded run and the median. */
  cpuMsPerPod: number[];
  cpuMsPerPodMedian: number;
  /** clusterlet's CPU over the API servers' (cpuPerApiServer), per offloaded run that has it, and the median. */
  cpuPerApiServer: number[];
  cpuPerApiServerMedian?: number;
  /** Per pair, the share of clusterlet's CPU on V8's helper threads (see OffloadedRun.cpuByThread), and its median. */
  v8ThreadShare?: number[];
  v8ThreadShareMedian?: number;
  addedLatencyP50Ms: number;
  addedLatencyP99Ms: number;
  /** Medians over the pairs of clusterlet's own path, both ways (see OffloadedRun), and of its host status patch latency. */
  proxyBoundToDelegateP50Ms: number;
  proxyBoundToDelegateP99Ms: number;
  statusMirrorP50Ms?: number;
  statusMirrorP99Ms?: number;
  hostPatchP50Ms?: number;
  hostPatchP99Ms?: number;
  memberCreateP50Ms?: number;
  memberCreateP99Ms?: number;
  /** Medians over the pairs of the queue waits (see OffloadedRun.queueWaitMs). */
  lifecycleWaitP50Ms?: number;
  lifecycleWaitP99Ms?: number;
  statusWaitP50Ms?: number;
  statusWaitP99Ms?: number;
  loopDelayP99Ms?: number;
  /** Medians of the CPU seconds all processes used until all N were Ready, per mode, and clusterlet's share offloaded. */
  cpuToReadyDirect: number;
  cpuToReadyHostOnly: number;
  cpuToReadyOffloaded: number;
  cpuToReadyClusterlet: number;
  peakRssMB: number;
  /**
   * While the member ran N pods of its own (direct), which clusterlet watches as it watches every member pod: its peak
   * RSS (the largest of the runs) and its CPU-ms per member pod from creation until they were gone (median).
   */
  directClusterletPeakRssMB?: number;
  directClusterletCpuMsPerPod?: number;
  /**
   * The same CPU over the member kube-apiserver's in those runs (median): the machine's speed of the moment moves both,
   * so builds compare better by this than by CPU-ms per pod (as cpuPerApiServer does for the offloaded runs).
   */
  directClusterletCpuPerMemberApiServer?: number;
  cpuSecondsMedian: number;
  hostWritesPerPod: number;
  /** Medians of the delete time per mode; offloaded against direct per pair and its median. */
  deleteDirectMedianMs: number;
  deleteHostOnlyMedianMs: number;
  deleteOffloadedMedianMs: number;
  deleteRatios: number[];
  deleteRatioMedian: number;
  requestsPerPod: Record<string, Record<string, number>>;
  /** Of the last offloaded run: the watch events clusterlet received per pod, by cluster and resource. */
  watchEventsPerPod: Record<string, Record<string, number>>;
  /** Medians over the runs of when the last pod reached each stage (ms after creation). */
  stagesDirectMs?: Record<string, number>;
  stagesHostOnlyMs?: Record<string, number>;
  stagesOffloadedMs?: Record<string, number>;
  /** The same for the deletion (ms after the Deployment's deletion), and the CPU seconds of all processes it took. */
  deleteStagesDirectMs?: Record<string, number>;
  deleteStagesHostOnlyMs?: Record<string, number>;
  deleteStagesOffloadedMs?: Record<string, number>;
  cpuToDeletedDirect?: number;
  cpuToDeletedHostOnly?: number;
  cpuToDeletedOffloaded?: number;
  cpuToDeletedClusterlet?: number;
}

export interface BenchResult {
  machine: Record<string, string | number>;
  startedAt: string;
  /** clusterlet's VmRSS before the first run (one member, no pods): the median and the samples, MB. */
  idleRss: { medianMB: number; samplesMB: number[] };
  /**
   * clusterlet's VmRSS after the last run, once every pod is gone and it has settled as before the first: what a
   * burst leaves resident. Only when an offloaded run ran.
   */
  afterRss?: { medianMB: number; samplesMB: number[] };
  runs: (RunResult | OffloadedRun)[];
  summary: SizeSummary[];
}

const podSpec = (labels: Record<string, string>, offload: string | undefined): NonNullable<V1Deployment['spec']>['template'] => ({
  metadata: { labels },
  spec: {
    containers: [{ name: 'app', image: 'registry.example/bench:1' }],
    ...(offload ? {
      tolerations: [{ key: 'virtual-kubelet.io/provider', operator: 'Exists', effect: 'NoSchedule' }],
      nodeSelector: { 'kubernetes.io/hostname': offload },
    } : {}),
  },
});

export function deployment(name: string, n: number, offload?: string): V1Deployment {
  const labels = { app: name };
  return { metadata: { name }, spec: { replicas: n, selector: { matchLabels: labels }, template: podSpec(labels, offload) } };
}

/** Watches pods of one namespace and records when each first became Ready; resolves when `n` are. */
export class ReadyTracker {
  readonly readyAt = new Map<string, number>();
  /** When each pod was first seen, and first seen bound to a node. */
  readonly seenAt = new Map<string, number>();
  readonly boundAt = new Map<string, number>();
  /** When each pod was first seen terminating (a deletionTimestamp), and seen gone. */
  readonly terminatingAt = new Map<string, number>();
  readonly goneAt = new Map<string, number>();
  readonly informer: Informer<V1Pod>;
  #waiters: { n: number; resolve: () => void }[] = [];

  constructor(client: ClusterClient, namespace: string) {
    this.informer = new Informer<V1Pod>(`bench-${namespace}`, listWatch<V1Pod>(client, {
      path: `/api/v1/namespaces/${namespace}/pods`, model: 'V1Pod', resource: 'pods',
      list: (p) => client.core.listNamespacedPod({ namespace, ...p }),
    }, { silenceMs: 120_000 }));
    this.informer.events$.subscribe((ev) => {
      const now = performance.now();
      if (ev.type === 'DELETED') {
        this.goneAt.set(ev.key, now);
        return;
      }
      if (ev.object.metadata?.deletionTimestamp && !this.terminatingAt.has(ev.key)) this.terminatingAt.set(ev.key, now);
      if (!this.seenAt.has(ev.key)) this.seenAt.set(ev.key, now);
      if (ev.object.spec?.nodeName && !this.boundAt.has(ev.key)) this.boundAt.set(ev.key, now);
      if (isReady(ev.object) && !this.readyAt.has(ev.key)) {
        this.readyAt.set(ev.key, now);
        for (const w of this.#waiters) if (this.readyAt.size >= w.n) w.resolve();
      }
    });
  }

  async start(): Promise<void> {
    this.informer.start();
    await this.informer.waitSynced();
  }

  until(n: number, timeoutMs: number, what: string): Promise<void> {
    if (this.readyAt.size >= n) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`${what}: only ${this.readyAt.size}/${n} Ready after ${timeoutMs} ms`)), timeoutMs);
      this.#waiters.push({ n, resolve: () => { clearTimeout(t); resolve(); } });
    });
  }

  /** Resolves when the namespace holds no pod. */
  empty(timeoutMs: number, what: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = (): boolean => {
        if (this.informer.size === 0) { clearTimeout(t); sub.unsubscribe(); resolve(); return true; }
        return false;
      };
      const t = setTimeout(() => { sub.unsubscribe(); reject(new Error(`${what}: ${this.informer.size} pods left after ${timeoutMs} ms`)); }, timeoutMs);
      const sub = this.informer.events$.subscribe(() => check());
      check();
    });
  }

  stop(): void { this.informer.stop(); }
}

/** Samples a process's RSS (peak) and CPU time. */
export class ProcessSampler {
  #pid: number;
  #peakKB = 0;
  #cpu0: number;
  #threads0: Record<ThreadKind, number>;
  #timer: NodeJS.Timeout;

  constructor(pid: number) {
    this.#pid = pid;
    this.#cpu0 = cpuTicks(pid);
    this.#threads0 = threadTicks(pid);
    this.#sample();
    this.#timer = setInterval(() => this.#sample(), 200);
  }

  #sample(): void {
    // Once the process is gone the run fails on its own (BenchOptions.clusterletExited).
    this.#peakKB = Math.max(this.#peakKB, rssKB(this.#pid)?.total ?? 0);
  }

  stop(): { peakRssMB: number; cpuSeconds: number; cpuByThread: Record<ThreadKind, number> } {
    clearInterval(this.#timer);
    this.#sample();
    const threads = threadTicks(this.#pid);
    const cpuByThread = Object.fromEntries(Object.entries(threads).map(([k, v]) =>
      [k, Math.max(0, v - this.#threads0[k as ThreadKind]) / 100])) as Record<ThreadKind, number>;
    return { peakRssMB: Math.round(this.#peakKB / 1024), cpuSeconds: (cpuTicks(this.#pid) - this.#cpu0) / 100, cpuByThread };
  }
}

/** A process's resident memory: VmRSS, and its parts anonymous memory and file pages (the node binary's code and data it touched). */
export interface Rss { total: number; anon: number; file: number }

/** A process's resident memory in kB; undefined once it is gone. */
export function rssKB(pid: number): Rss | undefined {
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return undefined;
  }
  const kB = (field: string): number | undefined => {
    const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(status);
    return m ? Number(m[1]) : undefined;
  };
  const total = kB('VmRSS');
  return total === undefined ? undefined : { total, anon: kB('RssAnon') ?? 0, file: kB('RssFile') ?? 0 };
}

export interface IdleRssOptions {
  /** How long to let clusterlet settle once its node is Ready; how many samples then, how far apart. */
  settleMs: number;
  samples: number;
  intervalMs: number;
  /** clusterlet's health port, scraped while it settles as deployed (bench/tools/idle-rss.ts); none: it settles untouched. */
  healthPort?: number;
}

export const IDLE_RSS: IdleRssOptions = { settleMs: 20_000, samples: 5, intervalMs: 2_000 };

/** How often Prometheus and the probes would ask the health port. */
const SCRAPE_EVERY_MS = 10_000;

/** Waits `ms`; with a health port, asks it what Prometheus and the probes would, every SCRAPE_EVERY_MS from the start. */
async function settle(ms: number, healthPort: number | undefined): Promise<void> {
  if (healthPort === undefined) return sleep(ms);
  for (let waited = 0; waited < ms; waited += SCRAPE_EVERY_MS) {
    for (const path of ['/metrics', '/readyz', '/healthz']) await (await fetch(`http://127.0.0.1:${healthPort}${path}`)).text();
    await sleep(Math.min(SCRAPE_EVERY_MS, ms - waited));
  }
}

/**
 * clusterlet's resident memory at idle, in MB: sampled once its virtual node is Ready and it has settled (the bench
 * before its first run, and bench/tools/idle-rss.ts).
 */
export async function idleRssSamples(host: ClusterClient, nodeName: string, pid: number, opts: IdleRssOptions = IDLE_RSS): Promise<Rss[]> {
  await waitNode(host, nodeName, isReady, 'Ready', 120_000);
  await settle(opts.settleMs, opts.healthPort);
  const samples: Rss[] = [];
  for (let i = 0; i < opts.samples; i++) {
    if (i > 0) await sleep(opts.intervalMs);
    const kb = rssKB(pid);
    if (kb === undefined) throw new Error(`process ${pid} exited while its idle RSS was sampled`);
    samples.push({ total: kb.total / 1024, anon: kb.anon / 1024, file: kb.file / 1024 });
  }
  return samples;
}

/** CPU time of a set of processes since construction. */
export class CpuAccount {
  #start: Map<string, [number, number]>;

  constructor(pids: Map<string, number>) {
    this.#start = new Map([...pids].map(([name, pid]) => [name, [pid, cpuTicks(pid)]]));
  }

  seconds(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [name, [pid, t0]] of this.#start) out[name] = (cpuTicks(pid) - t0) / 100;
    return out;
  }
}

/** The CPU ticks (user + system, 100 Hz) process `pid` used so far; NaN once it is gone. */
export function cpuTicks(pid: number): number {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return NaN; // gone
  }
  return statTicks(stat).ticks;
}

/** A /proc stat line's command name and CPU clock ticks: utime is its 14th field, stime its 15th (100 Hz on Linux). */
export function statTicks(stat: string): { comm: string; ticks: number } {
  const close = stat.lastIndexOf(')');
  const rest = stat.slice(close + 2).split(' ');
  return { comm: stat.slice(stat.indexOf('(') + 1, close), ticks: Number(rest[11]) + Number(rest[12]) };
}

/**
 * What a thread of clusterlet's node process does, by its name: `main` runs its JavaScript (and the young generation's
 * scavenges and the collectors' pauses), `v8` V8's helpers (concurrent marking, parallel scavenging, background
 * compilation), `libuv` libuv's pool (file system, DNS, some crypto).
 */
export type ThreadKind = 'main' | 'v8' | 'libuv' | 'other';

export function threadKind(comm: string): ThreadKind {
  if (comm === 'MainThread' || comm === 'node') return 'main';
  if (comm.startsWith('V8Worker') || comm.startsWith('DelayedTaskSch')) return 'v8';
  if (comm.startsWith('libuv-worker')) return 'libuv';
  return 'other';
}

/** A process's CPU clock ticks by kind of thread (see threadKind); the threads that ended are not counted. */
export function threadTicks(pid: number): Record<ThreadKind, number> {
  const out: Record<ThreadKind, number> = { main: 0, v8: 0, libuv: 0, other: 0 };
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out; // gone
  }
  for (const tid of tids) {
    try {
      const { comm, ticks } = statTicks(readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8'));
      out[threadKind(comm)] += ticks;
    } catch { /* the thread ended meanwhile */ }
  }
  return out;
}

type Counts = Map<string, number>;

export interface Scrape {
  /** API requests by `cluster/verb`. */
  requests: Counts;
  /** Watch events clusterlet received, by `cluster/resource`. */
  watchEvents: Counts;
  /** Member events about delegates, by `member/result` (`written`, `skipped`, `failed`). */
  mirroredEvents: Counts;
  /** clusterlet's watch restarts, by `cluster resource reason` (silent, ended, gone, error). */
  watchRestarts: Counts;
  /** Cumulative bucket counts of the histograms the bench reads, by series (`name{labels}` without le) then le. */
  buckets: Map<string, Map<number, number>>;
  /** p99 of clusterlet's event loop delay since the scrape before (clusterlet_nodejs_eventloop_lag_p99_seconds). */
  loopDelayP99Seconds?: number;
}

const HISTOGRAMS = ['clusterlet_status_mirror_seconds', 'clusterlet_api_request_duration_seconds', 'clusterlet_api_connection_wait_seconds',
  'clusterlet_queue_wait_seconds'];

async function scrape(url: string): Promise<Scrape> {
  return parseScrape(await (await fetch(url)).text());
}

/** What the bench reads of clusterlet's /metrics text. */
export function parseScrape(text: string): Scrape {
  const out: Scrape = { requests: new Map(), watchEvents: new Map(), mirroredEvents: new Map(), watchRestarts: new Map(), buckets: new Map() };
  for (const line of text.split('\n')) {
    const lag = /^clusterlet_nodejs_eventloop_lag_p99_seconds (\S+)$/.exec(line);
    if (lag) out.loopDelayP99Seconds = Number(lag[1]);
    const m = /^(\w+)\{([^}]*)\} (\S+)$/.exec(line);
    if (!m) continue;
    const labels = Object.fromEntries([...m[2].matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (m[1] === 'clusterlet_api_requests_total') out.requests.set(`${labels.cluster}/${labels.verb}`, Number(m[3]));
    if (m[1] === 'clusterlet_mirrored_events_total') out.mirroredEvents.set(`${labels.member}/${labels.result}`, Number(m[3]));
    if (m[1] === 'clusterlet_watch_restarts_total') out.watchRestarts.set(`${labels.cluster} ${labels.resource} ${labels.reason}`, Number(m[3]));
    if (m[1] === 'clusterlet_watch_events_total') {
      // By resource, and by resource and type ("pods modified").
      const byResource = `${labels.cluster}/${labels.resource}`;
      out.watchEvents.set(byResource, (out.watchEvents.get(byResource) ?? 0) + Number(m[3]));
      if (labels.type) out.watchEvents.set(`${byResource} ${labels.type}`, Number(m[3]));
    }
    const base = m[1].replace(/_bucket$/, '');
    if (m[1].endsWith('_bucket') && HISTOGRAMS.includes(base)) {
      const { le, ...rest } = labels;
      const series = `${base}{${Object.entries(rest).map(([k, v]) => `${k}=${v}`).join(',')}}`;
      if (!out.buckets.has(series)) out.buckets.set(series, new Map());
      out.buckets.get(series)!.set(le === '+Inf' ? Infinity : Number(le), Number(m[3]));
    }
  }
  return out;
}

const PRIORITIES = ['high', 'normal', 'low'] as const;

/** Cumulative bucket counts of several series of one histogram added up, le by le; undefined when none has any. */
function sumBuckets(series: (Map<number, number> | undefined)[]): Map<number, number> | undefined {
  let out: Map<number, number> | undefined;
  for (const s of series) for (const [le, v] of s ?? []) (out ??= new Map()).set(le, (out.get(le) ?? 0) + v);
  return out;
}

/** A cluster's requests that waited for a connection (see connectionWaitOf). */
export interface ConnectionWait { share: number; p50?: number; p99?: number; byPriority?: Record<string, number> }

/**
 * Of a cluster's requests between two scrapes, the share that waited for a free connection, p50 / p99 of the wait (ms),
 * and how many of those that waited asked for each priority (requests of a higher one go first).
 */
export function connectionWaitOf(before: Scrape, after: Scrape, cluster: string): ConnectionWait {
  const series = PRIORITIES.map((p) => `clusterlet_api_connection_wait_seconds{cluster=${cluster},priority=${p}}`);
  // Every priority's waits together, for the share and the quantiles.
  const [b, a] = [before, after].map((s) => sumBuckets(series.map((x) => s.buckets.get(x))));
  let waited = 0;
  const byPriority: Record<string, number> = {};
  PRIORITIES.forEach((p, i) => {
    const n = (after.buckets.get(series[i]!)?.get(Infinity) ?? 0) - (before.buckets.get(series[i]!)?.get(Infinity) ?? 0);
    waited += n;
    if (n > 0) byPriority[p] = n;
  });
  let requests = 0;
  // Watches have a pool of their own, without a cap.
  for (const [k, v] of after.requests) if (k.startsWith(`${cluster}/`) && k !== `${cluster}/watch`) requests += v - (before.requests.get(k) ?? 0);
  const share = requests > 0 ? round3(waited / requests) : 0;
  return { share, p50: histogramQuantile(b, a, 0.5), p99: histogramQuantile(b, a, 0.99),
    ...(Object.keys(byPriority).length ? { byPriority } : {}) };
}

/** `host 12.5% (p50 30 / p99 240 ms), member 0%`: a run's connection waits, for its progress line. */
export function waitLine(w: OffloadedRun['connectionWait']): string {
  if (!w) return '–';
  return Object.entries(w).map(([cluster, x]) => `${cluster} ${round1(x.share * 100)}%${
    x.p50 === undefined ? '' : ` (p50 ${x.p50.toFixed(0)} / p99 ${x.p99?.toFixed(0)} ms${
      x.byPriority ? `; ${countsLine(Object.entries(x.byPriority))}` : ''})`}`).join(', ');
}

/** The q-quantile (0..1) in ms of what a histogram series observed between two scrapes, as Prometheus' histogram_quantile. */
export function histogramQuantile(before: Map<number, number> | undefined, after: Map<number, number> | undefined, q: number): number | undefined {
  if (!after) return undefined;
  const les = [...after.keys()].sort((a, b) => a - b);
  const cum = les.map((le) => (after.get(le) ?? 0) - (before?.get(le) ?? 0));
  const total = cum[cum.length - 1];
  if (!total) return undefined;
  const rank = q * total;
  const i = cum.findIndex((c) => c >= rank);
  if (les[i] === Infinity) return les[i - 1] * 1000;
  const lo = i === 0 ? 0 : les[i - 1];
  const below = i === 0 ? 0 : cum[i - 1];
  return (lo + (les[i] - lo) * ((rank - below) / ((cum[i] - below) || 1))) * 1000;
}

/** The labels of a series key (`name{k=v,…}`, as parseScrape makes it). */
function seriesLabels(series: string): Record<string, string> {
  const inner = /\{(.*)\}$/.exec(series)?.[1] ?? '';
  return Object.fromEntries(inner.split(',').filter(Boolean).map((kv) => kv.split('=') as [string, string]));
}

/**
 * The buckets of clusterlet_queue_wait_seconds for `queue`, every priority's added up (or `priority`'s alone): its
 * series have a `priority` label since 2026-11-29, and not before.
 */
export function queueWaitBuckets(s: Scrape, queue: string, priority?: string): Map<number, number> | undefined {
  return sumBuckets(queueWaitSeries(s, queue).filter((w) => priority === undefined || w.priority === priority).map((w) => w.buckets));
}

/** The priorities `queue`'s waits have series of. */
export function queuePriorities(s: Scrape, queue: string): string[] {
  return queueWaitSeries(s, queue).flatMap((w) => (w.priority === undefined ? [] : [w.priority]));
}

/** The series of clusterlet_queue_wait_seconds for `queue`: each one's priority label (if it has one) and buckets. */
function queueWaitSeries(s: Scrape, queue: string): { priority?: string; buckets: Map<number, number> }[] {
  return [...s.buckets].filter(([k]) => k.startsWith('clusterlet_queue_wait_seconds{'))
    .map(([k, buckets]) => ({ labels: seriesLabels(k), buckets }))
    .filter((w) => w.labels.queue === queue).map((w) => ({ priority: w.labels.priority, buckets: w.buckets }));
}

/** Runs of `queue` between two scrapes (its waits' +Inf bucket's rise, every priority), per pod. */
export function runsPerPod(before: Scrape, after: Scrape, queue: string, n: number): number {
  const runs = (sc: Scrape) => queueWaitBuckets(sc, queue)?.get(Infinity) ?? 0;
  return round3((runs(after) - runs(before)) / n);
}

/** What each counter rose by between two scrapes, the ones that did not left out. */
export function countsBetween(before: Counts, after: Counts): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of after) if (v > (before.get(k) ?? 0)) out[k] = v - (before.get(k) ?? 0);
  return out;
}

/** `a 1, b 2`, or `none` when there is nothing. */
function countsLine(counts: [string, number][], none = 'none'): string {
  return counts.length ? counts.map(([k, v]) => `${k} ${v}`).join(', ') : none;
}

/** `p50 12 ms, p99 340 ms` (– for a quantile missing), for the progress lines. */
export function pLine(q: { p50?: number; p99?: number } | undefined): string {
  const f = (x: number | undefined): string => (x === undefined ? '–' : x.toFixed(0));
  return `p50 ${f(q?.p50)} ms, p99 ${f(q?.p99)} ms`;
}

/** `host pods silent 3, member pods gone 1`, or `none`. */
export function restartsLine(r: Record<string, number> | undefined): string {
  return countsLine(Object.entries(r ?? {}));
}

function perPod(before: Counts, after: Counts, n: number): Record<string, Record<string, number>> {
  const out: Record<string, Record<string, number>> = {};
  for (const [k, d] of Object.entries(countsBetween(before, after))) {
    const [cluster, verb] = k.split('/');
    (out[cluster] ??= {})[verb] = round3(d / n);
  }
  return out;
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
}

/** The middle value; of an even count, the mean of the two middle ones (nearest-rank would take the lower). */
export function median(values: number[]): number {
  if (values.length === 0) return 0;
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}
const isOffloaded = (r: RunResult): r is OffloadedRun => r.mode === 'offloaded';
const WRITE_VERBS = ['create', 'update', 'patch', 'delete', 'deletecollection'];
export const MODES: readonly Mode[] = ['direct', 'offloaded', 'hostOnly'];

/** The order of the three modes in a pair (from 1): rotated each pair, so none always runs first or on a warmer machine. */
export function modeOrder(pair: number): Mode[] {
  const k = (pair - 1) % MODES.length;
  return [...MODES.slice(k), ...MODES.slice(0, k)];
}

/** For each key in both maps, the ms from its instant in `from` to its instant in `to`. */
export function deltas(from: Map<string, number>, to: Map<string, number>): number[] {
  const out: number[] = [];
  for (const [key, at] of from) {
    const t = to.get(key);
    if (t !== undefined) out.push(t - at);
  }
  return out;
}

export async function runBench(opts: BenchOptions): Promise<BenchResult> {
  const log = opts.log ?? ((l: string) => process.stderr.write(`[bench] ${l}\n`));
  const h = opts.harness;
  const host = new ClusterClient(loadKubeconfigFile(h.host.kubeconfig), { cluster: 'bench-host', qps: 5000, burst: 10000 });
  const member = new ClusterClient(loadKubeconfigFile(h.member.kubeconfig), { cluster: 'bench-member', qps: 5000, burst: 10000 });
  const hostApps = h.host.kubeConfig().makeApiClient(AppsV1Api);
  const memberApps = h.member.kubeConfig().makeApiClient(AppsV1Api);
  const timeout = opts.runTimeoutMs ?? ((n: number) => 120_000 + n * 60);
  const runs: (RunResult | OffloadedRun)[] = [];
  const startedAt = new Date().toISOString();
  // If clusterlet exits first, what the step does next no longer matters: it fails with that exit.
  const unlessExited = <T>(step: Promise<T>): Promise<T> => {
    step.catch(() => undefined);
    return opts.clusterletExited ? Promise.race([step, opts.clusterletExited]) : step;
  };

  const pids = (): Map<string, number> => new Map([['clusterlet', opts.clusterletPid], ...h.pids()]);

  /** Runs a deletion and waits for its end: when it started, how long it took and the CPU every process used meanwhile. */
  const timedDeletion = async (deletion: () => Promise<void>): Promise<{ tDel: number; deleteMs: number; cpuToDeleted: Record<string, number> }> => {
    const cpu = new CpuAccount(pids());
    const tDel = performance.now();
    await deletion();
    return { tDel, deleteMs: performance.now() - tDel, cpuToDeleted: cpu.seconds() };
  };

  /** A Deployment that one cluster's KWOK completes, without clusterlet: in the member (direct), or on the host node. */
  const plain = (mode: 'direct' | 'hostOnly', client: ClusterClient, apps: AppsV1Api, node?: string) =>
    async (n: number, pair: number): Promise<RunResult> => {
      const ns = `bench-${mode === 'direct' ? 'direct' : 'host-only'}-${n}-${pair}`;
      await client.core.createNamespace({ body: { metadata: { name: ns } } });
      const tracker = new ReadyTracker(client, ns);
      await tracker.start();
      const sampler = mode === 'direct' ? new ProcessSampler(opts.clusterletPid) : undefined;
      const cpu = new CpuAccount(pids());
      const t0 = performance.now();
      await apps.createNamespacedDeployment({ namespace: ns, body: deployment('bench', n, node) });
      await tracker.until(n, timeout(n), `${mode} N=${n}`);
      const cpuToReady = cpu.seconds();
      const readyMs = Math.max(...tracker.readyAt.values()) - t0;
      const stagesMs = { bound: lastOf(tracker.boundAt, t0), ready: readyMs };
      const { tDel, deleteMs, cpuToDeleted } = await timedDeletion(async () => {
        await apps.deleteNamespacedDeployment({ namespace: ns, name: 'bench', propagationPolicy: 'Background' });
        await tracker.empty(timeout(n), `${mode} N=${n}: pods removed`);
      });
      const deleteStagesMs = { terminating: lastOf(tracker.terminatingAt, tDel), gone: lastOf(tracker.goneAt, tDel) };
      const clusterletPeakRssMB = sampler?.stop().peakRssMB;
      tracker.stop();
      await deleteNamespaceAndWait(client, ns, timeout(n));
      return { mode, n, pair, readyMs, cpuToReady, stagesMs, deleteMs, deleteStagesMs, cpuToDeleted,
        ...(clusterletPeakRssMB === undefined ? {} : { clusterletPeakRssMB }) };
    };

  const offloaded = async (n: number, pair: number): Promise<OffloadedRun> => {
    const ns = `bench-offloaded-${n}-${pair}`;
    await host.core.createNamespace({ body: { metadata: { name: ns } } });
    // A delegate has its proxy's name, in the member namespace of the same name (the default namespace mapping):
    // both trackers key a pod by `namespace/name`, so a proxy and its delegate share the key.
    const proxies = new ReadyTracker(host, ns);
    const delegates = new ReadyTracker(member, ns);
    await Promise.all([proxies.start(), delegates.start()]);
    const before = await scrape(opts.metricsURL);
    const sampler = new ProcessSampler(opts.clusterletPid);
    const cpu = new CpuAccount(pids());
    const t0 = performance.now();
    await hostApps.createNamespacedDeployment({ namespace: ns, body: deployment('bench', n, opts.virtualNode) });
    await proxies.until(n, timeout(n), `offloaded N=${n}`);
    const cpuToReady = cpu.seconds();
    const atReady = await scrape(opts.metricsURL);
    const queues = podQueueNames(opts.virtualNode);
    // p50 / p99 from creation to all Ready of a histogram's buckets, as `buckets` reads them from a scrape.
    const between = (buckets: (sc: Scrape) => Map<number, number> | undefined): { p50?: number; p99?: number } => ({
      p50: histogramQuantile(buckets(before), buckets(atReady), 0.5),
      p99: histogramQuantile(buckets(before), buckets(atReady), 0.99),
    });
    const quantiles = (series: string) => between((sc) => sc.buckets.get(series));
    // A queue's waits, all priorities together or one lane's.
    const waitQuantiles = (queue: string, priority?: string) => between((sc) => queueWaitBuckets(sc, queue, priority));
    const connectionWait = Object.fromEntries(['host', 'member'].map((cluster) => [cluster,
      connectionWaitOf(before, atReady, cluster)]));
    const readyMs = Math.max(...proxies.readyAt.values()) - t0;
    const stagesMs = {
      proxiesBound: lastOf(proxies.boundAt, t0), delegatesCreated: lastOf(delegates.seenAt, t0),
      delegatesBound: lastOf(delegates.boundAt, t0), delegatesReady: lastOf(delegates.readyAt, t0), proxiesReady: readyMs,
    };
    const added = deltas(delegates.readyAt, proxies.readyAt);
    const created = deltas(proxies.boundAt, delegates.seenAt);
    const { tDel, deleteMs, cpuToDeleted } = await timedDeletion(async () => {
      await hostApps.deleteNamespacedDeployment({ namespace: ns, name: 'bench', propagationPolicy: 'Background' });
      await delegates.empty(timeout(n), `offloaded N=${n}: delegates removed`);
    });
    await proxies.empty(timeout(n), `offloaded N=${n}: proxies removed`);
    const deleteStagesMs = {
      proxiesTerminating: lastOf(proxies.terminatingAt, tDel), delegatesTerminating: lastOf(delegates.terminatingAt, tDel),
      delegatesGone: lastOf(delegates.goneAt, tDel), proxiesGone: lastOf(proxies.goneAt, tDel),
    };
    const proc = sampler.stop();
    const after = await scrape(opts.metricsURL);
    proxies.stop();
    delegates.stop();
    await deleteNamespaceAndWait(host, ns, timeout(n));
    // clusterlet created it; it may hold nothing, or be gone already.
    await deleteNamespaceAndWait(member, ns, timeout(n)).catch(() => undefined);
    const requestsPerPod = perPod(before.requests, after.requests, n);
    const hostReq = requestsPerPod.host ?? {};
    const ratio = cpuPerApiServer(cpuToReady, cpuToDeleted);
    return {
      mode: 'offloaded', n, pair, readyMs, cpuToReady, stagesMs, deleteMs, deleteStagesMs, cpuToDeleted,
      proxyBoundToDelegateMs: { p50: Math.round(percentile(created, 50)), p99: Math.round(percentile(created, 99)) },
      statusMirrorMs: quantiles('clusterlet_status_mirror_seconds{member=member}'),
      hostPatchMs: quantiles('clusterlet_api_request_duration_seconds{cluster=host,verb=patch}'),
      memberCreateMs: quantiles('clusterlet_api_request_duration_seconds{cluster=member,verb=create}'),
      queueWaitMs: { lifecycle: waitQuantiles(queues.lifecycle), status: waitQuantiles(queues.status) },
      statusWaitByPriorityMs: Object.fromEntries(queuePriorities(atReady, queues.status)
        .map((p) => [p, waitQuantiles(queues.status, p)])),
      queueRunsPerPod: { lifecycle: runsPerPod(before, after, queues.lifecycle, n), status: runsPerPod(before, after, queues.status, n) },
      ...(atReady.loopDelayP99Seconds !== undefined ? { loopDelayP99Ms: Math.round(atReady.loopDelayP99Seconds * 1000) } : {}),
      connectionWait, ...proc,
      cpuMsPerPod: round1((proc.cpuSeconds * 1000) / n), requestsPerPod,
      ...(ratio !== undefined ? { cpuPerApiServer: ratio } : {}),
      watchEventsPerPod: perPod(before.watchEvents, after.watchEvents, n),
      mirroredEventsPerPod: perPod(before.mirroredEvents, after.mirroredEvents, n),
      watchRestarts: countsBetween(before.watchRestarts, after.watchRestarts),
      addedLatencyMs: { p50: percentile(added, 50), p99: percentile(added, 99), max: Math.max(0, ...added) },
      hostWritesPerPod: round3(WRITE_VERBS.reduce((s, v) => s + (hostReq[v] ?? 0), 0)),
      hostListsDuringRun: Math.round((hostReq.list ?? 0) * n),
    };
  };

  const run: Record<Mode, (n: number, pair: number) => Promise<RunResult>> = {
    direct: plain('direct', member, memberApps),
    hostOnly: plain('hostOnly', host, hostApps, opts.hostOnlyNode),
    offloaded,
  };

  const idleOpts = opts.idleRss ?? IDLE_RSS;
  log(`idle RSS: waiting for ${opts.virtualNode} Ready, then ${idleOpts.settleMs / 1000} s to settle`);
  const idleSamples = await unlessExited(idleRssSamples(host, opts.virtualNode, opts.clusterletPid, idleOpts));
  const rssOf = (samples: Rss[]): { medianMB: number; samplesMB: number[] } => {
    const mb = samples.map((s) => s.total);
    return { medianMB: round1(median(mb)), samplesMB: mb.map(round1) };
  };
  const idleRss = rssOf(idleSamples);
  log(`idle RSS ${idleRss.medianMB} MB (samples ${idleRss.samplesMB.join(', ')})`);
  let afterRss: BenchResult['afterRss'];
  const result = (sizes: number[]): BenchResult => ({ machine: machineInfo(h), startedAt, idleRss, ...(afterRss ? { afterRss } : {}),
    runs, summary: summarize(runs, sizes) });

  for (const n of opts.sizes) {
    for (let pair = 1; pair <= opts.pairs; pair++) {
      for (const mode of modeOrder(pair).filter((m) => (opts.modes ?? MODES).includes(m))) {
        const r = await unlessExited(run[mode](n, pair));
        runs.push(r);
        opts.onProgress?.(result(opts.sizes.filter((s) => runs.some((x) => x.n === s))));
        log(`N=${n} pair ${pair} ${r.mode}: ${(r.readyMs / 1000).toFixed(2)} s, delete ${(r.deleteMs / 1000).toFixed(2)} s, CPU s to Ready: ${
          cpuLine(r.cpuToReady)}; last pod at each stage (s): ${stagesLine(r.stagesMs)}; deleted: CPU s ${
          r.cpuToDeleted ? cpuLine(r.cpuToDeleted) : '–'}; last pod at each stage (s): ${stagesLine(r.deleteStagesMs)}`);
        if (isOffloaded(r)) {
          log(`N=${n} pair ${pair} offloaded: clusterlet ${r.cpuMsPerPod} CPU-ms/pod (${r.cpuPerApiServer ?? '–'} of the API servers' CPU; by thread ${
            r.cpuByThread ? countsLine(Object.entries(r.cpuByThread).filter(([, v]) => v > 0), '–') : '–'} s); proxy bound → delegate created ${
            pLine(r.proxyBoundToDelegateMs)} (queue wait ${pLine(r.queueWaitMs?.lifecycle)}; member create ${pLine(r.memberCreateMs)}); added ${
            pLine(r.addedLatencyMs)}; clusterlet's part ${pLine(r.statusMirrorMs)} (queue wait ${pLine(r.queueWaitMs?.status)}${
            Object.entries(r.statusWaitByPriorityMs ?? {}).map(([p, q]) => `, ${p} ${pLine(q)}`).join('')}); event loop delay p99 ${
            r.loopDelayP99Ms ?? '–'} ms; host status patch ${pLine(r.hostPatchMs)}; waited for a connection: ${waitLine(r.connectionWait)}; member events per pod ${
            countsLine(Object.values(r.mirroredEventsPerPod ?? {}).flatMap((m) => Object.entries(m)), '–')}; RSS ${r.peakRssMB} MB, host writes/pod ${
            r.hostWritesPerPod}; queue runs/pod: lifecycle ${r.queueRunsPerPod?.lifecycle ?? '–'}, status ${
            r.queueRunsPerPod?.status ?? '–'}; watch restarts: ${restartsLine(r.watchRestarts)}`);
        }
      }
    }
  }
  if (runs.some(isOffloaded)) {
    log(`RSS after the runs: ${idleOpts.settleMs / 1000} s to settle`);
    afterRss = rssOf(await unlessExited(idleRssSamples(host, opts.virtualNode, opts.clusterletPid, idleOpts)));
    log(`RSS after the runs ${afterRss.medianMB} MB (samples ${afterRss.samplesMB.join(', ')})`);
  }
  return result(opts.sizes);
}

const cpuTotal = (cpu: Record<string, number>): number => Object.values(cpu).reduce((a, b) => a + b, 0);

/**
 * clusterlet's CPU over the host's and the member's kube-apiserver's in one offloaded run (create → Ready → delete):
 * the same work for both builds of an A/B, measured against what the machine's speed of the moment does to the API
 * servers too. On 2026-11-28 runs of one build spread 8.9-12.9 CPU-ms per pod and 0.145-0.161 by this ratio
 * (bench/results/metrics-cost-85821dc.md). Undefined when the API servers' CPU was not sampled.
 */
export function cpuPerApiServer(toReady: Record<string, number>, toDeleted: Record<string, number> | undefined): number | undefined {
  const of = (k: string): number => cpuOfRun(toReady, toDeleted, k);
  const api = of('host/kube-apiserver') + of('member/kube-apiserver');
  return api > 0 ? round3(of('clusterlet') / api) : undefined;
}

/** The CPU seconds process `k` used over a whole run: to all Ready, then to all deleted. */
const cpuOfRun = (toReady: Record<string, number>, toDeleted: Record<string, number> | undefined, k: string): number =>
  (toReady[k] ?? 0) + (toDeleted?.[k] ?? 0);
const round1 = (x: number): number => Math.round(x * 10) / 10;
const round2 = (x: number): number => Math.round(x * 100) / 100;
const round3 = (x: number): number => Math.round(x * 1000) / 1000;
/** Milliseconds from t0 to the latest of the instants. */
function lastOf(at: Map<string, number>, t0: number): number {
  let last = t0;
  for (const t of at.values()) if (t > last) last = t;
  return Math.round(last - t0);
}

function medianOf(values: (number | undefined)[]): number | undefined {
  const v = values.filter((x): x is number => x !== undefined);
  return v.length ? Math.round(median(v)) : undefined;
}

const stagesLine = (stages: Record<string, number> | undefined): string =>
  Object.entries(stages ?? {}).map(([k, v]) => `${k} ${(v / 1000).toFixed(1)}`).join(', ');

function cpuLine(cpu: Record<string, number>): string {
  const total = cpuTotal(cpu);
  return `total ${total.toFixed(1)}; ` + Object.entries(cpu).filter(([, v]) => v >= 0.05).sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${v.toFixed(1)}`).join(', ');
}

/** What clusterlet cost while the member ran pods of its own (the direct runs that sampled it). */
function directClusterlet(direct: RunResult[], n: number):
  Pick<SizeSummary, 'directClusterletPeakRssMB' | 'directClusterletCpuMsPerPod' | 'directClusterletCpuPerMemberApiServer'> {
  const sampled = direct.filter((r) => r.clusterletPeakRssMB !== undefined);
  if (sampled.length === 0) return {};
  const of = (r: RunResult, k: string): number => cpuOfRun(r.cpuToReady, r.cpuToDeleted, k);
  const cpuMs = sampled.map((r) => of(r, 'clusterlet') * 1000 / n);
  const ratios = sampled.filter((r) => of(r, 'member/kube-apiserver') > 0).map((r) => of(r, 'clusterlet') / of(r, 'member/kube-apiserver'));
  return {
    directClusterletPeakRssMB: Math.max(...sampled.map((r) => r.clusterletPeakRssMB!)),
    directClusterletCpuMsPerPod: round2(median(cpuMs)),
    ...(ratios.length ? { directClusterletCpuPerMemberApiServer: round3(median(ratios)) } : {}),
  };
}

/** The offloaded runs' cpuPerApiServer, those that have it, and their median. */
function apiRatios(o: OffloadedRun[]): Pick<SizeSummary, 'cpuPerApiServer' | 'cpuPerApiServerMedian'> {
  const xs = o.map((r) => r.cpuPerApiServer).filter((x): x is number => x !== undefined);
  return { cpuPerApiServer: xs, ...(xs.length ? { cpuPerApiServerMedian: round3(median(xs)) } : {}) };
}

/** The offloaded runs' share of clusterlet's CPU on V8's helper threads (v8Share), those that have it, and their median. */
function v8Shares(o: OffloadedRun[]): Pick<SizeSummary, 'v8ThreadShare' | 'v8ThreadShareMedian'> {
  const shares = o.map((r) => v8Share(r.cpuByThread)).filter((x): x is number => x !== undefined);
  return shares.length ? { v8ThreadShare: shares, v8ThreadShareMedian: round2(median(shares)) } : {};
}

/** The share of a run's CPU on V8's helper threads, to 2 places; undefined without threads or CPU. */
export function v8Share(t: Record<ThreadKind, number> | undefined): number | undefined {
  const total = t ? cpuTotal(t) : 0;
  return t && total > 0 ? round2(t.v8 / total) : undefined;
}

export function summarize(runs: (RunResult | OffloadedRun)[], sizes: number[]): SizeSummary[] {
  return sizes.map((n) => {
    const ofMode = (mode: Mode): RunResult[] => runs.filter((r) => r.n === n && r.mode === mode);
    const d = ofMode('direct'), f = ofMode('hostOnly'), o = runs.filter(isOffloaded).filter((r) => r.n === n);
    const ready = (rs: RunResult[]): Map<number, number> => byPair(rs, (r) => r.readyMs);
    const del = (rs: RunResult[]): Map<number, number> => byPair(rs, (r) => r.deleteMs);
    const ratios = pairRatios(ready(o), ready(d));
    const floorRatios = pairRatios(ready(o), pairMax(ready(d), ready(f)));
    const deleteRatios = pairRatios(del(o), del(d));
    const last = o[o.length - 1];
    return {
      n,
      directMedianMs: median(d.map((r) => r.readyMs)),
      hostOnlyMedianMs: median(f.map((r) => r.readyMs)),
      offloadedMedianMs: median(o.map((r) => r.readyMs)),
      ratios,
      ratioMedian: round2(median(ratios)),
      floorRatios,
      floorRatioMedian: round2(median(floorRatios)),
      cpuMsPerPod: o.map((r) => r.cpuMsPerPod),
      cpuMsPerPodMedian: round1(median(o.map((r) => r.cpuMsPerPod))),
      ...apiRatios(o),
      ...v8Shares(o),
      addedLatencyP50Ms: Math.round(median(o.map((r) => r.addedLatencyMs.p50))),
      addedLatencyP99Ms: Math.round(median(o.map((r) => r.addedLatencyMs.p99))),
      proxyBoundToDelegateP50Ms: Math.round(median(o.map((r) => r.proxyBoundToDelegateMs.p50))),
      proxyBoundToDelegateP99Ms: Math.round(median(o.map((r) => r.proxyBoundToDelegateMs.p99))),
      statusMirrorP50Ms: medianOf(o.map((r) => r.statusMirrorMs?.p50)),
      statusMirrorP99Ms: medianOf(o.map((r) => r.statusMirrorMs?.p99)),
      hostPatchP50Ms: medianOf(o.map((r) => r.hostPatchMs?.p50)),
      hostPatchP99Ms: medianOf(o.map((r) => r.hostPatchMs?.p99)),
      memberCreateP50Ms: medianOf(o.map((r) => r.memberCreateMs?.p50)),
      memberCreateP99Ms: medianOf(o.map((r) => r.memberCreateMs?.p99)),
      lifecycleWaitP50Ms: medianOf(o.map((r) => r.queueWaitMs?.lifecycle.p50)),
      lifecycleWaitP99Ms: medianOf(o.map((r) => r.queueWaitMs?.lifecycle.p99)),
      statusWaitP50Ms: medianOf(o.map((r) => r.queueWaitMs?.status.p50)),
      statusWaitP99Ms: medianOf(o.map((r) => r.queueWaitMs?.status.p99)),
      loopDelayP99Ms: medianOf(o.map((r) => r.loopDelayP99Ms)),
      cpuToReadyDirect: round2(median(d.map((r) => cpuTotal(r.cpuToReady)))),
      cpuToReadyHostOnly: round2(median(f.map((r) => cpuTotal(r.cpuToReady)))),
      cpuToReadyOffloaded: round2(median(o.map((r) => cpuTotal(r.cpuToReady)))),
      cpuToReadyClusterlet: round2(median(o.map((r) => r.cpuToReady.clusterlet ?? 0))),
      peakRssMB: Math.max(0, ...o.map((r) => r.peakRssMB)),
      ...directClusterlet(d, n),
      cpuSecondsMedian: median(o.map((r) => r.cpuSeconds)),
      hostWritesPerPod: median(o.map((r) => r.hostWritesPerPod)),
      deleteDirectMedianMs: median(d.map((r) => r.deleteMs)),
      deleteHostOnlyMedianMs: median(f.map((r) => r.deleteMs)),
      deleteOffloadedMedianMs: median(o.map((r) => r.deleteMs)),
      deleteRatios,
      deleteRatioMedian: round2(median(deleteRatios)),
      requestsPerPod: last?.requestsPerPod ?? {},
      watchEventsPerPod: last?.watchEventsPerPod ?? {},
      stagesDirectMs: medianStages(d),
      stagesHostOnlyMs: medianStages(f),
      stagesOffloadedMs: medianStages(o),
      deleteStagesDirectMs: medianStages(d, 'deleteStagesMs'),
      deleteStagesHostOnlyMs: medianStages(f, 'deleteStagesMs'),
      deleteStagesOffloadedMs: medianStages(o, 'deleteStagesMs'),
      cpuToDeletedDirect: medianCpu(d, cpuTotal),
      cpuToDeletedHostOnly: medianCpu(f, cpuTotal),
      cpuToDeletedOffloaded: medianCpu(o, cpuTotal),
      cpuToDeletedClusterlet: medianCpu(o, (c) => c.clusterlet ?? 0),
    };
  });
}

const byPair = (runs: RunResult[], value: (r: RunResult) => number): Map<number, number> => new Map(runs.map((r) => [r.pair, value(r)]));

/** a / b for each pair (by number) that both have, rounded to 2 decimals, in a's order. */
export function pairRatios(a: Map<number, number>, b: Map<number, number>): number[] {
  return [...a].filter(([pair]) => b.has(pair)).map(([pair, x]) => round2(x / b.get(pair)!));
}

/** The larger of a's and b's value for each pair that both have: the floor an offloaded run is read against. */
export function pairMax(a: Map<number, number>, b: Map<number, number>): Map<number, number> {
  return new Map([...a].filter(([pair]) => b.has(pair)).map(([pair, x]) => [pair, Math.max(x, b.get(pair)!)]));
}

function medianStages(runs: RunResult[], field: 'stagesMs' | 'deleteStagesMs' = 'stagesMs'): Record<string, number> | undefined {
  const withStages = runs.filter((r) => r[field]);
  if (withStages.length === 0) return undefined;
  const out: Record<string, number> = {};
  for (const k of Object.keys(withStages[0]![field]!)) out[k] = Math.round(median(withStages.map((r) => r[field]![k] ?? NaN)));
  return out;
}

/** The median over the runs that counted it of one figure of the CPU their deletion took. */
function medianCpu(runs: RunResult[], of: (cpu: Record<string, number>) => number): number | undefined {
  const v = runs.flatMap((r) => (r.cpuToDeleted ? [of(r.cpuToDeleted)] : []));
  return v.length ? round2(median(v)) : undefined;
}

function machineInfo(h: Harness): Record<string, string | number> {
  // Deferred import keeps this file free of top-level side effects.
  const os = process.getBuiltinModule('node:os');
  return {
    cpu: os.cpus()[0]?.model ?? 'unknown', cores: os.cpus().length,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30), kernel: os.release(), node: process.version,
    kubernetes: h.bin.dir.match(/k8s-(v[\d.]+)/)?.[1] ?? 'unknown',
  };
}

export function toMarkdown(r: BenchResult): string {
  const m = r.machine;
  // A mode the bench did not run (its --modes) shows as –, not as the 0 its empty medians are.
  const ran = (mode: Mode, n?: number): boolean => r.runs.some((x) => x.mode === mode && (n === undefined || x.n === n));
  const ifRan = (mode: Mode, n: number, text: string): string => (ran(mode, n) ? text : '–');
  const s2 = (ms: number, mode: Mode, n: number): string => ifRan(mode, n, `${(ms / 1000).toFixed(2)} s`);
  const cpu = (x: number, mode: Mode, n: number): string => ifRan(mode, n, String(x));
  const modesRan = MODES.filter((mode) => ran(mode));
  const ms = (x: number | undefined): string => (x === undefined ? '–' : String(x));
  const sec = (x: number | undefined): string => (x === undefined ? '–' : (x / 1000).toFixed(1));
  const perPair = (xs: number[], med: number): string => (xs.length ? `${xs.join(', ')} (median ${med})` : '–');
  const lines = [
    `# clusterlet benchmark — ${r.startedAt}`,
    '',
    `Machine: ${m.cores} × ${m.cpu}, ${m.memoryGiB} GiB, Linux ${m.kernel}, Node ${m.node}, Kubernetes ${m.kubernetes} (local control planes, KWOK nodes).`,
    '',
    `Idle RSS of clusterlet (one member, no pods; median of ${r.idleRss.samplesMB.length} samples once its node was Ready and settled): `
      + `**${r.idleRss.medianMB} MB** (target ≤ 70 MB).${r.afterRss ? ` After the runs, every pod gone, settled the same way: `
      + `**${r.afterRss.medianMB} MB**.` : ''}`,
    '',
    'Each pair runs a Deployment of N three ways, in an order rotated each pair: **direct** in the member, **host-only** bound to a '
      + 'KWOK node of the host (the host control plane\'s cost alone) and **offloaded** through clusterlet'
      + `${modesRan.length === MODES.length ? '' : ` (this bench ran only: ${modesRan.join(', ')})`}. `
      + 'Creation → all N Ready, medians over the pairs; the CPU is clusterlet\'s over the whole offloaded run (create → Ready → delete) / N.',
    '',
    '| N | direct | host-only | offloaded | offloaded / direct per pair | offloaded / max(host-only, direct) per pair | clusterlet CPU-ms per pod per pair (target ≤ 4) | clusterlet peak RSS |',
    '|---:|---:|---:|---:|---|---|---|---:|',
  ];
  for (const s of r.summary) {
    lines.push(`| ${s.n} | ${s2(s.directMedianMs, 'direct', s.n)} | ${s2(s.hostOnlyMedianMs, 'hostOnly', s.n)} | ${
      s2(s.offloadedMedianMs, 'offloaded', s.n)} | ${perPair(s.ratios, s.ratioMedian)} | ${
      perPair(s.floorRatios, s.floorRatioMedian)} | ${perPair(s.cpuMsPerPod, s.cpuMsPerPodMedian)} | ${s.cpuMsPerPod.length ? `${s.peakRssMB} MB` : '–'} |`);
  }
  const related = r.summary.filter((s) => s.cpuPerApiServer?.length);
  if (related.length) {
    lines.push('', 'clusterlet\'s CPU over the two kube-apiservers\' CPU in the same offloaded runs (create → Ready → delete): the '
      + 'machine\'s speed of the moment moves both, so this compares builds across runs better than CPU-ms per pod:', '');
    lines.push('| N | clusterlet CPU / API servers\' CPU per pair | of clusterlet\'s CPU, the share on V8\'s helper threads (old-generation marking, parallel scavenges, compilation) per pair |',
      '|---:|---|---|');
    for (const s of related) {
      lines.push(`| ${s.n} | ${perPair(s.cpuPerApiServer, s.cpuPerApiServerMedian ?? 0)} | ${
        s.v8ThreadShare?.length ? perPair(s.v8ThreadShare, s.v8ThreadShareMedian ?? 0) : '–'} |`);
    }
  }
  const watched = r.summary.filter((s) => s.directClusterletPeakRssMB !== undefined);
  if (watched.length) {
    lines.push('', 'clusterlet watches every pod of its member: while the member ran N pods of its own (the direct runs), '
      + 'its peak RSS (largest of the runs) and its CPU from their creation until they were gone (median), also over the '
      + 'member kube-apiserver\'s CPU in the same runs (which compares builds across runs better):', '');
    lines.push('| N | clusterlet peak RSS | clusterlet CPU-ms per member pod | clusterlet CPU / member API server\'s |', '|---:|---:|---:|---:|');
    for (const s of watched) {
      lines.push(`| ${s.n} | ${s.directClusterletPeakRssMB} MB | ${s.directClusterletCpuMsPerPod} | ${s.directClusterletCpuPerMemberApiServer ?? '–'} |`);
    }
  }
  lines.push('', 'Deleting the Deployment → no pod left (offloaded: no delegate left in the member), medians over the pairs:', '');
  lines.push('| N | direct | host-only | offloaded | offloaded / direct per pair (target ≤ 1.5) |', '|---:|---:|---:|---:|---|');
  for (const s of r.summary) {
    lines.push(`| ${s.n} | ${s2(s.deleteDirectMedianMs, 'direct', s.n)} | ${s2(s.deleteHostOnlyMedianMs, 'hostOnly', s.n)} | ${
      s2(s.deleteOffloadedMedianMs, 'offloaded', s.n)} | ${perPair(s.deleteRatios, s.deleteRatioMedian)} |`);
  }
  if (r.summary.some((s) => s.deleteStagesOffloadedMs || s.deleteStagesDirectMs || s.deleteStagesHostOnlyMs)) {
    lines.push('', 'When the last pod reached each stage of its deletion, in seconds after the Deployment was deleted, and the CPU-s of all '
      + 'processes until no pod was left (offloaded: no delegate), medians over the pairs:', '');
    lines.push('| N | direct: terminating → gone (CPU-s) | host-only: terminating → gone (CPU-s) | offloaded: proxies terminating → delegates terminating → '
      + 'delegates gone → proxies gone (CPU-s, clusterlet\'s) |', '|---:|---|---|---|');
    const cpuS = (x: number | undefined): string => (x === undefined ? '–' : x.toFixed(1));
    for (const s of r.summary) {
      const d = s.deleteStagesDirectMs, f = s.deleteStagesHostOnlyMs, o = s.deleteStagesOffloadedMs;
      lines.push(`| ${s.n} | ${sec(d?.terminating)} → ${sec(d?.gone)} (${cpuS(s.cpuToDeletedDirect)}) | ${sec(f?.terminating)} → ${sec(f?.gone)} (${
        cpuS(s.cpuToDeletedHostOnly)}) | ${sec(o?.proxiesTerminating)} → ${sec(o?.delegatesTerminating)} → ${sec(o?.delegatesGone)} → ${
        sec(o?.proxiesGone)} (${cpuS(s.cpuToDeletedOffloaded)}, ${cpuS(s.cpuToDeletedClusterlet)}) |`);
    }
  }
  lines.push('', 'Latency on clusterlet\'s own path, both ways, and the latency offloading adds (p50 / p99 of each run, medians over the pairs; '
    + 'target on clusterlet\'s path: p99 ≤ 200 ms at N=100, ≤ 1 s at N=1,000). Proxy bound → delegate created is seen by the bench\'s '
    + 'watches, the queue wait and member create that are part of it clusterlet\'s histograms; delegate status seen → proxy status '
    + 'written is clusterlet\'s histogram, as are its queue wait and host patch. A queue wait is how long a pod\'s key waited for one of '
    + 'the queue\'s workers (the lifecycle queue for the creation, the status queue for the status). The last column is the p99 of '
    + 'clusterlet\'s event loop delay from creation to all Ready: how late it was to read what its watches brought:', '');
  lines.push('| N | proxy bound → delegate created | its queue wait | its member create | delegate status seen → proxy status written | its queue wait | its host status patch | added latency (delegate Ready → proxy Ready) | event loop delay p99 |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const s of r.summary) {
    lines.push(`| ${s.n} | ${s.proxyBoundToDelegateP50Ms} / ${s.proxyBoundToDelegateP99Ms} ms | ${ms(s.lifecycleWaitP50Ms)} / ${ms(s.lifecycleWaitP99Ms)} ms | ${
      ms(s.memberCreateP50Ms)} / ${ms(s.memberCreateP99Ms)} ms | ${ms(s.statusMirrorP50Ms)} / ${ms(s.statusMirrorP99Ms)} ms | ${
      ms(s.statusWaitP50Ms)} / ${ms(s.statusWaitP99Ms)} ms | ${ms(s.hostPatchP50Ms)} / ${ms(s.hostPatchP99Ms)} ms | ${s.addedLatencyP50Ms} / ${s.addedLatencyP99Ms} ms | ${
      ms(s.loopDelayP99Ms)} ms |`);
  }
  lines.push('', 'Cost (medians over the pairs):', '');
  lines.push('| N | clusterlet CPU s / offloaded run | host writes / pod | CPU-s of all processes to all Ready: direct / host-only / offloaded (clusterlet) |',
    '|---:|---:|---:|---:|');
  for (const s of r.summary) {
    lines.push(`| ${s.n} | ${s.cpuSecondsMedian.toFixed(1)} | ${s.hostWritesPerPod} | ${cpu(s.cpuToReadyDirect, 'direct', s.n)} / ${
      cpu(s.cpuToReadyHostOnly, 'hostOnly', s.n)} / ${cpu(s.cpuToReadyOffloaded, 'offloaded', s.n)} (${cpu(s.cpuToReadyClusterlet, 'offloaded', s.n)}) |`);
  }
  lines.push('', 'When the last pod reached each stage, in seconds after the Deployment was created (medians over the pairs):', '');
  lines.push('| N | direct: bound → Ready | host-only: bound → Ready | offloaded: proxies bound → delegates created → delegates bound → delegates Ready → proxies Ready |',
    '|---:|---|---|---|');
  for (const s of r.summary) {
    const d = s.stagesDirectMs, f = s.stagesHostOnlyMs, o = s.stagesOffloadedMs;
    lines.push(`| ${s.n} | ${sec(d?.bound)} → ${sec(d?.ready)} | ${sec(f?.bound)} → ${sec(f?.ready)} | ${sec(o?.proxiesBound)} → ${sec(o?.delegatesCreated)} → ${
      sec(o?.delegatesBound)} → ${sec(o?.delegatesReady)} → ${sec(o?.proxiesReady)} |`);
  }
  lines.push('', 'API requests clusterlet made per pod (create → delete), by cluster and verb:', '');
  lines.push('| N | cluster | requests per pod by verb |', '|---:|---|---|');
  for (const s of r.summary) {
    for (const [cluster, verbs] of Object.entries(s.requestsPerPod)) {
      lines.push(`| ${s.n} | ${cluster} | ${Object.entries(verbs).map(([v, c]) => `${v} ${c}`).join(', ')} |`);
    }
  }
  if (r.summary.some((s) => Object.keys(s.watchEventsPerPod ?? {}).length > 0)) {
    lines.push('', 'Watch events clusterlet received per pod (create → delete), by cluster and resource:', '');
    lines.push('| N | cluster | watch events per pod by resource (by type) |', '|---:|---|---|');
    for (const s of r.summary) {
      for (const [cluster, resources] of Object.entries(s.watchEventsPerPod ?? {})) {
        const byType = (res: string): string => {
          const types = Object.entries(resources).filter(([k]) => k.startsWith(`${res} `)).map(([k, c]) => `${k.slice(res.length + 1)} ${c}`);
          return types.length ? ` (${types.join(', ')})` : '';
        };
        lines.push(`| ${s.n} | ${cluster} | ${Object.entries(resources).filter(([k]) => !k.includes(' '))
          .map(([res, c]) => `${res} ${c}${byType(res)}`).join(', ')} |`);
      }
    }
  }
  return lines.join('\n') + '\n';
}
