// Virtual nodes per member node pool and per member node (`nodes`): what the host shows of each group, pods placed
// inside the group the host scheduler chose, fit per group, groups coming and going, and a switch of granularity
// with pods running.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { AppsV1Api, CoreV1Api, PatchStrategy, setHeaderOptions, type V1Deployment, type V1Node, type V1Pod, type V1Taint } from '@kubernetes/client-node';
import {
  client, clusterletKubeconfig, deleteNamespaceAndWait, harness, startClusterlet, uniqueName, type ClusterletProcess,
} from '../support/env.ts';
import { waitUntil, pollUntil } from '../support/wait.ts';
import { condition, eventSpec, isReady, podSpec, podsSpec, VIRTUAL_TOLERATION, waitNode } from '../support/objects.ts';
import { fakeNode } from '../harness/cluster.ts';
import { freePort } from '../harness/net.ts';
import { kubectl } from '../support/kubectl.ts';
import { parseQuantity } from '../../src/forge/quantity.ts';
import { toKubeError } from '../../src/kube/errors.ts';
import { PATCH, type ClusterClient } from '../../src/kube/client.ts';
import type { LocalCluster } from '../harness/cluster.ts';

const BASE = 'grp';
const POOL = 'node.kubernetes.io/instance-type';
const same = (a: string | undefined, b: string): boolean => a !== undefined && parseQuantity(a).nanos === parseQuantity(b).nanos;
const region = { 'topology.kubernetes.io/region': 'local-1' };

/** A Deployment of offloaded pods on member2's virtual nodes (whichever), small requests, the given placement rules. */
function spread(name: string, ns: string, replicas: number, spec: Partial<V1Pod['spec']> = {}): V1Deployment {
  const labels = { app: name };
  return {
    apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name, namespace: ns },
    spec: { replicas, selector: { matchLabels: labels }, template: { metadata: { labels }, spec: {
      tolerations: [VIRTUAL_TOLERATION], nodeSelector: { 'clusterlet.io/member': 'member2' },
      containers: [{ name: 'main', image: 'registry.example/app:1', resources: { requests: { cpu: '100m', memory: '64Mi' } } }],
      ...spec,
    } } },
  };
}

const apps = (): AppsV1Api => harness().host.kubeConfig().makeApiClient(AppsV1Api);

async function hostNodes(host: ClusterClient): Promise<V1Node[]> {
  return (await host.core.listNode({ labelSelector: 'clusterlet.io/member=member2' })).items
    .filter((n) => n.metadata?.name?.startsWith(`${BASE}-`) || n.metadata?.name === BASE);
}

