// Who is calling, and may they: the kubelet's webhook authentication and authorisation, against the host.
//   authentication: a client certificate verified against the host's client CA (CN = user, O = groups),
//                   else a bearer token checked with a TokenReview: in the Authorization header, or for a
//                   WebSocket (browsers cannot set headers) as the subprotocol
//                   `base64url.bearer.authorization.k8s.io.<token in unpadded base64url>`, taken out of the
//                   offered subprotocols once it authenticates (the kubelet's delegating authenticator includes
//                   apiserver's websocket.NewProtocolAuthenticator). None → 401. A certificate is verified
//                   by TLS in the handshake (server.ts gives it the client CA only, never Node's default
//                   roots), then on every request held to the client CA as it is now: refused while it is
//                   not loaded, and on a connection older than a CA change unless a CA of the new bundle
//                   signed it.
//   authorisation:  a SubjectAccessReview per subresource of the request (attributes.ts) on the node;
//                   allowed if any is allowed, else 403.
// Results are cached briefly (lru-cache), with the kubelet's defaults: 2 min for tokens, 5 min for allowed
// and 30 s for denied decisions.
import { createHash, type X509Certificate } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { LRUCache } from 'lru-cache';
import { upTo } from '../../util/lru.ts';
import type { V1SubjectAccessReview, V1TokenReview } from '@kubernetes/client-node';
import type { ClusterClient } from '../../kube/client.ts';
import { ApiError } from './errors.ts';
import { requestAttributes } from './attributes.ts';
import { isWebSocketRequest, offeredSubprotocols, setOfferedSubprotocols } from './websocket.ts';

const BEARER_PROTOCOL_PREFIX = 'base64url.bearer.authorization.k8s.io.';

export interface UserInfo {
  username: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

/** The two host calls, as an interface so that the decision logic is tested without a cluster. */
export interface ReviewClient {
  tokenReview(token: string): Promise<V1TokenReview>;
  subjectAccessReview(review: V1SubjectAccessReview): Promise<V1SubjectAccessReview>;
}

export function hostReviewClient(host: ClusterClient): ReviewClient {
  return {
    tokenReview: (token) => host.authentication.createTokenReview({ body: { spec: { token } } }),
    subjectAccessReview: (body) => host.authorization.createSubjectAccessReview({ body }),
  };
}

/** The client CA bundle as it is now (tls.ts ClientCA): empty until it is loaded. */
export interface ClientCABundle {
  readonly certificates: readonly X509Certificate[];
}

export interface AuthOptions {
  /** Verifies client certificates; without it, no client certificate authenticates. */
  clientCA?: ClientCABundle;
  tokenTTLMs?: number;
  allowedTTLMs?: number;
  deniedTTLMs?: number;
}

export class Auth {
  #client: ReviewClient;
  #tokens: LRUCache<string, { user?: UserInfo }>;
  #decisions: LRUCache<string, { allowed: boolean }>;
  #clientCA: ClientCABundle | undefined;
  #opts: Required<Omit<AuthOptions, 'clientCA'>>;

  constructor(client: ReviewClient, opts: AuthOptions = {}) {
    this.#client = client;
    this.#clientCA = opts.clientCA;
    this.#opts = { tokenTTLMs: opts.tokenTTLMs ?? 120_000, allowedTTLMs: opts.allowedTTLMs ?? 300_000, deniedTTLMs: opts.deniedTTLMs ?? 30_000 };
    this.#tokens = new LRUCache({ ...upTo(10_000), ttl: this.#opts.tokenTTLMs });
    this.#decisions = new LRUCache({ ...upTo(10_000), ttl: this.#opts.allowedTTLMs });
  }

  /**
   * The caller, or ApiError Unauthorized. `verifiedWith`: the client CA bundle the connection's TLS handshake
   * verified against (server.ts). A client certificate that does not verify does not authenticate; a bearer
   * token sent along is still checked (as the kubelet's union of authenticators does).
   */
  async authenticate(req: IncomingMessage, verifiedWith?: readonly X509Certificate[]): Promise<UserInfo> {
    const cert = certificateUser(req.socket as TLSSocket, this.#clientCA?.certificates ?? [], verifiedWith);
    if (cert.user) return cert.user;
    const token = bearerToken(req.headers.authorization);
    if (token) {
      const user = await this.#reviewToken(token);
      if (user) return user;
    }
    const ws = webSocketProtocolToken(req);
    if (ws.token) {
      const user = await this.#reviewToken(ws.token);
      if (user) {
        setOfferedSubprotocols(req, ws.others);
        return user;
      }
    }
    throw new ApiError('Unauthorized', cert.refused ? `Unauthorized: ${cert.refused}` : ws.refused ? `Unauthorized: ${ws.refused}` : 'Unauthorized');
  }

  async #reviewToken(token: string): Promise<UserInfo | undefined> {
    const key = createHash('sha256').update(token).digest('hex');
    const cached = this.#tokens.get(key);
    if (cached) return cached.user;
    let review: V1TokenReview;
    try {
      review = await this.#client.tokenReview(token);
    } catch (err) {
      throw new ApiError('Unauthorized', `Unauthorized: token review failed: ${(err as Error).message}`, { cause: err });
    }
    const s = review.status;
    const user = s?.authenticated && s.user?.username ? {
      username: s.user.username, uid: s.user.uid, groups: s.user.groups ?? [], extra: s.user.extra,
    } : undefined;
    // A rejected token is remembered for less long: it may just not be valid yet.
    this.#tokens.set(key, { user }, { ttl: user ? this.#opts.tokenTTLMs : Math.min(10_000, this.#opts.tokenTTLMs) });
    return user;
  }

