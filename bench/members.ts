// The many-members run (issue 19: what sets clusterlet apart from one virtual kubelet per remote cluster): ONE
// clusterlet process leading M members, each with its own control plane and KWOK on the harness's etcd, and one
// Deployment of P pods per member created at once on the host, bound to that member's virtual node. Measured: the time
// until all M × P proxies are Ready (and per member), clusterlet's RSS and CPU, the delete and what it leaves behind.
// Then the same again with one member's API server stopped once half its pods are Ready, and started again when the
// other members are all Ready (or after a bound): their times against the run without the fault, and what the host
// shows for the stopped member's pods.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { AppsV1Api, type V1Pod } from '@kubernetes/client-node';
import type { Harness } from '../test/harness/harness.ts';
import type { LocalCluster } from '../test/harness/cluster.ts';
import { pollUntil } from '../test/harness/net.ts';
import { deleteNamespaceAndWait } from '../test/support/env.ts';
import { ClusterClient } from '../src/kube/client.ts';
import { loadKubeconfigFile } from '../src/kube/kubeconfig.ts';
import { PROXY_UID_LABEL } from '../src/forge/keys.ts';
import { CpuAccount, deployment, median, ProcessSampler, ReadyTracker, rssKB } from './bench.ts';
import { startBenchClusterlet, type BenchClusterlet } from './clusterlet.ts';
import { isReady } from '../test/support/objects.ts';

export interface MembersOptions {
  harness: Harness;
  /** How many members to add (named m01, m02, ...), and the pods offloaded to each. */
  members: number;
  podsPerMember: number;
  log: (line: string) => void;
  /** Called after each run with the results so far. */
  onProgress?: (partial: MembersResult) => void;
}

/**
 * The longest the stopped member's API server stays down: within the 5 min its pods tolerate an unreachable node
 * before the host evicts them.
 */
const OUTAGE_BOUND_MS = 180_000;
/** How long after its restart the stopped member's pods may take to be all Ready on the host again. */
const RECOVERY_BOUND_MS = 300_000;

/** What the host shows for one member: its virtual node's Ready condition and taints, and its pods. */
export interface HostView {
  /** Ready condition status, with its reason: e.g. `Unknown (NodeStatusUnknown)`. */
  node: string;
  taints: string[];
  pods: number;
  ready: number;
  phases: Record<string, number>;
}

export interface MemberTimes {
  member: string;
  /** Creation → all its pods Ready on the host; undefined: not within the bound. */
  readyMs?: number;
}

export interface Fault {
  member: string;
  /** When its API server was stopped (ms after creation), and how many of its pods had been Ready on the host then. */
  stoppedAtMs: number;
  readyAtStop: number;
  /** When it answered again after its restart (ms after creation), and why it was restarted then. */
  restartedAtMs: number;
  restartedBecause: 'others all Ready' | 'bound';
  /** What the host showed just before the restart, and once all its pods were Ready again (or at the bound). */
  beforeRestart: HostView;
  after: HostView;
  /** Its delegates Ready in the member then (against `after.ready`: what the host shows of them). */
  delegatesReadyAfter: number;
  /** API server started again → all its pods Ready on the host at once; undefined: not within the bound. */
  recoveredMs?: number;
}

export interface ManyMembersRun {
  fault?: Fault;
  /** Creation → all pods of every member Ready on the host (with a fault: of every other member). */
  readyMs?: number;
  members: MemberTimes[];
  peakRssMB: number;
  /** clusterlet's CPU seconds to all Ready (as readyMs), and over the whole run (creation → all deleted). */
  cpuToReadyClusterlet: number;
  cpuSeconds: number;
  /**
   * CPU seconds of every process to all Ready, by group (see byGroup), and `rest of the machine`: what the machine
   * spent besides (other programs on it; a run on a busy machine is slower).
   */
  cpuToReady: Record<string, number>;
  /** Deployments deleted → no proxy and no delegate left; undefined: some were left at the bound. */
  deleteMs?: number;
  /** Listed after the delete: proxies on the members' virtual nodes, delegates in the members. */
  left: { proxies: number; delegates: number };
}

