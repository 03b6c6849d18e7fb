// The many-nodes run: ONE clusterlet process serving M members of N nodes each in node mode (`nodes: node`), so M × N
// virtual nodes on the host, each with its Lease in kube-node-lease renewed on every member probe and its status
// written only on change (and a periodic refresh). Each member has its own lean control plane and KWOK (its N nodes
// heartbeat as kubelets do) on the harness's etcd. Measured: clusterlet start → every virtual node Ready, clusterlet's
// RSS then, and over a steady window without pods (from SETTLE_MS after all Ready): clusterlet's CPU and peak RSS, the
// age of every virtual node's Lease sampled every 5 s, and the host's watch events of the virtual nodes (the writes to
// them), sorted by what changed. Then, unless skipped, one Deployment of a pod per virtual node: time to all Ready, and its delete.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { isDeepStrictEqual } from 'node:util';
import { AppsV1Api, type V1Deployment, type V1Lease, type V1Node } from '@kubernetes/client-node';
import type { Harness } from '../test/harness/harness.ts';
import type { FakeNode, LocalCluster } from '../test/harness/cluster.ts';
import { deleteNamespaceAndWait } from '../test/support/env.ts';
import { isReady } from '../test/support/objects.ts';
import { ClusterClient } from '../src/kube/client.ts';
import { loadKubeconfigFile } from '../src/kube/kubeconfig.ts';
import { Informer, type StoreEvent } from '../src/kube/informer.ts';
import { listWatch } from '../src/kube/listwatch.ts';
import { virtualNodeName } from '../src/forge/groups.ts';
import { HOSTNAME_LABEL, MEMBER_LABEL, PROXY_UID_LABEL, VIRTUAL_NODE_TAINT_KEY, VIRTUAL_NODE_TYPE, VIRTUAL_NODE_TYPE_LABEL }
  from '../src/forge/keys.ts';
import { LEASE_DURATION_SECONDS, LEASE_NAMESPACE } from '../src/host/node/controller.ts';
import { countsBetween, CpuAccount, cpuTicks, parseScrape, percentile, ProcessSampler, ReadyTracker, type Scrape } from './bench.ts';
import { byGroup, machineBusyTicks, rssMB, withRest } from './members.ts';
import { startBenchClusterlet, type BenchClusterlet } from './clusterlet.ts';

export interface NodesOptions {
  harness: Harness;
  /** How many members to add (named n01, n02, ...; default 10), and the KWOK nodes of each (default 50). */
  members?: number;
  nodesPerMember?: number;
  /** The steady window, without pods (default 180 s). */
  windowMs?: number;
  /** Pods per virtual node of the Deployment after the window (default 1; 0: none). */
  podsPerNode?: number;
  log: (line: string) => void;
  /** Called after each part with the results so far. */
  onProgress?: (partial: NodesResult) => void;
}

/**
 * How often the Leases are listed during the window: once in each slot of this length, at a random point of it. A
 * member's nodes renew their Leases together, at each of its probes (every 10 s): lists at a fixed period would see
 * each member at the same phase every time, and miss the ages just before a renewal.
 */
export const LEASE_SAMPLE_MS = 5_000;
/**
 * From all Ready to the window: the host's controllers' first writes to new nodes (the node lifecycle controller's
 * beta.kubernetes.io labels, the not-ready taint lifted) are not the steady state.
 */
export const SETTLE_MS = 30_000;
/** A lease older than this missed a renewal: the probe, which renews them, runs every 10 s. */
const LATE_MS = 20_000;

export interface LeaseAges {
  /** Lists made during the window, and Lease ages read in all (one per virtual node per list). */
  samples: number;
  ages: number;
  /** Virtual nodes without a Lease (or a renewTime) in a list, summed over the lists. */
  missing: number;
  /** renewTime's age when listed: the list's answer time minus renewTime. */
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Ages above 20 s (a renewal missed), and above the lease duration (40 s: the host would mark the node NotReady). */
  over20s: number;
  over40s: number;
}

