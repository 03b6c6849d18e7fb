// The e2e suite (e2e/scenarios.ts, the one implementation) against the local clusters, with clusterlet
// started as a process under the manifests' RBAC identities, as CI's stand-in for e2e/kind.
import { describe, before, after } from 'node:test';
import { client, clusterletArgs, harness, startClusterlet, type ClusterletProcess } from '../support/env.ts';
import { toKubeError } from '../../src/kube/errors.ts';
import { freePort } from '../harness/net.ts';
import { e2eContext, registerStory, type E2EContext } from '../../e2e/scenarios.ts';

describe('e2e scenarios on the local clusters', () => {
  let cl: ClusterletProcess;
  let ctx: E2EContext;

  before(async () => {
    const h = harness();
    // A free port for the kubelet API: other runs may share this machine.
    cl = startClusterlet(clusterletArgs(h.member, ['--kubelet-port', String(await freePort())]));
    // The user's view: admin kubeconfigs and the harness's kubectl. KWOK runs no containers: no log text to expect.
    ctx = e2eContext({ hostKubeconfig: h.host.kubeconfig, memberKubeconfig: h.member.kubeconfig, kubectl: h.bin.kubectl,
      logs: process.env.E2E_EXPECT_LOGS ? 'require' : 'auto' });
  });
  const cleanupLeftovers = registerStory(() => ctx);
  after(async () => {
    await cleanupLeftovers();
    await cl.stop();
    // The node stays registered after a stop (as a kubelet's does), with this run's kubelet port: remove it, so
    // the next test file's clusterlet registers it afresh.
    await client(harness().host).core.deleteNode({ name: ctx.opts.nodeName }).catch((err: unknown) => {
      if (toKubeError(err).kind !== 'NotFound') throw err;
    });
  });
});
