// High availability (issue 17): replicas elect a leader per member on a host Lease `clusterlet-<member>`;
// the leader alone writes for the member, and another replica takes over when it dies (the Lease expires) or
// stops (it releases the Lease), without losing or duplicating a pod. Who leads is read as `kubectl get`
// shows it: the Lease's holderIdentity, and the virtual node's kubelet endpoint (the leader's port).
// Every replica runs on this machine at the harness's node address, so each has its own kubelet port.
import { describe, it, before, after, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AppsV1Api, PatchStrategy, setHeaderOptions, type KubernetesObject, type V1Node, type V1Pod } from '@kubernetes/client-node';
import {
  client, clusterletArgs, clusterletKubeconfig, deleteNamespaceAndWait, harness, namespaces, startClusterlet, uniqueName,
  type ClusterletProcess,
} from '../support/env.ts';
import { waitUntil } from '../support/wait.ts';
import { condition, deployment, isReady, leaseSpec, nodeSpec, podsSpec, waitNode } from '../support/objects.ts';
import { kubectl } from '../support/kubectl.ts';
import { freePort, pollUntil } from '../harness/net.ts';
import { listWatch, type ListWatchSpec } from '../../src/kube/listwatch.ts';
import { toKubeError } from '../../src/kube/errors.ts';
import type { ClusterClient } from '../../src/kube/client.ts';

const NODE = 'clusterlet-member';
const SECOND = 'member2';
const SECOND_NODE = `clusterlet-${SECOND}`;
/** Where the Leases live (passed explicitly: the default follows $POD_NAMESPACE, which the runner might have). */
const ELECTION_NS = 'clusterlet';
const ELECTION_LABEL = 'clusterlet.io/leader-election';
/** The bound on a take-over after a leader dies, with the default 15 s / 10 s / 2 s lease timings. */
const KILL_TAKEOVER_MS = 20_000;
/** The bound on a hand-over when the leader stops (it releases its Lease). */
const STOP_HANDOVER_MS = 5_000;
const PODS = 100;

interface Replica { identity: string; kubeletPort: number; healthPort: number; proc: ClusterletProcess }

const kubeletPortOf = (n: V1Node): number | undefined => n.status?.daemonEndpoints?.kubeletEndpoint?.Port;
const internalIP = (n: V1Node): string | undefined => n.status?.addresses?.find((a) => a.type === 'InternalIP')?.address;
const memberLease = (member: string): string => `clusterlet-${member}`;

/**
 * The replicas of one test: each with its own identity, kubelet port and health port (for /metrics). All
 * stopped when the test ends (SIGTERM; a refused RBAC request fails the test), then the election's Leases
 * removed, so that replicas gone by SIGKILL do not count as live for the next clusterlet.
 */
class Replicas {
  readonly all: Replica[] = [];
  readonly #base: string[];
  readonly #host: ClusterClient;

  constructor(t: TestContext, host: ClusterClient, base: string[]) {
    this.#host = host;
    this.#base = base;
    t.after(() => this.#stopAll());
  }

  async start(identity: string): Promise<Replica> {
    const kubeletPort = await freePort();
    const healthPort = await freePort();
    const proc = startClusterlet([...this.#base, '--leader-elect-identity', identity, '--leader-elect-namespace', ELECTION_NS,
      '--kubelet-port', String(kubeletPort), '--node-ip', harness().nodeAddress, '--health-port', String(healthPort)]);
    const r = { identity, kubeletPort, healthPort, proc };
    this.all.push(r);
    return r;
  }

  async #stopAll(): Promise<void> {
    const stopped = await Promise.allSettled(this.all.map((r) => r.proc.stop()));
    await this.#host.coordination.deleteCollectionNamespacedLease({ namespace: ELECTION_NS, labelSelector: ELECTION_LABEL });
    const failed = stopped.find((s) => s.status === 'rejected');
    if (failed) throw failed.reason;
  }
}

