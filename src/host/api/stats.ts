// GET /stats/summary and /metrics/resource: CPU and memory of the node, each pod and each container, in host
// names, taken from the member — so the host's metrics-server, `kubectl top` and HPA work for offloaded pods.
//
// Source, per member node that runs delegates of this virtual node: its kubelet's resource metrics
// (/metrics/resource, or the path the node names in metrics.k8s.io/resource-metrics-path, as metrics-server
// reads it) through the member API server's node proxy. Where that fails, the member's metrics API
// (metrics.k8s.io PodMetrics, when metrics-server runs there); its CPU is a rate, integrated here into the
// cumulative counter the kubelet formats need.
// The virtual node's usage is the sum of its pods' usage: the member's other workloads are not on this node
// (they are subtracted from its allocatable already).
import type { V1Pod } from '@kubernetes/client-node';
import { LRUCache } from 'lru-cache';
import { parseQuantity } from '../../forge/quantity.ts';
import type { Logger } from '../../log.ts';
import { hostRefOf } from '../../forge/owner.ts';
import { NODE_LABEL } from '../../forge/keys.ts';
import { memberGet } from './member.ts';
import type { VirtualNode } from './nodes.ts';
import { parsePrometheus, writePrometheus, type Family, type Sample } from './prom.ts';
import type { NodeStats } from './server.ts';

export const RESOURCE_METRICS_PATH_ANNOTATION = 'metrics.k8s.io/resource-metrics-path';

export interface ContainerUsage {
  name: string;
  startTime?: number;
  /** Cumulative CPU, core-seconds. */
  cpuSeconds: number;
  /** Current CPU, cores; undefined until two readings exist. */
  cpuCores?: number;
  memoryWorkingSetBytes: number;
  /** When measured (ms). */
  timestamp: number;
}

export interface PodUsage {
  namespace: string;
  name: string;
  uid: string;
  startTime?: number;
  containers: ContainerUsage[];
  /** Pod-level readings when the source has them (they include the pod's overhead); else sums. */
  cpuSeconds: number;
  cpuCores?: number;
  memoryWorkingSetBytes: number;
  timestamp: number;
}

export interface NodeUsage {
  node: string;
  startTime: number;
  pods: PodUsage[];
  cpuSeconds: number;
  cpuCores?: number;
  memoryWorkingSetBytes: number;
  timestamp: number;
}

/** A delegate and its proxy: member coordinates → host coordinates. */
export interface DelegateRef {
  memberNamespace: string;
  memberName: string;
  memberNode?: string;
  proxy: V1Pod;
}

export function delegatesOf(node: VirtualNode): DelegateRef[] {
  const out: DelegateRef[] = [];
  for (const d of node.cluster.pods.list()) {
    const ref = hostRefOf(d, node.cluster.owner);
    if (!ref || d.status?.phase === 'Succeeded' || d.status?.phase === 'Failed') continue;
    const proxy = node.proxies.get(`${ref.namespace}/${ref.name}`);
    if (!proxy || proxy.metadata?.uid !== ref.uid) continue;
    out.push({ memberNamespace: d.metadata!.namespace!, memberName: d.metadata!.name!, memberNode: d.spec?.nodeName, proxy });
  }
  return out;
}

interface Reading { cpuSeconds?: number; memory?: number; start?: number; timestamp?: number }

/**
 * Pod usage from kubelet resource-metrics samples, for the delegates given (member names → host names).
 * Containers not in the proxy's spec are left out.
 */