export interface NodeWrites {
  /** The host's watch events MODIFIED of the virtual nodes during the window: one per write to a node. */
  total: number;
  perNodePerMinute: number;
  /** The most one virtual node had. */
  maxPerNode: number;
  /**
   * By what a write changed (see nodeChanges): `refresh` only the conditions' heartbeat times (the periodic status
   * write), `status` more of the status, `metadata` labels, annotations, other metadata or spec (clusterlet's or
   * another writer's, e.g. the host's controllers).
   */
  refresh: number;
  status: number;
  metadata: number;
  /** Writes by what they changed (see nodeChanges): a write that changed several things counts for each. */
  changes: Record<string, number>;
  /** Ready → not Ready. */
  notReady: number;
  /** Virtual nodes added, deleted, and relists of the bench's watch (a relist may fold several writes into one). */
  added: number;
  deleted: number;
  relists: number;
}

export interface NodesWindow {
  ms: number;
  /** clusterlet's CPU seconds over the window, and per minute. */
  cpuSeconds: number;
  cpuPerMinute: number;
  /** CPU seconds of every process over the window, by group (see byGroup), and the rest of the machine. */
  cpuByGroup: Record<string, number>;
  peakRssMB: number;
  /** clusterlet's RSS at the end of the window. */
  endRssMB: number;
  leases: LeaseAges;
  writes: NodeWrites;
  /** clusterlet's API requests per minute by `cluster/verb` (every member's summed as `members/<verb>`). */
  requestsPerMinute: Record<string, number>;
  /** clusterlet's watch restarts during the window, by `cluster resource reason`. */
  watchRestarts: Record<string, number>;
}

export interface NodesPods {
  pods: number;
  /** Creation → all Ready on the host; undefined: not within the bound. */
  readyMs?: number;
  /** Virtual nodes the pods were bound to. */
  nodesUsed: number;
  cpuToReadyClusterlet: number;
  peakRssMB: number;
  /** Deployment deleted → no proxy left; undefined: some were left at the bound. */
  deleteMs?: number;
  /** Listed after the delete: proxies on the host, delegates in the members. */
  left: { proxies: number; delegates: number };
}

export interface NodesResult {
  members: string[];
  nodesPerMember: number;
  virtualNodes: number;
  /** clusterlet started → every virtual node on the host, and every one Ready; undefined: not within the bound. */
  registeredMs?: number;
  readyMs?: number;
  /** clusterlet's CPU seconds from its start to all Ready (or the bound). */
  cpuToReadyClusterlet: number;
  /** clusterlet's RSS once every virtual node was Ready. */
  idleRssMB: number;
  /** RSS of every process by group (see byGroup) then. */
  rssMB: Record<string, number>;
  window?: NodesWindow;
  pods?: NodesPods;
}

/** The width of the numbers of n names: at least 2, so that no name (nor its etcd prefix) starts another. */
const pad = (i: number, n: number): string => String(i).padStart(Math.max(2, String(n).length), '0');

/**
 * n01, n02, ...: apart from the many-members run's m01, ... and the harness's host and member, and no name is a prefix
 * of another, so neither are their etcd prefixes (/registry-<name>).
 */
export function nodeMemberNames(n: number): string[] {
  return Array.from({ length: n }, (_, i) => `n${pad(i + 1, n)}`);
}

const ZONES = ['local-1a', 'local-1b', 'local-1c'];

/** A member's n KWOK nodes, `<member>-n01`, ..., spread over 3 zones: 16 CPUs, 64 GiB and 110 pods each. */
export function manyMemberNodes(member: string, n: number): FakeNode[] {
  return Array.from({ length: n }, (_, i) => ({
    name: `${member}-n${pad(i + 1, n)}`,
    capacity: { cpu: '16', memory: '64Gi', pods: '110' },
    labels: { 'topology.kubernetes.io/region': 'local-1', 'topology.kubernetes.io/zone': ZONES[i % ZONES.length]!,
      'node.kubernetes.io/instance-type': 'medium' },
  }));
}

/** The keys of two records whose values differ, each as `<what> <key>`. */
function changedKeys(what: string, a: object | undefined, b: object | undefined): string[] {
  const x = (a ?? {}) as Record<string, unknown>;
  const y = (b ?? {}) as Record<string, unknown>;
  return [...new Set([...Object.keys(x), ...Object.keys(y)])].filter((k) => !isDeepStrictEqual(x[k], y[k])).map((k) => `${what} ${k}`);
}

/**
 * What a write to a node changed, the conditions' heartbeat times (which every status write sets) aside: `label K`,
 * `annotation K`, `metadata F`, `spec F`, `condition T` (a condition of type T besides its heartbeat), `status F`.
 */
