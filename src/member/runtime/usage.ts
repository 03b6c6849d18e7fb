// CPU and memory of a virtual node's pods, measured in the member and given in host names — so the host's
// metrics-server, `kubectl top` and HPA work for offloaded pods.
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
import { upTo } from '../../util/lru.ts';
import { parseQuantity } from '../../forge/quantity.ts';
import { NODE_LABEL, VIRTUAL_NODE_LABEL } from '../../forge/keys.ts';
import type { HostRef } from '../../forge/owner.ts';
import { namespacedName, objectId } from '../../forge/meta.ts';
import type { Informer } from '../../kube/informer.ts';
import type { Logger } from '../../log.ts';
import type { MeasuredContainerUsage, MeasuredNodeUsage, MeasuredPodUsage } from '../../provider/runtime.ts';
import { parsePrometheus, type Sample } from '../../util/prom.ts';
import { byCodeUnits } from '../../util/order.ts';
import type { MemberCluster } from '../cluster.ts';
import { memberGet } from './api.ts';

export const RESOURCE_METRICS_PATH_ANNOTATION = 'metrics.k8s.io/resource-metrics-path';

/** The host pods of the virtual node, by `namespace/name`: which containers a proxy has, and since when it runs. */
export type ProxyLookup = Pick<Informer<V1Pod>, 'get'>;

/** A delegate and its proxy: member coordinates → host coordinates. */
export interface DelegateRef {
  memberNamespace: string;
  memberName: string;
  memberNode?: string;
  proxy: V1Pod;
}

/** The delegates still running (or about to) whose proxy is the one they stand for. */
export function runningDelegates(delegates: Iterable<[HostRef, V1Pod]>, proxies: ProxyLookup): DelegateRef[] {
  const out: DelegateRef[] = [];
  for (const [ref, d] of delegates) {
    if (d.status?.phase === 'Succeeded' || d.status?.phase === 'Failed') continue;
    const proxy = proxies.get(`${ref.namespace}/${ref.name}`);
    if (!proxy || proxy.metadata?.uid !== ref.uid) continue;
    const { namespace: memberNamespace, name: memberName } = namespacedName(d);
    out.push({ memberNamespace, memberName, memberNode: d.spec?.nodeName, proxy });
  }
  return out;
}

interface Reading { cpuSeconds?: number; memory?: number; start?: number; timestamp?: number }

/**
 * Pod usage from kubelet resource-metrics samples, for the delegates given (member names → host names).
 * Containers not in the proxy's spec are left out.
 */
export function usageFromResourceMetrics(samples: Sample[], delegates: DelegateRef[], now: number): MeasuredPodUsage[] {
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
  const out: MeasuredPodUsage[] = [];
  for (const [key, d] of byMember) {
    const cs = containers.get(key);
    const p = pods.get(key);
    if (!cs && !p) continue;
    const specNames = new Set((d.proxy.spec?.containers ?? []).map((c) => c.name));
    const list: MeasuredContainerUsage[] = [...(cs ?? new Map<string, Reading>())]
      .filter(([name]) => specNames.has(name))
      .map(([name, r]) => ({
        name, startTime: r.start, cpuSeconds: r.cpuSeconds ?? 0, memoryWorkingSetBytes: r.memory ?? 0, timestamp: r.timestamp ?? now,
      }))
      .sort((a, b) => byCodeUnits(a.name, b.name));
    out.push(podUsage(d, list, p, now));
  }
  return out;
}

