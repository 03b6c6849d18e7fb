// The node controller against a fake host and a fake NodeProvider: registration, conditions, status writes
// only on change (and on refresh), managed labels, taints, repair of what others change, and the lease.
import { describe, it, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Node } from '@kubernetes/client-node';
import { LEASE_NAMESPACE, NodeController, type NodeControllerOptions } from '../../../../src/host/node/controller.ts';
import type { NodeContext } from '../../../../src/forge/node.ts';
import { MANAGED_LABELS_ANNOTATION } from '../../../../src/forge/keys.ts';
import { createLogger } from '../../../../src/log.ts';
import { FakeNodeProvider } from '../../fakes/node.ts';
import { FakeNodeHost } from '../../fakes/nodehost.ts';
import { eventually } from '../../fakes/wait.ts';

const NODE = 'clusterlet-eu';
const LEASE = `${LEASE_NAMESPACE}/${NODE}`;
const ZONE = 'topology.kubernetes.io/zone';
const GPU = { key: 'example.com/gpu', value: 'true', effect: 'NoSchedule' };
const ctx: NodeContext = {
  nodeName: NODE, memberName: 'eu', labels: { 'example.com/tier': 'gold' }, taints: [GPU], nodeIP: '10.0.0.7', kubeletPort: 10250,
};
const state = FakeNodeProvider.state;

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

let running: NodeController[] = [];
afterEach(() => { for (const c of running.splice(0)) c.stop(); });

function start(host: FakeNodeHost, provider: FakeNodeProvider, opts: NodeControllerOptions = {}): NodeController {
  const c = new NodeController(host.client(), ctx, provider, createLogger('silent'), opts);
  c.start();
  running.push(c);
  return c;
}

/** A controller whose node is registered, Ready, and seen back by its informer. */
async function registered(opts: NodeControllerOptions = {}) {
  const host = new FakeNodeHost();
  const provider = new FakeNodeProvider();
  const c = start(host, provider, opts);
  provider.states.next(state());
  await eventually('the node Ready', () => host.ready(NODE)?.status === 'True' && c.node?.status?.conditions !== undefined);
  return { host, provider, c };
}

const node = (host: FakeNodeHost): V1Node => structuredClone(host.nodes.get(NODE)!);
const isReady = (host: FakeNodeHost, reason: string) =>
  host.ready(NODE)?.status === (reason === 'MemberReady' ? 'True' : 'False') && host.ready(NODE)?.reason === reason;