export interface MembersResult {
  members: string[];
  podsPerMember: number;
  /** clusterlet's RSS once every virtual node was Ready, before any pod. */
  idleRssMB: number;
  /** RSS of every process by group (see byGroup) once clusterlet was up: what the control planes take. */
  rssMB: Record<string, number>;
  runs: ManyMembersRun[];
}

/** m01, m02, ...: no name is a prefix of another, so neither are their etcd prefixes (/registry-<name>). */
export function memberNames(n: number): string[] {
  return Array.from({ length: n }, (_, i) => `m${String(i + 1).padStart(2, '0')}`);
}

/**
 * Sums per-process values (named as Harness.pids() names them, plus `clusterlet`) into clusterlet, etcd, host,
 * members (the added members' control planes and KWOK) and `bench member` (the size runs' member, idle here).
 */
export function byGroup(values: Record<string, number>, members: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, v] of Object.entries(values)) {
    if (!Number.isFinite(v)) continue; // a process gone before the end (the stopped API server)
    const cluster = name.split('/')[0]!;
    const group = members.includes(cluster) ? 'members' : cluster === 'member' ? 'bench member' : cluster;
    out[group] = (out[group] ?? 0) + v;
  }
  for (const k of Object.keys(out)) out[k] = Math.round(out[k]! * 10) / 10;
  return out;
}

/** How many pods, how many Ready, how many in each phase. */
export function podCounts(pods: V1Pod[]): Pick<HostView, 'pods' | 'ready' | 'phases'> {
  const phases: Record<string, number> = {};
  for (const p of pods) phases[p.status?.phase ?? 'Unknown'] = (phases[p.status?.phase ?? 'Unknown'] ?? 0) + 1;
  return { pods: pods.length, ready: pods.filter(isReady).length, phases };
}

/** CPU time the whole machine spent (all but idle and iowait), in clock ticks (100 Hz). */
export function machineBusyTicks(): number {
  const [user, nice, system, , , irq, softirq, steal] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  return user! + nice! + system! + irq! + softirq! + steal!;
}

/** Adds to CPU seconds by group what the machine spent besides them (see ManyMembersRun.cpuToReady). */
export function withRest(groups: Record<string, number>, machineSeconds: number): Record<string, number> {
  const ours = Object.values(groups).reduce((a, b) => a + b, 0);
  return { ...groups, 'rest of the machine': Math.max(0, Math.round((machineSeconds - ours) * 10) / 10) };
}

/** A process's VmRSS in MB; 0 once it is gone. */
export const rssMB = (pid: number): number => (rssKB(pid)?.total ?? 0) / 1024;

interface Member { name: string; node: string; cluster: LocalCluster; client: ClusterClient }

