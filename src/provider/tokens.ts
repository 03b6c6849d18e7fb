// The host's half of offloaded pods' API access (forge/apiaccess.ts), as the member side sees it: tokens of the
// proxies' host ServiceAccounts, and where and how the member's pods reach the host API server.
import type { V1Pod } from '@kubernetes/client-node';
import type { HostEndpoint } from '../forge/apiaccess.ts';

/** A token for a proxy's ServiceAccount, bound to the proxy (it dies with it). */
export interface TokenRequestFor {
  namespace: string;
  serviceAccount: string;
  /** The proxy: the token is bound to its name and UID. */
  pod: { name: string; uid: string };
  /** Undefined: the host API server's own audience. */
  audience?: string;
  expirationSeconds: number;
}

export interface IssuedToken { token: string; issuedAt: Date; expiresAt: Date }

export interface HostApiAccess {
  /** Where the member's pods reach the host API server; undefined when it is not known (see `unavailable`). */
  readonly endpoint: HostEndpoint | undefined;
  /** Why host mode cannot work for this member (no endpoint), when it cannot. */
  readonly unavailable: string | undefined;
  /** PEM bundle that verifies the host API server at the endpoint ('' when it has a publicly trusted certificate). */
  readonly ca: string;
  /** Asks the host's TokenRequest API. Throws its error (NotFound: no such ServiceAccount or proxy; Forbidden: RBAC). */
  request(r: TokenRequestFor): Promise<IssuedToken>;
}

/**
 * The proxies of a member's virtual nodes, as the host's caches hold them (host coordinates). A token Secret found in
 * the member names its proxy; what its tokens are (ServiceAccount, audiences, lifetimes) is read from that proxy here,
 * and a Secret whose proxy is not here gets no token.
 */
export interface HostProxies {
  /** The proxy `namespace/name` bound to one of the member's virtual nodes, if the host's caches have it. */
  get(namespace: string, name: string): V1Pod | undefined;
}
