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
//   E2E_HOST_API           1/true: clusterlet has a host API server the member's pods reach (hostAPI.server): an
//   E2E_NODE_IMAGE         in-cluster client (node, in this image) in a delegate must list its host namespace's pods
//   E2E_HELM, E2E_RELEASE, E2E_UPGRADE_TAG
//                          helm binary, `namespace/name` of clusterlet's Helm release and an image tag present on the
//                          host's nodes: the suite upgrades the release to that tag and checks no delegate is lost
//                          (make e2e-local sets them; kind's install uses manifests/, not Helm)
// Run: E2E_HOST_KUBECONFIG=... E2E_MEMBER_KUBECONFIG=... npm run e2e
import { after, before, describe } from 'node:test';
import { fileURLToPath } from 'node:url';
import { LOG_TEXT, e2eContext, registerStory, type E2EContext } from './scenarios.ts';
import { registerContainerStory } from './containers.ts';

const env = process.env;
const hostKubeconfig = env.E2E_HOST_KUBECONFIG;
const memberKubeconfig = env.E2E_MEMBER_KUBECONFIG;
const missing = !hostKubeconfig || !memberKubeconfig;
const flag = (v: string | undefined): boolean => ['1', 'true', 'yes'].includes((v ?? '').toLowerCase());

describe('clusterlet end to end', { skip: missing ? 'set E2E_HOST_KUBECONFIG and E2E_MEMBER_KUBECONFIG to run the e2e suite' : false }, () => {
  let ctx: E2EContext;
  before(() => {
    ctx = e2eContext({
      hostKubeconfig: hostKubeconfig!, memberKubeconfig: memberKubeconfig!,
      nodeName: env.E2E_NODE || undefined, kubectl: env.E2E_KUBECTL || undefined, image: env.E2E_IMAGE || undefined,
      logs: flag(env.E2E_EXPECT_LOGS) ? 'require' : 'auto',
      // The workload's command prints LOG_TEXT, in whatever image (E2E_IMAGE needs sh, cat and sleep).
      logText: LOG_TEXT,
      timeoutScale: env.E2E_TIMEOUT_SCALE ? Number(env.E2E_TIMEOUT_SCALE) : undefined,
    });
  });
  const cleanupLeftovers = registerStory(() => ctx, { describeNode: true });
  const [releaseNamespace, release] = (env.E2E_RELEASE ?? '').split('/');
  const cleanupContainers = registerContainerStory(() => ctx, {
    hostApi: flag(env.E2E_HOST_API) && env.E2E_NODE_IMAGE ? { nodeImage: env.E2E_NODE_IMAGE } : undefined,
    helmRelease: env.E2E_HELM && release && env.E2E_UPGRADE_TAG ? { helm: env.E2E_HELM, namespace: releaseNamespace, release,
      chart: fileURLToPath(new URL('../charts/clusterlet', import.meta.url)), upgradeTag: env.E2E_UPGRADE_TAG } : undefined,
  });
  after(async () => { await Promise.all([cleanupLeftovers(), cleanupContainers()]); });
});
