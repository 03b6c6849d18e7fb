// The e2e suite (e2e/scenarios.ts, the one implementation) against the local clusters, with clusterlet
// started as a process under the manifests' RBAC identities, as CI's stand-in for e2e/kind.
import { describe, it, before, after } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { client, clusterletArgs, harness, startClusterlet, type ClusterletProcess } from '../support/env.ts';
import { toKubeError } from '../../src/kube/errors.ts';
import { freePort } from '../harness/net.ts';
import {
  cleanup, configMapUpdateReachesMember, createWorkload, deletionLeavesNothing, deploymentOffloaded, e2eContext,
  logsWork, virtualNodeReady, type E2EContext, type Workload,
} from '../../e2e/scenarios.ts';

describe('e2e scenarios on the local clusters', () => {
  let cl: ClusterletProcess;
  let ctx: E2EContext;
  let w: Workload | undefined;
  let proxies: V1Pod[] = [];
  let deleted = false;
  const workload = (): Workload => {
    if (!w) throw new Error('no workload: the Deployment scenario did not complete');
    return w;
  };

  before(async () => {
    const h = harness();
    // A free port for the kubelet API: other runs may share this machine.
    cl = startClusterlet(clusterletArgs(h.member, ['--kubelet-port', String(await freePort())]));
    // The user's view: admin kubeconfigs and the harness's kubectl. KWOK runs no containers: no log text to expect.
    ctx = e2eContext({ hostKubeconfig: h.host.kubeconfig, memberKubeconfig: h.member.kubeconfig, kubectl: h.bin.kubectl,
      logs: process.env.E2E_EXPECT_LOGS ? 'require' : 'auto' });
  });
  after(async () => {
    if (!deleted) await cleanup(ctx, w);
    await cl.stop();
    // The node stays registered after a stop (as a kubelet's does), with this run's kubelet port: remove it, so
    // the next test file's clusterlet registers it afresh.
    await client(harness().host).core.deleteNode({ name: ctx.opts.nodeName }).catch((err: unknown) => {
      if (toKubeError(err).kind !== 'NotFound') throw err;
    });
  });

  it('the virtual node is Ready with the member\'s capacity', async () => {
    await virtualNodeReady(ctx);
  });

  it('a Deployment tolerating the virtual node is offloaded and Ready', async () => {
    w = await createWorkload(ctx);
    ({ proxies } = await deploymentOffloaded(ctx, w));
  });

  it('a ConfigMap update reaches the delegate\'s copy in the member', async () => {
    await configMapUpdateReachesMember(ctx, workload());
  });

  it('kubectl logs on a proxy shows the delegate\'s log', async (t) => {
    const r = await logsWork(ctx, workload(), proxies);
    if (!r.ran) t.skip(r.reason);
  });

  it('deleting the namespace leaves no delegate and no mirrored object behind', async () => {
    await deletionLeavesNothing(ctx, workload());
    deleted = true;
  });
});
