// What the host shows after the faults multi-cluster life brings: a member outage (short, long, past the pods'
// eviction toleration), a lost member node, a member shared by two virtual nodes or by two hosts, an upgrade from
// the old default host name, a configured node label and a namespace mapping that cannot work.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { AppsV1Api, type V1ConfigMap, type V1Pod } from '@kubernetes/client-node';
import {
  client, clusterID, clusterletArgs, clusterletKubeconfig, harness, namespaces, startClusterlet, type ClusterletProcess,
} from '../support/env.ts';
import { identityKubeconfig } from '../support/identity.ts';
import { everyVersion, waitUntil } from '../support/wait.ts';
import { cmSpec, condition, deployment, eventSpec, isReady, nodeSpec, podSpec, podsSpec, waitVirtualNodeSchedulable, waitNode } from '../support/objects.ts';
import { freePort, pollUntil } from '../harness/net.ts';
import { fakeNode } from '../harness/cluster.ts';
import { PATCH, type ClusterClient } from '../../src/kube/client.ts';
import { parseQuantity } from '../../src/forge/quantity.ts';

const NODE = 'clusterlet-member';

/** A pod bound to `node` that mounts ConfigMap `cm`. */
function podWithConfig(name: string, ns: string, node: string, cm: string): V1Pod {
  const p = podSpec(name, { namespace: ns, tolerate: true, nodeName: node });
  p.spec!.volumes = [{ name: 'cfg', configMap: { name: cm } }];
  p.spec!.containers[0].volumeMounts = [{ name: 'cfg', mountPath: '/cfg' }];
  return p;
}

/**
 * The member's API server is back and its scheduler and KWOK have caught up (their watches resume with backoff):
 * a pod of its own is scheduled and runs. Fault tests end with this, so the next test meets a working member.
 */
async function memberRecovered(member: ClusterClient): Promise<void> {
  const name = `canary-${randomBytes(3).toString('hex')}`;
  await member.core.createNamespacedPod({ namespace: 'default', body: podSpec(name, { namespace: 'default' }) });
  try {
    await waitUntil(member, podsSpec(member, 'default'), (ps) => ps.some((p) => p.metadata!.name === name && p.status?.phase === 'Running'),
      120_000, 'the member schedules and runs a pod again');
  } finally {
    await member.core.deleteNamespacedPod({ namespace: 'default', name, gracePeriodSeconds: 0 }).catch(() => undefined);
  }
}

/** Someone other than clusterlet sets a proxy Ready (a tool, a controller of its own). */
async function markReady(host: ClusterClient, namespace: string, name: string): Promise<void> {
  await host.core.patchNamespacedPodStatus({ namespace, name, body: { status: { conditions: [{ type: 'Ready', status: 'True' }] } } },
    { contentType: PATCH.strategic });
}

const live = (ps: V1Pod[]): V1Pod[] => ps.filter((p) => !p.metadata?.deletionTimestamp);
const running = (p: V1Pod): boolean => p.status?.phase === 'Running';

