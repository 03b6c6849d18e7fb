// MemberVirtualNodes against fake hosts: a retired node is removed and not registered again by a sync owed meanwhile;
// a node with only a DaemonSet pod bound to it is removed.
import { describe, it, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { BehaviorSubject, NEVER, of } from 'rxjs';
import { MemberVirtualNodes } from '../../src/virtualnodes.ts';
import { proxyInformer } from '../../src/host/pod/controller.ts';
import { GROUP_ANNOTATION, MEMBER_LABEL } from '../../src/forge/keys.ts';
import type { NodeGroup } from '../../src/forge/groups.ts';
import { createLogger } from '../../src/log.ts';
import { FakeNodeHost } from './fakes/nodehost.ts';
import { FakeHost } from './fakes/host.ts';
import { FakeNodeProvider } from './fakes/node.ts';
import { eventually } from './fakes/wait.ts';

const log = createLogger('silent');
const stops: (() => void)[] = [];
afterEach(() => { for (const s of stops.splice(0).reverse()) s(); });
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('MemberVirtualNodes: retired nodes', () => {
  it('a pool node removed (its pool gone, no pods) is not registered again', async () => {
    const nodes = new FakeNodeHost();
    const pods = new FakeHost();
    const nc = nodes.client();
    const pc = pods.client();
    // deleteNode takes a while (a network round trip): a host node event meanwhile owes another sync.
    let release: (() => void) | undefined;
    const core = { ...pc.core, ...nc.core, deleteNode: async (p: Parameters<typeof nc.core.deleteNode>[0]) => {
      if (!release) await new Promise<void>((r) => { release = r; });
      return nc.core.deleteNode(p);
    } };
    const host = { name: 'host', core, coordination: nc.coordination,
      watch: (path: string, q: never, h: never) => (path.includes('nodes') ? nc.watch(path, q, h) : pc.watch(path, q, h)) };
    // vn-b: the node of pool b, which is gone; vn-a: pool a's.
    nodes.put({ metadata: { name: 'vn-b', labels: { [MEMBER_LABEL]: 'm' }, annotations: { [GROUP_ANNOTATION]: 'pool:p=b' } } });
    const groups$ = new BehaviorSubject<NodeGroup[]>([{ kind: 'pool', label: 'p', value: 'a' }]);
    const provider = { podChanges$: NEVER, podEvents$: NEVER, resync$: NEVER, unreachable$: NEVER,
      hasSynced: () => true, waitSynced: async () => undefined, available: () => true };
    const delegates = { virtualNodeOf: () => undefined, hostKeysOf: () => [], sizeOf: () => 0, virtualNodes: () => [] };
    const cluster = { groups$, delegates, client: {}, nodeProvider: () => ({ state$: of(FakeNodeProvider.state()), ping$: NEVER }) };
    const baseProxies = proxyInformer(pc as never, 'vn', log);
    baseProxies.start();
    stops.push(() => baseProxies.stop());
    let port = 20000;
    // A port of its own per node (KubeletServer.openPort): a listen, a few ms.
    const ports = { open: async () => { await pause(5); return ++port; }, close: () => undefined };
    const vnodes = new MemberVirtualNodes({
      member: { name: 'm', nodeName: 'vn', nodes: { mode: 'pool', label: 'p' } } as never,
      cluster: cluster as never, provider: provider as never, host: host as never,
      node: { memberName: 'm', labels: {}, taints: [], nodeIP: '10.0.0.1', kubeletPort: 10250 },
      baseProxies, podSyncWorkers: 1, watchSilenceMs: 60_000, recheckMs: 3_600_000, ports,
    }, log);
    stops.push(() => vnodes.stop());
    vnodes.start();
    vnodes.startPods();
    await eventually('the delete of the retired node under way', () => release !== undefined, 5000);
    // Another node of the member changes meanwhile (vn-a's status written, say): a sync is owed after this one.
    nodes.put({ ...nodes.nodes.get('vn-a')!, metadata: { ...nodes.nodes.get('vn-a')!.metadata, labels: { [MEMBER_LABEL]: 'm', x: '1' } } });
    // The change is coalesced (200 ms) before the sync it owes is asked for: that window, then the delete answers.
    await pause(400);
    release!();
    await eventually('deleted', () => nodes.count('deleteNode') === 1, 5000);
    // An absence: a registration again would come within milliseconds of the delete (the owed sync runs at once);
    // two seconds bound the look.
    await pause(2000);
    const ops = nodes.writes.filter((w) => w.name === 'vn-b').map((w) => w.op);
    assert.deepEqual(ops.filter((o) => o === 'createNode'), [], `vn-b writes: ${ops.join(' ')}`);
  });

  it('a retiring node with only a DaemonSet pod bound to it (tolerating every taint) is removed', async () => {
    const nodes = new FakeNodeHost();
    const pods = new FakeHost();
    const nc = nodes.client();
    const pc = pods.client();
    const host = { name: 'host', core: { ...pc.core, ...nc.core }, coordination: nc.coordination,
      watch: (path: string, q: never, h: never) => (path.includes('nodes') ? nc.watch(path, q, h) : pc.watch(path, q, h)) };
    nodes.put({ metadata: { name: 'vn-b', labels: { [MEMBER_LABEL]: 'm' }, annotations: { [GROUP_ANNOTATION]: 'pool:p=b' } } });
    // kube-proxy, a CNI agent, a log shipper: `tolerations: [{operator: Exists}]`, so the DaemonSet controller binds one to
    // every node, virtual and retiring ones included; clusterlet leaves it Pending (DaemonSetPodNotOffloaded).
    pods.put({ metadata: { namespace: 'kube-system', name: 'kube-proxy-x', uid: 'ds-1',
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'kube-proxy', uid: 'd', controller: true }] },
    spec: { nodeName: 'vn-b', containers: [{ name: 'c', image: 'i' }], tolerations: [{ operator: 'Exists' }] },
    status: { phase: 'Pending' } });
    const groups$ = new BehaviorSubject<NodeGroup[]>([{ kind: 'pool', label: 'p', value: 'a' }]);
    const provider = { podChanges$: NEVER, podEvents$: NEVER, resync$: NEVER, unreachable$: NEVER,
      hasSynced: () => true, waitSynced: async () => undefined, available: () => true,
      listPodKeys: () => [], podCount: () => 0, getPod: () => undefined, getPodStatus: () => undefined, creating: () => false };
    const delegates = { virtualNodeOf: () => undefined, hostKeysOf: () => [], sizeOf: () => 0, virtualNodes: () => [] };
    const cluster = { groups$, delegates, client: {}, nodeProvider: () => ({ state$: of(FakeNodeProvider.state()), ping$: NEVER }) };
    const baseProxies = proxyInformer(pc as never, 'vn', log);
    baseProxies.start();
    stops.push(() => baseProxies.stop());
    const vnodes = new MemberVirtualNodes({
      member: { name: 'm', nodeName: 'vn', nodes: { mode: 'pool', label: 'p' } } as never,
      cluster: cluster as never, provider: provider as never, host: host as never,
      node: { memberName: 'm', labels: {}, taints: [], nodeIP: '10.0.0.1', kubeletPort: 10250 },
      baseProxies, podSyncWorkers: 1, watchSilenceMs: 60_000, recheckMs: 300,
    }, log);
    stops.push(() => vnodes.stop());
    vnodes.start();
    vnodes.startPods();
    await eventually('vn-b deleted: its DaemonSet pod does not hold it', () => !nodes.nodes.has('vn-b'), 5000);
  });
});