describe('NodeController', () => {
  it('registers the node on the first state: created, then its status written, and a lease owned by it', async () => {
    const host = new FakeNodeHost();
    const provider = new FakeNodeProvider();
    start(host, provider);
    await pause(30);
    assert.equal(host.nodes.size, 0, 'nothing registered before the provider reports a state');
    provider.states.next(state());
    await eventually('the node Ready', () => isReady(host, 'MemberReady'));
    const ops = host.writes.map((w) => w.op);
    assert.deepEqual(ops.slice(0, 2), ['createNode', 'patchNodeStatus'], 'the status is written after the create');
    const n = node(host);
    assert.equal(n.metadata!.labels!['example.com/tier'], 'gold');
    assert.equal(n.metadata!.labels!['clusterlet.io/member'], 'eu');
    assert.deepEqual(n.status!.capacity, state().capacity);
    assert.deepEqual(n.status!.addresses, [{ type: 'InternalIP', address: '10.0.0.7' }, { type: 'Hostname', address: NODE }]);
    assert.ok(n.spec!.taints!.some((t) => t.key === GPU.key), 'the configured taint');
    await eventually('the lease', () => host.leases.has(LEASE));
    const lease = host.leases.get(LEASE)!;
    assert.deepEqual(lease.metadata!.ownerReferences, [{ apiVersion: 'v1', kind: 'Node', name: NODE, uid: n.metadata!.uid }]);
    assert.equal(lease.spec!.holderIdentity, NODE);
    assert.ok(lease.spec!.renewTime, 'renewed once registered');
  });

  it('registers an unreachable back end NotReady, without a lease', async () => {
    const host = new FakeNodeHost();
    const provider = new FakeNodeProvider();
    start(host, provider);
    provider.states.next(state({ reachable: false, unreachableReason: 'connect ECONNREFUSED' }));
    await eventually('the node NotReady', () => isReady(host, 'MemberUnreachable'));
    assert.equal(host.leases.size, 0);
  });

  it('is NotReady while the back end is unreachable, not synced or without ready nodes; Ready when it has them', async () => {
    const { host, provider } = await registered();
    provider.states.next(state({ reachable: false, unreachableReason: 'timeout' }));
    await eventually('MemberUnreachable', () => isReady(host, 'MemberUnreachable'));
    provider.states.next(state({ synced: false, readyNodes: 0 }));
    await eventually('MemberNotSynced', () => isReady(host, 'MemberNotSynced'));
    provider.states.next(state({ readyNodes: 0 }));
    await eventually('MemberHasNoReadyNode', () => isReady(host, 'MemberHasNoReadyNode'));
    provider.states.next(state({ readyNodes: 1 }));
    await eventually('MemberReady', () => isReady(host, 'MemberReady'));
  });

  it('patches the status on change and not otherwise', async () => {
    const { host, provider } = await registered();
    const before = host.count('patchNodeStatus');
    provider.states.next(state());
    // A change the controller does answer (our label removed): once it is put back, a sync has run.
    const n = node(host);
    delete n.metadata!.labels!['example.com/tier'];
    host.put(n);
    await eventually('our label back', () => node(host).metadata!.labels!['example.com/tier'] === 'gold');
    assert.equal(host.count('patchNodeStatus'), before, 'no status write when nothing changed');
    provider.states.next(state({ capacity: { cpu: '16', memory: '64Gi', pods: '220' } }));
    await eventually('the new capacity', () => node(host).status!.capacity!.cpu === '16');
    assert.equal(host.count('patchNodeStatus'), before + 1, 'one status write for one change');
  });

  it('a restart keeps the node\'s capacity and allocatable until the member\'s caches are synced', async () => {
    const { host, c } = await registered();
    c.stop();
    const provider = new FakeNodeProvider();
    start(host, provider);
    // A process starting: its member answers, its caches not synced yet (src/member/cluster.ts: nothing counted).
    provider.states.next(state({ synced: false, readyNodes: 0, capacity: {}, allocatable: {} }));
    await eventually('MemberNotSynced', () => isReady(host, 'MemberNotSynced'));
    assert.deepEqual(node(host).status!.capacity, state().capacity, 'the capacity a previous process wrote');
    assert.deepEqual(node(host).status!.allocatable, state().allocatable);
    provider.states.next(state({ capacity: { cpu: '16', memory: '64Gi', pods: '220' }, allocatable: { cpu: '15', memory: '60Gi', pods: '200' } }));
    await eventually('the member\'s own figures', () => isReady(host, 'MemberReady') && node(host).status!.allocatable!.cpu === '15');
  });

  it('removes a resource the back end no longer has', async () => {
    const { host, provider } = await registered();
    provider.states.next(state({ capacity: { cpu: '8', pods: '220' }, allocatable: { cpu: '7', pods: '200' } }));
    await eventually('memory gone', () => node(host).status!.capacity!.memory === undefined);
    assert.equal(node(host).status!.allocatable!.memory, undefined);
  });

  it('writes the status again every statusRefreshMs, changed or not', async () => {
    const { host } = await registered({ statusRefreshMs: 150 });
    const before = host.count('patchNodeStatus');
    await eventually('two refreshes', () => host.count('patchNodeStatus') >= before + 2);
    const refreshes = host.writes.filter((w) => w.op === 'patchNodeStatus').slice(-2);
    assert.ok(refreshes[1]!.at - refreshes[0]!.at >= 100, `refreshed every ~150 ms, not at every sync (${refreshes[1]!.at - refreshes[0]!.at} ms)`);
    const heartbeats = refreshes.map((w) =>
      (w.body as { status: V1Node['status'] }).status!.conditions!.find((c) => c.type === 'Ready')!.lastHeartbeatTime!.getTime());
    assert.ok(heartbeats[1]! > heartbeats[0]!, 'a new heartbeat time');
  });

  it('manages its labels: removes one it set and no longer wants, keeps the users\'', async () => {
    const { host, provider } = await registered();
    provider.states.next(state({ topologyLabels: { [ZONE]: 'a' } }));
    await eventually('the zone label', () => node(host).metadata!.labels![ZONE] === 'a');
    assert.ok(node(host).metadata!.annotations![MANAGED_LABELS_ANNOTATION]!.split(',').includes(ZONE));
    const n = node(host);
    n.metadata!.labels!.team = 'infra';
    host.put(n);
    provider.states.next(state({ topologyLabels: {} }));
    await eventually('the zone label gone', () => node(host).metadata!.labels![ZONE] === undefined);
    assert.equal(node(host).metadata!.labels!.team, 'infra', 'a user label is kept');
    const managed = node(host).metadata!.annotations![MANAGED_LABELS_ANNOTATION]!.split(',');
    assert.ok(!managed.includes(ZONE) && !managed.includes('team') && managed.includes('example.com/tier'), managed.join(','));
  });

  it('puts its taints back and keeps everyone else\'s', async () => {
    const { host } = await registered();
    const unreachable = { key: 'node.kubernetes.io/unreachable', effect: 'NoExecute' };
    const n = node(host);
    n.spec!.taints = [unreachable];
    host.put(n);
    await eventually('our taints back', () => (node(host).spec!.taints ?? []).length === 3);
    const keys = node(host).spec!.taints!.map((t) => t.key).sort();
    assert.deepEqual(keys, [GPU.key, unreachable.key, 'virtual-kubelet.io/provider'].sort());
  });

  it('recreates a node someone deleted', async () => {
    const { host } = await registered();
    const uid = node(host).metadata!.uid;
    host.remove(NODE);
    await eventually('the node back, Ready', () => host.nodes.has(NODE) && isReady(host, 'MemberReady'));
    assert.notEqual(node(host).metadata!.uid, uid, 'a new node');
    assert.equal(host.count('createNode'), 2);
  });

  it('sets back a status someone overwrote (the node-lifecycle controller marking it unknown)', async () => {
    const { host } = await registered();
    const n = node(host);
    n.status!.conditions = n.status!.conditions!.map((c) => c.type === 'Ready' ? { ...c, status: 'Unknown', reason: 'NodeStatusUnknown' } : c);
    host.put(n);
    await eventually('Ready again', () => isReady(host, 'MemberReady'));
  });

  it('renews the lease on each reachable ping and not while unreachable', async () => {
    const { host, provider } = await registered();
    await eventually('the lease', () => host.leases.has(LEASE));
    const renewals = () => host.count('patchLease');
    const before = renewals();
    provider.pings.next({ reachable: true });
    await eventually('a renewal', () => renewals() === before + 1);
    provider.pings.next({ reachable: true });
    await eventually('another renewal', () => renewals() === before + 2);
    provider.pings.next({ reachable: false });
    provider.pings.next({ reachable: false });
    await pause(30);
    assert.equal(renewals(), before + 2, 'no renewal while unreachable');
    provider.pings.next({ reachable: true });
    await eventually('renewed again', () => renewals() === before + 3);
    await pause(20);
    assert.equal(renewals(), before + 3, 'one renewal per reachable ping');
    const renew = (host.writes.at(-1)!.body as { spec: { renewTime: string } }).spec.renewTime;
    assert.match(renew, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/, 'a MicroTime');
  });

  it('recreates a lease someone deleted, owned by the node', async () => {
    const { host, provider } = await registered();
    await eventually('the lease', () => host.leases.has(LEASE));
    host.leases.delete(LEASE);
    provider.pings.next({ reachable: true });
    await eventually('the lease back', () => host.leases.has(LEASE));
    assert.equal(host.leases.get(LEASE)!.metadata!.ownerReferences![0]!.uid, node(host).metadata!.uid);
    await eventually('renewed after the create', () => host.writes.at(-1)!.op === 'patchLease');
  });
});