export function nodeChanges(old: V1Node, now: V1Node): string[] {
  const { labels: l0, annotations: a0, resourceVersion: _r0, managedFields: _m0, ...m0 } = old.metadata ?? {};
  const { labels: l1, annotations: a1, resourceVersion: _r1, managedFields: _m1, ...m1 } = now.metadata ?? {};
  const { conditions: c0, ...s0 } = old.status ?? {};
  const { conditions: c1, ...s1 } = now.status ?? {};
  const conds = (cs: typeof c0): Record<string, unknown> =>
    Object.fromEntries((cs ?? []).map(({ lastHeartbeatTime: _, ...c }) => [c.type, c]));
  return [...changedKeys('label', l0, l1), ...changedKeys('annotation', a0, a1), ...changedKeys('metadata', m0, m1),
    ...changedKeys('spec', old.spec, now.spec), ...changedKeys('condition', conds(c0), conds(c1)), ...changedKeys('status', s0, s1)];
}

/** What kind of write changed these (see NodeWrites). */
export function nodeWriteKind(changes: string[]): 'refresh' | 'status' | 'metadata' {
  if (changes.some((c) => !c.startsWith('condition ') && !c.startsWith('status '))) return 'metadata';
  return changes.length ? 'status' : 'refresh';
}

/** Counts the watch events of the virtual nodes (see NodeWrites). */
export class NodeWriteCounter {
  readonly perNode = new Map<string, number>();
  #counts = { refresh: 0, status: 0, metadata: 0, notReady: 0, added: 0, deleted: 0 };
  #changes = new Map<string, number>();