describe('member outages', () => {
  let cl: ClusterletProcess;
  const args = (): string[] => clusterletArgs(harness().member, ['--probe-period-seconds', '1', '--probe-failure-threshold', '2']);
  let host: ClusterClient;
  let member: ClusterClient;

  before(async () => {
    host = client(harness().host);
    member = client(harness().member);
    // Probed every second, unreachable after 2 failures: the outages below stay short.
    cl = startClusterlet(args());
    await waitVirtualNodeSchedulable(host);
  });
  after(async () => { await cl.stop(); });

  it('after each of three outages, every proxy whose delegate runs is Ready within 15 s of the node turning Ready', async (t) => {
    const ns = await namespaces(t, 'outage', [host]);
    const apps = harness().host.kubeConfig().makeApiClient(AppsV1Api);
    await apps.createNamespacedDeployment({ namespace: ns, body: deployment('web', ns, 5, { virtualNode: NODE }) });
    const before = await waitUntil(host, podsSpec(host, ns), (ps) => ps.length === 5 && ps.every(isReady), 90_000, '5 proxies Ready');
    const uids = new Set(before.map((p) => p.metadata!.uid));
    for (let round = 1; round <= 3; round++) {
      await harness().member.stopApiServer();
      try {
        await waitNode(host, NODE, (n) => condition(n, 'Ready')?.reason === 'MemberUnreachable', `round ${round}: NotReady`, 30_000);
        // No one vouches for the proxies' readiness now: clusterlet marks them NotReady (the host's node-lifecycle
        // controller does not, for a node that reports NotReady itself), and keeps them so whoever sets them Ready.
        await waitUntil(host, podsSpec(host, ns), (ps) => ps.length === 5 && ps.every((p) => !isReady(p)), 30_000,
          `round ${round}: proxies NotReady while the member does not answer`);
        await markReady(host, ns, before[0]!.metadata!.name!);
        await waitUntil(host, podsSpec(host, ns), (ps) => ps.length === 5 && ps.every((p) => !isReady(p)), 30_000,
          `round ${round}: a proxy someone set Ready is NotReady again`);
      } finally {
        await harness().member.startApiServer();
      }
      await waitNode(host, NODE, isReady, `round ${round}: Ready again`, 60_000);
      const after = await waitUntil(host, podsSpec(host, ns), (ps) => ps.length === 5 && ps.every(isReady), 15_000,
        `round ${round}: 5 proxies Ready within 15 s of the node`);
      assert.deepEqual(new Set(after.map((p) => p.metadata!.uid)), uids, 'the same pods: none replaced');
    }
    const delegates = await member.core.listNamespacedPod({ namespace: ns });
    assert.equal(delegates.items.length, 5, 'still 5 delegates');
    await memberRecovered(member);

    // clusterlet itself gone past the node-monitor grace period (40 s here): the node-lifecycle controller finds
    // the node unknown and marks every proxy NotReady; a new clusterlet sets them back.
    await cl.kill();
    await waitNode(host, NODE, (n) => condition(n, 'Ready')?.status === 'Unknown', 'Unknown: clusterlet gone', 90_000);
    await waitUntil(host, podsSpec(host, ns), (ps) => ps.length === 5 && ps.every((p) => !isReady(p)), 30_000,
      'proxies marked NotReady by the node-lifecycle controller');
    const restartedAt = new Date();
    cl = startClusterlet(args());
    await waitNode(host, NODE, isReady, 'Ready with the new clusterlet', 60_000);
    t.diagnostic(`restarted at ${restartedAt.toISOString()}`);
    await waitUntil(host, podsSpec(host, ns), (ps) => ps.length === 5 && ps.every(isReady), 15_000,
      '5 proxies Ready within 15 s of the node, after a restart').catch(async (err: unknown) => {
      const now = (await host.core.listNamespacedPod({ namespace: ns })).items;
      for (const p of now) t.diagnostic(`${p.metadata!.name} Ready ${JSON.stringify(condition(p, 'Ready'))}`);
      throw err;
    });
  });

  it('an outage past the member\'s node-monitor grace period: every proxy Ready again, as its delegate', async (t) => {
    const ns = await namespaces(t, 'longout', [host]);
    const apps = harness().host.kubeConfig().makeApiClient(AppsV1Api);
    const N = 20;
    await apps.createNamespacedDeployment({ namespace: ns, body: deployment('long', ns, N, { virtualNode: NODE }) });
    await waitUntil(host, podsSpec(host, ns), (ps) => ps.length === N && ps.every(isReady), 120_000, `${N} proxies Ready`);
    const stoppedAt = Date.now();
    await harness().member.stopApiServer();
    try {
      await waitNode(host, NODE, (n) => condition(n, 'Ready')?.reason === 'MemberUnreachable', 'NotReady', 30_000);
      // Longer than the member's own node-monitor grace period (40 s): its node-lifecycle controller finds its nodes'
      // leases stale when the API server is back.
      await new Promise((r) => setTimeout(r, Math.max(0, stoppedAt + 60_000 - Date.now())));
    } finally {
      await harness().member.startApiServer();
    }
    await waitNode(host, NODE, isReady, 'Ready again', 60_000);
    const view = async (): Promise<{ proxiesReady: number; delegatesReady: number; differ: string[] }> => {
      const [proxies, delegates] = await Promise.all([host.core.listNamespacedPod({ namespace: ns }), member.core.listNamespacedPod({ namespace: ns })]);
      const delegateOf = new Map(delegates.items.map((d) => [d.metadata!.labels!['clusterlet.io/proxy-uid'], d]));
      const differ = live(proxies.items).filter((p) => isReady(p) !== isReady(delegateOf.get(p.metadata!.uid!))).map((p) => p.metadata!.name!);
      return { proxiesReady: proxies.items.filter(isReady).length, delegatesReady: delegates.items.filter(isReady).length, differ };
    };
    const end = Date.now() + 60_000;
    let v = await view();
    for (; (v.proxiesReady < N || v.differ.length > 0) && Date.now() < end; v = await view()) await new Promise((r) => setTimeout(r, 1000));
    t.diagnostic(`proxies Ready ${v.proxiesReady}/${N}, delegates Ready ${v.delegatesReady}/${N}, differing ${v.differ.join(',')}`);
    assert.deepEqual(v.differ, [], 'every proxy shows its delegate\'s readiness');
    assert.deepEqual([v.proxiesReady, v.delegatesReady], [N, N], 'every delegate and every proxy Ready again');
    await memberRecovered(member);
  });

  it('past the pods\' eviction toleration, the evicted proxies\' delegates are removed when the member returns: only the replacements run', async (t) => {
    const ns = await namespaces(t, 'evict', [host]);
    const apps = harness().host.kubeConfig().makeApiClient(AppsV1Api);
    const d = deployment('short', ns, 2, { virtualNode: NODE });
    // Evicted 5 s after the node turns NotReady (or unreachable), instead of the default 300 s.
    d.spec!.template.spec!.tolerations!.push(
      { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 5 },
      { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 5 },
    );
    await apps.createNamespacedDeployment({ namespace: ns, body: d });
    const first = await waitUntil(host, podsSpec(host, ns), (ps) => ps.length === 2 && ps.every(isReady), 90_000, '2 proxies Ready');
    const old = new Set(first.map((p) => p.metadata!.uid!));
    await harness().member.stopApiServer();
    try {
      // The taint manager evicts them; they stay Terminating while the member cannot be told.
      await waitUntil(host, podsSpec(host, ns), (ps) => ps.filter((p) => old.has(p.metadata!.uid!)).length === 2
        && ps.filter((p) => old.has(p.metadata!.uid!)).every((p) => p.metadata?.deletionTimestamp), 60_000, 'both proxies evicted');
    } finally {
      await harness().member.startApiServer();
    }
    const after = await waitUntil(host, podsSpec(host, ns), (ps) => ps.length === 2 && ps.every((p) => !old.has(p.metadata!.uid!)
      && !p.metadata?.deletionTimestamp && isReady(p)), 120_000, 'exactly the 2 replacements, Ready; nothing Terminating');
    const fresh = new Set(after.map((p) => p.metadata!.uid!));
    const delegates = await waitUntil(member, podsSpec(member, ns), (ps) => ps.length === 2
      && ps.every((p) => fresh.has(p.metadata!.labels!['clusterlet.io/proxy-uid']) && running(p)), 60_000,
    'exactly the replacements\' delegates in the member, no orphan');
    assert.equal(delegates.length, 2);
    await memberRecovered(member);
  });

  it('a lost member node: its delegates are created again and the proxies stay Running (no replacement, no extra delegate)', async (t) => {
    const ns = await namespaces(t, 'lostnode', [host]);
    const apps = harness().host.kubeConfig().makeApiClient(AppsV1Api);
    await apps.createNamespacedDeployment({ namespace: ns, body: deployment('six', ns, 6, { virtualNode: NODE }) });
    const proxies = await waitUntil(host, podsSpec(host, ns), (ps) => ps.length === 6 && ps.every(isReady), 90_000, '6 proxies Ready');
    const uids = new Set(proxies.map((p) => p.metadata!.uid!));
    const delegates = await waitUntil(member, podsSpec(member, ns), (ps) => ps.length === 6 && ps.every(running), 60_000, '6 delegates');
    // The member node that runs the most delegates goes away.
    const count = new Map<string, number>();
    for (const p of delegates) count.set(p.spec!.nodeName!, (count.get(p.spec!.nodeName!) ?? 0) + 1);
    const [lostNode, lost] = [...count].sort((a, b) => b[1] - a[1])[0];
    const lostNames = new Set(delegates.filter((p) => p.spec!.nodeName === lostNode).map((p) => p.metadata!.name!));
    const def = harness().member.opts.nodes.find((n) => n.name === lostNode)!;
    // Every version of the proxies that lose their delegate, from before the loss to the end: as a kubelet restarting a
    // pod's containers shows it, the pod stays Running, keeps its start time, and its restart count never goes back.
    const startTime = new Map(proxies.map((p) => [p.metadata!.name!, String(p.status?.startTime)]));
    const seen = new Map<string, string[]>([...lostNames].map((n) => [n, []]));
    const mostRestarts = new Map<string, number>();
    const wrong: string[] = [];
    const stopRecording = everyVersion(host, podsSpec(host, ns), (p) => {
      const name = p.metadata!.name!;
      if (!seen.has(name)) return;
      const cs = p.status?.containerStatuses?.[0];
      const v = `${p.status?.phase} ready=${isReady(p)} restarts=${cs?.restartCount} started=${String(p.status?.startTime)} `
        + `state=${Object.keys(cs?.state ?? {}).join()} last=${cs?.lastState?.terminated?.reason ?? ''}`;
      seen.get(name)!.push(v);
      const rc = cs?.restartCount ?? 0;
      if (p.status?.phase !== 'Running' || String(p.status?.startTime) !== startTime.get(name) || rc < (mostRestarts.get(name) ?? 0)) {
        wrong.push(`${name}: ${v}`);
      }
      mostRestarts.set(name, Math.max(rc, mostRestarts.get(name) ?? 0));
    });
    await member.core.deleteNode({ name: lostNode });
    try {
      // The member's pod GC fails and deletes the orphaned delegates (after its 40 s quarantine); clusterlet creates them again.
      const after = await waitUntil(member, podsSpec(member, ns), (ps) => live(ps).length === 6
        && live(ps).every((p) => running(p) && p.spec!.nodeName !== lostNode), 150_000, `6 delegates Running off ${lostNode}`);
      assert.equal(after.length, 6, 'no extra delegate');
      for (const p of after) assert.ok(uids.has(p.metadata!.labels!['clusterlet.io/proxy-uid']), 'each delegate belongs to an original proxy');
      const now = await waitUntil(host, podsSpec(host, ns), (ps) => ps.length === 6 && ps.every(isReady)
        && ps.filter((p) => lostNames.has(p.metadata!.name!)).every((p) => (p.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1),
      60_000, '6 proxies Ready, the lost ones with a restart counted').catch(async (err: unknown) => {
        // What the delegates carried (the restarts annotation) and what clusterlet said about them.
        for (const d of (await member.core.listNamespacedPod({ namespace: ns })).items) {
          t.diagnostic(`delegate ${d.metadata!.name} on ${d.spec?.nodeName} ${d.status?.phase} created ${String(d.metadata!.creationTimestamp)} `
            + `restarts=${d.metadata!.annotations?.['clusterlet.io/restarts']} rc=${d.status?.containerStatuses?.[0]?.restartCount}`);
        }
        for (const [n, vs] of seen) t.diagnostic(`proxy ${n}: ${vs.join(' | ')}`);
        for (const l of cl.logs().split('\n').filter((x) => x.includes(ns))) t.diagnostic(l.slice(0, 400));
        throw err;
      });
      stopRecording();
      assert.deepEqual(wrong, [], 'each proxy that lost its delegate stays Running, keeps its start time and never counts fewer restarts');
      assert.deepEqual(new Set(now.map((p) => p.metadata!.uid!)), uids, 'the same 6 proxies: none failed, none replaced');
      assert.ok(now.every((p) => p.status?.phase === 'Running'));
      for (const p of now.filter((x) => lostNames.has(x.metadata!.name!))) {
        assert.equal(p.status?.containerStatuses?.[0]?.lastState?.terminated?.reason, 'DelegateLost', `${p.metadata!.name}: the loss as its container's last state`);
      }
      const events = await host.core.listNamespacedEvent({ namespace: ns });
      assert.ok(events.items.some((e) => e.reason === 'DelegateLost' && lostNames.has(e.involvedObject!.name!)),
        `a DelegateLost event on the proxies that lost their delegate (${lost})`);
    } finally {
      stopRecording();
      await member.core.createNode({ body: fakeNode(def) }).catch(() => undefined);
      await waitUntil(member, nodeSpec(member, lostNode), (ns) => ns.length === 1 && isReady(ns[0]), 60_000, `${lostNode} back`);
    }
  });
});

describe('a member API restart shorter than the probe threshold', () => {
  it('changes nothing on the host: the node and the proxies never leave Ready', async (t) => {
    const host = client(harness().host);
    // The defaults: probed every 10 s, unreachable after 3 failures.
    const cl = startClusterlet(clusterletArgs(harness().member, ['--probe-period-seconds', '10', '--probe-failure-threshold', '3']));
    try {
      await waitVirtualNodeSchedulable(host);
      const ns = await namespaces(t, 'blip', [host]);
      for (const name of ['a', 'b']) {
        await host.core.createNamespacedPod({ namespace: ns, body: podSpec(name, { namespace: ns, tolerate: true, nodeSelector: { 'kubernetes.io/hostname': NODE } }) });
      }
      const before = await waitUntil(host, podsSpec(host, ns), (ps) => ps.length === 2 && ps.every(isReady), 60_000, 'proxies Ready');
      const nodeBefore = await waitNode(host, NODE, isReady, 'Ready');
      const logAt = cl.logs().length;
      const restarted = Date.now();
      await harness().member.stopApiServer();
      try {
        // Down long enough for clusterlet to see a probe fail (the log says so), and not much longer.
        await pollUntil('a failed member probe', async () => cl.logs().slice(logAt).includes('member probe failed') || undefined, 30_000, 200);
      } finally {
        await harness().member.startApiServer();
      }
      const downMs = Date.now() - restarted;
      // Wait until clusterlet has probed the member since it came back: the lease is renewed after the restart.
      await waitUntil(host, {
        path: '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases', model: 'V1Lease', resource: 'leases',
        fieldSelector: `metadata.name=${NODE}`,
        list: (p) => host.coordination.listNamespacedLease({ namespace: 'kube-node-lease', ...p }),
      }, (ls) => ls.length === 1 && new Date(ls[0].spec!.renewTime!).getTime() > restarted + downMs, 30_000,
      'lease renewed after the API server came back');
      const nodeAfter = await waitNode(host, NODE, () => true, 'present');
      assert.ok(isReady(nodeAfter), 'node Ready');
      assert.equal(String(condition(nodeAfter, 'Ready')?.lastTransitionTime), String(condition(nodeBefore, 'Ready')?.lastTransitionTime),
        `the node's Ready condition did not change (API server down for ${downMs} ms)`);
      const after = (await host.core.listNamespacedPod({ namespace: ns })).items;
      for (const p of after) {
        const was = before.find((b) => b.metadata!.uid === p.metadata!.uid)!;
        assert.ok(isReady(p), `${p.metadata!.name} Ready`);
        assert.equal(String(condition(p, 'Ready')?.lastTransitionTime), String(condition(was, 'Ready')?.lastTransitionTime),
          `${p.metadata!.name} never left Ready`);
      }
    } finally {
      await cl.stop();
      await memberRecovered(client(harness().member));
    }
  });
});

describe('one member shared by two virtual nodes', () => {
  it('each node keeps its own copies and delegates; the other node\'s delegates count as member workload', async (t) => {
    const host = client(harness().host);
    const member = client(harness().member);
    const a = startClusterlet(clusterletArgs(harness().member, ['--kubelet-port', String(await freePort())]));
    const b = startClusterlet(clusterletArgs(harness().member, ['--member-name', 'shared2', '--kubelet-port', String(await freePort())]));
    try {
      await waitVirtualNodeSchedulable(host, NODE);
      await waitVirtualNodeSchedulable(host, 'clusterlet-shared2');
      const ns = await namespaces(t, 'shared', [host]);
      for (const [pod, node, cm] of [['pa', NODE, 'cm-a'], ['pb', 'clusterlet-shared2', 'cm-b']]) {
        await host.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: cm }, data: { v: '1' } } });
        await host.core.createNamespacedPod({ namespace: ns, body: podWithConfig(pod, ns, node, cm) });
      }
      await waitUntil(host, podsSpec(host, ns), (ps) => ps.length === 2 && ps.every(isReady), 60_000, 'both proxies Ready');
      const copies = await waitUntil(member, cmSpec(member, ns), (cs) => ['cm-a', 'cm-b'].every((n) => cs.some((c) => c.metadata!.name === n)),
        30_000, 'both copies in the member');
      const uid = (cs: V1ConfigMap[], n: string) => cs.find((c) => c.metadata!.name === n)?.metadata?.uid;
      const copyA = copies.find((c) => c.metadata!.name === 'cm-a')!;
      const copyB = copies.find((c) => c.metadata!.name === 'cm-b')!;
      assert.equal(copyA.metadata!.labels!['clusterlet.io/node'], NODE);
      assert.equal(copyB.metadata!.labels!['clusterlet.io/node'], 'clusterlet-shared2');
      // An update goes through both mirrors; a copy swept by the other node would come back with another UID.
      for (const cm of ['cm-a', 'cm-b']) {
        await host.core.replaceNamespacedConfigMap({ namespace: ns, name: cm, body: { metadata: { name: cm }, data: { v: '2' } } });
      }
      const updated = await waitUntil(member, cmSpec(member, ns), (cs) => ['cm-a', 'cm-b'].every((n) => cs.find((c) => c.metadata!.name === n)?.data?.v === '2'),
        30_000, 'both copies updated');
      assert.equal(uid(updated, 'cm-a'), copyA.metadata!.uid, 'cm-a never removed');
      assert.equal(uid(updated, 'cm-b'), copyB.metadata!.uid, 'cm-b never removed');
      const delegates = await member.core.listNamespacedPod({ namespace: ns });
      assert.deepEqual(delegates.items.map((p) => p.metadata!.labels!['clusterlet.io/node']).sort(), [NODE, 'clusterlet-shared2']);
      // Allocatable pods = capacity minus every member pod but the node's own delegates: pb (the other node's
      // delegate) counts against clusterlet-member, and pa against clusterlet-shared2. Read afresh until both agree
      // (other tests' pods may still be going away).
      const pods = (q: string | undefined) => Number(parseQuantity(q ?? '0').nanos / 1_000_000_000n);
      let seen = '';
      const id = await clusterID(host);
      await pollUntil('allocatable pods leave out only each node\'s own delegates', async () => {
        const all = (await member.core.listPodForAllNamespaces()).items.filter((p) => p.spec?.nodeName
          && p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed');
        const checks = await Promise.all([NODE, 'clusterlet-shared2'].map(async (node) => {
          const n = await host.core.readNode({ name: node });
          const used = pods(n.status?.capacity?.pods) - pods(n.status?.allocatable?.pods);
          const others = all.filter((p) => p.metadata?.labels?.['clusterlet.io/node'] !== node
            || p.metadata?.labels?.['clusterlet.io/origin'] !== id).length;
          return { node, used, others };
        }));
        seen = JSON.stringify(checks);
        return checks.every((c) => c.used === c.others) || undefined;
      }, 30_000, 500).catch((err: unknown) => { throw new Error(`${(err as Error).message}; last: ${seen}`); });
    } finally {
      await a.stop();
      await b.stop();
      await host.core.deleteNode({ name: 'clusterlet-shared2' }).catch(() => undefined);
    }
  });
});