export async function runMembers(opts: MembersOptions): Promise<MembersResult> {
  const { harness: h, log, podsPerMember: P } = opts;
  const names = memberNames(opts.members);
  const members: Member[] = [];
  for (const [i, name] of names.entries()) {
    const t = performance.now();
    // One at a time: starting a control plane keeps this machine's two cores busy for 6-12 s. Lean: ten full
    // controller-managers (and their garbage collectors) would take CPU the delegates do not need (see ClusterOptions).
    const cluster = await h.addMember(name, `10.${100 + i}`, { lean: true });
    members.push({ name, node: `clusterlet-${name}`, cluster,
      client: new ClusterClient(loadKubeconfigFile(cluster.kubeconfig), { cluster: `bench-${name}`, qps: 5000, burst: 10000 }) });
    log(`members: ${name} up in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  }
  const providerConfig = join(h.dir, 'members.yaml');
  writeFileSync(providerConfig, `members:\n${members.map((m) => `- name: ${m.name}\n  kubeconfig: ${m.cluster.kubeconfig}\n`).join('')}`);
  const cl = await startBenchClusterlet(h, ['--provider-config', providerConfig], 'clusterlet-members.log', 'the many-members run');
  const host = new ClusterClient(loadKubeconfigFile(h.host.kubeconfig), { cluster: 'bench-host', qps: 5000, burst: 10000 });
  try {
    const measuring = measure({ h, host, members, P, cl, log, opts });
    measuring.catch(() => undefined); // if clusterlet exits first, that is the error
    return await Promise.race([measuring, cl.exited]);
  } finally {
    await cl.stop();
  }
}

interface Ctx { h: Harness; host: ClusterClient; members: Member[]; P: number; cl: BenchClusterlet; log: (l: string) => void; opts: MembersOptions }

async function measure(ctx: Ctx): Promise<MembersResult> {
  const { h, host, members, cl, log } = ctx;
  await cl.ready(120_000);
  await pollUntil(`${members.length} virtual nodes Ready`, async () => {
    const nodes = (await host.core.listNode({ labelSelector: 'type=virtual-kubelet' })).items;
    const ready = new Set(nodes.filter(isReady).map((n) => n.metadata!.name!));
    return members.every((m) => ready.has(m.node)) ? true : undefined;
  }, 120_000, 500);
  const pids = (): Map<string, number> => new Map([['clusterlet', cl.pid], ...h.pids()]);
  const result: MembersResult = {
    members: members.map((m) => m.name), podsPerMember: ctx.P, idleRssMB: Math.round(rssMB(cl.pid)),
    rssMB: byGroup(Object.fromEntries([...pids()].map(([k, pid]) => [k, rssMB(pid)])), members.map((m) => m.name)), runs: [],
  };
  log(`members: clusterlet leads ${members.length} members, RSS ${result.idleRssMB} MB; RSS by group (MB): ${JSON.stringify(result.rssMB)}`);
  // The stopped member: the first, whose Deployment is created first; it got half Ready earliest in the runs without
  // the fault (10 × 500: all Ready at 408-483 s, the others at 487-704 s), so its outage overlaps the others' run most.
  const faulty = members[0]!.name;
  for (const fault of [undefined, faulty]) {
    result.runs.push(await manyRun(ctx, result.runs.length + 1, pids, fault));
    ctx.opts.onProgress?.(result);
  }
  return result;
}

/**
 * How long all pods may take to get Ready, or to go: 10 × 500 took 704 s on this machine (2 cores; every control plane
 * and clusterlet share them), so 300 ms a pod.
 */
const boundMs = (members: number, pods: number): number => 120_000 + members * pods * 300;

/** The pods a tracker holds, Ready now (not only once). */
const readyNow = (t: ReadyTracker): number => t.informer.list().filter(isReady).length;

async function hostView(host: ClusterClient, node: string, proxies: ReadyTracker): Promise<HostView> {
  const n = await host.core.readNode({ name: node });
  const cond = n.status?.conditions?.find((c) => c.type === 'Ready');
  return {
    node: `${cond?.status ?? 'none'}${cond?.reason ? ` (${cond.reason})` : ''}`,
    taints: (n.spec?.taints ?? []).map((t) => `${t.key}:${t.effect}`),
    ...podCounts(proxies.informer.list()),
  };
}

/** Resolves with the time (ms) until `ok()` held, polled every 250 ms, or undefined at the bound. */
async function timeUntil(ok: () => boolean, boundMs: number): Promise<number | undefined> {
  const t0 = performance.now();
  while (!ok()) {
    if (performance.now() - t0 > boundMs) return undefined;
    await sleep(250);
  }
  return Math.round(performance.now() - t0);
}

async function manyRun(ctx: Ctx, run: number, pids: () => Map<string, number>, faulty: string | undefined): Promise<ManyMembersRun> {
  const { host, members, P, cl, log } = ctx;
  const hostApps = ctx.h.host.kubeConfig().makeApiClient(AppsV1Api);
  const what = faulty ? `run ${run} (${faulty} stopped)` : `run ${run}`;
  const ns = (m: Member): string => `bench-members-${run}-${m.name}`;
  const bound = boundMs(members.length, P);
  await Promise.all(members.map((m) => host.core.createNamespace({ body: { metadata: { name: ns(m) } } })));
  const proxies = new Map(members.map((m) => [m.name, new ReadyTracker(host, ns(m))]));
  const delegates = new Map(members.map((m) => [m.name, new ReadyTracker(m.client, ns(m))]));
  const trackers = [...proxies.values(), ...delegates.values()];
  await Promise.all(trackers.map((t) => t.start()));
  const sampler = new ProcessSampler(cl.pid);
  const busy0 = machineBusyTicks();
  const cpu = new CpuAccount(pids());
  const t0 = performance.now();
  const since = (t: number): number => Math.round(t - t0);
  await Promise.all(members.map((m) => hostApps.createNamespacedDeployment({ namespace: ns(m), body: deployment('bench', P, m.node) })));
  log(`members ${what}: ${members.length} Deployments of ${P} created`);
  const others = members.filter((m) => m.name !== faulty);
  const allReady = (ms: Member[]): Promise<void> => Promise.all(ms.map((m) => proxies.get(m.name)!.until(P, bound, `${what}: ${m.name}`)
    .then(() => log(`members ${what}: ${m.name} all ${P} Ready at ${(since(Math.max(...proxies.get(m.name)!.readyAt.values())) / 1000).toFixed(1)} s`),
      (err: Error) => log(err.message)))).then(() => undefined);
  const othersReady = allReady(others);
  const faultDone = faulty
    ? stopAndRestart(ctx, members.find((m) => m.name === faulty)!, proxies.get(faulty)!, delegates.get(faulty)!, othersReady, t0, what) : undefined;
  await othersReady;
  const cpuToReady = cpu.seconds();
  const machineToReady = (machineBusyTicks() - busy0) / 100;
  const timeOf = (m: Member): number | undefined => {
    const t = proxies.get(m.name)!;
    return t.readyAt.size >= P ? since(Math.max(...t.readyAt.values())) : undefined;
  };
  const othersTimes = others.map(timeOf);
  const readyMs = othersTimes.every((x) => x !== undefined) ? Math.max(...othersTimes) : undefined;
  const fault = await faultDone;
  log(`members ${what}: ${readyMs === undefined ? 'not all Ready' : `all Ready in ${(readyMs / 1000).toFixed(1)} s`}, clusterlet CPU ${cpuToReady.clusterlet?.toFixed(1)} s`);

  const tDel = performance.now();
  await Promise.all(members.map((m) => hostApps.deleteNamespacedDeployment({ namespace: ns(m), name: 'bench', propagationPolicy: 'Background' })));
  const emptied = await Promise.all(trackers.map((t) => t.empty(bound, `${what}: delete`).then(() => true, (err: Error) => { log(err.message); return false; })));
  const deleteMs = emptied.every(Boolean) ? Math.round(performance.now() - tDel) : undefined;
  const proc = sampler.stop();
  for (const t of trackers) t.stop();
  const left = {
    proxies: (await Promise.all(members.map((m) => host.core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${m.node}` }))))
      .reduce((s, l) => s + l.items.length, 0),
    delegates: (await Promise.all(members.map((m) => m.client.core.listPodForAllNamespaces({ labelSelector: PROXY_UID_LABEL }))))
      .reduce((s, l) => s + l.items.length, 0),
  };
  log(`members ${what}: deleted in ${deleteMs === undefined ? '(not all)' : `${(deleteMs / 1000).toFixed(1)} s`}; left ${left.proxies} proxies, ${left.delegates} delegates; peak RSS ${proc.peakRssMB} MB`);
  await Promise.all(members.flatMap((m) => [deleteNamespaceAndWait(host, ns(m), bound),
    // clusterlet created it; it may be gone already.
    deleteNamespaceAndWait(m.client, ns(m), bound).catch(() => undefined)]));
  return {
    ...(fault ? { fault } : {}), readyMs,
    members: members.map((m) => ({ member: m.name, readyMs: m.name === faulty && fault?.recoveredMs !== undefined
      ? fault.restartedAtMs + fault.recoveredMs : m.name === faulty ? undefined : timeOf(m) })),
    peakRssMB: proc.peakRssMB, cpuToReadyClusterlet: Math.round((cpuToReady.clusterlet ?? 0) * 10) / 10,
    cpuSeconds: proc.cpuSeconds, cpuToReady: withRest(byGroup(cpuToReady, members.map((m) => m.name)), machineToReady), deleteMs, left,
  };
}

