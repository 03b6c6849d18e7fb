// MemberCluster per group of its nodes, against a fake member API: groups$ (the groups of its granularity, on change
// only) and stateOf(group) (what that group's virtual node shows: its nodes only, how many, its pool label).
import { describe, it, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { filter, firstValueFrom, timeout, type Observable } from 'rxjs';
import type { V1Node } from '@kubernetes/client-node';
import { MemberCluster } from '../../../src/member/cluster.ts';
import type { MemberConfig } from '../../../src/config.ts';
import type { ClusterClient, WatchHandlers } from '../../../src/kube/client.ts';
import type { NodeGranularity, NodeGroup } from '../../../src/forge/groups.ts';
import { groupId } from '../../../src/forge/groups.ts';
import type { NodeState } from '../../../src/forge/node.ts';
import { createLogger } from '../../../src/log.ts';
import { eventually, settle } from '../fakes/wait.ts';

const POOL = 'example.com/pool';
const log = createLogger('silent');

function memberNode(name: string, pool?: string, ready = true): V1Node {
  return {
    metadata: { name, resourceVersion: '1', labels: { 'kubernetes.io/hostname': name, ...(pool ? { [POOL]: pool } : {}) } },
    status: {
      capacity: { cpu: '4', memory: '16Gi', pods: '110' }, allocatable: { cpu: '4', memory: '16Gi', pods: '110' },
      conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }],
    },
  };
}

/** A member API: its nodes listed, node events sent by the test, no pods, an API server that answers. */
class FakeMemberApi {
  nodes: V1Node[] = [];
  #nodeWatches = new Set<WatchHandlers>();
  #rv = 10;