export function usageFromResourceMetrics(samples: Sample[], delegates: DelegateRef[], now: number): PodUsage[] {
  const byMember = new Map(delegates.map((d) => [`${d.memberNamespace}/${d.memberName}`, d]));
  const containers = new Map<string, Map<string, Reading>>();
  const pods = new Map<string, Reading>();
  const reading = (map: Map<string, Reading>, key: string): Reading => {
    let r = map.get(key);
    if (!r) map.set(key, r = {});
    return r;
  };
  for (const s of samples) {
    const key = `${s.labels.namespace}/${s.labels.pod}`;
    if (!byMember.has(key)) continue;
    const ts = s.timestamp;
    if (s.name.startsWith('container_')) {
      if (!s.labels.container) continue;
      let m = containers.get(key);
      if (!m) containers.set(key, m = new Map());
      const r = reading(m, s.labels.container);
      if (s.name === 'container_cpu_usage_seconds_total') { r.cpuSeconds = s.value; r.timestamp = ts ?? r.timestamp; }
      else if (s.name === 'container_memory_working_set_bytes') { r.memory = s.value; r.timestamp ??= ts; }
      else if (s.name === 'container_start_time_seconds') r.start = s.value * 1000;
    } else if (s.name === 'pod_cpu_usage_seconds_total') {
      const r = reading(pods, key);
      r.cpuSeconds = s.value;
      r.timestamp = ts ?? r.timestamp;
    } else if (s.name === 'pod_memory_working_set_bytes') {
      const r = reading(pods, key);
      r.memory = s.value;
      r.timestamp ??= ts;
    }
  }
  const out: PodUsage[] = [];
  for (const [key, d] of byMember) {
    const cs = containers.get(key);
    const p = pods.get(key);
    if (!cs && !p) continue;
    const specNames = new Set((d.proxy.spec?.containers ?? []).map((c) => c.name));
    const list: ContainerUsage[] = [...(cs ?? new Map<string, Reading>())]
      .filter(([name]) => specNames.has(name))
      .map(([name, r]) => ({
        name, startTime: r.start, cpuSeconds: r.cpuSeconds ?? 0, memoryWorkingSetBytes: r.memory ?? 0, timestamp: r.timestamp ?? now,
      }))
      .sort((a, b) => a.name.localeCompare(b.name));
    out.push(podUsage(d, list, p, now));
  }
  return out;
}

function podUsage(d: DelegateRef, containers: ContainerUsage[], pod: Reading | undefined, now: number): PodUsage {
  const m = d.proxy.metadata!;
  const sum = (f: (c: ContainerUsage) => number): number => containers.reduce((a, c) => a + f(c), 0);
  const start = d.proxy.status?.startTime;
  return {
    namespace: m.namespace!, name: m.name!, uid: m.uid!, containers,
    startTime: start ? new Date(start).getTime() : undefined,
    cpuSeconds: pod?.cpuSeconds ?? sum((c) => c.cpuSeconds),
    memoryWorkingSetBytes: pod?.memory ?? sum((c) => c.memoryWorkingSetBytes),
    timestamp: pod?.timestamp ?? Math.max(now, ...containers.map((c) => c.timestamp)),
  };
}

/** PodMetrics (metrics.k8s.io/v1beta1) items → pod usage; CPU seconds are filled in by the caller. */
export interface PodMetricsItem {
  metadata: { namespace: string; name: string };
  timestamp: string;
  window?: string;
  containers: { name: string; usage: { cpu?: string; memory?: string } }[];
}

export function usageFromPodMetrics(items: PodMetricsItem[], delegates: DelegateRef[], now: number): PodUsage[] {
  const byMember = new Map(delegates.map((d) => [`${d.memberNamespace}/${d.memberName}`, d]));
  const out: PodUsage[] = [];
  for (const it of items) {
    const d = byMember.get(`${it.metadata.namespace}/${it.metadata.name}`);
    if (!d) continue;
    const ts = Date.parse(it.timestamp) || now;
    const specNames = new Set((d.proxy.spec?.containers ?? []).map((c) => c.name));
    const containers = it.containers.filter((c) => specNames.has(c.name)).map((c): ContainerUsage => ({
      name: c.name, cpuSeconds: 0, timestamp: ts,
      cpuCores: c.usage.cpu ? Number(parseQuantity(c.usage.cpu).nanos) / 1e9 : 0,
      memoryWorkingSetBytes: c.usage.memory ? Number(parseQuantity(c.usage.memory).nanos) / 1e9 : 0,
    }));
    const p = podUsage(d, containers, undefined, now);
    p.cpuCores = containers.reduce((a, c) => a + (c.cpuCores ?? 0), 0);
    out.push(p);
  }
  return out;
}