/**
 * The fault: the member's API server stops once half its pods are Ready, and starts again when the others are all
 * Ready or after the outage bound; then waits until all its pods are Ready on the host.
 */
async function stopAndRestart(ctx: Ctx, m: Member, proxies: ReadyTracker, delegates: ReadyTracker, othersReady: Promise<void>, t0: number,
  what: string): Promise<Fault> {
  const { host, P, log } = ctx;
  await proxies.until(Math.ceil(P / 2), boundMs(ctx.members.length, P), `${what}: half of ${m.name}`);
  const readyAtStop = proxies.readyAt.size;
  const stoppedAtMs = Math.round(performance.now() - t0);
  await m.cluster.stopApiServer();
  log(`members ${what}: ${m.name}'s API server stopped at ${(stoppedAtMs / 1000).toFixed(1)} s, ${readyAtStop}/${P} Ready`);
  const ac = new AbortController();
  const restartedBecause = await Promise.race([othersReady.then(() => 'others all Ready' as const),
    sleep(OUTAGE_BOUND_MS, 'bound' as const, { signal: ac.signal })]);
  ac.abort();
  const beforeRestart = await hostView(host, m.node, proxies);
  await m.cluster.startApiServer();
  const restartedAtMs = Math.round(performance.now() - t0);
  log(`members ${what}: ${m.name}'s API server started again at ${(restartedAtMs / 1000).toFixed(1)} s (${restartedBecause}); host showed node ${
    beforeRestart.node}, ${beforeRestart.ready}/${beforeRestart.pods} Ready`);
  const recoveredMs = await timeUntil(() => readyNow(proxies) >= P, RECOVERY_BOUND_MS);
  const after = await hostView(host, m.node, proxies);
  const delegatesReadyAfter = readyNow(delegates);
  log(`members ${what}: ${m.name} ${recoveredMs === undefined ? `not all Ready ${sec(RECOVERY_BOUND_MS)} after the restart` : `all Ready ${sec(recoveredMs)} after the restart`}`);
  return { member: m.name, stoppedAtMs, readyAtStop, restartedAtMs, restartedBecause, beforeRestart, after, delegatesReadyAfter, recoveredMs };
}

