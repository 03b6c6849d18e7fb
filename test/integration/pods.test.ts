// Proxy pods become delegate pods; statuses and events come back; deletion is graceful end to end.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { AppsV1Api, CoreV1Api, PatchStrategy, setHeaderOptions, type V1Pod } from '@kubernetes/client-node';
import {
  client, clusterID, clusterletArgs, deleteNamespaceAndWait, harness, namespaces, startClusterlet, withSuiteClusterlet,
} from '../support/env.ts';
import { deletionGraces, waitUntil } from '../support/wait.ts';
import { condition, deployment, eventSpec, isReady, podSpec, podsSpec, waitVirtualNodeSchedulable } from '../support/objects.ts';
import { fakeNode } from '../harness/cluster.ts';
import { PATCH, type ClusterClient } from '../../src/kube/client.ts';

const NODE = 'clusterlet-member';
const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);


function offloaded(name: string, namespace: string, extra: Partial<Parameters<typeof podSpec>[1]> = {}): V1Pod {
  return podSpec(name, { namespace, tolerate: true, nodeSelector: { 'kubernetes.io/hostname': NODE }, ...extra });
}

describe('pod offloading', () => {
  let host: ClusterClient;
  let member: ClusterClient;
  withSuiteClusterlet((c) => ({ host, member } = c));

  it('a Deployment tolerating the virtual node runs 3/3 through delegates; pods without the toleration stay home', async (t) => {
    const ns = await namespaces(t, 'deploy', [host]);
    const apps = harness().host.kubeConfig().makeApiClient(AppsV1Api);
    await apps.createNamespacedDeployment({ namespace: ns, body: deployment('web', ns, 3, { virtualNode: NODE }) });
    await apps.createNamespacedDeployment({ namespace: ns, body: deployment('local', ns, 2) });
    const proxies = await waitUntil(host, podsSpec(host, ns, 'app=web'),
      (ps) => ps.length === 3 && ps.every((p) => isReady(p) && p.status?.phase === 'Running'), 60_000, '3 proxies Ready');
    const delegates = await waitUntil(member, podsSpec(member, ns, 'app=web'),
      (ps) => ps.length === 3 && ps.every((p) => p.status?.phase === 'Running'), 30_000, '3 delegates Running');
    const memberNodes = new Set(harness().member.opts.nodes.map((n) => n.name));
    for (const d of delegates) {
      assert.ok(memberNodes.has(d.spec!.nodeName!), 'delegate on a member KWOK node');
      const proxy = proxies.find((p) => p.metadata!.name === d.metadata!.name)!;
      assert.ok(proxy, 'same name as its proxy');
      assert.equal(d.metadata!.labels!['clusterlet.io/proxy-uid'], proxy.metadata!.uid);
      assert.equal(d.metadata!.labels!['clusterlet.io/origin'], await clusterID(host), 'the host cluster ID');
      assert.equal(d.metadata!.labels!.app, 'web', 'user labels unchanged');
      assert.equal(d.metadata!.annotations!['clusterlet.io/proxy-namespace'], ns);
      assert.equal(proxy.status!.podIP, d.status!.podIP, 'podIP mirrored');
      assert.equal(proxy.status!.hostIP, '127.0.0.1', 'hostIP is the virtual node address');
      assert.ok(!(d.spec!.tolerations ?? []).some((x) => x.key === 'virtual-kubelet.io/provider'), 'virtual-node toleration dropped');
      assert.equal(d.spec!.nodeSelector?.['kubernetes.io/hostname'], undefined, 'virtual-node selector dropped');
    }
    // The writes are clusterlet's by name: kube-apiserver names a write's field manager after its User-Agent
    // ("unknown" without one). Read with client-node, which keeps managedFields.
    const managers = async (c: CoreV1Api, name: string): Promise<string[]> =>
      ((await c.readNamespacedPod({ namespace: ns, name })).metadata!.managedFields ?? [])
        .map((m) => `${m.manager}:${m.operation}${m.subresource ? `/${m.subresource}` : ''}`);
    const name = delegates[0]!.metadata!.name!;
    assert.ok((await managers(harness().member.kubeConfig().makeApiClient(CoreV1Api), name)).includes('clusterlet:Update'),
      'the delegate created by clusterlet');
    assert.ok((await managers(harness().host.kubeConfig().makeApiClient(CoreV1Api), name)).includes('clusterlet:Update/status'),
      'the proxy status written by clusterlet');
    const local = await waitUntil(host, podsSpec(host, ns, 'app=local'),
      (ps) => ps.length === 2 && ps.every((p) => p.status?.phase === 'Running'), 60_000, 'local pods Running');
    for (const p of local) assert.match(p.spec!.nodeName!, /^host-local-/);

    // Scale down: the removed proxies take their delegates with them.
    await apps.patchNamespacedDeploymentScale({ namespace: ns, name: 'web', body: { spec: { replicas: 1 } } }, merge);
    await waitUntil(member, podsSpec(member, ns, 'app=web'), (ps) => ps.length === 1, 60_000, '1 delegate after scale-down');
    await waitUntil(host, podsSpec(host, ns, 'app=web'), (ps) => ps.length === 1, 60_000, '1 proxy after scale-down');

    // Namespace delete: nothing left in the member.
    await deleteNamespaceAndWait(host, ns, 90_000);
    await waitUntil(member, podsSpec(member, ns), (ps) => ps.length === 0, 30_000, 'no delegate after namespace delete');
  });

  it('status fidelity: a completing pod ends Succeeded, a failing one Failed with the reason', async (t) => {
    const ns = await namespaces(t, 'status', [host]);
    await host.core.createNamespacedPod({ namespace: ns, body: offloaded('ok', ns, { restartPolicy: 'Never', annotations: { 'sim.clusterlet.io/outcome': 'succeeded' } }) });
    await host.core.createNamespacedPod({ namespace: ns, body: offloaded('bad', ns, { restartPolicy: 'Never', annotations: { 'sim.clusterlet.io/outcome': 'failed' } }) });
    const pods = await waitUntil(host, podsSpec(host, ns), (ps) => ps.length === 2
      && ps.every((p) => p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed'), 60_000, 'both finished');
    const ok = pods.find((p) => p.metadata!.name === 'ok')!;
    const bad = pods.find((p) => p.metadata!.name === 'bad')!;
    assert.equal(ok.status!.phase, 'Succeeded');
    assert.equal(ok.status!.containerStatuses![0].state!.terminated!.reason, 'Completed');
    assert.equal(bad.status!.phase, 'Failed');
    assert.equal(bad.status!.containerStatuses![0].state!.terminated!.exitCode, 1);
    assert.equal(bad.status!.containerStatuses![0].state!.terminated!.reason, 'Error');
  });

  it('events: a delegate the member cannot schedule shows FailedScheduling on the proxy', async (t) => {
    const ns = await namespaces(t, 'events', [host]);
    // It fits a member node by its requests, but asks for a pod that no member node runs (pod affinity, which the
    // fit check leaves to the member's scheduler).
    const greedy = offloaded('greedy', ns);
    greedy.spec!.affinity = { podAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [
      { labelSelector: { matchLabels: { app: 'nowhere' } }, topologyKey: 'kubernetes.io/hostname' }] } };
    await host.core.createNamespacedPod({ namespace: ns, body: greedy });
    await waitUntil(host, eventSpec(host, ns),
      (evs) => evs.some((e) => e.involvedObject?.name === 'greedy' && e.reason === 'FailedScheduling'), 60_000, 'FailedScheduling event');
  });

  it('a pod no member node has room for is not offloaded (NoMemberNodeFits, the largest free slot), and is once a node has room', async (t) => {
    const ns = await namespaces(t, 'fit', [host]);
    // The virtual node advertises no example.com/gpu (no member node has it): bound directly, as a user binding to it would.
    await host.core.createNamespacedPod({ namespace: ns, body: podSpec('big', {
      namespace: ns, tolerate: true, nodeName: NODE,
      resources: { requests: { cpu: '1', 'example.com/gpu': '2' }, limits: { 'example.com/gpu': '2' } },
    }) });
    const [proxy] = await waitUntil(host, podsSpec(host, ns), (ps) => condition(ps[0], 'clusterlet.io/Offloaded')?.reason === 'NoMemberNodeFits',
      30_000, 'Offloaded=False NoMemberNodeFits');
    const offloadedCond = condition(proxy, 'clusterlet.io/Offloaded');
    assert.equal(offloadedCond?.status, 'False');
    assert.match(offloadedCond?.message ?? '', /no Ready member node of member member has room for its requests \(cpu 1, example\.com\/gpu 2\); the most one of the \d+ it may run on has free is cpu \d+\S*, example\.com\/gpu 0\. It is offloaded once one has room/);
    await waitUntil(host, eventSpec(host, ns), (evs) => evs.some((e) => e.involvedObject?.name === 'big' && e.type === 'Warning'
      && e.reason === 'NoMemberNodeFits'), 30_000, 'a NoMemberNodeFits Warning');
    assert.deepEqual((await member.core.listPodForAllNamespaces({ labelSelector: `clusterlet.io/proxy-uid=${proxy.metadata?.uid}` })).items, [],
      'no delegate Pending in the member');

    // A member node with room comes: the pod is offloaded within seconds, onto it.
    const gpuNode = `gpu-${ns}`.slice(0, 63);
    await member.core.createNode({ body: fakeNode({ name: gpuNode, capacity: { cpu: '8', memory: '32Gi', pods: '110', 'example.com/gpu': '4' } }) });
    t.after(() => member.core.deleteNode({ name: gpuNode }).then(() => undefined, () => undefined));
    const [d] = await waitUntil(member, podsSpec(member, ns), (ps) => ps.length === 1 && ps[0].spec?.nodeName === gpuNode, 30_000,
      'the delegate bound to the new node');
    assert.equal(d.metadata?.name, 'big');
    await waitUntil(host, podsSpec(host, ns), (ps) => condition(ps[0], 'clusterlet.io/Offloaded')?.status === 'True', 30_000, 'Offloaded=True');
  });

  it('graceful delete waits for the delegate; force delete still removes it', async (t) => {
    const ns = await namespaces(t, 'del', [host]);
    // The pods' own grace period (60 s) is not the one of the delete (30 s): the delegate must get the latter.
    await host.core.createNamespacedPod({ namespace: ns, body: offloaded('graceful', ns, { terminationGracePeriodSeconds: 60 }) });
    await host.core.createNamespacedPod({ namespace: ns, body: offloaded('forced', ns, { terminationGracePeriodSeconds: 60 }) });
    await waitUntil(member, podsSpec(member, ns), (ps) => ps.length === 2 && ps.every((p) => p.status?.phase === 'Running'), 60_000, 'delegates Running');
    // KWOK removes a terminating pod at once: the watch sees the version the delete wrote all the same.
    const graces = await deletionGraces(member, podsSpec(member, ns), ['graceful', 'forced'], async () => {
      await host.core.deleteNamespacedPod({ namespace: ns, name: 'graceful', gracePeriodSeconds: 30 });
      await host.core.deleteNamespacedPod({ namespace: ns, name: 'forced', gracePeriodSeconds: 0 });
    }, 60_000);
    t.diagnostic(`delegates' deletion grace periods seen: ${JSON.stringify(Object.fromEntries(graces))}`);
    assert.equal(graces.get('graceful')![0], 30, 'the graceful delegate was deleted with the proxy\'s grace period');
    // The forced delegate is gone too (deletionGraces waited for it). Its grace period is 0 when clusterlet saw
    // the proxy terminating, the pod's own (60 s) when it found the proxy already gone: not asserted.
    await waitUntil(host, podsSpec(host, ns), (ps) => ps.length === 0, 60_000, 'both proxies gone');
  });

  it('a delegate deleted by hand is recreated (restartPolicy Always) or reported Failed (Never)', async (t) => {
    const ns = await namespaces(t, 'lost', [host]);
    await host.core.createNamespacedPod({ namespace: ns, body: offloaded('always', ns) });
    await host.core.createNamespacedPod({ namespace: ns, body: offloaded('never', ns, { restartPolicy: 'Never' }) });
    const first = await waitUntil(member, podsSpec(member, ns), (ps) => ps.length === 2 && ps.every((p) => p.status?.phase === 'Running'), 60_000, 'delegates Running');
    await waitUntil(host, podsSpec(host, ns), (ps) => ps.length === 2 && ps.every((p) => p.status?.phase === 'Running'), 60_000, 'proxies Running');
    for (const d of first) await member.core.deleteNamespacedPod({ namespace: ns, name: d.metadata!.name!, gracePeriodSeconds: 0 });
    const old = first.find((d) => d.metadata!.name === 'always')!;
    const renewed = (await waitUntil(member, podsSpec(member, ns), (ps) => ps.some((p) => p.metadata!.name === 'always'
      && p.metadata!.uid !== old.metadata!.uid && p.status?.phase === 'Running' && p.status.podIP), 60_000, 'a new delegate for "always"'))
      .find((p) => p.metadata!.name === 'always')!;
    // The proxy shows the new delegate's IP, alone: merged next to the old one, the API would refuse the status.
    // KWOK may give the new delegate its predecessor's IP; the IP a kubelet would report for a new sandbox is
    // then set here (KWOK leaves the status of a Running pod that has an IP alone).
    let ip = renewed.status!.podIP!;
    if (ip === old.status!.podIP) {
      ip = '10.20.127.254';
      await member.core.patchNamespacedPodStatus({ namespace: ns, name: 'always',
        body: { status: { podIP: ip, podIPs: [{ ip }] } } }, { contentType: PATCH.merge });
    }
    assert.notEqual(ip, old.status!.podIP);
    await waitUntil(host, { ...podsSpec(host, ns), fieldSelector: 'metadata.name=always' }, (ps) => ps[0]?.status?.podIP === ip
      && ps[0]?.status?.podIPs?.length === 1 && ps[0]?.status?.podIPs[0]?.ip === ip, 60_000, '"always" shows its new delegate\'s IP');
    const [never] = await waitUntil(host, { ...podsSpec(host, ns), fieldSelector: 'metadata.name=never' },
      (ps) => ps[0]?.status?.phase === 'Failed', 60_000, '"never" Failed');
    assert.equal(never.status!.reason, 'DelegateLost');
  });

  it('a pod the member quota rejects shows a condition and a Warning event, then runs once the quota allows', async (t) => {
    const ns = await namespaces(t, 'quota', [host, member]);
    await member.core.createNamespacedResourceQuota({ namespace: ns, body: { metadata: { name: 'tight' }, spec: { hard: { pods: '0' } } } });
    await host.core.createNamespacedPod({ namespace: ns, body: offloaded('capped', ns) });
    const [p] = await waitUntil(host, podsSpec(host, ns), (ps) => condition(ps[0], 'clusterlet.io/Offloaded')?.status === 'False', 60_000, 'Offloaded=False');
    assert.match(condition(p, 'clusterlet.io/Offloaded')!.message!, /exceeded quota/);
    await waitUntil(host, {
      path: `/api/v1/namespaces/${ns}/events`, model: 'CoreV1Event', resource: 'events',
      list: (q) => host.core.listNamespacedEvent({ namespace: ns, ...q }),
    }, (evs) => evs.some((e) => e.type === 'Warning' && e.involvedObject?.name === 'capped' && /exceeded quota/.test(e.message ?? '')), 30_000, 'Warning event');
    await member.core.patchNamespacedResourceQuota({ namespace: ns, name: 'tight', body: { spec: { hard: { pods: '10' } } } }, { contentType: PATCH.merge });
    await waitUntil(host, podsSpec(host, ns), (ps) => ps[0]?.status?.phase === 'Running'
      && condition(ps[0], 'clusterlet.io/Offloaded')?.status === 'True', 120_000, 'Running after the quota is raised');
  });

  it('labels, annotations and a container image changed on a running proxy reach its delegate', async (t) => {
    const ns = await namespaces(t, 'update', [host]);
    await host.core.createNamespacedPod({ namespace: ns, body: offloaded('mut', ns, { labels: { tier: 'a' } }) });
    await waitUntil(member, podsSpec(member, ns), (ps) => ps[0]?.status?.phase === 'Running', 60_000, 'delegate Running');
    await host.core.patchNamespacedPod({ namespace: ns, name: 'mut', body: { metadata: { labels: { tier: 'b' }, annotations: { note: 'x' } } } }, { contentType: PATCH.merge });
    await waitUntil(member, podsSpec(member, ns), (ps) => ps[0]?.metadata?.labels?.tier === 'b' && ps[0]?.metadata?.annotations?.note === 'x', 30_000, 'delegate relabelled');
    await host.core.patchNamespacedPod({ namespace: ns, name: 'mut', body: { spec: { containers: [{ name: 'main', image: 'registry.example/app:2' }] } } },
      { contentType: PATCH.strategic });
    await waitUntil(member, podsSpec(member, ns), (ps) => ps[0]?.spec?.containers[0].image === 'registry.example/app:2', 30_000, 'delegate image updated');
  });

  it('DaemonSet pods are not offloaded: they stay Pending with the reason and no churn', async (t) => {
    const ns = await namespaces(t, 'ds', [host]);
    const apps = harness().host.kubeConfig().makeApiClient(AppsV1Api);
    await apps.createNamespacedDaemonSet({ namespace: ns, body: {
      metadata: { name: 'agent' },
      spec: { selector: { matchLabels: { app: 'agent' } }, template: { metadata: { labels: { app: 'agent' } }, spec: {
        tolerations: [{ operator: 'Exists' }], containers: [{ name: 'a', image: 'registry.example/agent:1' }],
      } } },
    } });
    const [p] = await waitUntil(host, { ...podsSpec(host, ns), fieldSelector: `spec.nodeName=${NODE}` },
      (ps) => condition(ps[0], 'clusterlet.io/Offloaded')?.reason === 'DaemonSetPodNotOffloaded', 60_000, 'DaemonSet pod marked');
    assert.equal(p.status!.phase, 'Pending');
    const delegates = await member.core.listNamespacedPod({ namespace: ns });
    assert.equal(delegates.items.length, 0, 'nothing created in the member');
  });
});

describe('pod offloading across a crash', () => {
  it('SIGKILL while 50 pods are created, restart: exactly 50 delegates, all Running', async (t) => {
    const host = client(harness().host);
    const member = client(harness().member);
    let cl = startClusterlet(clusterletArgs(harness().member));
    await waitVirtualNodeSchedulable(host);
    const ns = await namespaces(t, 'burst', [host]);
    const apps = harness().host.kubeConfig().makeApiClient(AppsV1Api);
    await apps.createNamespacedDeployment({ namespace: ns, body: deployment('burst', ns, 50, { virtualNode: NODE }) });
    // Kill it once the first delegates exist, while the rest are still being created.
    await waitUntil(member, podsSpec(member, ns), (ps) => ps.length >= 5, 60_000, 'first delegates');
    await cl.kill();
    const during = (await member.core.listNamespacedPod({ namespace: ns })).items.length;
    t.diagnostic(`delegates when killed: ${during}`);
    cl = startClusterlet(clusterletArgs(harness().member));
    try {
      const delegates = await waitUntil(member, podsSpec(member, ns), (ps) => ps.length >= 50
        && ps.every((p) => p.status?.phase === 'Running'), 120_000, '50 delegates Running');
      assert.equal(delegates.length, 50, 'no duplicate');
      await waitUntil(host, podsSpec(host, ns), (ps) => ps.length === 50 && ps.every((p) => isReady(p)), 60_000, '50 proxies Ready');
      assert.equal(new Set(delegates.map((d) => d.metadata!.labels!['clusterlet.io/proxy-uid'])).size, 50);
      await deleteNamespaceAndWait(host, ns, 120_000);
      await waitUntil(member, podsSpec(member, ns), (ps) => ps.length === 0, 60_000, 'no delegate left');
    } finally {
      await cl.stop();
    }
  });
});