describe('two hosts sharing one member', () => {
  it('each host\'s clusterlet touches only its own delegates and copies, even after a restart', async (t) => {
    const h = harness();
    const host = client(h.host);
    const member = client(h.member);
    const host2c = h.extraHosts.find((c) => c.name === 'host2') ?? await h.addHost('host2', '10.40');
    const host2 = client(host2c, 'host2');
    const host2Kc = await clusterletKubeconfig(host2c);
    const args2 = ['--host-kubeconfig', host2Kc, '--member-kubeconfig', identityKubeconfig(h.member, 'member'),
      '--member-name', 'member', '--health-port', '0', '--kubelet-port', String(await freePort()), '--probe-period-seconds', '2'];
    const one = startClusterlet(clusterletArgs(h.member, ['--kubelet-port', String(await freePort())]));
    let two = startClusterlet(args2);
    try {
      await waitVirtualNodeSchedulable(host);
      await waitVirtualNodeSchedulable(host2);
      const ns1 = await namespaces(t, 'hosta', [host]);
      const ns2 = await namespaces(t, 'hostb', [host2]);
      for (const [c, ns] of [[host, ns1], [host2, ns2]] as const) {
        await c.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'cfg' }, data: { v: '1' } } });
        await c.core.createNamespacedPod({ namespace: ns, body: podWithConfig('web', ns, NODE, 'cfg') });
      }
      await waitUntil(host, podsSpec(host, ns1), (ps) => ps.length === 1 && ps.every(isReady), 60_000, 'host 1 proxy Ready');
      await waitUntil(host2, podsSpec(host2, ns2), (ps) => ps.length === 1 && ps.every(isReady), 60_000, 'host 2 proxy Ready');
      const [id1, id2] = [await clusterID(host), await clusterID(host2)];
      assert.notEqual(id1, id2);
      const d2 = (await member.core.readNamespacedPod({ namespace: ns2, name: 'web' }));
      assert.equal(d2.metadata!.labels!['clusterlet.io/origin'], id2, 'host 2\'s delegate carries host 2\'s cluster ID');
      const c2 = await member.core.readNamespacedConfigMap({ namespace: ns2, name: 'cfg' });
      // Host 2's clusterlet restarts (orphan collection runs again); host 1's delegate and copy stay untouched.
      const d1 = await member.core.readNamespacedPod({ namespace: ns1, name: 'web' });
      const c1 = await member.core.readNamespacedConfigMap({ namespace: ns1, name: 'cfg' });
      await two.stop();
      two = startClusterlet(args2);
      await waitVirtualNodeSchedulable(host2);
      await host2.core.createNamespacedPod({ namespace: ns2, body: podSpec('marker', { namespace: ns2, tolerate: true, nodeName: NODE }) });
      await waitUntil(host2, podsSpec(host2, ns2), (ps) => ps.length === 2 && ps.every(isReady), 60_000, 'host 2 synced after its restart');
      assert.equal((await member.core.readNamespacedPod({ namespace: ns1, name: 'web' })).metadata!.uid, d1.metadata!.uid, 'host 1\'s delegate untouched');
      assert.equal((await member.core.readNamespacedConfigMap({ namespace: ns1, name: 'cfg' })).metadata!.uid, c1.metadata!.uid, 'host 1\'s copy untouched');
      assert.equal((await member.core.readNamespacedPod({ namespace: ns2, name: 'web' })).metadata!.uid, d2.metadata!.uid, 'host 2\'s delegate kept');
      assert.equal((await member.core.readNamespacedConfigMap({ namespace: ns2, name: 'cfg' })).metadata!.uid, c2.metadata!.uid, 'host 2\'s copy kept');
      await waitUntil(host, podsSpec(host, ns1), (ps) => ps.length === 1 && ps.every(isReady), 10_000, 'host 1 proxy still Ready');
    } finally {
      await one.stop();
      await two.stop();
    }
  });
});