export interface MemberUsageOptions {
  log: Logger;
  /** Readings younger than this are reused (scrapers of both formats often come together). */
  cacheMs?: number;
  /** Member nodes scraped at once. */
  concurrency?: number;
}

/** NodeStats from the member, with rates from successive readings. */
export class MemberUsage implements NodeStats {
  #opts: Required<MemberUsageOptions>;
  #cache = new Map<string, { at: number; usage: Promise<NodeUsage> }>();
  /** Last cumulative reading per container (host uid/container), for rates. */
  #last = new LRUCache<string, { cpuSeconds: number; timestamp: number }>({ max: 100_000 });
  /** The last rate computed per container or pod, for a reading seen twice. */
  #lastRate = new LRUCache<string, number>({ max: 100_000 });
  /** Integrated CPU for sources that only give a rate. */
  #integrated = new LRUCache<string, { cpuSeconds: number; timestamp: number }>({ max: 100_000 });
  readonly #started = Date.now();

  constructor(opts: MemberUsageOptions) {
    this.#opts = { cacheMs: opts.cacheMs ?? 5_000, concurrency: opts.concurrency ?? 8, log: opts.log };
  }

  async summary(node: VirtualNode): Promise<unknown> {
    return summaryOf(await this.usage(node));
  }

  async resourceMetrics(node: VirtualNode): Promise<string> {
    return resourceMetricsOf(await this.usage(node));
  }