  /** A node added or changed (`type`) or deleted, as the member's node watch tells it. */
  send(type: 'ADDED' | 'MODIFIED' | 'DELETED', node: V1Node): void {
    const n = structuredClone(node);
    n.metadata!.resourceVersion = String(++this.#rv);
    for (const h of this.#nodeWatches) h.onEvent(type, n);
  }

  get watching(): boolean { return this.#nodeWatches.size > 0; }

  client(): ClusterClient {
    const core = {
      listNode: async () => ({ items: structuredClone(this.nodes), metadata: { resourceVersion: String(this.#rv) } }),
      listPodForAllNamespaces: async () => ({ items: [], metadata: { resourceVersion: String(this.#rv) } }),
    };
    return {
      name: 'member', core,
      request: async (_method: string, path: string) => (path === '/readyz' ? 'ok' : { gitVersion: 'v1.34.1' }),
      watch: (path: string, _query: unknown, h: WatchHandlers) => new Promise<void>((resolve) => {
        if (path === '/api/v1/nodes') this.#nodeWatches.add(h);
        h.signal.addEventListener('abort', () => { this.#nodeWatches.delete(h); resolve(); });
      }),
    } as unknown as ClusterClient;
  }
}

const stops: (() => void)[] = [];
afterEach(() => { for (const s of stops.splice(0).reverse()) s(); });

function cluster(api: FakeMemberApi, nodes?: NodeGranularity): MemberCluster {
  const config: MemberConfig = {
    name: 'm1', nodeName: 'clusterlet-m1', labels: {}, taints: [], qps: 50, burst: 100,
    storage: { className: 'clusterlet-m1', reclaimPolicy: 'Delete' }, namespaceMapping: { template: '{namespace}', overrides: {} },
    ...(nodes ? { nodes } : {}),
  };
  const c = new MemberCluster(config, api.client(), 'host-1', log, { coalesceMs: 5, probeIntervalMs: 60_000 });
  c.start();
  stops.push(() => c.stop());
  return c;
}

/** The first value of `o` that `ok` admits, within a bounded wait. */
const first = <T>(o: Observable<T>, ok: (v: T) => boolean, what: string): Promise<T> =>
  firstValueFrom(o.pipe(filter(ok), timeout({ first: 5000, with: () => { throw new Error(`timed out waiting for ${what}`); } })));

const ids = (gs: NodeGroup[]) => gs.map(groupId);
const pool = (value: string): NodeGroup => ({ kind: 'pool', label: POOL, value });

describe('MemberCluster: groups of its nodes', () => {
  it('groups$: the pools of its nodes, sorted; a node without the label in none; emits again only when they change', async () => {
    const api = new FakeMemberApi();
    api.nodes = [memberNode('n1', 'gpu'), memberNode('n2', 'cpu'), memberNode('n3', 'gpu'), memberNode('n4')];
    const c = cluster(api, { mode: 'pool', label: POOL });
    const seen: string[][] = [];
    const sub = c.groups$.subscribe((gs) => seen.push(ids(gs)));
    stops.push(() => sub.unsubscribe());
    await eventually('the first groups', () => seen.length === 1);
    assert.deepEqual(seen, [['pool:example.com/pool=cpu', 'pool:example.com/pool=gpu']]);
    await eventually('the node watch', () => api.watching);
    api.send('MODIFIED', { ...memberNode('n3', 'gpu'), metadata: { ...memberNode('n3', 'gpu').metadata, annotations: { a: 'b' } } });
    await settle();
    assert.equal(seen.length, 1, 'the same groups: nothing emitted');
    api.send('ADDED', memberNode('n5', 'arm'));
    await eventually('a pool more', () => seen.length === 2);
    assert.deepEqual(seen[1], ['pool:example.com/pool=arm', 'pool:example.com/pool=cpu', 'pool:example.com/pool=gpu']);
    api.send('DELETED', memberNode('n2', 'cpu'));
    await eventually('the cpu pool gone', () => seen.length === 3);
    assert.deepEqual(seen[2], ['pool:example.com/pool=arm', 'pool:example.com/pool=gpu']);
  });

  it('groups$ in cluster mode (the default): the one group, even without nodes', async () => {
    const c = cluster(new FakeMemberApi());
    assert.deepEqual(ids(await first(c.groups$, () => true, 'the groups')), ['cluster']);
  });

  it('groups$ in node mode: one group per member node', async () => {
    const api = new FakeMemberApi();
    api.nodes = [memberNode('w2'), memberNode('w1')];
    const c = cluster(api, { mode: 'node' });
    assert.deepEqual(ids(await first(c.groups$, () => true, 'the groups')), ['node:w1', 'node:w2']);
  });

  it('stateOf(pool): only the pool\'s nodes, how many it has, and its label; the whole member\'s state counts them all', async () => {
    const api = new FakeMemberApi();
    api.nodes = [memberNode('n1', 'gpu'), memberNode('n2', 'cpu'), memberNode('n3', 'gpu', false)];
    const c = cluster(api, { mode: 'pool', label: POOL });
    const synced = (s: NodeState) => s.synced && s.reachable;
    const gpu = await first(c.stateOf(pool('gpu')), synced, 'the gpu pool synced');
    assert.deepEqual([gpu.groupNodes, gpu.readyNodes, gpu.capacity.cpu], [2, 1, '4'], 'two nodes, one of them Ready and counted');
    assert.equal(gpu.topologyLabels[POOL], 'gpu');
    const whole = await first(c.state$, synced, 'the member synced');
    assert.deepEqual([whole.groupNodes, whole.readyNodes, whole.capacity.cpu], [undefined, 2, '8']);
    assert.equal(whole.topologyLabels[POOL], undefined, 'the whole member shows no pool label');
    const gone = await first(c.stateOf(pool('arm')), synced, 'a pool without nodes');
    assert.deepEqual([gone.groupNodes, gone.readyNodes], [0, 0]);
    const w2 = await first(c.stateOf({ kind: 'node', node: 'n2' }), synced, 'one member node');
    assert.deepEqual([w2.groupNodes, w2.readyNodes, w2.topologyLabels[POOL]], [1, 1, undefined]);
  });

  it('stateOf(pool) follows its nodes: the last one gone, the group has none', async () => {
    const api = new FakeMemberApi();
    api.nodes = [memberNode('n1', 'gpu'), memberNode('n2', 'cpu')];
    const c = cluster(api, { mode: 'pool', label: POOL });
    const states: NodeState[] = [];
    const sub = c.stateOf(pool('gpu')).subscribe((s) => states.push(s));
    stops.push(() => sub.unsubscribe());
    await eventually('the gpu pool synced, one node', () => states.at(-1)?.synced === true && states.at(-1)?.groupNodes === 1);
    await eventually('the node watch', () => api.watching);
    api.send('DELETED', memberNode('n1', 'gpu'));
    await eventually('the gpu pool empty', () => states.at(-1)?.groupNodes === 0);
    assert.equal(states.at(-1)?.readyNodes, 0);
  });

  it('stateOf(node) of a cordoned member node: still Ready (its pods stay), tainted clusterlet.io/cordoned; uncordoned, not', async () => {
    const api = new FakeMemberApi();
    api.nodes = [memberNode('n1'), memberNode('n2')];
    const c = cluster(api, { mode: 'node' });
    const states: NodeState[] = [];
    const sub = c.stateOf({ kind: 'node', node: 'n1' }).subscribe((s) => states.push(s));
    stops.push(() => sub.unsubscribe());
    const cordonedTaint = (s: NodeState | undefined) => (s?.taints ?? []).some((t) => t.key === 'clusterlet.io/cordoned' && t.effect === 'NoSchedule');
    await eventually('n1 synced', () => states.at(-1)?.synced === true && states.at(-1)?.readyNodes === 1);
    assert.equal(cordonedTaint(states.at(-1)), false);
    await eventually('the node watch', () => api.watching);
    api.send('MODIFIED', { ...memberNode('n1'), spec: { unschedulable: true } });
    await eventually('n1 cordoned', () => cordonedTaint(states.at(-1)));
    assert.equal(states.at(-1)?.readyNodes, 1, 'Ready: a cordoned node keeps its pods');
    api.send('MODIFIED', memberNode('n1'));
    await eventually('n1 uncordoned', () => states.at(-1) !== undefined && !cordonedTaint(states.at(-1)));
    const whole = await first(c.state$, (s) => s.synced, 'the member');
    assert.equal(cordonedTaint(whole), false, 'the whole member\'s node never has it');
  });
});
