// Who is calling, and may they: the kubelet's webhook authentication and authorisation, against the host.
//   authentication: a client certificate verified against the host's client CA (by TLS; CN = user,
//                   O = groups), else a bearer token checked with a TokenReview. Neither → 401.
//   authorisation:  a SubjectAccessReview per subresource of the request (attributes.ts) on the node;
//                   allowed if any is allowed, else 403.
// Results are cached briefly (lru-cache), with the kubelet's defaults: 2 min for tokens, 5 min for allowed
// and 30 s for denied decisions.
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { LRUCache } from 'lru-cache';
import type { V1SubjectAccessReview, V1TokenReview } from '@kubernetes/client-node';
import type { ClusterClient } from '../kube/client.ts';
import { ApiError } from './errors.ts';
import { requestAttributes } from './attributes.ts';

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

export interface AuthOptions {
  tokenTTLMs?: number;
  allowedTTLMs?: number;
  deniedTTLMs?: number;
}

export class Auth {
  #client: ReviewClient;
  #tokens: LRUCache<string, { user?: UserInfo }>;
  #decisions: LRUCache<string, { allowed: boolean }>;
  #opts: Required<AuthOptions>;

  constructor(client: ReviewClient, opts: AuthOptions = {}) {
    this.#client = client;
    this.#opts = { tokenTTLMs: opts.tokenTTLMs ?? 120_000, allowedTTLMs: opts.allowedTTLMs ?? 300_000, deniedTTLMs: opts.deniedTTLMs ?? 30_000 };
    this.#tokens = new LRUCache({ max: 10_000, ttl: this.#opts.tokenTTLMs });
    this.#decisions = new LRUCache({ max: 10_000, ttl: this.#opts.allowedTTLMs });
  }

  /** The caller, or ApiError Unauthorized. */
  async authenticate(req: IncomingMessage): Promise<UserInfo> {
    const fromCert = certificateUser(req.socket as TLSSocket);
    if (fromCert) return fromCert;
    const token = bearerToken(req.headers.authorization);
    if (token) {
      const user = await this.#reviewToken(token);
      if (user) return user;
    }
    throw new ApiError('Unauthorized', 'Unauthorized');
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

/** The user of a verified client certificate: CN, and O as groups. */
export function certificateUser(socket: TLSSocket): UserInfo | undefined {
  if (typeof socket.getPeerCertificate !== 'function' || !socket.authorized) return undefined;
  const cert = socket.getPeerCertificate();
  const cn = cert?.subject?.CN;
  if (!cn) return undefined;
  const username = Array.isArray(cn) ? cn[0] : cn;
  const o = cert.subject.O;
  const groups = o === undefined ? [] : Array.isArray(o) ? o : [o];
  return { username, groups: [...groups, 'system:authenticated'] };
}

export function bearerToken(header: string | undefined): string | undefined {
  const m = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  return m?.[1];
}