  usage(node: VirtualNode): Promise<NodeUsage> {
    const hit = this.#cache.get(node.name);
    if (hit && Date.now() - hit.at < this.#opts.cacheMs) return hit.usage;
    const usage = this.#measure(node);
    this.#cache.set(node.name, { at: Date.now(), usage });
    usage.catch(() => this.#cache.delete(node.name));
    return usage;
  }

  async #measure(node: VirtualNode): Promise<NodeUsage> {
    const now = Date.now();
    const delegates = delegatesOf(node);
    const byNode = new Map<string, DelegateRef[]>();
    for (const d of delegates) {
      if (!d.memberNode) continue;
      let l = byNode.get(d.memberNode);
      if (!l) byNode.set(d.memberNode, l = []);
      l.push(d);
    }
    const pods: PodUsage[] = [];
    const missing: DelegateRef[] = [];
    const queue = [...byNode];
    const worker = async (): Promise<void> => {
      for (let next = queue.shift(); next; next = queue.shift()) {
        const [memberNode, ds] = next;
        try {
          pods.push(...await this.#fromKubelet(node, memberNode, ds, now));
        } catch (err) {
          this.#opts.log.debug({ memberNode, err: (err as Error).message }, 'kubelet API stats: member node resource metrics unavailable');
          missing.push(...ds);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.#opts.concurrency, queue.length) }, worker));
    if (missing.length) pods.push(...await this.#fromMetricsApi(node, missing, now));
    pods.sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`));
    for (const p of pods) this.#rates(p);
    const rated = pods.filter((p) => p.cpuCores !== undefined);
    return {
      node: node.name, startTime: this.#started, pods,
      cpuSeconds: pods.reduce((a, p) => a + p.cpuSeconds, 0),
      cpuCores: rated.length === pods.length ? rated.reduce((a, p) => a + (p.cpuCores ?? 0), 0) : undefined,
      memoryWorkingSetBytes: pods.reduce((a, p) => a + p.memoryWorkingSetBytes, 0),
      timestamp: Math.max(now, ...pods.map((p) => p.timestamp)),
    };
  }

  async #fromKubelet(node: VirtualNode, memberNode: string, delegates: DelegateRef[], now: number): Promise<PodUsage[]> {
    const n = node.cluster.nodes.get(memberNode);
    const path = n?.metadata?.annotations?.[RESOURCE_METRICS_PATH_ANNOTATION] ?? '/metrics/resource';
    const res = await memberGet(node.cluster.client, `/api/v1/nodes/${encodeURIComponent(memberNode)}/proxy${path.startsWith('/') ? path : `/${path}`}`,
      AbortSignal.timeout(10_000));
    let text = '';
    res.setEncoding('utf8');
    for await (const chunk of res) text += chunk as string;
    return usageFromResourceMetrics(parsePrometheus(text), delegates, now);
  }

  async #fromMetricsApi(node: VirtualNode, delegates: DelegateRef[], now: number): Promise<PodUsage[]> {
    try {
      const res = await memberGet(node.cluster.client,
        `/apis/metrics.k8s.io/v1beta1/pods?labelSelector=${encodeURIComponent(`${NODE_LABEL}=${node.name}`)}`, AbortSignal.timeout(10_000));
      let text = '';
      res.setEncoding('utf8');
      for await (const chunk of res) text += chunk as string;
      const pods = usageFromPodMetrics((JSON.parse(text) as { items?: PodMetricsItem[] }).items ?? [], delegates, now);
      for (const p of pods) this.#integrate(p);
      return pods;
    } catch (err) {
      this.#opts.log.debug({ err: (err as Error).message }, 'kubelet API stats: member metrics API unavailable');
      return [];
    }
  }

  /** Cumulative CPU from a rate: the integral of the readings seen so far. */
  #integrate(p: PodUsage): void {
    for (const c of p.containers) {
      const key = `${p.uid}/${c.name}`;
      const prev = this.#integrated.get(key);
      const cores = c.cpuCores ?? 0;
      const cum = prev ? prev.cpuSeconds + cores * Math.max(0, c.timestamp - prev.timestamp) / 1000 : 0;
      this.#integrated.set(key, { cpuSeconds: cum, timestamp: c.timestamp });
      c.cpuSeconds = cum;
    }
    p.cpuSeconds = p.containers.reduce((a, c) => a + c.cpuSeconds, 0);
  }

  /** Current CPU from two cumulative readings (or the average since start, the first time). */
  #rates(p: PodUsage): void {
    const rate = (key: string, cpuSeconds: number, timestamp: number, start: number | undefined, given: number | undefined): number | undefined => {
      if (given !== undefined) return given;
      const prev = this.#last.get(key);
      this.#last.set(key, { cpuSeconds, timestamp });
      if (prev && timestamp > prev.timestamp && cpuSeconds >= prev.cpuSeconds) {
        return (cpuSeconds - prev.cpuSeconds) / ((timestamp - prev.timestamp) / 1000);
      }
      if (prev && timestamp === prev.timestamp) return this.#lastRate.get(key);
      return start && timestamp > start ? cpuSeconds / ((timestamp - start) / 1000) : undefined;
    };
    for (const c of p.containers) {
      c.cpuCores = rate(`${p.uid}/${c.name}`, c.cpuSeconds, c.timestamp, c.startTime ?? p.startTime, c.cpuCores);
      if (c.cpuCores !== undefined) this.#lastRate.set(`${p.uid}/${c.name}`, c.cpuCores);
    }
    p.cpuCores = rate(p.uid, p.cpuSeconds, p.timestamp, p.startTime, p.cpuCores);
    if (p.cpuCores !== undefined) this.#lastRate.set(p.uid, p.cpuCores);
  }
}

const iso = (ms: number | undefined): string | undefined => ms === undefined ? undefined : new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');

function cpu(time: number, cores: number | undefined, seconds: number): Record<string, unknown> {
  return {
    time: iso(time),
    ...(cores !== undefined ? { usageNanoCores: Math.round(cores * 1e9) } : {}),
    usageCoreNanoSeconds: Math.round(seconds * 1e9),
  };
}

function memory(time: number, workingSet: number): Record<string, unknown> {
  return { time: iso(time), usageBytes: Math.round(workingSet), workingSetBytes: Math.round(workingSet) };
}

/** The kubelet's stats/v1alpha1 Summary. */
export function summaryOf(u: NodeUsage): unknown {
  return {
    node: {
      nodeName: u.node, startTime: iso(u.startTime), systemContainers: [],
      cpu: cpu(u.timestamp, u.cpuCores, u.cpuSeconds), memory: memory(u.timestamp, u.memoryWorkingSetBytes),
    },
    pods: u.pods.map((p) => ({
      podRef: { name: p.name, namespace: p.namespace, uid: p.uid },
      startTime: iso(p.startTime),
      containers: p.containers.map((c) => ({
        name: c.name, startTime: iso(c.startTime ?? p.startTime),
        cpu: cpu(c.timestamp, c.cpuCores, c.cpuSeconds), memory: memory(c.timestamp, c.memoryWorkingSetBytes),
      })),
      cpu: cpu(p.timestamp, p.cpuCores, p.cpuSeconds), memory: memory(p.timestamp, p.memoryWorkingSetBytes),
    })),
  };
}

/** The kubelet's /metrics/resource families, with timestamps as it gives them. */
export function resourceMetricsOf(u: NodeUsage): string {
  const containers = u.pods.flatMap((p) => p.containers.map((c) => ({ p, c, labels: { container: c.name, namespace: p.namespace, pod: p.name } })));
  const families: Family[] = [
    { name: 'container_cpu_usage_seconds_total', help: '[STABLE] Cumulative cpu time consumed by the container in core-seconds', type: 'counter',
      samples: containers.map(({ c, labels }) => ({ labels, value: c.cpuSeconds, timestamp: c.timestamp })) },
    { name: 'container_memory_working_set_bytes', help: '[STABLE] Current working set of the container in bytes', type: 'gauge',
      samples: containers.map(({ c, labels }) => ({ labels, value: c.memoryWorkingSetBytes, timestamp: c.timestamp })) },
    { name: 'container_start_time_seconds', help: '[STABLE] Start time of the container since unix epoch in seconds', type: 'gauge',
      samples: containers.filter(({ p, c }) => (c.startTime ?? p.startTime) !== undefined)
        .map(({ p, c, labels }) => ({ labels, value: (c.startTime ?? p.startTime)! / 1000, timestamp: c.timestamp })) },
    { name: 'node_cpu_usage_seconds_total', help: '[STABLE] Cumulative cpu time consumed by the node in core-seconds', type: 'counter',
      samples: [{ value: u.cpuSeconds, timestamp: u.timestamp }] },
    { name: 'node_memory_working_set_bytes', help: '[STABLE] Current working set of the node in bytes', type: 'gauge',
      samples: [{ value: u.memoryWorkingSetBytes, timestamp: u.timestamp }] },
    { name: 'pod_cpu_usage_seconds_total', help: '[STABLE] Cumulative cpu time consumed by the pod in core-seconds', type: 'counter',
      samples: u.pods.map((p) => ({ labels: { namespace: p.namespace, pod: p.name }, value: p.cpuSeconds, timestamp: p.timestamp })) },
    { name: 'pod_memory_working_set_bytes', help: '[STABLE] Current working set of the pod in bytes', type: 'gauge',
      samples: u.pods.map((p) => ({ labels: { namespace: p.namespace, pod: p.name }, value: p.memoryWorkingSetBytes, timestamp: p.timestamp })) },
    { name: 'resource_scrape_error', help: '[STABLE] 1 if there was an error while getting container metrics, 0 otherwise', type: 'gauge',
      samples: [{ value: 0 }] },
  ];
  return writePrometheus(families);
}
