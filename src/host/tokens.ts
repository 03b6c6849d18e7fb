// Offloaded pods' API access, host side: tokens of proxies' ServiceAccounts from the host's TokenRequest API, bound to
// the proxy pod, and where the member's pods reach the host API server (provider/tokens.ts).
import type { ClusterClient } from '../kube/client.ts';
import type { ClusterAccess } from '../kube/kubeconfig.ts';
import { parseHostEndpoint, type HostEndpoint } from '../forge/apiaccess.ts';
import type { HostApiAccess, IssuedToken, TokenRequestFor } from '../provider/tokens.ts';

/** What hostApiAccess calls of the host client. */
export type TokenClient = { core: Pick<ClusterClient['core'], 'createNamespacedServiceAccountToken'> };

/**
 * The endpoint for a member: its configured `hostAPI.server`, else the server of the host kubeconfig clusterlet uses,
 * unless that is the in-cluster one (the host's Service address, which the member's pods cannot reach).
 */
export function hostEndpointFor(configured: string | undefined, host: Pick<ClusterAccess, 'server' | 'source'>):
  { endpoint: HostEndpoint } | { unavailable: string } {
  if (configured === undefined && host.source === 'in-cluster') {
    return { unavailable: 'clusterlet runs in the host cluster and no hostAPI.server (--host-api-server) says where the '
      + "member's pods reach the host API server" };
  }
  const parsed = parseHostEndpoint(configured ?? host.server);
  if ('error' in parsed) {
    return { unavailable: `${configured === undefined ? 'the host kubeconfig\'s server' : 'hostAPI.server'} ${parsed.error}` };
  }
  return { endpoint: parsed };
}

export function hostApiAccess(client: TokenClient, where: { endpoint: HostEndpoint } | { unavailable: string }, ca: string):
  HostApiAccess {
  return {
    endpoint: 'endpoint' in where ? where.endpoint : undefined,
    unavailable: 'unavailable' in where ? where.unavailable : undefined,
    ca,
    async request(r: TokenRequestFor): Promise<IssuedToken> {
      const issuedAt = new Date();
      const answer = await client.core.createNamespacedServiceAccountToken({
        name: r.serviceAccount, namespace: r.namespace,
        body: {
          apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest',
          spec: {
            audiences: r.audience ? [r.audience] : [],
            expirationSeconds: r.expirationSeconds,
            boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: r.pod.name, uid: r.pod.uid },
          },
        },
      });
      const token = answer.status?.token;
      const expires = answer.status?.expirationTimestamp;
      if (!token || !expires) throw new Error(`TokenRequest for ${r.namespace}/${r.serviceAccount} answered without a token`);
      return { token, issuedAt, expiresAt: new Date(expires) };
    },
  };
}
