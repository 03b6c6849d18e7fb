// The benchmark: a Deployment of N replicas created directly in the member ("direct") against one
// created on the host and offloaded through clusterlet ("offloaded"), alternating, timed by watches.
import { readFileSync } from 'node:fs';
import { AppsV1Api, type V1Deployment, type V1Pod } from '@kubernetes/client-node';
import type { Harness } from '../test/harness/harness.ts';
import { ClusterClient } from '../src/kube/client.ts';
import { loadKubeconfigFile } from '../src/kube/kubeconfig.ts';
import { Informer } from '../src/kube/informer.ts';
import { listWatch } from '../src/kube/listwatch.ts';
import { deleteNamespaceAndWait } from '../test/support/env.ts';

export interface BenchOptions {
  harness: Harness;
  sizes: number[];
  pairs: number;
  /** The clusterlet process to measure, and its /metrics URL. */
  clusterletPid: number;
  metricsURL: string;
  virtualNode: string;
  log?: (line: string) => void;
  /** Called after every run with the results so far (run.ts writes them, so a stopped bench keeps what it measured). */
  onProgress?: (partial: BenchResult) => void;
  /** Rejects if clusterlet exits: the run in progress fails with that. */
  clusterletExited?: Promise<never>;
  /** Per-run bound; a run that takes longer fails the bench. */
  runTimeoutMs?: (n: number) => number;
}

export interface RunResult {
  mode: 'direct' | 'offloaded';
  n: number;
  pair: number;
  /** Deployment creation → all N pods Ready, seen by a watch. */
  readyMs: number;
  /** CPU seconds each process used from creation until all N were Ready (clusterlet, etcd, host/*, member/*). */
  cpuToReady: Record<string, number>;
  /**
   * When (ms after creation) the last pod reached each stage, as watches saw it: direct `bound`, `ready`;
   * offloaded `proxiesBound`, `delegatesCreated`, `delegatesBound`, `delegatesReady`, `proxiesReady`.
   */
  stagesMs?: Record<string, number>;
}

export interface OffloadedRun extends RunResult {
  mode: 'offloaded';
  addedLatencyMs: { p50: number; p99: number; max: number };
  peakRssMB: number;
  cpuSeconds: number;
  /** Of the added latency, clusterlet's own part: delegate status seen → proxy status written (its histogram, ms). */
  statusMirrorMs?: { p50?: number; p99?: number };
  /** Latency of clusterlet's status patches to the host (its histogram, ms). */
  hostPatchMs?: { p50?: number; p99?: number };
  /** API requests clusterlet made per pod (create → delete), by cluster and verb. */
  requestsPerPod: Record<string, Record<string, number>>;
  hostWritesPerPod: number;
  hostListsDuringRun: number;
  /** Deployment deleted → no delegate left in the member. */
  deleteMs: number;
}

export interface SizeSummary {
  n: number;
  directMedianMs: number;
  offloadedMedianMs: number;
  ratios: number[];
  ratioMedian: number;
  addedLatencyP50Ms: number;
  addedLatencyP99Ms: number;
  /** Medians over the pairs of clusterlet's part of the added latency, and of its host status patch latency. */
  statusMirrorP50Ms?: number;
  statusMirrorP99Ms?: number;
  hostPatchP50Ms?: number;
  hostPatchP99Ms?: number;
  /** Medians of the CPU seconds all processes used until all N were Ready: direct, offloaded, and clusterlet's share. */
  cpuToReadyDirect: number;
  cpuToReadyOffloaded: number;
  cpuToReadyClusterlet: number;
  peakRssMB: number;
  cpuSecondsMedian: number;
  hostWritesPerPod: number;
  deleteMedianMs: number;
  requestsPerPod: Record<string, Record<string, number>>;
  /** Medians over the runs of when the last pod reached each stage (ms after creation). */
  stagesDirectMs?: Record<string, number>;
  stagesOffloadedMs?: Record<string, number>;
}