const sec = (ms: number | undefined): string => (ms === undefined ? '–' : `${(ms / 1000).toFixed(1)} s`);
const entries = (r: Record<string, number>): string => Object.entries(r).map(([k, v]) => `${k} ${v}`).join(', ');
const view = (v: HostView): string =>
  `node Ready=${v.node}${v.taints.length ? `, taints ${v.taints.join(', ')}` : ''}; ${v.ready}/${v.pods} pods Ready (${entries(v.phases)})`;

/** The other members' slowest and median times to all Ready in the fault run against the same members' in the run without. */
export function othersAgainstBaseline(base: ManyMembersRun, faulted: ManyMembersRun): { slowest: [number, number]; median: [number, number] } | undefined {
  const stopped = faulted.fault?.member;
  const pairs = faulted.members.filter((m) => m.member !== stopped)
    .map((m) => [base.members.find((b) => b.member === m.member)?.readyMs, m.readyMs] as const);
  if (pairs.some(([b, f]) => b === undefined || f === undefined)) return undefined;
  const b = pairs.map(([x]) => x!), f = pairs.map(([, y]) => y!);
  return { slowest: [Math.max(...b), Math.max(...f)], median: [Math.round(median(b)), Math.round(median(f))] };
}

export function membersMarkdown(r: MembersResult): string {
  const M = r.members.length;
  const lines = [
    '', `## Many members: one clusterlet, ${M} members × ${r.podsPerMember} pods`, '',
    `One clusterlet process (\`--provider-config\`) leads ${M} members, each with its own control plane (lean: no garbage collector, ` +
    `only the controllers delegates need) and KWOK on the shared etcd; one Deployment of ${r.podsPerMember} per member is created on the ` +
    `host at once, bound to that member's virtual node. Times are from creation. The second run stops one member's API server once half ` +
    `its pods are Ready, and starts it again once the others are all Ready (or after ${sec(OUTAGE_BOUND_MS)}). One run each.`, '',
    `clusterlet leading ${M} members, before any pod: RSS ${r.idleRssMB} MB. RSS of every process then, by group: ${entries(r.rssMB)} MB.`, '',
    '| run | all Ready | per member: median / slowest | clusterlet peak RSS | clusterlet CPU-s to all Ready / whole run | CPU-s of every process to all Ready | delete all | left after delete |',
    '|---|---:|---:|---:|---:|---|---:|---|',
  ];
  for (const run of r.runs) {
    const stopped = run.fault?.member;
    const times = run.members.filter((m) => m.member !== stopped).map((m) => m.readyMs).filter((x): x is number => x !== undefined);
    lines.push(`| ${stopped ? `${stopped} stopped (the ${M - 1} others)` : 'no fault'} | ${sec(run.readyMs)} | ${sec(times.length ? median(times) : undefined)} / ${
      sec(times.length ? Math.max(...times) : undefined)} | ${run.peakRssMB} MB | ${run.cpuToReadyClusterlet} / ${run.cpuSeconds.toFixed(1)} | ${
      entries(run.cpuToReady)} | ${sec(run.deleteMs)} | ${run.left.proxies} proxies, ${run.left.delegates} delegates |`);
  }
  const base = r.runs.find((x) => !x.fault);
  const faulted = r.runs.find((x) => x.fault);
  lines.push('', 'Per member, all its pods Ready on the host (s after creation):', '', `| member | ${r.runs.map((x) => x.fault ? `${x.fault.member} stopped` : 'no fault').join(' | ')} |`,
    `|---|${r.runs.map(() => '---:').join('|')}|`);
  for (const name of r.members) {
    lines.push(`| ${name} | ${r.runs.map((x) => {
      const t = sec(x.members.find((m) => m.member === name)?.readyMs);
      return x.fault?.member === name ? `${t} (stopped)` : t;
    }).join(' | ')} |`);
  }
  if (base && faulted?.fault) {
    const f = faulted.fault;
    const cmp = othersAgainstBaseline(base, faulted);
    const ratio = (p: [number, number]): string => `${sec(p[0])} → ${sec(p[1])} (×${(p[1] / p[0]).toFixed(2)})`;
    lines.push('', cmp
      ? `The ${M - 1} other members with ${f.member} stopped, against the same members without the fault: slowest ${ratio(cmp.slowest)}, median ${ratio(cmp.median)}.`
      : `The ${M - 1} other members did not all get Ready in both runs.`);
    lines.push('', `${f.member}: API server stopped at ${sec(f.stoppedAtMs)} with ${f.readyAtStop}/${r.podsPerMember} pods Ready on the host, ` +
      `restarted when ${f.restartedBecause === 'bound' ? 'the outage bound was reached' : 'the others were all Ready'}, answering again at ${sec(f.restartedAtMs)}.`, '',
    `- what the host showed just before the restart: ${view(f.beforeRestart)}`,
    `- ${f.recoveredMs === undefined ? `not all Ready ${sec(RECOVERY_BOUND_MS)} after the restart` : `all Ready ${sec(f.recoveredMs)} after the restart`}: ${view(f.after)}; ` +
      `in the member, ${f.delegatesReadyAfter}/${r.podsPerMember} delegates Ready`);
  }
  return lines.join('\n') + '\n';
}
