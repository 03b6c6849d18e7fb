// The end-to-end suite against any host/member pair where clusterlet is installed (e2e/kind/run-all.sh
// sets one up on kind). Configuration from the environment:
//   E2E_HOST_KUBECONFIG    kubeconfig of the host cluster (required; the suite is skipped without it)
//   E2E_MEMBER_KUBECONFIG  kubeconfig of the member cluster, admin-level read (required)
//   E2E_NODE               the member's virtual node (default clusterlet-member)
//   E2E_EXPECT_LOGS        1/true: `kubectl logs` must work; otherwise a `kubectl logs` that fails because the
//                          API server cannot reach the node's kubelet endpoint is skipped, with the reason
//   E2E_IMAGE              image of the test workload (default busybox:1.36; needs sh, cat and sleep)
//   E2E_KUBECTL            kubectl binary (default kubectl)
//   E2E_TIMEOUT_SCALE      multiplies every timeout (default 1)
// Run: E2E_HOST_KUBECONFIG=... E2E_MEMBER_KUBECONFIG=... npm run e2e
import { after, before, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import {
  LOG_TEXT, cleanup, configMapUpdateReachesMember, createWorkload, deletionLeavesNothing, deploymentOffloaded, e2eContext,
  logsWork, virtualNodeReady, type E2EContext, type Workload,
} from './scenarios.ts';

const env = process.env;
const hostKubeconfig = env.E2E_HOST_KUBECONFIG;
const memberKubeconfig = env.E2E_MEMBER_KUBECONFIG;
const missing = !hostKubeconfig || !memberKubeconfig;
const flag = (v: string | undefined): boolean => ['1', 'true', 'yes'].includes((v ?? '').toLowerCase());

describe('clusterlet end to end', { skip: missing ? 'set E2E_HOST_KUBECONFIG and E2E_MEMBER_KUBECONFIG to run the e2e suite' : false }, () => {
  let ctx: E2EContext;
  let w: Workload | undefined;
  let proxies: V1Pod[] = [];
  let deleted = false;

  before(() => {
    ctx = e2eContext({
      hostKubeconfig: hostKubeconfig!, memberKubeconfig: memberKubeconfig!,
      nodeName: env.E2E_NODE || undefined, kubectl: env.E2E_KUBECTL || undefined, image: env.E2E_IMAGE || undefined,
      logs: flag(env.E2E_EXPECT_LOGS) ? 'require' : 'auto',
      // The default workload prints LOG_TEXT; another image prints what it prints.
      logText: env.E2E_IMAGE ? undefined : LOG_TEXT,
      timeoutScale: env.E2E_TIMEOUT_SCALE ? Number(env.E2E_TIMEOUT_SCALE) : undefined,
    });
  });
  after(async () => { if (!deleted) await cleanup(ctx, w); });
  const workload = (): Workload => {
    if (!w) throw new Error('no workload: the Deployment scenario did not complete');
    return w;
  };

  it('the virtual node is Ready with the member\'s capacity', async (t) => {
    const node = await virtualNodeReady(ctx);
    t.diagnostic(`${node.metadata!.name}: cpu ${node.status!.capacity!.cpu}, memory ${node.status!.capacity!.memory}, pods ${node.status!.capacity!.pods}`);
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