/** Waits until the member's Lease is held by one of `among`, and returns that replica. */
async function waitLeader(host: ClusterClient, member: string, among: Replica[], timeoutMs = 60_000): Promise<Replica> {
  const holder = (ls: { spec?: { holderIdentity?: string } }[]): Replica | undefined =>
    among.find((r) => r.identity === ls[0]?.spec?.holderIdentity);
  const leases = await waitUntil(host, leaseSpec(host, ELECTION_NS, memberLease(member)), (ls) => holder(ls) !== undefined,
    timeoutMs, `Lease ${memberLease(member)} held by ${among.map((r) => r.identity).join(' or ')}`);
  return holder(leases)!;
}

/** Waits until the node is Ready and shows `leader`'s address and kubelet port. */
async function waitNodeOf(host: ClusterClient, node: string, leader: Replica, timeoutMs = 60_000): Promise<V1Node> {
  return waitNode(host, node, (n) => isReady(n) && kubeletPortOf(n) === leader.kubeletPort && internalIP(n) === harness().nodeAddress,
    `Ready at ${harness().nodeAddress}:${leader.kubeletPort} (${leader.identity})`, timeoutMs);
}

/** Whether the replica's /metrics says it leads `member` (clusterlet_leader{member} 1); undefined when unreachable. */
async function leads(r: Replica, member: string): Promise<boolean | undefined> {
  const res = await fetch(`http://127.0.0.1:${r.healthPort}/metrics`).catch(() => undefined);
  if (!res?.ok) return undefined;
  const m = new RegExp(`^clusterlet_leader\\{[^}]*member="${member}"[^}]*\\} (\\S+)$`, 'm').exec(await res.text());
  return m?.[1] === '1';
}

/** Waits until each replica's /metrics agrees with `leader`: it alone says it leads `member`. */
async function waitOnlyLeader(member: string, leader: Replica, others: Replica[]): Promise<void> {
  await pollUntil(`${leader.identity} alone reporting clusterlet_leader{member="${member}"} 1`, async () => {
    const says = await Promise.all([leader, ...others].map((r) => leads(r, member)));
    return says[0] === true && says.slice(1).every((s) => s === false) ? true : undefined;
  }, 15_000, 250);
}

/**
 * Waits until a replica is a warm standby: its presence Lease announces it ready for its members (it has set them
 * up and runs their caches, which a standby keeps so that it can take over at once).
 */
async function waitWarm(host: ClusterClient, r: Replica, members: number): Promise<void> {
  const ready = (ls: { metadata?: { annotations?: Record<string, string> } }[]): number =>
    (ls[0]?.metadata?.annotations?.['clusterlet.io/ready-members'] ?? '').split(',').filter(Boolean).length;
  await waitUntil(host, leaseSpec(host, ELECTION_NS, `clusterlet-replica.${r.identity}`), (ls) => ready(ls) >= members, 60_000,
    `presence Lease of ${r.identity} ready for ${members} member(s)`);
}

/**
 * Two replicas `<prefix>-a` and `<prefix>-b` of the harness's member: resolves once one leads it (the node Ready
 * with its port) and the other is a warm standby.
 */
async function leaderAndStandby(t: TestContext, host: ClusterClient, prefix: string):
  Promise<{ replicas: Replicas; leader: Replica; standby: Replica }> {
  const replicas = new Replicas(t, host, clusterletArgs(harness().member));
  const [a, b] = [await replicas.start(`${prefix}-a`), await replicas.start(`${prefix}-b`)];
  const leader = await waitLeader(host, 'member', [a, b]);
  const standby = leader === a ? b : a;
  await waitNodeOf(host, NODE, leader);
  await waitWarm(host, standby, 1);
  return { replicas, leader, standby };
}

/**
 * Runs `act` (which ends the current leader) and resolves with the ms from then until the member's Lease is
 * held by `next` and the node shows `next`'s kubelet port, whichever comes last.
 */
