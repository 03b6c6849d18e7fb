// Offloaded Jobs: a Job whose pods run through delegates completes on the host, as it would on real nodes.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { BatchV1Api } from '@kubernetes/client-node';
import { harness, namespaces, withSuiteClusterlet } from '../support/env.ts';
import { waitUntil } from '../support/wait.ts';
import { condition, job, jobsSpec, podsSpec } from '../support/objects.ts';
import type { ClusterClient } from '../../src/kube/client.ts';

const NODE = 'clusterlet-member';

describe('offloaded Jobs', () => {
  let host: ClusterClient;
  let member: ClusterClient;
  withSuiteClusterlet((c) => ({ host, member } = c));

  it('a Job of 2 completions, 2 at a time, on the virtual node completes: its delegates Succeeded in the member', async (t) => {
    const ns = await namespaces(t, 'job', [host]);
    const batch = harness().host.kubeConfig().makeApiClient(BatchV1Api);
    await batch.createNamespacedJob({ namespace: ns, body: job('batch', ns, 2, 2, { virtualNode: NODE }) });

    const [done] = await waitUntil(host, jobsSpec(batch, ns), (js) => condition(js[0], 'Complete')?.status === 'True',
      90_000, 'Job Complete');
    assert.equal(done.status!.succeeded, 2);
    assert.equal(done.status!.failed ?? 0, 0);

    const proxies = (await host.core.listNamespacedPod({ namespace: ns, labelSelector: 'batch.kubernetes.io/job-name=batch' })).items;
    assert.equal(proxies.length, 2);
    for (const p of proxies) {
      assert.equal(p.spec!.nodeName, NODE, 'the Job\'s pods ran on the virtual node');
      assert.equal(p.status!.phase, 'Succeeded');
    }
    const delegates = await waitUntil(member, podsSpec(member, ns, 'batch.kubernetes.io/job-name=batch'),
      (ps) => ps.length === 2 && ps.every((d) => d.status?.phase === 'Succeeded'), 30_000, '2 delegates Succeeded');
    for (const d of delegates) {
      const proxy = proxies.find((p) => p.metadata!.name === d.metadata!.name);
      assert.ok(proxy, `delegate ${d.metadata!.name} has a proxy of that name`);
      assert.equal(d.metadata!.labels!['clusterlet.io/proxy-uid'], proxy.metadata!.uid);
      assert.equal(d.metadata!.ownerReferences, undefined, 'a delegate has no owner in the member');
      assert.equal(d.status!.containerStatuses![0].state!.terminated!.reason, 'Completed');
    }
  });
});