  /** Resolves when `user` may make this request on `node`; else ApiError Forbidden. */
  async authorize(user: UserInfo, method: string | undefined, path: string, node: string): Promise<void> {
    const attrs = requestAttributes(method, path);
    for (const subresource of attrs.subresources) {
      if (await this.#allowed(user, attrs.verb, subresource, node, path)) return;
    }
    throw new ApiError('Forbidden', `Forbidden (user=${user.username}, verb=${attrs.verb}, resource=nodes, `
      + `subresource(s)=[${attrs.subresources.join(' ')}])`);
  }

  async #allowed(user: UserInfo, verb: string, subresource: string, node: string, path: string): Promise<boolean> {
    if (!verb) return false;
    const body: V1SubjectAccessReview = {
      apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview',
      spec: {
        user: user.username, uid: user.uid, groups: user.groups, extra: user.extra,
        resourceAttributes: { verb, group: '', version: 'v1', resource: 'nodes', subresource, name: node },
      },
    };
    const key = JSON.stringify(body.spec);
    const cached = this.#decisions.get(key);
    if (cached) return cached.allowed;
    let review: V1SubjectAccessReview;
    try {
      review = await this.#client.subjectAccessReview(body);
    } catch (err) {
      throw new ApiError('Internal', `Authorization error (user=${user.username}, verb=${verb}, resource=nodes, `
        + `subresource=${subresource}, path=${path}): ${(err as Error).message}`, { cause: err });
    }
    const allowed = review.status?.allowed === true;
    this.#decisions.set(key, { allowed }, { ttl: allowed ? this.#opts.allowedTTLMs : this.#opts.deniedTTLMs });
    return allowed;
  }
}

/**
 * The user of the connection's client certificate (CN, and O as groups), if it verifies: TLS verified it in
 * the handshake, it is valid now, and either the handshake verified it against `anchors` (the client CA
 * now: the same bundle object) or a certificate of `anchors` signed it. Node does not give a server the
 * intermediates a client sent, so a certificate issued through one counts only on connections made since
 * the last CA change. Otherwise, when a certificate was presented, why it was refused.
 */
export function certificateUser(socket: TLSSocket, anchors: readonly X509Certificate[],
  verifiedWith?: readonly X509Certificate[], now = Date.now()): { user?: UserInfo; refused?: string } {
  const leaf = typeof socket.getPeerX509Certificate === 'function' ? socket.getPeerX509Certificate() : undefined;
  if (!leaf) return {};
  if (!anchors.length) return { refused: 'client certificates are not accepted until the client CA is loaded' };
  if (!socket.authorized) return { refused: `client certificate not verified by the client CA (${String(socket.authorizationError)})` };
  const valid = (c: X509Certificate): boolean => Date.parse(c.validFrom) <= now && now <= Date.parse(c.validTo);
  if (!valid(leaf)) return { refused: 'client certificate expired or not yet valid' };
  if (verifiedWith !== anchors && !anchors.some((a) => valid(a) && leaf.checkIssued(a) && leaf.verify(a.publicKey))) {
    return { refused: 'client certificate not verified by the current client CA (it changed since the connection was made)' };
  }
  const cert = socket.getPeerCertificate();
  const cn = cert.subject?.CN;
  if (!cn) return { refused: 'client certificate without a common name' };
  const username = Array.isArray(cn) ? cn[0] : cn;
  const o = cert.subject.O;
  const groups = o === undefined ? [] : Array.isArray(o) ? o : [o];
  return { user: { username, groups: [...groups, 'system:authenticated'] } };
}

export function bearerToken(header: string | undefined): string | undefined {
  const m = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  return m?.[1];
}

/**
 * The bearer token a WebSocket handshake carries as a subprotocol, and the other subprotocols; `refused` when it
 * is malformed, repeated, or the only one (one must remain to be answered), as apiserver's ProtocolAuthenticator.
 */
export function webSocketProtocolToken(req: IncomingMessage): { token?: string; others: string[]; refused?: string } {
  if (!isWebSocketRequest(req)) return { others: [] };
  const offered = offeredSubprotocols(req);
  const others = offered.filter((p) => !p.startsWith(BEARER_PROTOCOL_PREFIX));
  const carried = offered.filter((p) => p.startsWith(BEARER_PROTOCOL_PREFIX));
  if (!carried.length) return { others };
  if (carried.length > 1) return { others, refused: 'multiple base64.bearer.authorization tokens specified' };
  const encoded = carried[0].slice(BEARER_PROTOCOL_PREFIX.length);
  const token = /^[A-Za-z0-9_-]*$/.test(encoded) ? Buffer.from(encoded, 'base64url').toString('utf8') : '';
  if (!token || Buffer.from(token, 'utf8').toString('base64url') !== encoded) {
    return { others, refused: 'invalid base64.bearer.authorization token encoding' };
  }
  if (!others.length) return { others, refused: 'missing additional subprotocol' };
  return { token, others };
}
