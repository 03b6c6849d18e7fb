// The node controller against a fake host and a fake NodeProvider: registration, conditions, status writes
// only on change (and on refresh), managed labels, taints, repair of what others change, and the lease.
import { describe, it, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Node, V1Taint } from '@kubernetes/client-node';
import { LEASE_NAMESPACE, NodeController, type NodeControllerOptions, type NodeHost } from '../../../../src/host/node/controller.ts';
import type { NodeContext } from '../../../../src/forge/node.ts';
import { GROUP_ANNOTATION, MANAGED_LABELS_ANNOTATION, MANAGED_TAINTS_ANNOTATION } from '../../../../src/forge/keys.ts';
import { Informer } from '../../../../src/kube/informer.ts';
import { listWatch } from '../../../../src/kube/listwatch.ts';
import { createLogger } from '../../../../src/log.ts';
import { FakeNodeProvider } from '../../fakes/node.ts';
import { FakeNodeHost } from '../../fakes/nodehost.ts';
import { eventually, settle } from '../../fakes/wait.ts';

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

function start(host: FakeNodeHost, provider: FakeNodeProvider, opts: NodeControllerOptions = {}, context: NodeContext = ctx): NodeController {
  const c = new NodeController(host.client(), context, provider, createLogger('silent'), opts);
  c.start();
  running.push(c);
  return c;
}