export interface BenchResult {
  machine: Record<string, string | number>;
  startedAt: string;
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

export const isReady = (p: V1Pod): boolean => !!p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');

/** Watches pods of one namespace and records when each first became Ready; resolves when `n` are. */
export class ReadyTracker {
  readonly readyAt = new Map<string, number>();
  /** When each pod was first seen, and first seen bound to a node. */
  readonly seenAt = new Map<string, number>();
  readonly boundAt = new Map<string, number>();
  readonly informer: Informer<V1Pod>;
  #waiters: { n: number; resolve: () => void }[] = [];

  constructor(client: ClusterClient, namespace: string) {
    this.informer = new Informer<V1Pod>(`bench-${namespace}`, listWatch<V1Pod>(client, {
      path: `/api/v1/namespaces/${namespace}/pods`, model: 'V1Pod', resource: 'pods',
      list: (p) => client.core.listNamespacedPod({ namespace, ...p }),
    }, { silenceMs: 120_000 }));
    this.informer.events$.subscribe((ev) => {
      if (ev.type === 'DELETED') return;
      const now = performance.now();
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
  #timer: NodeJS.Timeout;

  constructor(pid: number) {
    this.#pid = pid;
    this.#cpu0 = cpuTicks(pid);
    this.#sample();
    this.#timer = setInterval(() => this.#sample(), 200);
  }

  #sample(): void {
    let status: string;
    try {
      status = readFileSync(`/proc/${this.#pid}/status`, 'utf8');
    } catch {
      return; // the process is gone: the run fails on its own (BenchOptions.clusterletExited)
    }
    const m = /VmRSS:\s+(\d+) kB/.exec(status);
    if (m) this.#peakKB = Math.max(this.#peakKB, Number(m[1]));
  }

  stop(): { peakRssMB: number; cpuSeconds: number } {
    clearInterval(this.#timer);
    this.#sample();
    return { peakRssMB: Math.round(this.#peakKB / 1024), cpuSeconds: (cpuTicks(this.#pid) - this.#cpu0) / 100 };
  }
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

function cpuTicks(pid: number): number {
  // Fields after the command name: utime is the 14th field, stime the 15th (clock ticks, 100 Hz on Linux).
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return NaN; // gone
  }
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(rest[11]) + Number(rest[12]);
}

type Counts = Map<string, number>;

interface Scrape {
  /** API requests by `cluster/verb`. */
  requests: Counts;
  /** Cumulative bucket counts of the histograms the bench reads, by series (`name{labels}` without le) then le. */
  buckets: Map<string, Map<number, number>>;
}

const HISTOGRAMS = ['clusterlet_status_mirror_seconds', 'clusterlet_api_request_duration_seconds'];

async function scrape(url: string): Promise<Scrape> {
  const text = await (await fetch(url)).text();
  const out: Scrape = { requests: new Map(), buckets: new Map() };
  for (const line of text.split('\n')) {
    const m = /^(\w+)\{([^}]*)\} (\S+)$/.exec(line);
    if (!m) continue;
    const labels = Object.fromEntries([...m[2].matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (m[1] === 'clusterlet_api_requests_total') out.requests.set(`${labels.cluster}/${labels.verb}`, Number(m[3]));
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

function perPod(before: Counts, after: Counts, n: number): Record<string, Record<string, number>> {
  const out: Record<string, Record<string, number>> = {};
  for (const [k, v] of after) {
    const d = v - (before.get(k) ?? 0);
    if (d <= 0) continue;
    const [cluster, verb] = k.split('/');
    (out[cluster] ??= {})[verb] = Math.round((d / n) * 1000) / 1000;
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

  const pids = (): Map<string, number> => new Map([['clusterlet', opts.clusterletPid], ...h.pids()]);

  const direct = async (n: number, pair: number): Promise<RunResult> => {
    const ns = `bench-direct-${n}-${pair}`;
    await member.core.createNamespace({ body: { metadata: { name: ns } } });
    const tracker = new ReadyTracker(member, ns);
    await tracker.start();
    const cpu = new CpuAccount(pids());
    const t0 = performance.now();
    await memberApps.createNamespacedDeployment({ namespace: ns, body: deployment('bench', n) });
    await tracker.until(n, timeout(n), `direct N=${n}`);
    const cpuToReady = cpu.seconds();
    const readyMs = Math.max(...tracker.readyAt.values()) - t0;
    const stagesMs = { bound: lastOf(tracker.boundAt, t0), ready: readyMs };
    await memberApps.deleteNamespacedDeployment({ namespace: ns, name: 'bench', propagationPolicy: 'Background' });
    await tracker.empty(timeout(n), `direct N=${n} cleanup`);
    tracker.stop();
    await deleteNamespaceAndWait(member, ns, timeout(n));
    return { mode: 'direct', n, pair, readyMs, cpuToReady, stagesMs };
  };

  const offloaded = async (n: number, pair: number): Promise<OffloadedRun> => {
    const ns = `bench-offloaded-${n}-${pair}`;
    await host.core.createNamespace({ body: { metadata: { name: ns } } });
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
    const quantiles = (series: string): { p50?: number; p99?: number } => ({
      p50: histogramQuantile(before.buckets.get(series), atReady.buckets.get(series), 0.5),
      p99: histogramQuantile(before.buckets.get(series), atReady.buckets.get(series), 0.99),
    });
    const readyMs = Math.max(...proxies.readyAt.values()) - t0;
    const stagesMs = {
      proxiesBound: lastOf(proxies.boundAt, t0), delegatesCreated: lastOf(delegates.seenAt, t0),
      delegatesBound: lastOf(delegates.boundAt, t0), delegatesReady: lastOf(delegates.readyAt, t0), proxiesReady: readyMs,
    };
    const added: number[] = [];
    for (const [key, at] of proxies.readyAt) {
      const d = delegates.readyAt.get(key);
      if (d !== undefined) added.push(at - d);
    }
    const tDel = performance.now();
    await hostApps.deleteNamespacedDeployment({ namespace: ns, name: 'bench', propagationPolicy: 'Background' });
    await delegates.empty(timeout(n), `offloaded N=${n}: delegates removed`);
    const deleteMs = performance.now() - tDel;
    await proxies.empty(timeout(n), `offloaded N=${n}: proxies removed`);
    const proc = sampler.stop();
    const after = await scrape(opts.metricsURL);
    proxies.stop();
    delegates.stop();
    await deleteNamespaceAndWait(host, ns, timeout(n));
    // clusterlet created it; it may hold nothing, or be gone already.
    await deleteNamespaceAndWait(member, ns, timeout(n)).catch(() => undefined);
    const requestsPerPod = perPod(before.requests, after.requests, n);
    const hostReq = requestsPerPod.host ?? {};
    return {
      mode: 'offloaded', n, pair, readyMs, cpuToReady, stagesMs, deleteMs,
      statusMirrorMs: quantiles('clusterlet_status_mirror_seconds{member=member}'),
      hostPatchMs: quantiles('clusterlet_api_request_duration_seconds{cluster=host,verb=patch}'), ...proc, requestsPerPod,
      addedLatencyMs: { p50: percentile(added, 50), p99: percentile(added, 99), max: Math.max(0, ...added) },
      hostWritesPerPod: Math.round(WRITE_VERBS.reduce((s, v) => s + (hostReq[v] ?? 0), 0) * 1000) / 1000,
      hostListsDuringRun: Math.round((hostReq.list ?? 0) * n),
    };
  };

  for (const n of opts.sizes) {
    for (let pair = 1; pair <= opts.pairs; pair++) {
      // Alternate which goes first, so neither always runs on a warmer machine.
      const order = pair % 2 === 1 ? [direct, offloaded] : [offloaded, direct];
      for (const run of order) {
        const running = run(n, pair);
        running.catch(() => undefined); // if clusterlet exits first, what this run does next no longer matters
        const r = await (opts.clusterletExited ? Promise.race([running, opts.clusterletExited]) : running);
        runs.push(r);
        opts.onProgress?.({ machine: machineInfo(h), startedAt, runs, summary: summarize(runs, opts.sizes.filter((s) => runs.some((x) => x.n === s))) });
        log(`N=${n} pair ${pair} ${r.mode}: ${(r.readyMs / 1000).toFixed(2)} s, CPU s to Ready: ${cpuLine(r.cpuToReady)}; last pod at each stage (s): ${
          Object.entries(r.stagesMs ?? {}).map(([k, v]) => `${k} ${(v / 1000).toFixed(1)}`).join(', ')}`);
        log(`N=${n} pair ${pair} ${r.mode}: ${(r.readyMs / 1000).toFixed(2)} s` + (isOffloaded(r)
          ? ` (added p50 ${r.addedLatencyMs.p50.toFixed(0)} ms, p99 ${r.addedLatencyMs.p99.toFixed(0)} ms; clusterlet's part p50 ${r.statusMirrorMs?.p50?.toFixed(0)} ms, p99 ${r.statusMirrorMs?.p99?.toFixed(0)} ms; host status patch p50 ${r.hostPatchMs?.p50?.toFixed(0)} ms, p99 ${r.hostPatchMs?.p99?.toFixed(0)} ms; RSS ${r.peakRssMB} MB, host writes/pod ${r.hostWritesPerPod}, delete ${(r.deleteMs / 1000).toFixed(2)} s)` : ''));
      }
    }
  }
  return { machine: machineInfo(h), startedAt, runs, summary: summarize(runs, opts.sizes) };
}

const cpuTotal = (cpu: Record<string, number>): number => Object.values(cpu).reduce((a, b) => a + b, 0);
const round1 = (x: number): number => Math.round(x * 10) / 10;
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

function cpuLine(cpu: Record<string, number>): string {
  const total = cpuTotal(cpu);
  return `total ${total.toFixed(1)}; ` + Object.entries(cpu).filter(([, v]) => v >= 0.05).sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${v.toFixed(1)}`).join(', ');
}

export function summarize(runs: (RunResult | OffloadedRun)[], sizes: number[]): SizeSummary[] {
  return sizes.map((n) => {
    const d = runs.filter((r) => r.n === n && r.mode === 'direct');
    const o = runs.filter(isOffloaded).filter((r) => r.n === n);
    const ratios = o.map((r) => r.readyMs / (d.find((x) => x.pair === r.pair)?.readyMs ?? NaN));
    const last = o[o.length - 1];
    return {
      n,
      directMedianMs: median(d.map((r) => r.readyMs)),
      offloadedMedianMs: median(o.map((r) => r.readyMs)),
      ratios: ratios.map((x) => Math.round(x * 100) / 100),
      ratioMedian: Math.round(median(ratios) * 100) / 100,
      addedLatencyP50Ms: Math.round(median(o.map((r) => r.addedLatencyMs.p50))),
      addedLatencyP99Ms: Math.round(median(o.map((r) => r.addedLatencyMs.p99))),
      statusMirrorP50Ms: medianOf(o.map((r) => r.statusMirrorMs?.p50)),
      statusMirrorP99Ms: medianOf(o.map((r) => r.statusMirrorMs?.p99)),
      hostPatchP50Ms: medianOf(o.map((r) => r.hostPatchMs?.p50)),
      hostPatchP99Ms: medianOf(o.map((r) => r.hostPatchMs?.p99)),
      cpuToReadyDirect: round1(median(d.map((r) => cpuTotal(r.cpuToReady)))),
      cpuToReadyOffloaded: round1(median(o.map((r) => cpuTotal(r.cpuToReady)))),
      cpuToReadyClusterlet: round1(median(o.map((r) => r.cpuToReady.clusterlet ?? 0))),
      peakRssMB: Math.max(...o.map((r) => r.peakRssMB)),
      cpuSecondsMedian: median(o.map((r) => r.cpuSeconds)),
      hostWritesPerPod: median(o.map((r) => r.hostWritesPerPod)),
      deleteMedianMs: median(o.map((r) => r.deleteMs)),
      requestsPerPod: last?.requestsPerPod ?? {},
      stagesDirectMs: medianStages(d),
      stagesOffloadedMs: medianStages(o),
    };
  });
}

function medianStages(runs: RunResult[]): Record<string, number> | undefined {
  const withStages = runs.filter((r) => r.stagesMs);
  if (withStages.length === 0) return undefined;
  const out: Record<string, number> = {};
  for (const k of Object.keys(withStages[0]!.stagesMs!)) out[k] = Math.round(median(withStages.map((r) => r.stagesMs![k] ?? NaN)));
  return out;
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
  const lines = [
    `# clusterlet benchmark — ${r.startedAt}`,
    '',
    `Machine: ${m.cores} × ${m.cpu}, ${m.memoryGiB} GiB, Linux ${m.kernel}, Node ${m.node}, Kubernetes ${m.kubernetes} (local control planes, KWOK nodes).`,
    '',
    '| N | direct (median) | offloaded (median) | offloaded/direct per pair | added latency p50 / p99 | clusterlet peak RSS | CPU s / run | host writes / pod | delete all (median) |',
    '|---:|---:|---:|---|---:|---:|---:|---:|---:|',
  ];
  for (const s of r.summary) {
    lines.push(`| ${s.n} | ${(s.directMedianMs / 1000).toFixed(2)} s | ${(s.offloadedMedianMs / 1000).toFixed(2)} s | ${s.ratios.join(', ')} (median ${s.ratioMedian}) | ${s.addedLatencyP50Ms} / ${s.addedLatencyP99Ms} ms | ${s.peakRssMB} MB | ${s.cpuSecondsMedian.toFixed(1)} | ${s.hostWritesPerPod} | ${(s.deleteMedianMs / 1000).toFixed(2)} s |`);
  }
  lines.push('', 'Where the added latency and the time go (medians over the pairs):', '');
  lines.push('| N | clusterlet\'s part of the added latency p50 / p99 | its host status patch p50 / p99 | CPU-s of all processes to all Ready: direct / offloaded (clusterlet) |',
    '|---:|---:|---:|---:|');
  const ms = (x: number | undefined): string => (x === undefined ? '–' : String(x));
  for (const s of r.summary) {
    lines.push(`| ${s.n} | ${ms(s.statusMirrorP50Ms)} / ${ms(s.statusMirrorP99Ms)} ms | ${ms(s.hostPatchP50Ms)} / ${ms(s.hostPatchP99Ms)} ms | ${s.cpuToReadyDirect} / ${s.cpuToReadyOffloaded} (${s.cpuToReadyClusterlet}) |`);
  }
  const sec = (x: number | undefined): string => (x === undefined ? '–' : (x / 1000).toFixed(1));
  lines.push('', 'When the last pod reached each stage, in seconds after the Deployment was created (medians over the pairs):', '');
  lines.push('| N | direct: bound → Ready | offloaded: proxies bound → delegates created → delegates bound → delegates Ready → proxies Ready |',
    '|---:|---|---|');
  for (const s of r.summary) {
    const d = s.stagesDirectMs, o = s.stagesOffloadedMs;
    lines.push(`| ${s.n} | ${sec(d?.bound)} → ${sec(d?.ready)} | ${sec(o?.proxiesBound)} → ${sec(o?.delegatesCreated)} → ${sec(o?.delegatesBound)} → ${sec(o?.delegatesReady)} → ${sec(o?.proxiesReady)} |`);
  }
  lines.push('', 'API requests clusterlet made per pod (create → delete), by cluster and verb:', '');
  lines.push('| N | cluster | requests per pod by verb |', '|---:|---|---|');
  for (const s of r.summary) {
    for (const [cluster, verbs] of Object.entries(s.requestsPerPod)) {
      lines.push(`| ${s.n} | ${cluster} | ${Object.entries(verbs).map(([v, c]) => `${v} ${c}`).join(', ')} |`);
    }
  }
  return lines.join('\n') + '\n';
}
