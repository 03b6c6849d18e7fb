// Callers of the kubelet API in tests: service-account tokens of the host, and their grant of nodes/proxy.
import type { TestContext } from 'node:test';
import { AuthorizationV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import type { ClusterClient } from '../../src/kube/client.ts';
import { toKubeError } from '../../src/kube/errors.ts';
import { pollUntil } from '../harness/net.ts';
import { harness } from './env.ts';

/** A fresh token of service account `ns/name` (created if missing). */
export async function serviceAccountToken(host: ClusterClient, ns: string, name: string): Promise<string> {
  await host.core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name } } }).catch((err: unknown) => {
    if (toKubeError(err).kind !== 'AlreadyExists') throw err;
  });
  return (await host.core.createNamespacedServiceAccountToken({
    namespace: ns, name, body: { spec: { audiences: [], expirationSeconds: 600 } } })).status!.token!;
}

/**
 * Grants service account `ns/name` `get nodes/proxy` until the test ends, and waits until the API server applies
 * it on `node` (clusterlet would cache a denial for 30 s).
 */
export async function grantNodesProxy(t: TestContext, host: ClusterClient, ns: string, name: string, node = 'clusterlet-member'): Promise<void> {
  const admin = harness().host.kubeConfig();
  const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
  const role = `kapi-${ns}`;
  await rbac.createClusterRole({ body: { metadata: { name: role }, rules: [{ apiGroups: [''], resources: ['nodes/proxy'], verbs: ['get'] }] } });
  await rbac.createClusterRoleBinding({ body: { metadata: { name: role }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
    subjects: [{ kind: 'ServiceAccount', namespace: ns, name }] } });
  t.after(async () => {
    await rbac.deleteClusterRoleBinding({ name: role });
    await rbac.deleteClusterRole({ name: role });
  });
  const authz = admin.makeApiClient(AuthorizationV1Api);
  await pollUntil(`RBAC of ${name} in effect`, async () => (await authz.createSubjectAccessReview({ body: { spec: {
    user: `system:serviceaccount:${ns}:${name}`, resourceAttributes: { resource: 'nodes', subresource: 'proxy', verb: 'get', name: node } } } }))
    .status?.allowed ? true : undefined, 15_000);
}
