// One virtual node per member, with capacity aggregated live.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  client, clusterletArgs, clusterletKubeconfig, harness, namespaces, startClusterlet, type ClusterletProcess,
} from '../support/env.ts';
import { waitUntil } from '../support/wait.ts';
import { condition, isReady, offloadedPod, podSpec, podsSpec, waitNode } from '../support/objects.ts';
import { kubectl } from '../support/kubectl.ts';
import { metricSeries } from '../support/metrics.ts';
import { pollUntil } from '../harness/net.ts';
import { parseQuantity } from '../../src/forge/quantity.ts';
import { PATCH, type ClusterClient } from '../../src/kube/client.ts';
import type { V1Node, V1Pod } from '@kubernetes/client-node';

const merge = { contentType: PATCH.merge };
const same = (a: string | undefined, b: string): boolean => a !== undefined && parseQuantity(a).nanos === parseQuantity(b).nanos;

describe('virtual node (one member)', () => {
  let cl: ClusterletProcess;
  let host: ClusterClient;
  let member: ClusterClient;
  const node = 'clusterlet-member';

  before(() => {
    host = client(harness().host);
    member = client(harness().member);
    cl = startClusterlet(clusterletArgs(harness().member));
  });
  after(async () => {
    // Whatever a test changed in the member is put back.
    for (const n of harness().member.opts.nodes) {
      await member.core.patchNode({ name: n.name, body: { spec: { unschedulable: null } } }, merge);
    }
    await cl.stop();
  });

  it('appears Ready with the summed capacity of the KWOK nodes, the labels and the taint', async () => {
    // An earlier test file's clusterlet may have left the node registered with its own kubelet port:
    // wait for this process's status (written in one patch, after labels and taints).
    const n = await waitNode(host, node, (x) => isReady(x) && x.status?.daemonEndpoints?.kubeletEndpoint?.Port === 10250,
      'Ready, with the status of this clusterlet');
    // Member nodes: 16+32+8 cpu, 64+128+32 Gi, 3×4000 pods, 100+200+100 Gi disk, 4 GPUs.
    const cap = n.status!.capacity!;
    assert.ok(same(cap.cpu, '56'), `cpu ${cap.cpu}`);
    assert.ok(same(cap.memory, '224Gi'), `memory ${cap.memory}`);
    assert.ok(same(cap.pods, '12000'), `pods ${cap.pods}`);
    assert.ok(same(cap['ephemeral-storage'], '400Gi'), `ephemeral-storage ${cap['ephemeral-storage']}`);
    assert.ok(same(cap['nvidia.com/gpu'], '4'), `gpu ${cap['nvidia.com/gpu']}`);
    const l = n.metadata!.labels!;
    assert.equal(l.type, 'virtual-kubelet');
    assert.equal(l['kubernetes.io/role'], 'agent');
    assert.equal(l['kubernetes.io/hostname'], node);
    assert.equal(l['kubernetes.io/os'], 'linux');
    assert.equal(l['kubernetes.io/arch'], 'amd64');
    assert.equal(l['clusterlet.io/member'], 'member');
    assert.equal(l['node.kubernetes.io/exclude-from-external-load-balancers'], 'true');
    assert.equal(l['topology.kubernetes.io/region'], 'local-1', 'region shared by all member nodes');
    assert.equal(l['topology.kubernetes.io/zone'], undefined, 'zones differ, so none is copied');
    assert.deepEqual(n.spec!.taints!.filter((t) => t.key === 'virtual-kubelet.io/provider')
      .map((t) => ({ key: t.key, value: t.value, effect: t.effect })),
    [{ key: 'virtual-kubelet.io/provider', value: 'clusterlet', effect: 'NoSchedule' }]);
    assert.match(n.status!.nodeInfo!.kubeletVersion, /clusterlet/);
    assert.equal(n.status!.daemonEndpoints!.kubeletEndpoint!.Port, 10250);
    assert.deepEqual(n.status!.addresses!.map((a) => a.type).sort(), ['Hostname', 'InternalIP']);
    for (const type of ['MemoryPressure', 'DiskPressure', 'PIDPressure', 'NetworkUnavailable']) {
      assert.equal(condition(n, type)?.status, 'False', type);
    }
    const [lease] = await waitUntil(host, {
      path: '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases', model: 'V1Lease', resource: 'leases',
      fieldSelector: `metadata.name=${node}`,
      list: (p) => host.coordination.listNamespacedLease({ namespace: 'kube-node-lease', ...p }),
    // Renewed by this clusterlet (an earlier one's lease may still be there, and old, when it starts).
    }, (ls) => ls.length === 1 && !!ls[0]!.spec?.renewTime && Date.now() - new Date(ls[0]!.spec.renewTime).getTime() < 30_000,
    30_000, 'node lease renewed within 30 s');
    assert.equal(lease.spec?.leaseDurationSeconds, 40);
    assert.equal(lease.spec?.holderIdentity, node);
    const table = await kubectl(harness().host, 'get', 'nodes', node, '--no-headers');
    assert.match(table, new RegExp(`^${node}\\s+Ready\\s+agent`));
  });

  it('the host API server queues its heartbeats in node-high and the rest of its requests in system (manifests/host/flowcontrol.yaml)', async () => {
    // What kube-apiserver counts per FlowSchema and priority level it dispatched; clusterlet runs under the manifests'
    // ServiceAccount, whose requests would otherwise go to service-accounts / workload-low.
    const dispatched = async (): Promise<Map<string, number>> => metricSeries(await host.request<string>('GET', '/metrics'),
      'apiserver_flowcontrol_dispatched_requests_total', ['flow_schema', 'priority_level']);
    let seen = new Map<string, number>();
    // Its node's lease is renewed every 10 s, its status written at start; a bounded wait for both counters.
    await pollUntil('clusterlet\'s requests dispatched in node-high and system', async () => {
      seen = await dispatched();
      return (seen.get('clusterlet-heartbeats/node-high') ?? 0) > 0 && (seen.get('clusterlet/system') ?? 0) > 0 ? true : undefined;
    }, 30_000, 500).catch((err: unknown) => {
      throw new Error(`${String(err)}; dispatched: ${[...seen].filter(([k]) => /clusterlet|service-accounts/.test(k)).map(([k, v]) => `${k} ${v}`).join(', ')}`);
    });
  });

  it('cordoning a member node lowers capacity; uncordoning restores it', async () => {
    await member.core.patchNode({ name: 'member-b', body: { spec: { unschedulable: true } } }, merge);
    await waitNode(host, node, (n) => same(n.status?.capacity?.cpu, '24') && same(n.status?.capacity?.memory, '96Gi'), 'cpu 24 after cordon');
    await member.core.patchNode({ name: 'member-b', body: { spec: { unschedulable: null } } }, merge);
    await waitNode(host, node, (n) => same(n.status?.capacity?.cpu, '56'), 'cpu 56 after uncordon');
  });

  it('a taint every member node carries is on the virtual node; once one node drops it, it goes, others\' taints stay', async () => {
    const usable = (await member.core.listNode()).items.filter((n) => !n.spec?.unschedulable && n.metadata?.labels?.['clusterlet.io/member'] === undefined);
    const names = usable.map((n) => n.metadata!.name!);
    const dedicated = { key: 'example.com/dedicated', value: 'batch', effect: 'NoSchedule' };
    const setTaints = (name: string, extra: typeof dedicated[]) => {
      const current = usable.find((n) => n.metadata?.name === name)?.spec?.taints ?? [];
      return member.core.patchNode({ name, body: { spec: { taints: [...current, ...extra] } } }, merge);
    };
    // Someone else's taint on the virtual node is not clusterlet's to remove.
    await host.core.patchNode({ name: node, body: { spec: { taints: [...(await host.core.readNode({ name: node })).spec?.taints ?? [],
      { key: 'example.com/maintenance', effect: 'NoSchedule' }] } } }, merge);
    try {
      for (const n of names) await setTaints(n, [dedicated]);
      await waitNode(host, node, (n) => n.spec?.taints?.some((t) => t.key === dedicated.key && t.value === 'batch') === true,
        'the shared member taint on the virtual node', 30_000);
      await setTaints(names[0], []);
      const after = await waitNode(host, node, (n) => !n.spec?.taints?.some((t) => t.key === dedicated.key), 'the taint removed', 30_000);
      assert.ok(after.spec?.taints?.some((t) => t.key === 'example.com/maintenance'), 'the other taint stays');
      assert.ok(after.spec?.taints?.some((t) => t.key === 'virtual-kubelet.io/provider'));
    } finally {
      for (const n of names) await setTaints(n, []);
      const v = await host.core.readNode({ name: node });
      await host.core.patchNode({ name: node, body: { spec: { taints: (v.spec?.taints ?? []).filter((t) => t.key !== 'example.com/maintenance') } } }, merge);
    }
  });

  it('a member pod with requests lowers allocatable by exactly its requests, and gives it back when it completes', async (t) => {
    const ns = await namespaces(t, 'cap', [member]);
    const before = (await waitNode(host, node, isReady, 'Ready')).status!.allocatable!;
    // It runs until it is told to complete (below), so the drop is there to be seen.
    await member.core.createNamespacedPod({ namespace: ns, body: podSpec('worker', {
      namespace: ns, restartPolicy: 'Never',
      resources: { requests: { cpu: '1500m', memory: '1Gi', 'nvidia.com/gpu': '1' }, limits: { 'nvidia.com/gpu': '1' } },
    }) });
    const minus = (k: string, q: string): bigint => parseQuantity(before[k]).nanos - parseQuantity(q).nanos;
    await waitNode(host, node, (n) => {
      const a = n.status!.allocatable!;
      return parseQuantity(a.cpu).nanos === minus('cpu', '1500m') && parseQuantity(a.memory).nanos === minus('memory', '1Gi')
        && parseQuantity(a['nvidia.com/gpu']).nanos === minus('nvidia.com/gpu', '1') && parseQuantity(a.pods).nanos === minus('pods', '1');
    }, 'allocatable minus the pod', 30_000);
    // KWOK completes a pod so annotated (test/harness/kwok/stages.yaml).
    await member.core.patchNamespacedPod({ namespace: ns, name: 'worker',
      body: { metadata: { annotations: { 'sim.clusterlet.io/outcome': 'succeeded' } } } }, merge);
    await waitUntil(member, podsSpec(member, ns), (ps) => ps[0]?.status?.phase === 'Succeeded', 30_000, 'worker Succeeded');
    await waitNode(host, node, (n) => same(n.status!.allocatable!.cpu, before.cpu) && same(n.status!.allocatable!.memory, before.memory),
      'allocatable back after completion');
  });

  it('goes NotReady with the reason when the member API server stops, and Ready when it is back', async () => {
    const h = harness();
    await h.member.stopApiServer();
    try {
      const n = await waitNode(host, node, (x) => condition(x, 'Ready')?.status === 'False', 'NotReady', 60_000);
      assert.equal(condition(n, 'Ready')?.reason, 'MemberUnreachable');
      assert.match(condition(n, 'Ready')?.message ?? '', /member cluster member does not answer/);
    } finally {
      await h.member.startApiServer();
    }
    await waitNode(host, node, isReady, 'Ready again', 60_000);
  });

  it('clusterlet killed and restarted while its member is down: NotReady, but no version of the node shows less than the member\'s allocatable; its pods untouched', async (t) => {
    // Three pods running before: their proxies stay Running and their delegates are neither deleted nor made again.
    const ns = await namespaces(t, 'restart-down', [host, member]);
    for (const n of ['a', 'b', 'c']) await host.core.createNamespacedPod({ namespace: ns, body: offloadedPod(n, ns) });
    const allRunning = (ps: V1Pod[]): boolean => ps.length === 3 && ps.every((p) => p.status?.phase === 'Running' && isReady(p));
    await waitUntil(host, podsSpec(host, ns), allRunning, 60_000, 'three proxies Running and Ready');
    const delegates = await waitUntil(member, podsSpec(member, ns), allRunning, 60_000, 'three delegates Running');
    const proxyVersions: string[] = [];
    const watchingPods = new AbortController();
    const podWatch = host.watch(`/api/v1/namespaces/${ns}/pods`, {}, {
      onEvent: (type, o) => {
        const p = o as V1Pod;
        if (type !== 'ADDED' && (p.status?.phase !== 'Running' || p.metadata?.deletionTimestamp || type === 'DELETED')) {
          proxyVersions.push(`${type} ${p.metadata?.name} ${p.status?.phase}${p.metadata?.deletionTimestamp ? ' deleting' : ''}`);
        }
      },
      signal: watchingPods.signal, idleMs: 120_000,
    });
    t.after(async () => { watchingPods.abort(); await podWatch.catch(() => undefined); });
    const before = await waitNode(host, node, (n) => isReady(n) && n.status?.allocatable?.cpu !== undefined, 'Ready, with allocatable');
    const { cpu, memory } = before.status!.allocatable!;
    const seen: { rv: string; ready?: string; reason?: string; allocatable: Record<string, string> | undefined }[] = [];
    // Waits on this watch's own events (another watch of the node could see a version before this one has it).
    let changed = (): void => undefined;
    const until = (pred: () => boolean, what: string): Promise<void> => new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out after 60 s waiting for ${what}; seen: ${JSON.stringify(seen)}`)), 60_000);
      changed = () => { if (pred()) { clearTimeout(timer); resolve(); } };
      changed();
    });
    const watching = new AbortController();
    const watch = host.watch('/api/v1/nodes', { fieldSelector: `metadata.name=${node}`, resourceVersion: before.metadata!.resourceVersion }, {
      onEvent: (_type, o) => {
        const n = o as V1Node;
        const ready = condition(n, 'Ready');
        seen.push({ rv: n.metadata!.resourceVersion!, ready: ready?.status, reason: ready?.reason, allocatable: n.status?.allocatable });
        changed();
      },
      signal: watching.signal, idleMs: 120_000,
    });
    try {
      await cl.kill();
      const h = harness();
      await h.member.stopApiServer();
      const killed = seen.length;
      try {
        // The new process starts without its member: it can count nothing there, and says so.
        cl = startClusterlet(clusterletArgs(h.member));
        await until(() => seen.slice(killed).some((v) => v.reason === 'MemberUnreachable'), 'NotReady: MemberUnreachable');
      } finally {
        await h.member.startApiServer();
      }
      const back = seen.length;
      await until(() => seen.slice(back).some((v) => v.ready === 'True'), 'Ready again once the member answers');
      t.diagnostic(`versions after the kill: ${seen.slice(killed).map((v) => `${v.reason} cpu ${v.allocatable?.cpu}`).join(', ')}`);
    } finally {
      watching.abort();
      await watch.catch(() => undefined);
    }
    const short = seen.filter((v) => !same(v.allocatable?.cpu, cpu!) || !same(v.allocatable?.memory, memory!));
    assert.deepEqual(short, [], `every version of the node after ${before.metadata!.resourceVersion} keeps cpu ${cpu} and memory ${memory} allocatable`);
    const proxies = await waitUntil(host, podsSpec(host, ns), allRunning, 60_000, 'three proxies Running and Ready again');
    assert.deepEqual(proxies.map((p) => p.status?.containerStatuses?.[0]?.restartCount), [0, 0, 0], 'no delegate taken for lost');
    const after = (await member.core.listNamespacedPod({ namespace: ns })).items;
    assert.deepEqual(after.map((d) => d.metadata?.uid).sort(), delegates.map((d) => d.metadata?.uid).sort(), 'the same delegates');
    assert.deepEqual(proxyVersions, [], 'no proxy left Running, none deleted');
  });

  it('a node deleted by someone is recreated', async () => {
    await host.core.deleteNode({ name: node });
    await waitNode(host, node, (n) => isReady(n) && same(n.status?.capacity?.cpu, '56'), 'recreated and Ready', 30_000);
  });
});

describe('virtual nodes (two members in one process)', () => {
  it('a member that does not answer at start is NotReady with the reason, the other Ready; each follows its own member', async () => {
    const h = harness();
    const host = client(h.host);
    const second = h.extraMembers.find((m) => m.name === 'member2') ?? await h.addMember('member2', '10.30');
    // The second member gets clusterlet's member identity too, applied while its API server still answers.
    const [hostKc, memberKc, secondKc] = await Promise.all([h.host, h.member, second].map((c) => clusterletKubeconfig(c)));
    await second.stopApiServer();
    const cfg = join(h.dir, 'two-members.yaml');
    writeFileSync(cfg, `hostName: host
members:
- name: member
  kubeconfig: ${memberKc}
- name: member2
  kubeconfig: ${secondKc}
  nodeName: second-member
  labels: { example.com/tier: burst }
  taints: [{ key: example.com/dedicated, value: burst, effect: NoSchedule }]
`);
    const cl = startClusterlet(['--host-kubeconfig', hostKc, '--provider-config', cfg, '--health-port', '0',
      '--watch-silence-seconds', '30']);
    try {
      await waitNode(host, 'clusterlet-member', isReady, 'Ready');
      const down = await waitNode(host, 'second-member', (n) => condition(n, 'Ready')?.reason === 'MemberUnreachable',
        'registered NotReady');
      assert.equal(condition(down, 'Ready')?.status, 'False');
      await second.startApiServer();
      const up = await waitNode(host, 'second-member', isReady, 'Ready once it answers');
      assert.equal(up.metadata!.labels!['example.com/tier'], 'burst');
      assert.ok(up.spec!.taints!.some((t) => t.key === 'example.com/dedicated' && t.effect === 'NoSchedule'));
      await second.stopApiServer();
      await waitNode(host, 'second-member', (n) => condition(n, 'Ready')?.status === 'False', 'NotReady after stop');
      const first = await waitNode(host, 'clusterlet-member', () => true, 'present');
      assert.ok(isReady(first), 'the other member stays Ready');
    } finally {
      await second.startApiServer();
      assert.equal(await cl.stop(), 0, 'SIGTERM stops cleanly with exit code 0');
    }
    // The node stays after a stop, as a kubelet's does.
    await waitNode(host, 'second-member', () => true, 'still registered after stop', 5_000);
  });
});