/** A controller whose node is registered, Ready, and seen back by its informer. */
async function registered(opts: NodeControllerOptions = {}, context: NodeContext = ctx, host = new FakeNodeHost()) {
  const provider = new FakeNodeProvider();
  const c = start(host, provider, opts, context);
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

/** The host's nodes, all of them, in one informer: what a member's node controllers share (NodeControllerOptions.nodes). */
function sharedNodes(host: FakeNodeHost, client: NodeHost = host.client()): Informer<V1Node> {
  const informer = new Informer<V1Node>('host-nodes', listWatch<V1Node>(client, {
    path: '/api/v1/nodes', model: 'V1Node', resource: 'nodes', list: (p) => client.core.listNode(p),
  }, { log: createLogger('silent') }));
  informer.start();
  informers.push(informer);
  return informer;
}

let informers: Informer<V1Node>[] = [];
afterEach(() => { for (const i of informers.splice(0)) i.stop(); });

const RETIRING = 'clusterlet.io/retiring';
const taintKeys = (host: FakeNodeHost): string[] => (node(host).spec!.taints ?? []).map((t) => t.key).sort();
const managedTaints = (host: FakeNodeHost): string[] => (node(host).metadata!.annotations![MANAGED_TAINTS_ANNOTATION] ?? '').split(',').filter(Boolean);

describe('NodeController: a virtual node of an earlier granularity', () => {
  it('retire(true) taints the node clusterlet.io/retiring (NoSchedule), recorded as its own; retire(false) removes only that', async () => {
    const { host, c } = await registered();
    const user: V1Taint = { key: 'example.com/maintenance', effect: 'NoSchedule' };
    const n = node(host);
    n.spec!.taints = [...n.spec!.taints!, user];
    host.put(n);
    await eventually('the user\'s taint seen', () => (c.node?.spec?.taints ?? []).some((t) => t.key === user.key));
    assert.equal(c.retiring, false);
    c.retire(true);
    assert.equal(c.retiring, true);
    await eventually('the retiring taint', () => taintKeys(host).includes(RETIRING));
    assert.deepEqual(node(host).spec!.taints!.find((t) => t.key === RETIRING),
      { key: RETIRING, value: 'granularity-changed', effect: 'NoSchedule' });
    assert.deepEqual(managedTaints(host), ['clusterlet.io/retiring:NoSchedule']);
    assert.deepEqual(taintKeys(host), [GPU.key, user.key, RETIRING, 'virtual-kubelet.io/provider'].sort(), 'the others kept');
    const patches = host.count('patchNode');
    c.retire(true);
    await settle();
    assert.equal(host.count('patchNode'), patches, 'retiring again changes nothing');

    c.retire(false);
    assert.equal(c.retiring, false);
    await eventually('the retiring taint gone', () => !taintKeys(host).includes(RETIRING));
    assert.deepEqual(taintKeys(host), [GPU.key, user.key, 'virtual-kubelet.io/provider'].sort(), 'every other taint left alone');
    assert.deepEqual(managedTaints(host), []);
  });

  it('a retiring node someone untainted is tainted again', async () => {
    const { host, c } = await registered();
    c.retire(true);
    await eventually('the retiring taint', () => taintKeys(host).includes(RETIRING));
    const n = node(host);
    n.spec!.taints = n.spec!.taints!.filter((t) => t.key !== RETIRING);
    host.put(n);
    await eventually('the retiring taint back', () => taintKeys(host).includes(RETIRING));
  });

  it('remove() deletes the node with its UID as precondition, and never registers it again', async () => {
    const { host, provider, c } = await registered();
    const uid = node(host).metadata!.uid;
    await c.remove();
    assert.equal(host.nodes.has(NODE), false);
    assert.deepEqual(host.writes.filter((w) => w.op === 'deleteNode').map((w) => [w.name, w.body]), [[NODE, { preconditions: { uid } }]]);
    provider.states.next(state({ readyNodes: 5 }));
    await settle();
    assert.equal(host.count('createNode'), 1, 'not registered again');
    assert.equal(host.nodes.has(NODE), false);
  });

  it('remove() with a shared informer: the node\'s DELETED event arrives, and still nothing registers it again', async () => {
    const host = new FakeNodeHost();
    const nodes = sharedNodes(host);
    const { provider, c } = await registered({ nodes }, ctx, host);
    const uid = node(host).metadata!.uid;
    await c.remove();
    await eventually('the shared informer shows the node gone', () => nodes.get(NODE) === undefined);
    provider.states.next(state({ readyNodes: 5 }));
    await settle();
    assert.deepEqual(host.writes.filter((w) => w.op === 'deleteNode').map((w) => w.body), [{ preconditions: { uid } }]);
    assert.equal(host.count('createNode'), 1, 'not registered again');
    assert.equal(host.nodes.has(NODE), false);
  });

  it('remove() spares a node of that name registered since (another UID)', async () => {
    const host = new FakeNodeHost();
    const nodes = sharedNodes(host);
    const { c } = await registered({ nodes }, ctx, host);
    const successor = node(host);
    delete successor.metadata!.uid;
    host.remove(NODE);
    const uid = host.put(successor).metadata!.uid;
    // Events reach the informer a little later: the controller still knows the node it registered.
    await c.remove();
    assert.equal(host.nodes.get(NODE)?.metadata?.uid, uid, 'the newer node is left alone');
    assert.equal(host.count('deleteNode'), 0);
  });

  it('records its group on the node, and puts the record back', async () => {
    const grouped: NodeContext = { ...ctx, group: { kind: 'pool', label: 'example.com/pool', value: 'gpu' } };
    const { host } = await registered({}, grouped);
    assert.equal(node(host).metadata!.annotations![GROUP_ANNOTATION], 'pool:example.com/pool=gpu');
    const n = node(host);
    delete n.metadata!.annotations![GROUP_ANNOTATION];
    host.put(n);
    await eventually('the group annotation back', () => node(host).metadata!.annotations![GROUP_ANNOTATION] === 'pool:example.com/pool=gpu');
  });

  it('a node registered before (without a group record) gets its group recorded', async () => {
    const { host, c } = await registered();
    c.stop();
    assert.equal(node(host).metadata!.annotations![GROUP_ANNOTATION], undefined);
    const again = new FakeNodeProvider();
    start(host, again, {}, { ...ctx, group: { kind: 'node', node: 'w1' } });
    again.states.next(state());
    await eventually('the group recorded', () => node(host).metadata!.annotations![GROUP_ANNOTATION] === 'node:w1');
    assert.equal(host.count('createNode'), 1, 'the same node, patched');
  });
});

describe('NodeController with a shared nodes informer', () => {
  it('ignores the events of other nodes', async () => {
    const host = new FakeNodeHost();
    // Each attempt to register counted, refused ones too.
    const client = host.client();
    let creates = 0;
    const create = client.core.createNode.bind(client.core);
    client.core.createNode = (p) => { creates++; return create(p); };
    const nodes = sharedNodes(host, client);
    const provider = new FakeNodeProvider();
    const c = new NodeController(client, ctx, provider, createLogger('silent'), { nodes });
    c.start();
    running.push(c);
    provider.states.next(state());
    await eventually('the node Ready', () => host.ready(NODE)?.status === 'True' && c.node?.status?.conditions !== undefined);
    assert.equal(creates, 1);
    // The node dropped from the cache without an event: a sync from now on would try to register it again.
    nodes.forget(NODE);
    host.put({ metadata: { name: 'other-node', labels: { team: 'x' } } });
    await eventually('the other node seen', () => nodes.get('other-node') !== undefined);
    host.put({ metadata: { name: 'other-node', labels: { team: 'y' } } });
    host.remove('other-node');
    await eventually('the other node gone', () => nodes.get('other-node') === undefined);
    await settle();
    assert.equal(creates, 1, 'no sync for another node\'s events');
    assert.deepEqual(host.writes.filter((w) => w.name === 'other-node'), [], 'nothing written to the other node');
    // The check can fail: a sync (here for a new state) does try.
    provider.states.next(state({ readyNodes: 3 }));
    await eventually('a sync tries to register', () => creates === 2);
  });

  it('neither starts nor stops the shared informer', async () => {
    const host = new FakeNodeHost();
    const client = host.client();
    const nodes = new Informer<V1Node>('host-nodes', listWatch<V1Node>(client, {
      path: '/api/v1/nodes', model: 'V1Node', resource: 'nodes', list: (p) => client.core.listNode(p),
    }, { log: createLogger('silent') }));
    const provider = new FakeNodeProvider();
    const c = start(host, provider, { nodes });
    provider.states.next(state());
    await settle();
    assert.equal(host.nodes.size, 0, 'not started by the controller: not synced, nothing registered');
    nodes.start();
    informers.push(nodes);
    await eventually('registered once the informer runs', () => host.ready(NODE)?.status === 'True');
    c.stop();
    host.put({ metadata: { name: 'later' } });
    await eventually('the informer still running after the controller stopped', () => nodes.get('later') !== undefined);
  });
});

describe('NodeController: a node of its name that is not its own', () => {
  const foreign: V1Node = { metadata: { name: NODE, labels: { 'clusterlet.io/member': 'us' } } };
  const owns = (n: V1Node): boolean => n.metadata?.labels?.['clusterlet.io/member'] === 'eu';

  it('registered by someone else since it was looked at (its informer, of this member\'s nodes, does not show it): no write, no lease, told once', async () => {
    const host = new FakeNodeHost();
    host.put(structuredClone(foreign));
    // The member's informer selects its label: the other member's node is not in it.
    const nodes = sharedNodes(new FakeNodeHost());
    const provider = new FakeNodeProvider();
    const told: string[] = [];
    start(host, provider, { nodes, owns, onForeign: (n) => told.push(n.metadata!.name!) });
    provider.states.next(state());
    // The create is refused (the node exists); then a probe answers: a lease would be renewed now.
    await settle();
    provider.pings.next({ reachable: true });
    provider.states.next(state({ readyNodes: 2 }));
    await eventually('a lease written, or the node found foreign', () => told.length > 0 || host.writes.length > 0);
    await settle();
    assert.deepEqual(host.writes.map((w) => `${w.op} ${w.name}`), [], 'nothing written: neither the node nor its lease');
    assert.deepEqual(told, [NODE]);
  });

  it('shown by its informer but not ours (another group\'s): never written', async () => {
    const host = new FakeNodeHost();
    host.put(structuredClone(foreign));
    const provider = new FakeNodeProvider();
    const told: string[] = [];
    start(host, provider, { owns, onForeign: (n) => told.push(n.metadata!.name!) });
    provider.states.next(state());
    await eventually('the node written, or found foreign', () => told.length > 0 || host.writes.length > 0);
    await settle();
    assert.deepEqual(host.writes.map((w) => `${w.op} ${w.name}`), []);
    assert.deepEqual(told, [NODE]);
  });
});