async function takeOver(host: ClusterClient, member: string, node: string, next: Replica, act: () => Promise<unknown>,
  timeoutMs = 60_000): Promise<number> {
  const t0 = performance.now();
  const [, leaseAt, nodeAt] = await Promise.all([
    act(),
    waitUntil(host, leaseSpec(host, ELECTION_NS, memberLease(member)), (ls) => ls[0]?.spec?.holderIdentity === next.identity,
      timeoutMs, `Lease ${memberLease(member)} held by ${next.identity}`).then(() => performance.now()),
    waitNode(host, node, (n) => kubeletPortOf(n) === next.kubeletPort, `kubelet port ${next.kubeletPort} (${next.identity})`, timeoutMs)
      .then(() => performance.now()),
  ]);
  return Math.round(Math.max(leaseAt, nodeAt) - t0);
}

/**
 * Hands every version of the objects to `see` from now until the returned function is called: a list-watch,
 * so every version the API server sends (after a watch error, the state its relist shows). Resolves once listed.
 */
async function observe<T extends KubernetesObject>(c: ClusterClient, spec: ListWatchSpec<T>, see: (o: T) => void): Promise<() => void> {
  let listed!: () => void;
  const first = new Promise<void>((resolve) => { listed = resolve; });
  const sub = listWatch<T>(c, spec, { silenceMs: 30_000 }).subscribe((e) => {
    if (e.type === 'SYNC') {
      e.items.forEach(see);
      listed();
    } else if (e.type !== 'DELETED') see(e.object);
  });
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([first, new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${spec.path} not listed within 30 s`)), 30_000);
    })]);
  } catch (err) {
    sub.unsubscribe();
    throw err;
  } finally {
    clearTimeout(timer);
  }
  return () => sub.unsubscribe();
}

/** What a take-over must never show on a proxy: Ready=False once it has been Ready, or phase Failed. */
class ProxyRecord {
  readonly violations: string[] = [];
  readonly #ready = new Set<string>();
  readonly #reported = new Set<string>();

  see(p: V1Pod): void {
    const uid = p.metadata!.uid!;
    const at = new Date().toISOString();
    if (p.status?.phase === 'Failed') this.#violation(`${uid} Failed`, `${at} ${p.metadata!.name} Failed: ${p.status.reason ?? ''} ${p.status.message ?? ''}`);
    if (isReady(p)) this.#ready.add(uid);
    else if (this.#ready.has(uid) && condition(p, 'Ready')?.status === 'False') {
      const c = condition(p, 'Ready')!;
      this.#violation(`${uid} NotReady`, `${at} ${p.metadata!.name} Ready=False after Ready: ${c.reason ?? ''} ${c.message ?? ''}`);
    }
  }

  #violation(key: string, text: string): void {
    if (this.#reported.has(key)) return;
    this.#reported.add(key);
    this.violations.push(text);
  }
}

/** Every delegate ever seen, by the proxy it stands for: more than one per proxy is a duplicate (or a lost one). */
class DelegateRecord {
  readonly byProxy = new Map<string, Set<string>>();

  see(d: V1Pod): void {
    const proxy = d.metadata!.labels?.['clusterlet.io/proxy-uid'] ?? `(no proxy-uid) ${d.metadata!.name}`;
    const uids = this.byProxy.get(proxy) ?? new Set<string>();
    uids.add(d.metadata!.uid!);
    this.byProxy.set(proxy, uids);
  }

  get repeated(): string[] {
    return [...this.byProxy].filter(([, uids]) => uids.size > 1).map(([proxy, uids]) => `proxy ${proxy}: delegates ${[...uids].join(', ')}`);
  }
}

/** All `n` delegates Running, each once, and all `n` proxies Ready: what `kubectl get pods` shows on both sides. */
async function waitAllServed(host: ClusterClient, member: ClusterClient, ns: string, n: number): Promise<V1Pod[]> {
  const delegates = await waitUntil(member, podsSpec(member, ns), (ps) => ps.length >= n && ps.every((p) => p.status?.phase === 'Running'),
    120_000, `${n} delegates Running`);
  assert.equal(delegates.length, n, 'no duplicate delegate');
  assert.equal(new Set(delegates.map((d) => d.metadata!.labels!['clusterlet.io/proxy-uid'])).size, n, `${n} distinct proxy-uid labels`);
  return waitUntil(host, podsSpec(host, ns), (ps) => ps.length === n && ps.every((p) => isReady(p)), 60_000, `${n} proxies Ready`);
}

/** `kubectl logs` of the pod returns what the member's KWOK serves for it: the leader's kubelet API answered. */
async function assertLogsServed(ns: string, pod: string, when: string): Promise<void> {
  const text = `${uniqueName('ha-log')} ${when}`;
  // A CRI log line, as the container runtime writes it (what KWOK reads).
  await writeFile(harness().member.kwok.logs('main'), `${new Date().toISOString().replace('Z', '000000Z')} stdout F ${text}\n`);
  assert.equal(await kubectl(harness().host, 'logs', '-n', ns, pod), `${text}\n`, `kubectl logs ${pod} ${when}`);
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

describe('high availability', () => {
  let host: ClusterClient;
  before(() => { host = client(harness().host); });

  // The nodes stay registered after their replicas stop, with a port nothing serves: removed, so the next
  // test file's clusterlet registers them afresh.
  after(async () => {
    for (const name of [NODE, SECOND_NODE]) {
      await host.core.deleteNode({ name }).catch((err: unknown) => {
        if (toKubeError(err).kind !== 'NotFound') throw err;
      });
    }
  });

  it('two replicas, one member: a SIGKILLed leader is taken over within 20 s, 5 times, 100 pods kept once and Ready', async (t) => {
    const member = client(harness().member);
    const ns = await namespaces(t, 'ha-kill', [host]);
    // Watched (list-watch) from before the pods exist until the end: what a take-over must never show.
    const proxies = new ProxyRecord();
    const delegates = new DelegateRecord();
    const unobserve = await Promise.all([observe(host, podsSpec(host, ns), (p) => proxies.see(p)),
      observe(member, podsSpec(member, ns), (d) => delegates.see(d))]);
    t.after(() => { for (const u of unobserve) u(); });

    const first = await leaderAndStandby(t, host, 'kill');
    const { replicas, standby } = first;
    let leader = first.leader;
    await waitOnlyLeader('member', leader, [standby]);

    const apps = harness().host.kubeConfig().makeApiClient(AppsV1Api);
    await apps.createNamespacedDeployment({ namespace: ns, body: deployment('ha', ns, PODS, { virtualNode: NODE }) });
    // Killed while the rest are still being created.
    await waitUntil(member, podsSpec(member, ns), (ps) => ps.length >= 10, 60_000, 'the first 10 delegates');

    const times: number[] = [];
    const kill = async (next: Replica): Promise<void> => {
      const gone = leader;
      const ms = await takeOver(host, 'member', NODE, next, () => gone.proc.kill());
      t.diagnostic(`take-over ${times.length + 1} (SIGKILL of ${gone.identity} → ${next.identity}): ${ms} ms`);
      times.push(ms);
      leader = next;
    };
    t.diagnostic(`delegates just before the first kill: ${(await member.core.listNamespacedPod({ namespace: ns })).items.length}`);
    await kill(standby);
    const served = await waitAllServed(host, member, ns, PODS);
    const pod = served[0].metadata!.name!;
    await assertLogsServed(ns, pod, 'after the first take-over');

    // Four more: a fresh replica (new identity and port) in place of the killed one, warm, then the leader killed.
    for (const id of ['kill-c', 'kill-d', 'kill-e', 'kill-f']) {
      const fresh = await replicas.start(id);
      await waitWarm(host, fresh, 1);
      await waitOnlyLeader('member', leader, [fresh]);
      await kill(fresh);
    }
    await waitNodeOf(host, NODE, leader);
    await waitAllServed(host, member, ns, PODS);
    await assertLogsServed(ns, pod, 'after the fifth take-over');
    for (const u of unobserve) u();

    t.diagnostic(`take-overs: ${times.join(', ')} ms; median ${median(times)} ms, max ${Math.max(...times)} ms`);
    assert.deepEqual(proxies.violations, [], 'no proxy went NotReady after Ready, none Failed');
    assert.deepEqual(delegates.repeated, [], 'each proxy had one delegate throughout');
    assert.equal(delegates.byProxy.size, PODS, 'delegates of exactly the 100 proxies');
    for (const [i, ms] of times.entries()) assert.ok(ms <= KILL_TAKEOVER_MS, `take-over ${i + 1}: ${ms} ms > ${KILL_TAKEOVER_MS} ms`);

    // Nothing left behind by five leaders.
    await deleteNamespaceAndWait(host, ns, 120_000);
    await waitUntil(member, podsSpec(member, ns), (ps) => ps.length === 0, 60_000, 'no delegate left');
  });

  it('graceful stop hands over: SIGTERM of the leader, the other leads and the node shows it within 5 s, Ready throughout', async (t) => {
    const { leader, standby: next } = await leaderAndStandby(t, host, 'term');

    const notReady: string[] = [];
    const unobserve = await observe(host, nodeSpec(host, NODE), (n) => {
      if (!isReady(n)) notReady.push(`${new Date().toISOString()} Ready=${condition(n, 'Ready')?.status ?? '(none)'} ${condition(n, 'Ready')?.reason ?? ''}`);
    });
    t.after(unobserve);
    let code: number | null = null;
    const ms = await takeOver(host, 'member', NODE, next, async () => { code = await leader.proc.stop(); });
    const handedOver = Date.now();
    t.diagnostic(`hand-over on SIGTERM (${leader.identity} → ${next.identity}): ${ms} ms`);
    assert.equal(code, 0, 'the stopped leader exits 0');
    assert.ok(ms <= STOP_HANDOVER_MS, `hand-over ${ms} ms > ${STOP_HANDOVER_MS} ms`);
    // Still Ready once the new leader has renewed the node's lease (it does on each member probe, every 2 s).
    await waitUntil(host, leaseSpec(host, 'kube-node-lease', NODE), (ls) => ls.length === 1
      && new Date(ls[0].spec?.renewTime ?? 0).getTime() > handedOver, 15_000, `node lease of ${NODE} renewed by ${next.identity}`);
    await waitNodeOf(host, NODE, next, 5_000);
    unobserve();
    assert.deepEqual(notReady, [], 'the node stayed Ready');
    await waitOnlyLeader('member', next, []);
  });

  it('a paused leader (SIGSTOP) is taken over; resumed, it writes nothing more: the node keeps the new leader\'s address', async (t) => {
    const member = client(harness().member);
    const ns = await namespaces(t, 'ha-pause', [host]);
    const { leader: paused, standby: next } = await leaderAndStandby(t, host, 'pause');
    const apps = harness().host.kubeConfig().makeApiClient(AppsV1Api);
    await apps.createNamespacedDeployment({ namespace: ns, body: deployment('ha', ns, 5, { virtualNode: NODE }) });
    await waitAllServed(host, member, ns, 5);

    // Frozen, as a replica whose node stalls or whose network to the host is cut: it renews nothing and knows it not.
    const resume = (): void => { paused.proc.child.kill('SIGCONT'); };
    t.after(resume);
    const ms = await takeOver(host, 'member', NODE, next, async () => { paused.proc.child.kill('SIGSTOP'); });
    t.diagnostic(`take-over from a paused leader (${paused.identity} → ${next.identity}): ${ms} ms`);
    assert.ok(ms <= KILL_TAKEOVER_MS, `take-over ${ms} ms > ${KILL_TAKEOVER_MS} ms`);
    // The new leader alone serves a change made meanwhile.
    await apps.patchNamespacedDeploymentScale({ namespace: ns, name: 'ha', body: { spec: { replicas: 8 } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
    await waitAllServed(host, member, ns, 8);

    // From the resume on, every version of the node and of the proxies is recorded.
    const shown: string[] = [];
    const proxies = new ProxyRecord();
    const unobserve = await Promise.all([
      observe(host, nodeSpec(host, NODE), (n) => { shown.push(`${internalIP(n)}:${kubeletPortOf(n)}`); }),
      observe(host, podsSpec(host, ns), (p) => proxies.see(p)),
    ]);
    t.after(() => { for (const u of unobserve) u(); });
    const resumedAt = Date.now();
    resume();
    // It finds out it lost the member (its own clock says it could not renew in time, or it sees the new holder) ...
    await pollUntil(`${paused.identity} reporting clusterlet_leader{member="member"} 0`, async () =>
      (await leads(paused, 'member')) === false ? true : undefined, 15_000, 100);
    // ... and meanwhile its stale timers and the watch events it had missed have all run: by the time the new
    // leader has renewed the node's lease twice more, anything the paused one was going to write is written.
    let renewals = 0;
    let lastRenew = '';
    await waitUntil(host, leaseSpec(host, 'kube-node-lease', NODE), (ls) => {
      const r = String(ls[0]?.spec?.renewTime ?? '');
      if (r && r !== lastRenew && new Date(r).getTime() > resumedAt) { renewals++; lastRenew = r; }
      return renewals >= 2;
    }, 20_000, `node lease of ${NODE} renewed twice by ${next.identity} after the resume`);
    for (const u of unobserve) u();
    const ours = `${harness().nodeAddress}:${next.kubeletPort}`;
    assert.deepEqual(shown.filter((s) => s !== ours), [], `the node showed only ${next.identity}'s address after the resume`);
    assert.deepEqual(proxies.violations, [], 'no proxy went NotReady or Failed after the resume');
    await waitLeader(host, 'member', [next], 1_000);
    await waitAllServed(host, member, ns, 8);
    assert.match(paused.proc.logs(), /"lease no longer held"/);
  });

  it('a Lease namespace that does not exist on the host: exit 2 naming --leader-elect-namespace', async () => {
    const missing = uniqueName('no-such-ns');
    const proc = startClusterlet([...clusterletArgs(harness().member), '--leader-elect-namespace', missing]);
    const [code] = await once(proc.child, 'exit') as [number | null];
    assert.equal(code, 2);
    await proc.stop();
    assert.match(proc.logs(), new RegExp(`--leader-elect-namespace: namespace "${missing}" does not exist on the host`));
  });

  it('two members, two replicas: each replica leads one member; both nodes Ready with their leader\'s port', async (t) => {
    const h = harness();
    // The same second member as node.test.ts, whichever file adds it first.
    const second = h.extraMembers.find((m) => m.name === SECOND) ?? await h.addMember(SECOND, '10.30');
    const [hostKc, memberKc, secondKc] = await Promise.all([h.host, h.member, second].map((c) => clusterletKubeconfig(c)));
    const cfg = join(h.dir, `${uniqueName('ha-two-members')}.yaml`);
    await writeFile(cfg, `members:
- name: member
  kubeconfig: ${memberKc}
- name: ${SECOND}
  kubeconfig: ${secondKc}
`);
    const replicas = new Replicas(t, host, ['--host-kubeconfig', hostKc, '--provider-config', cfg,
      '--watch-silence-seconds', '30', '--probe-period-seconds', '2']);
    const both = [await replicas.start('two-a'), await replicas.start('two-b')];
    const holderOf = (ls: { metadata?: { name?: string }; spec?: { holderIdentity?: string } }[], m: string): Replica | undefined =>
      both.find((r) => r.identity === ls.find((l) => l.metadata?.name === memberLease(m))?.spec?.holderIdentity);
    // Whoever starts first may take both; the replicas then spread them.
    const spread = (ls: Parameters<typeof holderOf>[0]): boolean => {
      const [one, two] = [holderOf(ls, 'member'), holderOf(ls, SECOND)];
      return one !== undefined && two !== undefined && one !== two;
    };
    const leases = await waitUntil(host, leaseSpec(host, ELECTION_NS), spread, 60_000, 'the two member Leases held by different replicas');
    const [first, other] = [holderOf(leases, 'member')!, holderOf(leases, SECOND)!];
    t.diagnostic(`member led by ${first.identity}, ${SECOND} by ${other.identity}`);
    await waitNodeOf(host, NODE, first);
    await waitNodeOf(host, SECOND_NODE, other);
    await waitOnlyLeader('member', first, [other]);
    await waitOnlyLeader(SECOND, other, [first]);
    // And it stays so: no replica took the other's member meanwhile.
    const now = (await host.coordination.listNamespacedLease({ namespace: ELECTION_NS })).items;
    assert.equal(holderOf(now, 'member'), first);
    assert.equal(holderOf(now, SECOND), other);
  });
});