describe('upgrade from the old default host name', () => {
  it('delegates and copies labelled "host" are adopted under the cluster ID: nothing is recreated', async (t) => {
    const host = client(harness().host);
    const member = client(harness().member);
    const old = startClusterlet(clusterletArgs(harness().member, ['--host-name', 'host']));
    const ns = await namespaces(t, 'adopt', [host]);
    let cl: ClusterletProcess | undefined;
    try {
      await waitVirtualNodeSchedulable(host);
      await host.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'cfg' }, data: { v: '1' } } });
      await host.core.createNamespacedPod({ namespace: ns, body: podWithConfig('web', ns, NODE, 'cfg') });
      await waitUntil(host, podsSpec(host, ns), (ps) => ps.length === 1 && ps.every(isReady), 60_000, 'proxy Ready');
      const d = await member.core.readNamespacedPod({ namespace: ns, name: 'web' });
      const c = await member.core.readNamespacedConfigMap({ namespace: ns, name: 'cfg' });
      assert.equal(d.metadata!.labels!['clusterlet.io/origin'], 'host');
      await old.stop();
      cl = startClusterlet(clusterletArgs(harness().member));
      const id = await clusterID(host);
      const [adopted] = await waitUntil(member, podsSpec(member, ns), (ps) => ps.length === 1
        && ps[0].metadata!.labels!['clusterlet.io/origin'] === id, 60_000, 'delegate adopted');
      assert.equal(adopted.metadata!.uid, d.metadata!.uid, 'the same delegate');
      const copy = (await waitUntil(member, cmSpec(member, ns), (cs) => cs.some((x) => x.metadata!.name === 'cfg'
        && x.metadata!.labels?.['clusterlet.io/origin'] === id), 30_000, 'copy adopted')).find((x) => x.metadata!.name === 'cfg')!;
      assert.equal(copy.metadata!.uid, c.metadata!.uid, 'the same copy');
      await host.core.deleteNamespacedPod({ namespace: ns, name: 'web' });
      await waitUntil(member, podsSpec(member, ns), (ps) => ps.length === 0, 60_000, 'the adopted delegate is deleted with its proxy');
      await waitUntil(member, cmSpec(member, ns), (cs) => !cs.some((x) => x.metadata!.name === 'cfg'), 30_000, 'and its copy removed');
    } finally {
      await old.stop();
      await cl?.stop();
    }
  });
});