function podUsage(d: DelegateRef, containers: MeasuredContainerUsage[], pod: Reading | undefined, now: number): MeasuredPodUsage {
  const sum = (f: (c: MeasuredContainerUsage) => number): number => containers.reduce((a, c) => a + f(c), 0);
  const start = d.proxy.status?.startTime;
  return {
    ...objectId(d.proxy), containers,
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

export function usageFromPodMetrics(items: PodMetricsItem[], delegates: DelegateRef[], now: number): MeasuredPodUsage[] {
  const byMember = new Map(delegates.map((d) => [`${d.memberNamespace}/${d.memberName}`, d]));
  const out: MeasuredPodUsage[] = [];
  for (const it of items) {
    const d = byMember.get(`${it.metadata.namespace}/${it.metadata.name}`);
    if (!d) continue;
    const ts = Date.parse(it.timestamp) || now;
    const specNames = new Set((d.proxy.spec?.containers ?? []).map((c) => c.name));
    const containers = it.containers.filter((c) => specNames.has(c.name)).map((c): MeasuredContainerUsage => ({
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
  /**
   * The virtual node, when it is a pool's or a member node's (not the member's own node name): the metrics API is
   * asked for its delegates only (their clusterlet.io/virtual-node label).
   */
  virtualNode?: string;
}

/** What MemberUsage reads of the member: its client, its nodes (for their metrics path) and this node's delegates. */
export type UsageCluster = Pick<MemberCluster, 'client' | 'nodes' | 'delegates' | 'owner'>;

/** The virtual node's usage from the member, with rates from successive readings. */
export class MemberUsage {
  #cluster: UsageCluster;
  #proxies: ProxyLookup;
  #opts: Required<Omit<MemberUsageOptions, 'virtualNode'>> & Pick<MemberUsageOptions, 'virtualNode'>;
  #cache: { at: number; usage: Promise<MeasuredNodeUsage> } | undefined;
  /** Last cumulative reading per container (host uid/container), for rates. */
  #last = new LRUCache<string, { cpuSeconds: number; timestamp: number }>(upTo(100_000));
  /** The last rate computed per container or pod, for a reading seen twice. */
  #lastRate = new LRUCache<string, number>(upTo(100_000));
  /** Integrated CPU for sources that only give a rate. */
  #integrated = new LRUCache<string, { cpuSeconds: number; timestamp: number }>(upTo(100_000));

  constructor(cluster: UsageCluster, proxies: ProxyLookup, opts: MemberUsageOptions) {
    this.#cluster = cluster;
    this.#proxies = proxies;
    this.#opts = { cacheMs: opts.cacheMs ?? 5_000, concurrency: opts.concurrency ?? 8, log: opts.log, virtualNode: opts.virtualNode };
  }

  usage(): Promise<MeasuredNodeUsage> {
    const hit = this.#cache;
    if (hit && Date.now() - hit.at < this.#opts.cacheMs) return hit.usage;
    const cached = { at: Date.now(), usage: this.#measure() };
    this.#cache = cached;
    cached.usage.catch(() => { if (this.#cache === cached) this.#cache = undefined; });
    return cached.usage;
  }

  async #measure(): Promise<MeasuredNodeUsage> {
    const now = Date.now();
    const delegates = runningDelegates(this.#cluster.delegates.entries(), this.#proxies);
    const byNode = new Map<string, DelegateRef[]>();
    for (const d of delegates) {
      if (!d.memberNode) continue;
      let l = byNode.get(d.memberNode);
      if (!l) byNode.set(d.memberNode, l = []);
      l.push(d);
    }
    const pods: MeasuredPodUsage[] = [];
    const missing: DelegateRef[] = [];
    const queue = [...byNode];
    const worker = async (): Promise<void> => {
      for (let next = queue.shift(); next; next = queue.shift()) {
        const [memberNode, ds] = next;
        try {
          pods.push(...await this.#fromKubelet(memberNode, ds, now));
        } catch (err) {
          this.#opts.log.debug({ memberNode, err: (err as Error).message }, 'kubelet API stats: member node resource metrics unavailable');
          missing.push(...ds);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.#opts.concurrency, queue.length) }, worker));
    if (missing.length) pods.push(...await this.#fromMetricsApi(missing, now));
    pods.sort((a, b) => byCodeUnits(`${a.namespace}/${a.name}`, `${b.namespace}/${b.name}`));
    for (const p of pods) this.#rates(p);
    const rated = pods.filter((p) => p.cpuCores !== undefined);
    return {
      pods,
      cpuSeconds: pods.reduce((a, p) => a + p.cpuSeconds, 0),
      cpuCores: rated.length === pods.length ? rated.reduce((a, p) => a + (p.cpuCores ?? 0), 0) : undefined,
      memoryWorkingSetBytes: pods.reduce((a, p) => a + p.memoryWorkingSetBytes, 0),
      timestamp: Math.max(now, ...pods.map((p) => p.timestamp)),
    };
  }

  async #fromKubelet(memberNode: string, delegates: DelegateRef[], now: number): Promise<MeasuredPodUsage[]> {
    const n = this.#cluster.nodes.get(memberNode);
    const path = n?.metadata?.annotations?.[RESOURCE_METRICS_PATH_ANNOTATION] ?? '/metrics/resource';
    const text = await this.#read(`/api/v1/nodes/${encodeURIComponent(memberNode)}/proxy${path.startsWith('/') ? path : `/${path}`}`);
    return usageFromResourceMetrics(parsePrometheus(text), delegates, now);
  }

  async #fromMetricsApi(delegates: DelegateRef[], now: number): Promise<MeasuredPodUsage[]> {
    try {
      const vn = this.#opts.virtualNode;
      const selector = vn !== undefined && vn !== this.#cluster.owner.node ? `${VIRTUAL_NODE_LABEL}=${vn}` : `${NODE_LABEL}=${this.#cluster.owner.node}`;
      const text = await this.#read(`/apis/metrics.k8s.io/v1beta1/pods?labelSelector=${encodeURIComponent(selector)}`);
      const pods = usageFromPodMetrics((JSON.parse(text) as { items?: PodMetricsItem[] }).items ?? [], delegates, now);
      for (const p of pods) this.#integrate(p);
      return pods;
    } catch (err) {
      this.#opts.log.debug({ err: (err as Error).message }, 'kubelet API stats: member metrics API unavailable');
      return [];
    }
  }

  /** The body of a GET on the member, given at most 10 s. */
  async #read(path: string): Promise<string> {
    const res = await memberGet(this.#cluster.client, path, AbortSignal.timeout(10_000));
    let text = '';
    res.setEncoding('utf8');
    for await (const chunk of res) text += chunk as string;
    return text;
  }

  /** Cumulative CPU from a rate: the integral of the readings seen so far. */
  #integrate(p: MeasuredPodUsage): void {
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
  #rates(p: MeasuredPodUsage): void {
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