  add(ev: StoreEvent<V1Node>): void {
    if (ev.type === 'ADDED') { this.#counts.added++; return; }
    if (ev.type === 'DELETED') { this.#counts.deleted++; return; }
    this.perNode.set(ev.key, (this.perNode.get(ev.key) ?? 0) + 1);
    const changes = ev.old ? nodeChanges(ev.old, ev.object) : ['unknown'];
    this.#counts[nodeWriteKind(changes)]++;
    for (const c of changes) this.#changes.set(c, (this.#changes.get(c) ?? 0) + 1);
    if (ev.old && isReady(ev.old) && !isReady(ev.object)) this.#counts.notReady++;
  }

  result(nodes: number, ms: number, relists: number): NodeWrites {
    const total = [...this.perNode.values()].reduce((a, b) => a + b, 0);
    return {
      total, perNodePerMinute: nodes && ms ? Math.round((total / nodes / (ms / 60_000)) * 100) / 100 : 0,
      maxPerNode: Math.max(0, ...this.perNode.values()), ...this.#counts,
      changes: Object.fromEntries([...this.#changes].sort((a, b) => b[1] - a[1])), relists,
    };
  }
}

/** A Lease's renewTime age at `nowMs`; undefined without one. */
export function leaseAge(lease: V1Lease, nowMs: number): number | undefined {
  const t = lease.spec?.renewTime as Date | string | undefined;
  if (!t) return undefined;
  const ms = t instanceof Date ? t.getTime() : Date.parse(t);
  return Number.isFinite(ms) ? Math.max(0, nowMs - ms) : undefined;
}

export function leaseAges(ages: number[], samples: number, missing: number): LeaseAges {
  return {
    samples, ages: ages.length, missing,
    p50Ms: Math.round(percentile(ages, 50)), p99Ms: Math.round(percentile(ages, 99)), maxMs: Math.round(Math.max(0, ...ages)),
    over20s: ages.filter((a) => a > LATE_MS).length, over40s: ages.filter((a) => a > LEASE_DURATION_SECONDS * 1000).length,
  };
}

/** Requests per minute by `cluster/verb`, the members' clusters summed as `members/<verb>`. */
export function requestsPerMinute(counts: Record<string, number>, ms: number, members: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(counts)) {
    const slash = k.indexOf('/');
    const key = slash > 0 && members.includes(k.slice(0, slash)) ? `members${k.slice(slash)}` : k;
    out[key] = (out[key] ?? 0) + v;
  }
  for (const k of Object.keys(out)) out[k] = Math.round((out[k]! / (ms / 60_000)) * 10) / 10;
  return out;
}

/** One pod per virtual node (replicas = pods), spread one per node over the members' virtual nodes. */
export function spreadDeployment(name: string, replicas: number, members: string[]): V1Deployment {
  const labels = { app: name };
  return { metadata: { name }, spec: { replicas, selector: { matchLabels: labels }, template: { metadata: { labels }, spec: {
    containers: [{ name: 'app', image: 'registry.example/bench:1' }],
    tolerations: [{ key: VIRTUAL_NODE_TAINT_KEY, operator: 'Exists', effect: 'NoSchedule' }],
    affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: {
      nodeSelectorTerms: [{ matchExpressions: [{ key: MEMBER_LABEL, operator: 'In', values: members }] }] } } },
    // Honor: a node not Ready (its not-ready taint) is left out of the skew, so it holds up no pod.
    topologySpreadConstraints: [{ maxSkew: 1, topologyKey: HOSTNAME_LABEL, whenUnsatisfiable: 'DoNotSchedule',
      labelSelector: { matchLabels: labels }, nodeTaintsPolicy: 'Honor' }],
  } } } };
}

interface Member { name: string; cluster: LocalCluster; client: ClusterClient; nodes: string[] }

interface Ctx {
  h: Harness; host: ClusterClient; members: Member[]; names: string[]; expected: Set<string>; cl: BenchClusterlet;
  informer: Informer<V1Node>; t0: number; log: (l: string) => void; opts: NodesOptions; N: number; windowMs: number; podsPerNode: number;
}

/** clusterlet started → all virtual nodes Ready, at most: 2 minutes and half a second per node. */
const readyBoundMs = (nodes: number): number => 120_000 + nodes * 500;

export async function runNodes(opts: NodesOptions): Promise<NodesResult> {
  const { harness: h, log } = opts;
  const M = opts.members ?? 10;
  const N = opts.nodesPerMember ?? 50;
  // Pod and service ranges 10.150-10.255 (the many-members run's start at 10.100).
  if (M > 106) throw new Error(`the many-nodes run takes at most 106 members, not ${M}`);
  const names = nodeMemberNames(M);
  const members: Member[] = [];
  for (const [i, name] of names.entries()) {
    const t = performance.now();
    const fake = manyMemberNodes(name, N);
    // One at a time, lean: as the many-members run (bench/members.ts).
    const cluster = await h.addMember(name, `10.${150 + i}`, { lean: true, nodes: fake });
    members.push({ name, cluster,
      client: new ClusterClient(loadKubeconfigFile(cluster.kubeconfig), { cluster: `bench-${name}`, qps: 5000, burst: 10000 }),
      nodes: fake.map((n) => virtualNodeName(`clusterlet-${name}`, { kind: 'node', node: n.name })) });
    log(`nodes: ${name} up with ${N} nodes in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  }
  const providerConfig = join(h.dir, 'nodes.yaml');
  writeFileSync(providerConfig, `members:\n${members.map((m) => `- name: ${m.name}\n  kubeconfig: ${m.cluster.kubeconfig}\n  nodes: node\n`).join('')}`);
  const host = new ClusterClient(loadKubeconfigFile(h.host.kubeconfig), { cluster: 'bench-host', qps: 5000, burst: 10000 });
  const expected = new Set(members.flatMap((m) => m.nodes));
  // The virtual nodes of these members, and no other: the earlier runs' stay on the host.
  const informer = new Informer<V1Node>('bench-virtual-nodes', listWatch<V1Node>(host, {
    path: '/api/v1/nodes', model: 'V1Node', resource: 'nodes', list: (p) => host.core.listNode(p),
    labelSelector: `${VIRTUAL_NODE_TYPE_LABEL}=${VIRTUAL_NODE_TYPE},${MEMBER_LABEL} in (${names.join(',')})`,
  }, { silenceMs: 120_000 }), { keep: (key) => expected.has(key) });
  informer.start();
  await informer.waitSynced();
  const t0 = performance.now();
  const cl = await startBenchClusterlet(h, ['--provider-config', providerConfig], 'clusterlet-nodes.log', 'the many-nodes run');
  try {
    const measuring = measure({ h, host, members, names, expected, cl, informer, t0, log, opts, N,
      windowMs: opts.windowMs ?? 180_000, podsPerNode: opts.podsPerNode ?? 1 });
    measuring.catch(() => undefined); // if clusterlet exits first, that is the error
    return await Promise.race([measuring, cl.exited]);
  } finally {
    await cl.stop();
    informer.stop();
  }
}

async function measure(ctx: Ctx): Promise<NodesResult> {
  const { h, members, expected, cl, informer, t0, log } = ctx;
  const total = expected.size;
  const since = (): number => Math.round(performance.now() - t0);
  const bound = readyBoundMs(total);
  let registeredMs: number | undefined;
  let readyMs: number | undefined;
  let logged = 0;
  while (performance.now() - t0 < bound) {
    const ready = informer.list().filter(isReady).length;
    if (registeredMs === undefined && informer.size >= total) registeredMs = since();
    if (ready >= total) { readyMs = since(); break; }
    if (performance.now() - logged > 10_000) {
      logged = performance.now();
      log(`nodes: ${(since() / 1000).toFixed(0)} s after clusterlet's start, ${informer.size}/${total} virtual nodes registered, ${ready} Ready`);
    }
    await sleep(250);
  }
  const cpuToReady = cpuTicks(cl.pid) / 100;
  const pids = (): Map<string, number> => new Map([['clusterlet', cl.pid], ...h.pids()]);
  const result: NodesResult = {
    members: members.map((m) => m.name), nodesPerMember: ctx.N, virtualNodes: total, registeredMs, readyMs,
    cpuToReadyClusterlet: Math.round(cpuToReady * 10) / 10, idleRssMB: Math.round(rssMB(cl.pid)),
    rssMB: byGroup(Object.fromEntries([...pids()].map(([k, pid]) => [k, rssMB(pid)])), members.map((m) => m.name)),
  };
  log(readyMs === undefined
    ? `nodes: not all Ready after ${sec(bound)}: ${informer.size}/${total} registered, ${informer.list().filter(isReady).length} Ready`
    : `nodes: all ${total} virtual nodes Ready ${sec(readyMs)} after clusterlet's start (all registered at ${sec(registeredMs)}), ` +
      `clusterlet CPU ${result.cpuToReadyClusterlet} s, RSS ${result.idleRssMB} MB; RSS by group (MB): ${JSON.stringify(result.rssMB)}`);
  ctx.opts.onProgress?.(result);
  result.window = await steadyWindow(ctx, pids);
  ctx.opts.onProgress?.(result);
  if (ctx.podsPerNode > 0 && readyMs !== undefined) {
    result.pods = await podsRun(ctx, total * ctx.podsPerNode);
    ctx.opts.onProgress?.(result);
  }
  return result;
}

async function scrape(cl: BenchClusterlet): Promise<Scrape> {
  return parseScrape(await (await fetch(`http://127.0.0.1:${cl.healthPort}/metrics`)).text());
}

async function steadyWindow(ctx: Ctx, pids: () => Map<string, number>): Promise<NodesWindow> {
  const { host, expected, cl, informer, log, windowMs } = ctx;
  log(`nodes: ${sec(SETTLE_MS)} to settle`);
  await sleep(SETTLE_MS);
  const writes = new NodeWriteCounter();
  const relists0 = informer.relists;
  const before = await scrape(cl);
  const sampler = new ProcessSampler(cl.pid);
  const cpu = new CpuAccount(pids());
  const busy0 = machineBusyTicks();
  const sub = informer.events$.subscribe((ev) => writes.add(ev));
  const tw = performance.now();
  log(`nodes: steady window of ${sec(windowMs)}, no pod`);
  const ages: number[] = [];
  let samples = 0;
  let missing = 0;
  for (let slot = tw; slot < tw + windowMs; slot += LEASE_SAMPLE_MS) {
    await sleep(Math.max(0, slot + Math.random() * Math.min(LEASE_SAMPLE_MS, tw + windowMs - slot) - performance.now()));
    try {
      const leases = (await host.coordination.listNamespacedLease({ namespace: LEASE_NAMESPACE })).items;
      const now = Date.now();
      samples++;
      let found = 0;
      for (const l of leases) {
        if (!expected.has(l.metadata?.name ?? '')) continue;
        const age = leaseAge(l, now);
        if (age === undefined) continue;
        found++;
        ages.push(age);
      }
      missing += expected.size - found;
    } catch (err) {
      log(`nodes: listing the Leases failed: ${(err as Error).message}`);
    }
    if (samples % 6 === 0) {
      log(`nodes: window ${sec(performance.now() - tw)}: lease age max ${sec(Math.max(0, ...ages))}, ${missing} missing; ` +
        `${writes.result(expected.size, performance.now() - tw, informer.relists - relists0).total} node writes`);
    }
  }
  await sleep(Math.max(0, tw + windowMs - performance.now()));
  sub.unsubscribe();
  const ms = Math.round(performance.now() - tw);
  const proc = sampler.stop();
  const cpuAll = cpu.seconds();
  const machine = (machineBusyTicks() - busy0) / 100;
  const after = await scrape(cl);
  const names = ctx.members.map((m) => m.name);
  const w: NodesWindow = {
    ms, cpuSeconds: proc.cpuSeconds, cpuPerMinute: Math.round((proc.cpuSeconds / (ms / 60_000)) * 100) / 100,
    cpuByGroup: withRest(byGroup(cpuAll, names), machine), peakRssMB: proc.peakRssMB, endRssMB: Math.round(rssMB(cl.pid)),
    leases: leaseAges(ages, samples, missing), writes: writes.result(expected.size, ms, informer.relists - relists0),
    requestsPerMinute: requestsPerMinute(countsBetween(before.requests, after.requests), ms, names),
    watchRestarts: countsBetween(before.watchRestarts, after.watchRestarts),
  };
  log(`nodes: window done: clusterlet CPU ${w.cpuSeconds.toFixed(1)} s (${w.cpuPerMinute} s/min), peak RSS ${w.peakRssMB} MB, ` +
    `end RSS ${w.endRssMB} MB; lease age p99 ${sec(w.leases.p99Ms)}, max ${sec(w.leases.maxMs)}, > 20 s ${w.leases.over20s}, ` +
    `> 40 s ${w.leases.over40s}; node writes ${w.writes.total} (${w.writes.perNodePerMinute} per node per min: ` +
    `refresh ${w.writes.refresh}, status ${w.writes.status}, metadata ${w.writes.metadata}; by change: ${entries(w.writes.changes)}), ` +
    `${w.writes.notReady} NotReady`);
  return w;
}

async function podsRun(ctx: Ctx, pods: number): Promise<NodesPods> {
  const { host, members, names, cl, log } = ctx;
  const hostApps = ctx.h.host.kubeConfig().makeApiClient(AppsV1Api);
  const ns = 'bench-nodes';
  const bound = 120_000 + pods * 300;
  await host.core.createNamespace({ body: { metadata: { name: ns } } });
  const proxies = new ReadyTracker(host, ns);
  await proxies.start();
  const sampler = new ProcessSampler(cl.pid);
  const cpu0 = cpuTicks(cl.pid);
  const t0 = performance.now();
  await hostApps.createNamespacedDeployment({ namespace: ns, body: spreadDeployment('bench', pods, names) });
  log(`nodes: a Deployment of ${pods} pods spread over the virtual nodes created`);
  const ready = await proxies.until(pods, bound, 'many nodes: pods').then(() => true, (err: Error) => { log(err.message); return false; });
  const readyMs = ready ? Math.round(Math.max(...proxies.readyAt.values()) - t0) : undefined;
  const cpuToReady = (cpuTicks(cl.pid) - cpu0) / 100;
  const nodesUsed = new Set(proxies.informer.list().map((p) => p.spec?.nodeName).filter((n) => n !== undefined)).size;
  log(`nodes: ${readyMs === undefined ? `${proxies.readyAt.size}/${pods} pods Ready at the bound` : `all ${pods} pods Ready in ${sec(readyMs)}`} ` +
    `on ${nodesUsed} virtual nodes, clusterlet CPU ${cpuToReady.toFixed(1)} s`);
  const tDel = performance.now();
  await hostApps.deleteNamespacedDeployment({ namespace: ns, name: 'bench', propagationPolicy: 'Background' });
  const emptied = await proxies.empty(bound, 'many nodes: delete').then(() => true, (err: Error) => { log(err.message); return false; });
  const deleteMs = emptied ? Math.round(performance.now() - tDel) : undefined;
  const proc = sampler.stop();
  proxies.stop();
  const left = {
    proxies: (await host.core.listNamespacedPod({ namespace: ns })).items.length,
    delegates: (await Promise.all(members.map((m) => m.client.core.listPodForAllNamespaces({ labelSelector: PROXY_UID_LABEL }))))
      .reduce((s, l) => s + l.items.length, 0),
  };
  log(`nodes: pods deleted in ${sec(deleteMs)}; left ${left.proxies} proxies, ${left.delegates} delegates; peak RSS ${proc.peakRssMB} MB`);
  await Promise.all([deleteNamespaceAndWait(host, ns, bound),
    // clusterlet created them; they may be gone already.
    ...members.map((m) => deleteNamespaceAndWait(m.client, ns, bound).catch(() => undefined))]);
  return { pods, readyMs, nodesUsed, cpuToReadyClusterlet: Math.round(cpuToReady * 10) / 10, peakRssMB: proc.peakRssMB, deleteMs, left };
}

const sec = (ms: number | undefined): string => (ms === undefined ? '–' : `${(ms / 1000).toFixed(1)} s`);
const entries = (r: Record<string, number>): string => Object.entries(r).map(([k, v]) => `${k} ${v}`).join(', ') || 'none';

export function nodesMarkdown(r: NodesResult): string {
  const M = r.members.length;
  const lines = [
    '', `## Many nodes: one clusterlet, ${M} members × ${r.nodesPerMember} nodes in node mode (${r.virtualNodes} virtual nodes)`, '',
    `One clusterlet process (\`--provider-config\`, \`nodes: node\` for every member) leads ${M} members, each with its own ` +
    `control plane (lean, as in the many-members run) and ${r.nodesPerMember} KWOK nodes (3 zones; KWOK heartbeats them as ` +
    `kubelets do), so one virtual node per member node on the host, each with its Lease in ${LEASE_NAMESPACE}. Times are from ` +
    `clusterlet's start. One run.`, '',
    '| all registered | all Ready | clusterlet CPU-s to all Ready | clusterlet RSS at all Ready |',
    '|---:|---:|---:|---:|',
    `| ${sec(r.registeredMs)} | ${sec(r.readyMs)} | ${r.cpuToReadyClusterlet} | ${r.idleRssMB} MB |`, '',
    `RSS of every process then, by group: ${entries(r.rssMB)} MB.`,
  ];
  const w = r.window;
  if (w) {
    const l = w.leases;
    lines.push('', `Steady window of ${sec(w.ms)} from ${sec(SETTLE_MS)} after all Ready, no pod. Leases listed once in every ` +
      `${LEASE_SAMPLE_MS / 1000} s, at a random point of it (${l.samples} lists, ` +
      `${l.ages} ages read, ${l.missing} missing); node writes are the host's watch events of the virtual nodes.`, '',
      '| clusterlet CPU-s (per min) | peak / end RSS | lease age p50 / p99 / max | ages > 20 s / > 40 s | node writes (per node per min) | refresh / status / metadata | NotReady |',
      '|---:|---:|---:|---:|---:|---:|---:|',
      `| ${w.cpuSeconds.toFixed(1)} (${w.cpuPerMinute}) | ${w.peakRssMB} / ${w.endRssMB} MB | ${sec(l.p50Ms)} / ${sec(l.p99Ms)} / ${sec(l.maxMs)} | ` +
      `${l.over20s} / ${l.over40s} | ${w.writes.total} (${w.writes.perNodePerMinute}) | ${w.writes.refresh} / ${w.writes.status} / ${w.writes.metadata} | ${w.writes.notReady} |`,
      '', `- node writes by what they changed: ${entries(w.writes.changes)}`,
      `- CPU-s of every process over the window, by group: ${entries(w.cpuByGroup)}`,
      `- clusterlet's API requests per minute: ${entries(w.requestsPerMinute)}`,
      `- most writes to one virtual node: ${w.writes.maxPerNode}; virtual nodes added ${w.writes.added}, deleted ${w.writes.deleted}; ` +
      `relists of the bench's watch ${w.writes.relists}; clusterlet's watch restarts: ${entries(w.watchRestarts)}`);
  }
  const p = r.pods;
  if (p) {
    lines.push('', `Then one Deployment of ${p.pods} pods spread over the virtual nodes (topology spread on the hostname, maxSkew 1): ` +
      `${p.readyMs === undefined ? 'not all Ready within the bound' : `all Ready in ${sec(p.readyMs)}`}, on ${p.nodesUsed} virtual nodes, ` +
      `clusterlet CPU ${p.cpuToReadyClusterlet} s to all Ready, peak RSS ${p.peakRssMB} MB; deleted in ${sec(p.deleteMs)}, ` +
      `left ${p.left.proxies} proxies, ${p.left.delegates} delegates.`);
  }
  return lines.join('\n') + '\n';
}
