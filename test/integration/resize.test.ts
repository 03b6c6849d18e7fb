// In-place resize of an offloaded pod: `kubectl patch pod --subresource resize` on the proxy resizes its delegate
// through the member's `resize` subresource; what the member's kubelet (KWOK's pod-resize stage, see
// test/harness/kwok/stages.yaml) reports comes back onto the proxy; a resize the member refuses shows on the proxy
// as a kubelet shows one it cannot do.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod, V1ResourceRequirements } from '@kubernetes/client-node';
import { harness, namespaces, withSuiteClusterlet } from '../support/env.ts';
import { kubectl } from '../support/kubectl.ts';
import { waitUntil } from '../support/wait.ts';
import { condition, eventSpec, podSpec, podsSpec } from '../support/objects.ts';
import type { ClusterClient } from '../../src/kube/client.ts';

const NODE = 'clusterlet-member';

/** Burstable (requests below limits), whatever the cpu: a resize may not change the QoS class. */
const resources = (cpu: string, cpuLimit: string): V1ResourceRequirements =>
  ({ requests: { cpu, memory: '64Mi' }, limits: { cpu: cpuLimit, memory: '128Mi' } });

function offloaded(name: string, namespace: string): V1Pod {
  return podSpec(name, { namespace, tolerate: true, nodeSelector: { 'kubernetes.io/hostname': NODE }, resources: resources('100m', '200m') });
}

/** `kubectl patch pod --subresource resize` on the host, as a user (or a VPA) resizes a pod in place. */
async function resize(ns: string, name: string, cpu: string, cpuLimit: string): Promise<void> {
  const patch = { spec: { containers: [{ name: 'main', resources: { requests: { cpu }, limits: { cpu: cpuLimit } } }] } };
  await kubectl(harness().host, 'patch', 'pod', name, '-n', ns, '--subresource', 'resize', '--type', 'strategic', '-p', JSON.stringify(patch));
}

const main = (p: V1Pod | undefined) => p?.status?.containerStatuses?.find((c) => c.name === 'main');

describe('in-place resize', () => {
  let host: ClusterClient;
  let member: ClusterClient;
  withSuiteClusterlet((c) => ({ host, member } = c));

  /** The proxy `name`, once Running with its container's resources shown (the API resizes no pod without them). */
  async function runningProxy(ns: string, name: string): Promise<void> {
    await host.core.createNamespacedPod({ namespace: ns, body: offloaded(name, ns) });
    await waitUntil(host, podsSpec(host, ns), (ps) => ps.some((p) => p.metadata!.name === name && p.status?.phase === 'Running'
      && main(p)?.resources?.requests?.cpu === '100m'), 60_000, `proxy ${name} Running, its resources shown`);
  }

  it('a resize of the proxy resizes its delegate; the proxy shows the resources the member allocated', async (t) => {
    const ns = await namespaces(t, 'resize', [host]);
    await runningProxy(ns, 'web');
    await resize(ns, 'web', '300m', '500m');

    const [d] = await waitUntil(member, podsSpec(member, ns), (ps) => main(ps[0])?.allocatedResources?.cpu === '300m',
      30_000, 'the delegate resized and its new resources allocated');
    assert.deepEqual(d.spec!.containers[0].resources, resources('300m', '500m'), 'cpu changed, memory as it was');
    assert.ok((d.metadata!.generation ?? 1) > 1, 'through the resize subresource: a new generation, the same pod');

    const [p] = await waitUntil(host, podsSpec(host, ns), (ps) => main(ps[0])?.allocatedResources?.cpu === '300m',
      30_000, 'the proxy shows the new allocation');
    assert.deepEqual(main(p)!.resources, resources('300m', '500m'), 'what the member kubelet actuated');
    assert.equal(p.metadata!.uid, d.metadata!.labels!['clusterlet.io/proxy-uid'], 'the same proxy and delegate: nothing recreated');
    assert.equal(condition(p, 'PodResizePending'), undefined);
    assert.equal(p.status!.phase, 'Running');
  });

  it('a resize beyond every member node is refused by the member: PodResizePending/Infeasible and a Warning on the proxy', async (t) => {
    const ns = await namespaces(t, 'resize-big', [host]);
    await runningProxy(ns, 'big');
    // 33 CPUs: more than the largest member node has (32), so the member's API server refuses it (PodResizeValidator
    // admission), but less than the virtual node's allocatable (all member nodes together), so the host accepts it.
    // No kubelet sees it: clusterlet, the proxy's kubelet, shows it as a kubelet shows a resize it cannot do.
    await resize(ns, 'big', '33', '33');

    const [p] = await waitUntil(host, podsSpec(host, ns), (ps) => condition(ps[0], 'PodResizePending')?.reason === 'Infeasible',
      30_000, 'PodResizePending/Infeasible on the proxy');
    const pending = condition(p, 'PodResizePending')!;
    assert.equal(pending.status, 'True');
    assert.match(pending.message ?? '', /member member refused the resize: .*node didn't have enough allocatable resources: cpu/);
    assert.equal(main(p)?.resources?.requests?.cpu, '100m', 'the proxy shows the resources the pod has');
    const events = await waitUntil(host, eventSpec(host, ns),
      (evs) => evs.some((e) => e.involvedObject?.name === 'big' && e.reason === 'ResizeInfeasible'), 30_000, 'a ResizeInfeasible event');
    assert.equal(events.find((e) => e.reason === 'ResizeInfeasible')!.type, 'Warning');
    const [d] = await member.core.listNamespacedPod({ namespace: ns }).then((l) => l.items);
    assert.deepEqual(d.spec!.containers[0].resources, resources('100m', '200m'), 'the delegate keeps its resources');

    // Resized back to what it has: nothing is pending any more.
    await resize(ns, 'big', '100m', '200m');
    await waitUntil(host, podsSpec(host, ns), (ps) => ps.length === 1 && condition(ps[0], 'PodResizePending') === undefined,
      30_000, 'PodResizePending gone from the proxy');
  });
});