describe('virtual nodes per member node pool and per member node', () => {
  let host: ClusterClient;
  let member: ClusterClient;
  let second: LocalCluster;
  let cl: ClusterletProcess | undefined;
  let args: (nodes: string) => string[];
  let ns: string;
  let kubeletPort: number;
  const added: string[] = [];

  const addMemberNode = async (name: string, cpu: string, labels: Record<string, string>, taints?: V1Taint[]): Promise<void> => {
    added.push(name);
    await member.core.createNode({ body: fakeNode({ name, capacity: { cpu, memory: '64Gi', pods: '110' }, labels: { ...region, ...labels }, taints }) });
  };
  const removeMemberNode = async (name: string): Promise<void> => {
    await member.core.deleteNode({ name }).catch((err: unknown) => { if (toKubeError(err).kind !== 'NotFound') throw err; });
  };

  before(async () => {
    const h = harness();
    host = client(h.host);
    second = h.extraMembers.find((m) => m.name === 'member2') ?? await h.addMember('member2', '10.30');
    member = client(second);
    const [hostKc, memberKc] = await Promise.all([h.host, second].map((c) => clusterletKubeconfig(c)));
    // The kubelet API where the host API server reaches it (its node proxy refuses loopback addresses).
    kubeletPort = await freePort();
    // One namespace for the whole suite: its pods outlive a test (the switch of granularity keeps them running).
    ns = uniqueName('groups');
    await host.core.createNamespace({ body: { metadata: { name: ns, labels: { 'clusterlet.io/test': 'true' } } } });
    args = (nodes) => ['--host-kubeconfig', hostKc, '--member-kubeconfig', memberKc, '--member-name', 'member2', '--nodename', BASE,
      '--nodes', nodes, '--health-port', '0',
      '--kubelet-port', String(kubeletPort), '--node-ip', h.nodeAddress, '--watch-silence-seconds', '30', '--probe-period-seconds', '2'];
  });
  after(async () => {
    await deleteNamespaceAndWait(host, ns, 90_000).catch(() => undefined);
    await cl?.stop();
    for (const n of added) await removeMemberNode(n);
    for (const n of await hostNodes(host)) await host.core.deleteNode({ name: n.metadata!.name! }).catch(() => undefined);
  });

  it('pool mode: one virtual node per instance type, with its member nodes\' capacity, labels and taints; pools come and go', async () => {
    cl = startClusterlet(args(`pool=${POOL}`));
    const expected: [string, string, string][] = [['medium', '16', 'local-1a'], ['large', '32', 'local-1b'], ['gpu', '8', 'local-1c']];
    for (const [pool, cpu, zone] of expected) {
      const n = await waitNode(host, `${BASE}-${pool}`, (x) => isReady(x) && same(x.status?.capacity?.cpu, cpu), `pool ${pool} Ready with ${cpu} CPUs`);
      const l = n.metadata!.labels!;
      assert.equal(l['clusterlet.io/member'], 'member2');
      assert.equal(l[POOL], pool, 'the pool label');
      assert.equal(l['topology.kubernetes.io/zone'], zone, 'the zone its one node has');
      assert.equal(l['kubernetes.io/hostname'], `${BASE}-${pool}`);
      assert.equal(n.metadata!.annotations!['clusterlet.io/node-group'], `pool:${POOL}=${pool}`);
      assert.match(condition(n, 'Ready')?.message ?? '', new RegExp(`member member2 \\(pool ${POOL}=${pool}\\) answers and has 1 Ready`));
    }
    const gpu = await waitNode(host, `${BASE}-gpu`, () => true, 'gpu pool');
    assert.ok(same(gpu.status?.capacity?.['nvidia.com/gpu'], '4'), 'the GPU pool shows its GPUs');
    assert.equal((await hostNodes(host)).some((n) => n.metadata!.name === BASE), false, 'no whole-member node in pool mode');

    // A tainted pool comes: its node carries the taint every one of its member nodes has; it goes with its last node.
    await addMemberNode('member2-t', '4', { [POOL]: 'tainted', 'topology.kubernetes.io/zone': 'local-1a' },
      [{ key: 'example.com/dedicated', value: 'ml', effect: 'NoSchedule' }]);
    const tainted = await waitNode(host, `${BASE}-tainted`, (x) => isReady(x) && same(x.status?.capacity?.cpu, '4'), 'the new pool\'s node');
    assert.ok(tainted.spec!.taints!.some((x) => x.key === 'example.com/dedicated' && x.value === 'ml' && x.effect === 'NoSchedule'));
    await removeMemberNode('member2-t');
    await pollUntil(() => hostNodes(host), (ns) => !ns.some((n) => n.metadata!.name === `${BASE}-tainted`), 30_000,
      'the gone pool\'s node deleted (no pod was bound to it)');
  });

  it('a Deployment with a zone topology spread constraint spreads its delegates over the member\'s zones', async () => {
    await apps().createNamespacedDeployment({ namespace: ns, body: spread('spread', ns, 3, {
      topologySpreadConstraints: [{ maxSkew: 1, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'DoNotSchedule',
        labelSelector: { matchLabels: { app: 'spread' } } }],
    }) });
    const proxies = await waitUntil(host, podsSpec(host, ns, 'app=spread'), (ps) => ps.length === 3 && ps.every((p) => p.status?.phase === 'Running'),
      60_000, '3 proxies Running');
    assert.deepEqual(proxies.map((p) => p.spec!.nodeName).sort(), [`${BASE}-gpu`, `${BASE}-large`, `${BASE}-medium`], 'one per pool (zone)');
    const delegates = await waitUntil(member, podsSpec(member, ns, 'app=spread'), (ps) => ps.length === 3 && ps.every((p) => p.spec?.nodeName),
      60_000, '3 delegates bound');
    const memberNodeOf: Record<string, string> = { [`${BASE}-medium`]: 'member2-a', [`${BASE}-large`]: 'member2-b', [`${BASE}-gpu`]: 'member2-gpu' };
    for (const d of delegates) {
      const vn = d.metadata!.labels!['clusterlet.io/virtual-node'];
      const proxy = proxies.find((p) => p.metadata!.name === d.metadata!.name)!;
      assert.equal(vn, proxy.spec!.nodeName, 'the delegate names its proxy\'s virtual node');
      assert.equal(d.spec!.nodeName, memberNodeOf[vn], `the delegate of a pod on ${vn} runs in that pool`);
    }
  });

  it('fit per pool: a pod no node of its pool has room for is not offloaded (NoMemberNodeFits), and is once one has', async () => {
    // Two medium nodes of 16 CPUs: the pool's node shows 32, a 20-CPU pod binds to it, and fits neither member node.
    await addMemberNode('member2-a2', '16', { [POOL]: 'medium', 'topology.kubernetes.io/zone': 'local-1a' });
    await waitNode(host, `${BASE}-medium`, (x) => same(x.status?.capacity?.cpu, '32'), 'the medium pool at 32 CPUs');
    await host.core.createNamespacedPod({ namespace: ns, body: podSpec('big', { namespace: ns, tolerate: true,
      nodeSelector: { [POOL]: 'medium', 'clusterlet.io/member': 'member2' }, resources: { requests: { cpu: '20' } } }) });
    const [proxy] = await waitUntil(host, podsSpec(host, ns), (ps) => ps.some((p) => p.metadata!.name === 'big'
      && condition(p, 'clusterlet.io/Offloaded')?.reason === 'NoMemberNodeFits'), 30_000, 'Offloaded=False NoMemberNodeFits')
      .then((ps) => ps.filter((p) => p.metadata!.name === 'big'));
    assert.equal(proxy.spec!.nodeName, `${BASE}-medium`);
    assert.match(condition(proxy, 'clusterlet.io/Offloaded')?.message ?? '',
      new RegExp(`no Ready member node of member member2 \\(pool ${POOL}=medium\\) has room for its requests \\(cpu 20\\); the most one of the 2 it may run on has free is cpu 1[56]`));
    await waitUntil(host, eventSpec(host, ns), (evs) => evs.some((e) => e.involvedObject?.name === 'big' && e.type === 'Warning'
      && e.reason === 'NoMemberNodeFits'), 30_000, 'a NoMemberNodeFits Warning');
    // A bigger node joins the pool: the pod runs there, and nowhere else.
    await addMemberNode('member2-a3', '24', { [POOL]: 'medium', 'topology.kubernetes.io/zone': 'local-1a' });
    await waitUntil(member, podsSpec(member, ns), (ps) => ps.some((p) => p.metadata!.name === 'big' && p.spec?.nodeName === 'member2-a3'),
      30_000, 'the delegate bound to the new node of the pool');
    await host.core.deleteNamespacedPod({ namespace: ns, name: 'big', gracePeriodSeconds: 0 });
    await waitUntil(member, podsSpec(member, ns), (ps) => !ps.some((p) => p.metadata!.name === 'big'), 30_000, 'big gone');
    await removeMemberNode('member2-a2');
    await removeMemberNode('member2-a3');
    await waitNode(host, `${BASE}-medium`, (x) => same(x.status?.capacity?.cpu, '16'), 'the medium pool back at 16 CPUs');
  });

  it('switching to node mode keeps every running pod; new pods go to per-node virtual nodes; an old node goes with its last pod', async () => {
    const before = await waitUntil(member, podsSpec(member, ns, 'app=spread'), (ps) => ps.length === 3, 10_000, 'the spread delegates');
    const uids = before.map((d) => d.metadata!.uid).sort();
    assert.equal(await cl!.stop(), 0);
    cl = startClusterlet(args('node'));
    for (const [n, cpu] of [['member2-a', '16'], ['member2-b', '32'], ['member2-gpu', '8']] as const) {
      const vn = await waitNode(host, `${BASE}-${n}`, (x) => isReady(x) && same(x.status?.capacity?.cpu, cpu), `node ${n}'s virtual node`);
      assert.equal(vn.metadata!.annotations!['clusterlet.io/node-group'], `node:${n}`);
    }
    // The pools' nodes stay while their pods run, Ready, tainted so that nothing new goes there.
    for (const pool of ['medium', 'large', 'gpu']) {
      const old = await waitNode(host, `${BASE}-${pool}`, (x) => (x.spec?.taints ?? []).some((tt) => tt.key === 'clusterlet.io/retiring'),
        `the ${pool} pool's node retiring`);
      assert.ok(isReady(old), `the ${pool} pool's node stays Ready while its pod runs`);
    }
    const proxies = await waitUntil(host, podsSpec(host, ns, 'app=spread'), (ps) => ps.length === 3 && ps.every((p) => p.status?.phase === 'Running'
      && isReady(p)), 30_000, 'the spread pods still Running and Ready');
    assert.deepEqual(proxies.map((p) => p.spec!.nodeName).sort(), [`${BASE}-gpu`, `${BASE}-large`, `${BASE}-medium`]);
    assert.deepEqual((await member.core.listNamespacedPod({ namespace: ns, labelSelector: 'app=spread' })).items.map((d) => d.metadata!.uid).sort(),
      uids, 'no delegate was replaced');

    // Pod anti-affinity on hostname: one pod per virtual node, and so one per member node.
    await apps().createNamespacedDeployment({ namespace: ns, body: spread('apart', ns, 3, { affinity: { podAntiAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: [{ labelSelector: { matchLabels: { app: 'apart' } }, topologyKey: 'kubernetes.io/hostname' }],
    } } }) });
    const apart = await waitUntil(host, podsSpec(host, ns, 'app=apart'), (ps) => ps.length === 3 && ps.every((p) => p.status?.phase === 'Running'),
      60_000, '3 apart pods Running');
    assert.deepEqual(apart.map((p) => p.spec!.nodeName).sort(), [`${BASE}-member2-a`, `${BASE}-member2-b`, `${BASE}-member2-gpu`]);
    const delegates = (await member.core.listNamespacedPod({ namespace: ns, labelSelector: 'app=apart' })).items;
    for (const d of delegates) {
      const proxy = apart.find((p) => p.metadata!.name === d.metadata!.name)!;
      assert.equal(`${BASE}-${d.spec!.nodeName}`, proxy.spec!.nodeName, 'each delegate on the member node of its virtual node');
    }
    // Each node has a kubelet API port of its own, and its pods are its own there (a scraper of the node's port, as
    // metrics-server, reaches that node alone).
    const ports = new Set<number>();
    for (const p of apart) {
      const vn = await host.core.readNode({ name: p.spec!.nodeName! });
      const port = vn.status!.daemonEndpoints!.kubeletEndpoint!.Port;
      assert.notEqual(port, kubeletPort, 'not the member\'s port');
      ports.add(port);
      const listed = JSON.parse(await kubectl(harness().host, 'get', '--raw', `/api/v1/nodes/${p.spec!.nodeName}/proxy/pods`)) as { items: V1Pod[] };
      assert.deepEqual(listed.items.map((x) => x.metadata!.name), [p.metadata!.name], `the pods of ${p.spec!.nodeName} through its port`);
    }
    assert.equal(ports.size, 3, 'three ports');

    // The spread pods go: so do the pools' nodes.
    await apps().patchNamespacedDeploymentScale({ namespace: ns, name: 'spread', body: { spec: { replicas: 0 } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
    await pollUntil(() => hostNodes(host), (ns) => !ns.some((n) => [`${BASE}-medium`, `${BASE}-large`, `${BASE}-gpu`].includes(n.metadata!.name!)),
      60_000, 'the pools\' nodes deleted once their last pod is gone');
  });

  it('node mode: a member node added adds its virtual node; removed, its virtual node goes', async () => {
    await addMemberNode('member2-n', '4', { [POOL]: 'small', 'topology.kubernetes.io/zone': 'local-1b' });
    const n = await waitNode(host, `${BASE}-member2-n`, (x) => isReady(x) && same(x.status?.capacity?.cpu, '4'), 'the new member node\'s virtual node');
    assert.equal(n.metadata!.labels![POOL], 'small');
    await removeMemberNode('member2-n');
    await pollUntil(() => hostNodes(host), (ns) => !ns.some((x) => x.metadata!.name === `${BASE}-member2-n`), 30_000,
      'its virtual node deleted');
  });

  it('node mode: a member node cordoned keeps its node Ready and its pods, tainted clusterlet.io/cordoned; uncordoned, untainted', async () => {
    const vn = `${BASE}-member2-b`;
    const merge = { contentType: PATCH.merge };
    await member.core.patchNode({ name: 'member2-b', body: { spec: { unschedulable: true } } }, merge);
    try {
      // The taint (a metadata patch) and the Ready message (a status patch) are two writes.
      const n = await waitNode(host, vn, (x) => (x.spec?.taints ?? []).some((t) => t.key === 'clusterlet.io/cordoned' && t.effect === 'NoSchedule')
        && /all cordoned: no new pod is placed here/.test(condition(x, 'Ready')?.message ?? ''), `${vn} tainted cordoned, and saying so`);
      assert.ok(isReady(n), 'still Ready: a cordoned node keeps its pods');
    } finally {
      await member.core.patchNode({ name: 'member2-b', body: { spec: { unschedulable: null } } }, merge);
    }
    await waitNode(host, vn, (x) => isReady(x) && !(x.spec?.taints ?? []).some((t) => t.key === 'clusterlet.io/cordoned'), `${vn} untainted`);
    const apart = await waitUntil(host, podsSpec(host, ns, 'app=apart'), (ps) => ps.length === 3 && ps.every(isReady), 30_000, 'the apart pods Ready');
    assert.ok(apart.some((p) => p.spec!.nodeName === vn), `the pod on ${vn} stayed`);
  });

  it('the member API down: every one of its nodes NotReady with the reason; back: Ready, the same delegates running', async () => {
    const nodesNow = [`${BASE}-member2-a`, `${BASE}-member2-b`, `${BASE}-member2-gpu`];
    const uids = (await member.core.listNamespacedPod({ namespace: ns, labelSelector: 'app=apart' })).items.map((d) => d.metadata!.uid).sort();
    assert.equal(uids.length, 3);
    await second.stopApiServer();
    try {
      for (const n of nodesNow) {
        await waitNode(host, n, (x) => condition(x, 'Ready')?.reason === 'MemberUnreachable', `${n} NotReady, member unreachable`);
      }
    } finally {
      await second.startApiServer();
    }
    for (const n of nodesNow) await waitNode(host, n, isReady, `${n} Ready again`);
    await waitUntil(host, podsSpec(host, ns, 'app=apart'), (ps) => ps.length === 3 && ps.every(isReady), 60_000, 'the apart pods Ready again');
    assert.deepEqual((await member.core.listNamespacedPod({ namespace: ns, labelSelector: 'app=apart' })).items.map((d) => d.metadata!.uid).sort(),
      uids, 'the same delegates');
  });

  it('a host node under a name of ours that is not ours (another member\'s, another group\'s) is never adopted or written, nor its pods offloaded', async () => {
    await cl?.stop();
    cl = undefined;
    const base = 'grq';
    const other = { 'clusterlet.io/member': 'member-x' };
    // Pool large's name, carrying our member's label but recording another group; pool medium's and (made later)
    // the whole member's names, another member's nodes.
    const foreign: V1Node[] = [
      { metadata: { name: `${base}-large`, labels: { 'clusterlet.io/member': 'member2' }, annotations: { 'clusterlet.io/node-group': 'pool:example.com/other=x' } } },
      { metadata: { name: `${base}-medium`, labels: other } },
      { metadata: { name: base, labels: other } },
    ];
    const names = foreign.map((n) => n.metadata!.name!);
    // Made as someone else (the test's ClusterClient writes as clusterlet, its field manager): the admin's own client.
    const someoneElse = harness().host.kubeConfig().makeApiClient(CoreV1Api);
    for (const n of foreign.slice(0, 2)) await someoneElse.createNode({ body: n });
    const bound = (name: string, node: string): V1Pod => podSpec(name, { namespace: ns, nodeName: node, tolerate: true });
    /** Who wrote the node (its field managers), and whether its Lease exists. */
    const writtenBy = async (name: string): Promise<string[]> => (JSON.parse(await kubectl(harness().host, 'get', 'node', name,
      '--show-managed-fields', '-o', 'json')) as V1Node).metadata!.managedFields!.map((f) => f.manager!);
    /** Whether clusterlet wrote the node (its User-Agent is its field manager). */
    const byClusterlet = async (name: string): Promise<boolean> => (await writtenBy(name)).some((m) => m.startsWith('clusterlet'));
    const lease = (name: string) => host.coordination.readNamespacedLease({ name, namespace: 'kube-node-lease' }).then(() => true, () => false);
    const delegates = async (): Promise<string[]> => (await member.core.listNamespacedPod({ namespace: ns })).items.map((p) => p.metadata!.name!);
    try {
      // Pool mode: the pools large and medium would take two of those names.
      for (const n of names.slice(0, 2)) await host.core.createNamespacedPod({ namespace: ns, body: bound(`on-${n}`, n) });
      const args2 = args(`pool=${POOL}`).map((a) => (a === BASE ? base : a));
      cl = startClusterlet(args2);
      await waitNode(host, `${base}-gpu`, isReady, 'our own pool\'s node Ready');
      await host.core.createNamespacedPod({ namespace: ns, body: bound('on-gpu', `${base}-gpu`) });
      await pollUntil(delegates, (ds) => ds.includes('on-gpu'), 30_000, 'the pod bound to our pool\'s node offloaded');
      assert.equal(await byClusterlet(`${base}-gpu`), true, `clusterlet's writes show: ${(await writtenBy(`${base}-gpu`)).join(', ')}`);
      for (const n of names.slice(0, 2)) {
        assert.equal(await byClusterlet(n), false, `${n}: clusterlet never wrote it (${(await writtenBy(n)).join(', ')})`);
        assert.equal(await lease(n), false, `${n}: no Lease`);
      }
      assert.deepEqual((await delegates()).filter((d) => d.startsWith('on-grq')), [], 'no pod bound to those nodes offloaded');
      assert.match(cl.logs(), /host node \\"grq-large\\" exists, carries member member2's label but records group \\"pool:example.com\/other=x\\"/);
      assert.match(cl.logs(), /host node \\"grq-medium\\" exists and is member member-x's virtual node/);
      await cl.stop();
      cl = undefined;

      // The whole member under another member's node name: its setup fails, saying so, and nothing is written.
      await someoneElse.createNode({ body: foreign[2] });
      await host.core.createNamespacedPod({ namespace: ns, body: bound(`on-${base}`, base) });
      cl = startClusterlet(args('cluster').map((a) => (a === BASE ? base : a)));
      // Its log file comes with its first line.
      const logs = async (): Promise<string> => { try { return cl!.logs(); } catch { return ''; } };
      await pollUntil(logs, (l) => /member setup failed/.test(l), 30_000, 'the member\'s setup refused');
      assert.match(cl.logs(), /host node \\"grq\\" exists and is member member-x's virtual node: clusterlet does not take over/);
      assert.equal(await byClusterlet(base), false, 'the other member\'s node not written');
      assert.equal(await lease(base), false, 'no Lease');
      assert.deepEqual((await delegates()).filter((d) => d === `on-${base}`), [], 'its pod not offloaded');
    } finally {
      await cl?.stop();
      cl = undefined;
      for (const n of [...names, `${base}-gpu`, `${base}-large`]) await host.core.deleteNode({ name: n }).catch(() => undefined);
    }
  });
});
