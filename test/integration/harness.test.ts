// The local control planes behave as real clusters.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { AppsV1Api } from '@kubernetes/client-node';
import { client, deleteNamespaceAndWait, harness, namespaces } from '../support/env.ts';
import { waitUntil } from '../support/wait.ts';
import { deployment, isReady, podSpec, podsSpec } from '../support/objects.ts';
import { kubectl } from '../support/kubectl.ts';

describe('local clusters (harness)', () => {
  it('kubectl reports the real Kubernetes version of both clusters', async () => {
    const h = harness();
    for (const c of [h.host, h.member]) {
      const out = JSON.parse(await kubectl(c, 'version', '-o', 'json')) as { clientVersion: { gitVersion: string }; serverVersion: { gitVersion: string } };
      assert.match(out.clientVersion.gitVersion, /^v1\.\d+\.\d+$/);
      assert.equal(out.serverVersion.gitVersion, out.clientVersion.gitVersion);
    }
  });

  it('member: a Deployment of 3 pods becomes 3/3 Ready on KWOK nodes, and its namespace deletes', async (t) => {
    const member = client(harness().member);
    const ns = await namespaces(t, 'h-member', [member]);
    const apps = harness().member.kubeConfig().makeApiClient(AppsV1Api);
    await apps.createNamespacedDeployment({ namespace: ns, body: deployment('web', ns, 3) });
    const pods = await waitUntil(member, podsSpec(member, ns, 'app=web'),
      (ps) => ps.length === 3 && ps.every((p) => isReady(p) && p.status?.phase === 'Running'), 60_000, '3 Ready pods');
    const memberNodes = new Set(harness().member.opts.nodes.map((n) => n.name));
    for (const p of pods) assert.ok(memberNodes.has(p.spec!.nodeName!), `${p.metadata!.name} on a KWOK node`);
    const d = await apps.readNamespacedDeployment({ name: 'web', namespace: ns });
    await waitUntil(member, {
      path: `/apis/apps/v1/namespaces/${ns}/deployments`, model: 'V1Deployment', resource: 'deployments',
      list: (p) => apps.listNamespacedDeployment({ namespace: ns, ...p }),
    }, (ds) => ds[0]?.status?.readyReplicas === 3, 30_000, 'deployment 3/3 ready');
    assert.equal(d.spec?.replicas, 3);
    await deleteNamespaceAndWait(member, ns);
  });

  it('host: a plain pod is scheduled on a local KWOK node and runs; the namespace deletes', async (t) => {
    const host = client(harness().host);
    const ns = await namespaces(t, 'h-host', [host]);
    await host.core.createNamespacedPod({ namespace: ns, body: podSpec('plain', { namespace: ns }) });
    const [pod] = await waitUntil(host, podsSpec(host, ns), (ps) => ps[0]?.status?.phase === 'Running', 60_000, 'plain pod Running');
    assert.match(pod.spec!.nodeName!, /^host-local-/);
    await deleteNamespaceAndWait(host, ns);
  });
});
