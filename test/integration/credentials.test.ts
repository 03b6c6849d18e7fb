// Member credentials rotate without a restart: clusterlet runs on a member kubeconfig file holding a
// ServiceAccount token; a second token is minted, the file rewritten with it and the first token revoked,
// and offloading goes on.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { V1Secret } from '@kubernetes/client-node';
import {
  client, clusterletArgs, harness, namespaces, startClusterlet, uniqueName,
} from '../support/env.ts';
import { identityServiceAccount } from '../support/identity.ts';
import { waitUntil } from '../support/wait.ts';
import { isReady, podSpec, podsSpec, waitVirtualNodeSchedulable } from '../support/objects.ts';
import { pollUntil } from '../harness/net.ts';
import { ClusterClient } from '../../src/kube/client.ts';
import { toKubeError } from '../../src/kube/errors.ts';
import { loadKubeconfigFile } from '../../src/kube/kubeconfig.ts';

const NODE = 'clusterlet-member';

/**
 * A long-lived token for the ServiceAccount: a `kubernetes.io/service-account-token` Secret the member's token
 * controller fills in, revoked by deleting the Secret (as manifests/member's clusterlet-token).
 */
async function mintToken(member: ClusterClient, sa: { namespace: string; name: string }, name: string): Promise<string> {
  await member.core.createNamespacedSecret({ namespace: sa.namespace, body: {
    metadata: { name, labels: { 'clusterlet.io/test': 'true' }, annotations: { 'kubernetes.io/service-account.name': sa.name } },
    type: 'kubernetes.io/service-account-token',
  } });
  const [secret] = await waitUntil<V1Secret>(member, {
    path: `/api/v1/namespaces/${sa.namespace}/secrets`, model: 'V1Secret', resource: 'secrets', fieldSelector: `metadata.name=${name}`,
    list: (p) => member.core.listNamespacedSecret({ namespace: sa.namespace, ...p }),
  }, (ss) => !!ss[0]?.data?.token, 30_000, `a token in Secret ${sa.namespace}/${name}`);
  return Buffer.from(secret.data!.token!, 'base64').toString('utf8');
}

describe('member credentials', () => {
  it('a rewritten member kubeconfig is used without a restart: offloading goes on after the old token is revoked', async (t) => {
    const h = harness();
    const host = client(h.host);
    const member = client(h.member);
    // clusterlet's own member identity (the ServiceAccount the suite uses), with tokens of this test's own:
    // revoking them leaves the suite's token alone.
    const sa = await identityServiceAccount(h.bin.kubectl, 'member');
    const [oldSecret, newSecret] = [uniqueName('clusterlet-token-old'), uniqueName('clusterlet-token-new')];
    t.after(async () => {
      for (const name of [oldSecret, newSecret]) {
        await member.core.deleteNamespacedSecret({ namespace: sa.namespace, name }).catch((err: unknown) => {
          if (toKubeError(err).kind !== 'NotFound') throw err;
        });
      }
    });
    const user = `system:serviceaccount:${sa.namespace}:${sa.name}`;
    const dir = join(h.dir, uniqueName('rotation'));
    mkdirSync(dir);
    const kubeconfig = join(dir, 'member.kubeconfig');
    const oldToken = await mintToken(member, sa, oldSecret);
    await h.member.writeKubeconfig(kubeconfig, user, { token: oldToken });
    const revoked = join(dir, 'old-token.kubeconfig');
    await h.member.writeKubeconfig(revoked, user, { token: oldToken });

    const args = clusterletArgs(h.member);
    args[args.indexOf('--member-kubeconfig') + 1] = kubeconfig;
    const cl = startClusterlet(args);
    t.after(async () => { await cl.stop(); });
    const ns = await namespaces(t, 'rotation', [host, member]);
    const offload = (name: string) => host.core.createNamespacedPod({ namespace: ns, body: podSpec(name, {
      namespace: ns, tolerate: true, nodeSelector: { 'kubernetes.io/hostname': NODE }, labels: { app: name },
    }) });
    const running = async (name: string): Promise<void> => {
      await waitUntil(member, podsSpec(member, ns, `app=${name}`), (ps) => ps.length === 1 && ps[0].status?.phase === 'Running',
        60_000, `delegate ${name} Running`);
      await waitUntil(host, podsSpec(host, ns, `app=${name}`), (ps) => ps.length === 1 && isReady(ps[0]), 60_000, `proxy ${name} Ready`);
    };

    await waitVirtualNodeSchedulable(host);
    await offload('before');
    await running('before');

    // Rotate: a new token in the file, then the old one revoked.
    const newToken = await mintToken(member, sa, newSecret);
    await h.member.writeKubeconfig(kubeconfig, user, { token: newToken });
    await member.core.deleteNamespacedSecret({ namespace: sa.namespace, name: oldSecret });
    const withOldToken = new ClusterClient(loadKubeconfigFile(revoked), { cluster: 'old-token', qps: 10, burst: 10 });
    await pollUntil('the old token refused', async () => {
      try {
        await withOldToken.core.listNamespace({ limit: 1 });
        return undefined;
      } catch (err) {
        if (toKubeError(err).kind === 'Unauthorized') return true;
        throw err;
      }
    }, 30_000, 200);

    // Still offloading, on the new token: a new pod runs, and deleting a proxy removes its delegate.
    await offload('after');
    await running('after');
    await host.core.deleteNamespacedPod({ namespace: ns, name: 'before', gracePeriodSeconds: 30 });
    await waitUntil(member, podsSpec(member, ns, 'app=before'), (ps) => ps.length === 0, 60_000, 'delegate before deleted');
    await waitUntil(host, podsSpec(host, ns, 'app=before'), (ps) => ps.length === 0, 60_000, 'proxy before deleted');
    assert.match(cl.logs(), /member kubeconfig changed/);
  });
});