describe('configuration the member cannot satisfy as written', () => {
  let cl: ClusterletProcess;
  let host: ClusterClient;
  let member: ClusterClient;

  before(async () => {
    const h = harness();
    host = client(h.host);
    member = client(h.member);
    const cfg = join(h.dir, `faults-${randomBytes(3).toString('hex')}.yaml`);
    writeFileSync(cfg, `members:
- name: member
  kubeconfig: ${await clusterletKubeconfig(h.member)}
  namespaceMapping: { template: "{namespace}-from-hostcluster" }
  labels: { example.com/region: eu }
`);
    cl = startClusterlet(['--host-kubeconfig', await clusterletKubeconfig(h.host), '--provider-config', cfg, '--health-port', '0',
      '--probe-period-seconds', '2']);
    await waitVirtualNodeSchedulable(host);
  });
  after(async () => { await cl.stop(); });

  it('a pod selecting the virtual node by a configured label runs in the member, without that selector', async (t) => {
    const ns = await namespaces(t, 'label', [host]);
    await host.core.createNamespacedPod({ namespace: ns, body: podSpec('eu', { namespace: ns, tolerate: true, nodeSelector: { 'example.com/region': 'eu' } }) });
    const [proxy] = await waitUntil(host, podsSpec(host, ns), (ps) => ps.length === 1 && isReady(ps[0]), 60_000, 'proxy Ready');
    assert.equal(proxy.spec!.nodeName, NODE);
    const delegate = await member.core.readNamespacedPod({ namespace: `${ns}-from-hostcluster`, name: 'eu' });
    assert.equal(delegate.spec!.nodeSelector?.['example.com/region'], undefined, 'the virtual node\'s own label is not asked of member nodes');
  });

  it('a host namespace whose mapped name is too long: the proxy says why (condition + Warning event), and nothing is retried hot', async (t) => {
    const ns = `${'n'.repeat(47)}-${randomBytes(3).toString('hex')}`; // 54 characters: 71 once mapped
    assert.equal(ns.length, 54);
    await host.core.createNamespace({ body: { metadata: { name: ns, labels: { 'clusterlet.io/test': 'true' } } } });
    t.after(async () => { await host.core.deleteNamespace({ name: ns }).catch(() => undefined); });
    await host.core.createNamespacedPod({ namespace: ns, body: podSpec('p', { namespace: ns, tolerate: true, nodeName: NODE }) });
    const [p] = await waitUntil(host, podsSpec(host, ns), (ps) => condition(ps[0], 'clusterlet.io/Offloaded')?.status === 'False', 30_000, 'Offloaded=False');
    const c = condition(p, 'clusterlet.io/Offloaded')!;
    assert.equal(c.reason, 'NamespaceTooLong');
    assert.match(c.message!, new RegExp(`host namespace "${ns}".*${ns}-from-hostcluster.*template "\\{namespace\\}-from-hostcluster".*71 characters.*at most 63`));
    const [ev] = await waitUntil(host, eventSpec(host, ns), (es) => es.some((e) => e.reason === 'NamespaceTooLong' && e.type === 'Warning'), 30_000, 'Warning event');
    assert.ok(ev);
    assert.equal(p.status?.phase, 'Pending');
    // Not retried hot: one failure, no retry warnings for this pod in the log.
    const retries = cl.logs().split('\n').filter((l) => l.includes(`${ns}/p`) && l.includes('sync failed; will retry'));
    assert.equal(retries.length, 0, `no retry loop:\n${retries.slice(0, 3).join('\n')}`);
  });
});

