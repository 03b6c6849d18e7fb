// One API client per cluster: plain HTTPS with a keep-alive connection pool, a client-side rate limit, and
// every request counted by verb and status code for /metrics. Its access (server, CA, credentials) can be
// swapped while it runs (setAccess), so a rotated kubeconfig needs no new client.
//
// The typed surface (`core.createNamespacedPod({ namespace, body })`, …) has client-node's method names and
// parameter objects, checked against client-node's own type declarations, but no client-node code runs:
// importing the library loads thousands of generated modules, resident for the process's life, and its
// ObjectSerializer costs a noticeable share of the CPU (docs/performance.md, 'No client-node code at run time').
// Responses are parsed JSON with timestamps revived (revive.ts).
// One file, though long: the client's typed surface, its rate limit, fencing, access swaps and pools share one
// request path (#open, #send), and splitting it would spread one request's way over several files.
import type { RequestOptions as HttpsRequestOptions } from 'node:https';
import { createSecureContext } from 'node:tls';
import type {
  AuthenticationV1Api, AuthorizationV1Api, CertificatesV1Api, CoordinationV1Api, CoreV1Api, EventsV1Api,
} from '@kubernetes/client-node';
import type { ClusterAccess, Credentials } from './kubeconfig.ts';
import { KubeError, NOT_LEADER, statusError } from './errors.ts';
import { revive } from './revive.ts';
import { parseEventLine, type KnownSpec } from './eventline.ts';
import { H2Sessions, type Body, type Exchange } from './h2.ts';
import { H1Pool, type H1Origin } from './h1.ts';
import { TokenBucket } from '../util/ratelimit.ts';
import type { Priority } from '../util/lanes.ts';
import { metrics } from '../metrics.ts';
import { VERSION } from '../version.ts';

export interface ClientOptions {
  /** Name used in metrics and logs: "host" or the member's name. */
  cluster: string;
  qps: number;
  burst: number;
  /** Another client's rate limit, shared (see fenced()); else its own, of qps and burst. */
  limiter?: TokenBucket;
  /**
   * Asked before each write (any verb but GET) is sent: a reason refuses it (an Unavailable KubeError, reason
   * NotLeader), e.g. this replica cannot be sure it still leads. Checked after waiting for the rate limit, on the
   * clock of that moment, so a process resumed after a pause never sends what it meant to write before.
   */
  fence?: () => string | undefined;
  /**
   * Upper bound of one request (not a watch) from sending it (once it has a connection: see MAX_REQUEST_SOCKETS)
   * to the end of its response (default 60 s).
   */
  requestTimeoutMs?: number;
  /**
   * Requests over HTTP/2 (h2.ts) to an https server that speaks it; else (the default, and for a server that refuses
   * HTTP/2) HTTPS/1.1 with a keep-alive pool. Watches stay on HTTPS/1.1 connections of their own either way: watches
   * sharing the requests' HTTP/2 connections make the creation latency's tail much longer (docs/performance.md,
   * 'HTTP/2, opt-in').
   */
  http2?: boolean;
  /** HTTPS/1.1 connections for requests (not watches, which have their own) at most (default MAX_REQUEST_SOCKETS). */
  maxRequestSockets?: number;
}

/** Content types of the three patch kinds. */
export const PATCH = {
  merge: 'application/merge-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  json: 'application/json-patch+json',
} as const;

export interface RequestOptions {
  /** For patches: one of PATCH (default: JSON patch, as client-node). */
  contentType?: string;
  signal?: AbortSignal;
  /**
   * The caller has no use for the answer: its body is not parsed, and the call resolves with nothing. A write's
   * answer is the whole object written; a controller that only needs to know the write succeeded saves decoding it.
   */
  discard?: boolean;
  /**
   * With `discard`: called with the resourceVersion of the object the write left, read from the metadata-only answer
   * (a write's own watch event can then be told from another's: same version).
   */
  onVersion?: (resourceVersion: string) => void;
  /**
   * Where the request stands when it has to wait, for the rate limit or for a connection: `high` for what a user
   * or a controller waits on (a proxy's status, a lease), `low` for what may come late (events). Default `normal`.
   */
  priority?: Priority;
}

/** Options of a call whose answer is not wanted (see RequestOptions.discard). */
export type Discarding = RequestOptions & { discard: true };
/** The options of a write whose answer (the whole object written) the caller does not read. */
export const DISCARD: Discarding = Object.freeze({ discard: true } as const);

/**
 * Who clusterlet says it is, as client-go does (`<program>/<version> (<os>/<arch>) ...`): kube-apiserver names the
 * field manager of a write without one after this up to the '/' (so managedFields say "clusterlet", not "unknown"),
 * and its audit log and metrics name the client by it.
 */
export const USER_AGENT = `clusterlet/${VERSION} (${process.platform}/${process.arch}) node/${process.versions.node}`;

/**
 * What a call with `discard` accepts: the object's metadata alone (kube-apiserver's PartialObjectMetadata transform,
 * which it applies to the answers of writes too), else the whole object. The API server then encodes the metadata
 * (about 1 KB for a pod, its managedFields included) instead of the whole pod it wrote; an error answers with a Status
 * either way.
 */
export const ACCEPT_METADATA = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, application/json';

type WithOptions<A extends unknown[]> =
  A extends [infer P, ...unknown[]] ? [param: P, options?: RequestOptions]
    : A extends [(infer P)?, ...unknown[]] ? [param?: P, options?: RequestOptions] : [options?: RequestOptions];
type WithDiscard<A extends unknown[]> =
  A extends [infer P, ...unknown[]] ? [param: P, options: Discarding]
    : A extends [(infer P)?, ...unknown[]] ? [param: P | undefined, options: Discarding] : [options: Discarding];
/** One method: with `discard`, it resolves with nothing of use (a fake may resolve with the object: callers never read it). */
type Method<A extends unknown[], R> = { (...args: WithDiscard<A>): Promise<unknown>; (...args: WithOptions<A>): Promise<R> };
/** client-node's object-parameter API of one group, with our request options in place of its Configuration. */
export type Api<T> = {
  [K in keyof T]: T[K] extends (...args: infer A) => Promise<infer R> ? Method<A, R> : never;
};

interface Kind { plural: string; namespaced: boolean }
interface Group { prefix: string; kinds: Record<string, Kind> }

const ns = (plural: string): Kind => ({ plural, namespaced: true });
const cluster = (plural: string): Kind => ({ plural, namespaced: false });

export const GROUPS = {
  core: { prefix: '/api/v1', kinds: {
    Pod: ns('pods'), ConfigMap: ns('configmaps'), Secret: ns('secrets'), ServiceAccount: ns('serviceaccounts'),
    Event: ns('events'), ResourceQuota: ns('resourcequotas'), Service: ns('services'), Endpoints: ns('endpoints'),
    PersistentVolumeClaim: ns('persistentvolumeclaims'), Node: cluster('nodes'), Namespace: cluster('namespaces'),
  } },
  coordination: { prefix: '/apis/coordination.k8s.io/v1', kinds: { Lease: ns('leases') } },
  events: { prefix: '/apis/events.k8s.io/v1', kinds: { Event: ns('events') } },
  certificates: { prefix: '/apis/certificates.k8s.io/v1', kinds: { CertificateSigningRequest: cluster('certificatesigningrequests') } },
  authentication: { prefix: '/apis/authentication.k8s.io/v1', kinds: { TokenReview: cluster('tokenreviews') } },
  authorization: { prefix: '/apis/authorization.k8s.io/v1', kinds: { SubjectAccessReview: cluster('subjectaccessreviews') } },
} satisfies Record<string, Group>;

const METHODS: Record<string, string> = {
  create: 'POST', read: 'GET', list: 'GET', replace: 'PUT', patch: 'PATCH', delete: 'DELETE', deleteCollection: 'DELETE',
};
/** The Kubernetes verb of each kind of method (what verbOf reads from the request: a unit test keeps them in step). */
const VERBS: Record<string, string> = {
  create: 'create', read: 'get', list: 'list', replace: 'update', patch: 'patch', delete: 'delete', deleteCollection: 'deletecollection',
};
const PATH_PARAMS = new Set(['name', 'namespace', 'body']);

/** What a method name says of its requests: the HTTP method, the path around the name and namespace, and the verb. */
interface Shape { method: string; prefix: string; namespaced: boolean; plural: string; sub: string; verb: string }

/** Shapes by group and method name: parsed once per name, not on every call. */
const shapes = new WeakMap<Group, Map<string, Shape>>();

function shapeOf(group: Group, method: string): Shape {
  let byName = shapes.get(group);
  if (!byName) shapes.set(group, byName = new Map());
  let shape = byName.get(method);
  if (shape) return shape;
  const m = /^(create|read|replace|patch|deleteCollection|delete|list)(Namespaced)?(.+?)(ForAllNamespaces)?$/.exec(method);
  const rest = m?.[3] ?? '';
  const kindName = Object.keys(group.kinds).filter((k) => rest.startsWith(k)).sort((a, b) => b.length - a.length)[0];
  if (!m || !kindName) throw new Error(`ClusterClient: no route for ${method}`);
  const kind = group.kinds[kindName as keyof typeof group.kinds] as Kind;
  shape = { method: METHODS[m[1]], prefix: group.prefix, namespaced: kind.namespaced && !!m[2], plural: kind.plural,
    sub: rest.slice(kindName.length).toLowerCase(), verb: VERBS[m[1]] };
  byName.set(method, shape);
  return shape;
}

/**
 * A client-node method name → HTTP method, path and Kubernetes verb, e.g. patchNamespacedPodStatus → PATCH
 * …/pods/{name}/status, patch. A list asked to watch is a watch.
 */
export function route(group: Group, method: string, param: Record<string, unknown>): { method: string; path: string; verb: string } {
  const shape = shapeOf(group, method);
  let path = shape.prefix;
  if (shape.namespaced) path += `/namespaces/${encodeURIComponent(String(param.namespace))}`;
  path += `/${shape.plural}`;
  if (param.name !== undefined) path += `/${encodeURIComponent(String(param.name))}`;
  if (shape.sub) path += `/${shape.sub}`;
  // A call with a watch parameter (none of clusterlet's typed calls has one) is read as verbOf reads any request.
  return { method: shape.method, path, verb: param.watch === undefined ? shape.verb : verbOf(shape.method, path + queryOf(param)) };
}

/** Query string of a client-node parameter object: everything but name, namespace and body. */
export function queryOf(param: Record<string, unknown>): string {
  // Made only for a call that has a query: most writes have none, and this runs for every request.
  let q: URLSearchParams | undefined;
  for (const k in param) {
    const v = param[k];
    if (v === undefined || v === null || PATH_PARAMS.has(k)) continue;
    (q ??= new URLSearchParams()).set(k === '_continue' ? 'continue' : k, String(v));
  }
  const s = q?.toString();
  return s ? `?${s}` : '';
}

const REQUEST_TIMEOUT_MS = 60_000;
/**
 * Connections the requests' pool opens at most (more requests under way wait for one), and how long one may sit
 * unused in it. Each HTTPS connection holds memory (its TLS state and buffers) for as long as it is open. 24, for the
 * requests alone (watches have a pool of their own): fewer writes at once queue less in the API servers, so pods get
 * Ready no later and clusterlet uses less memory and CPU than with a connection for each worker of the lifecycle and
 * status queues; more connections spare requests their wait for one but bring proxies Ready no sooner after their
 * delegates, for a higher peak RSS. See docs/performance.md, 'Request connections'.
 */
export const MAX_REQUEST_SOCKETS = 24;
const IDLE_SOCKET_MS = 30_000;
/** Connections a watch pool keeps for reuse once their watch ended: the watch that resumes takes one at once. */
const FREE_WATCH_SOCKETS = 16;

export interface WatchHandlers {
  /** Each event line, parsed (not revived). */
  onEvent(type: string, object: unknown): void;
  signal: AbortSignal;
  /** The watch is ended with a TimeoutError when nothing arrives for this long. */
  idleMs: number;
  /**
   * Cut each object's managedFields out of the bytes before parsing (eventline.ts), for the kinds that come by the
   * thousand (pods). Not for every watch: the byte scan is JavaScript, and once it is hot V8's optimizing compiler
   * runs, whose code is megabytes of the node binary paged in: an idle clusterlet scanning only its leases and nodes
   * would pay that in RSS for nothing (docs/performance.md, 'The event line parser').
   */
  cutManagedFields?: boolean;
  /** With cutManagedFields: the specs the watch's store has, reused where an event's are the same (eventline.ts). */
  knownSpec?: KnownSpec;
}

export class ClusterClient {
  readonly name: string;
  readonly limiter: TokenBucket;
  readonly core: Api<CoreV1Api>;
  readonly coordination: Api<CoordinationV1Api>;
  readonly events: Api<EventsV1Api>;
  readonly certificates: Api<CertificatesV1Api>;
  readonly authentication: Api<AuthenticationV1Api>;
  readonly authorization: Api<AuthorizationV1Api>;
  #access: ClusterAccess;
  /**
   * Made at the first request, with the credentials' client certificate; remade when an exec plugin rotates
   * it or the access is replaced.
   */
  #agent: Agents | undefined;
  #agentCert: Buffer | undefined;
  /** The HTTP/2 sessions of the current access and client certificate, with `http2`; remade as the agent is. */
  #h2: H2Sessions | undefined;
  #http2: boolean;
  #fence: (() => string | undefined) | undefined;
  #requestTimeoutMs: number;
  #maxRequestSockets: number;

  constructor(access: ClusterAccess, opts: ClientOptions) {
    this.name = opts.cluster;
    this.#access = access;
    this.limiter = opts.limiter ?? new TokenBucket(opts.qps, opts.burst);
    this.#fence = opts.fence;
    this.#requestTimeoutMs = opts.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
    this.#http2 = opts.http2 ?? false;
    this.#maxRequestSockets = opts.maxRequestSockets ?? MAX_REQUEST_SOCKETS;
    this.core = this.#api(GROUPS.core);
    this.coordination = this.#api(GROUPS.coordination);
    this.events = this.#api(GROUPS.events);
    this.certificates = this.#api(GROUPS.certificates);
    this.authentication = this.#api(GROUPS.authentication);
    this.authorization = this.#api(GROUPS.authorization);
  }

  get access(): ClusterAccess { return this.#access; }

  /**
   * A client of the same cluster, credentials and rate limit (one budget for both) whose writes go through `fence`:
   * e.g. the host writes made for one member, sent only while this replica leads it.
   */
  fenced(fence: () => string | undefined): ClusterClient {
    return new ClusterClient(this.#access, { cluster: this.name, qps: 0, burst: 0, limiter: this.limiter, fence,
      requestTimeoutMs: this.#requestTimeoutMs, http2: this.#http2, maxRequestSockets: this.#maxRequestSockets });
  }
  get server(): string { return this.#access.server; }

  /**
   * Uses `access` from now on: every request and watch that starts after this call goes to its server with its
   * CA and credentials. Requests and watches under way finish on their connections, which are then closed
   * instead of reused (a watch that then fails, e.g. with 401, is restarted by its caller on the new access).
   */
  setAccess(access: ClusterAccess): void {
    if (access === this.#access) return;
    this.#access = access;
    this.#retireAgent();
  }

  /**
   * One request; resolves with the parsed, revived body (text when the response is not JSON). `verb`: its Kubernetes
   * verb, for the metrics, when the caller knows it (the typed methods do); else it is read from the method and path.
   */
  async request<T>(method: string, path: string, opts: RequestOptions & { body?: unknown; verb?: string } = {}): Promise<T> {
    await this.limiter.take(opts.priority);
    const refused = method === 'GET' ? undefined : this.#fence?.();
    if (refused !== undefined) {
      metrics.fencedWrites.inc({ cluster: this.name });
      throw new KubeError('Unavailable', 0, NOT_LEADER, `${method} ${path} not sent: ${refused}`);
    }
    const verb = opts.verb ?? verbOf(method, path);
    metrics.apiRequests.inc({ cluster: this.name, verb });
    const end = metrics.apiLatency.startTimer({ cluster: this.name, verb });
    const body = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    const contentType = method === 'PATCH' ? (opts.contentType ?? PATCH.json) : 'application/json';
    let res = await this.#send(method, path, body, contentType, opts);
    if (res.status === 401) {
      res.access.invalidate();
      res = await this.#send(method, path, body, contentType, opts);
    }
    end();
    if (res.status >= 400) {
      metrics.apiErrors.inc({ cluster: this.name, code: String(res.status) });
      throw statusError(res.status, res.text);
    }
    if (opts.discard) {
      if (opts.onVersion) {
        const rv = versionOf(res.text);
        if (rv !== undefined) opts.onVersion(rv);
      }
      return undefined as T;
    }
    if (!res.json) return res.text as T;
    return parseObject<T>(res.text);
  }

  /**
   * A watch: GET `path?watch=true&…` streamed line by line into `onEvent`. Resolves when the server ends it
   * or the signal aborts it; rejects with KubeError for an error status, or a TimeoutError when idle.
   */
  async watch(path: string, query: Record<string, unknown>, h: WatchHandlers): Promise<void> {
    await this.limiter.take();
    metrics.apiRequests.inc({ cluster: this.name, verb: 'watch' });
    const { ex, access } = await this.#open('GET', `${path}${queryOf({ ...query, watch: true })}`, undefined,
      'application/json', { signal: h.signal, watch: true });
    if (ex.status !== 200) {
      const text = await readBody(ex.body);
      metrics.apiErrors.inc({ cluster: this.name, code: String(ex.status) });
      if (ex.status === 401) access.invalidate();
      throw statusError(ex.status, text);
    }
    return new Promise<void>((resolve, reject) => {
      // The bytes of a line that has not ended yet (kube-apiserver sends each event as one chunk: rarely any).
      let partial: Buffer[] = [];
      // First: a body that failed before its listeners came (in the read that brought its head) is an error, not an end.
      ex.onError((err) => (h.signal.aborted ? resolve() : reject(err)));
      ex.onIdle(h.idleMs, () => {
        const err = new Error(`watch ${path} silent for ${h.idleMs} ms`);
        err.name = 'TimeoutError';
        ex.destroy(err);
      });
      // Lines are found in the bytes and each decoded once, as a whole (a character split between chunks included):
      // decoding every chunk and joining the text would make two copies of each event before JSON.parse reads it.
      // Pods' managedFields are cut out of the bytes first (eventline.ts).
      ex.body.on('data', (chunk: Buffer) => {
        let at = 0;
        let nl: number;
        try {
          while ((nl = chunk.indexOf(0x0a, at)) >= 0) {
            let b = chunk;
            let start = at;
            let end = nl;
            if (partial.length > 0) {
              partial.push(chunk.subarray(at, nl));
              b = Buffer.concat(partial);
              start = 0;
              end = b.length;
              partial = [];
            }
            at = nl + 1;
            if (blank(b, start, end)) continue;
            const ev = (h.cutManagedFields ? parseEventLine(b, start, end, h.knownSpec) : JSON.parse(b.toString('utf8', start, end))) as
              { type: string; object: unknown };
            h.onEvent(ev.type, ev.object);
          }
          if (at < chunk.length) partial.push(at === 0 ? chunk : chunk.subarray(at));
        } catch (err) {
          ex.destroy(err as Error);
        }
      });
      ex.body.on('end', () => resolve());
      // A connection closed without an end or an error: the caller resumes the watch.
      ex.body.on('close', () => resolve());
    });
  }

  /** TLS and auth options for a raw node:https or WebSocket connection to this cluster (streaming calls). */
  async connectOptions(): Promise<HttpsRequestOptions & { headers: Record<string, string> }> {
    const access = this.#access;
    const creds = await access.credentials();
    return { ...tlsOptions(access, creds), headers: { 'user-agent': USER_AGENT, ...authHeaders(creds) } };
  }

  #api<T>(group: Group): Api<T> {
    return new Proxy({}, {
      get: (_t, prop) => {
        if (typeof prop !== 'string') return undefined;
        return (param: Record<string, unknown> = {}, opts: RequestOptions = {}) => {
          const r = route(group, prop, param);
          return this.request(r.method, r.path + queryOf(param), { ...opts, body: param.body, verb: r.verb });
        };
      },
    }) as Api<T>;
  }

  /** One request; with `discard`, the body of a success is read but not kept (an error's is, for its message). */
  async #send(method: string, path: string, body: string | undefined, contentType: string,
    { signal, discard, onVersion, priority }: RequestOptions): Promise<{ status: number; text: string; json: boolean; access: ClusterAccess }> {
    const { ex, access } = await this.#open(method, path, body, contentType,
      { signal, timeoutMs: this.#requestTimeoutMs, accept: discard ? ACCEPT_METADATA : undefined, priority });
    const text = discard && !onVersion && ex.status < 400 ? await drain(ex.body) : await readBody(ex.body);
    return { status: ex.status, text, json: ex.contentType.includes('json'), access };
  }

  /**
   * Sends one request on the current access; resolves with the response head and the access it went with. With
   * `timeoutMs`, the request is destroyed if it has not ended (its response read) by then. A `watch` goes over
   * HTTPS/1.1 whatever the protocol of requests (see ClientOptions.http2). `accept`: the Accept header (JSON).
   */
  async #open(method: string, path: string, body: string | undefined, contentType: string,
    { signal, timeoutMs, watch = false, accept = 'application/json', priority }:
      { signal?: AbortSignal; timeoutMs?: number; watch?: boolean; accept?: string; priority?: Priority }):
    Promise<{ ex: Exchange; access: ClusterAccess }> {
    let access: ClusterAccess;
    let creds: Credentials;
    do {
      access = this.#access;
      creds = await access.credentials();
    } while (access !== this.#access); // replaced while its credentials were read: use the new one
    if (!this.#agent || (creds.cert && !creds.cert.equals(this.#agentCert ?? Buffer.alloc(0)))) {
      this.#retireAgent();
      this.#agent = this.#newAgent(access, creds);
    }
    const target = targetOf(access);
    const headers: Record<string, string> = { accept, 'user-agent': USER_AGENT, ...authHeaders(creds) };
    if (target.auth && !headers.authorization) headers.authorization = `Basic ${Buffer.from(target.auth).toString('base64')}`;
    if (body !== undefined) {
      headers['content-type'] = contentType;
      headers['content-length'] = String(Buffer.byteLength(body));
    }
    const request = { method, path: target.prefix + path, headers, body, signal, timeoutMs, priority };
    // Taken now: setAccess may retire them while an HTTP/2 attempt is under way.
    const pools = this.#agent;
    const h2 = watch ? undefined : this.#h2;
    if (h2 && !h2.refused) {
      try {
        return { ex: await h2.request(request), access };
      } catch (err) {
        // A server that does not speak HTTP/2 gets this request again, and every later one, over HTTPS/1.1.
        if (!h2.refused) throw unavailable(method, access, path, err as Error);
      }
    }
    try {
      return { ex: await (watch ? pools.watches : pools.requests).request(request), access };
    } catch (err) {
      throw unavailable(method, access, path, err as Error);
    }
  }

  #newAgent(access: ClusterAccess, creds: Credentials): Agents {
    this.#agentCert = creds.cert;
    // Every connection the requests' pool opened stays for reuse while it is wanted (a TLS handshake costs more CPU
    // than the requests it serves in a burst: with fewer free slots than connections, each burst would close
    // connections the next one opens again); one unused for IDLE_SOCKET_MS is closed. Watches have a pool of their
    // own, without a cap: each holds its connection for as long as it runs, and in the requests' pool enough of them
    // (a few per member) would leave the requests none.
    const target = targetOf(access);
    const { secure, hostname, port } = target;
    const pools = (origin: H1Origin): Agents => ({
      requests: new H1Pool(origin, { maxSockets: this.#maxRequestSockets, idleMs: IDLE_SOCKET_MS,
        onWaited: (ms, priority) => metrics.connectionWait.observe({ cluster: this.name, priority }, ms / 1000) }),
      watches: new H1Pool(origin, { maxFree: FREE_WATCH_SOCKETS, idleMs: IDLE_SOCKET_MS }),
    });
    if (!secure) return pools({ secure, hostname, port });
    // One TLS context for all the pools' connections, made once from the CA, certificate and key.
    const { ca, cert, key, servername, rejectUnauthorized } = tlsOptions(access, creds);
    const secureContext = createSecureContext({ ca, cert, key });
    if (this.#http2) this.#h2 = new H2Sessions(target.origin, { secureContext, servername, rejectUnauthorized });
    return pools({ secure, hostname, port, secureContext, servername, rejectUnauthorized });
  }

  /** Stops using the pools: their idle connections are closed now, the busy ones when their exchange ends. */
  #retireAgent(): void {
    const old = this.#agent;
    this.#h2?.close();
    [this.#agent, this.#agentCert, this.#h2] = [undefined, undefined, undefined];
    old?.requests.close();
    old?.watches.close();
  }
}

/** The connection pools of one access and client certificate: the requests', and the watches'. */
interface Agents { requests: H1Pool; watches: H1Pool }

/**
 * Where an access's requests go: its server's address (and as an origin, `https://host:port`, for HTTP/2), the path its
 * API is under, and the user in its URL, if any.
 */
interface Target { secure: boolean; hostname: string; port: number; origin: string; prefix: string; auth?: string }

const targets = new WeakMap<ClusterAccess, Target>();

function targetOf(access: ClusterAccess): Target {
  let t = targets.get(access);
  if (!t) {
    const u = new URL(access.server);
    const secure = u.protocol === 'https:';
    const auth = u.username || u.password ? `${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}` : undefined;
    t = {
      secure, hostname: u.hostname.replace(/^\[(.*)\]$/, '$1'), port: u.port ? Number(u.port) : secure ? 443 : 80, origin: u.origin,
      prefix: u.pathname.replace(/\/+$/, ''), ...(auth ? { auth } : {}),
    };
    targets.set(access, t);
  }
  return t;
}

interface TLSOptions { ca?: Buffer; cert?: Buffer; key?: Buffer; servername?: string; rejectUnauthorized: boolean }

function tlsOptions(a: ClusterAccess, creds: Credentials): TLSOptions {
  return {
    ca: a.ca, cert: creds.cert, key: creds.key, servername: a.tlsServerName,
    rejectUnauthorized: !a.insecureSkipTLSVerify,
  };
}

function authHeaders(c: Credentials): Record<string, string> {
  if (c.token) return { authorization: `Bearer ${c.token}` };
  if (c.basic) return { authorization: `Basic ${Buffer.from(`${c.basic.username}:${c.basic.password}`).toString('base64')}` };
  return {};
}

/** A request that got no answer: its reason the innermost error code (ECONNREFUSED, ETIMEDOUT…). */
function unavailable(method: string, access: ClusterAccess, path: string, err: Error): KubeError {
  return new KubeError('Unavailable', 0, rootCode(err), `${method} ${access.server}${path}: ${err.message}`, { cause: err });
}

/** The innermost error code of a failed request, e.g. ECONNREFUSED under HTTP/2's ERR_HTTP2_STREAM_CANCEL. */
function rootCode(err: unknown): string {
  let e = err as { code?: string; name?: string; cause?: unknown } | undefined;
  let code = e?.code ?? e?.name ?? 'Error';
  while (e) {
    if (e.code) code = e.code;
    e = e.cause as typeof e;
  }
  return code;
}

/** The object's resourceVersion in a write's answer (its metadata, or the whole object); undefined if none. */
export function versionOf(text: string): string | undefined {
  try {
    const rv = (JSON.parse(text) as { metadata?: { resourceVersion?: unknown } }).metadata?.resourceVersion;
    return typeof rv === 'string' && rv !== '' ? rv : undefined;
  } catch {
    return undefined;
  }
}

/** Reads a response to its end, keeping nothing; resolves with ''. */
function drain(res: Body): Promise<string> {
  return new Promise((resolve, reject) => {
    res.on('end', () => resolve(''));
    res.on('error', reject);
    res.resume();
  });
}

function readBody(res: Body): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    res.on('error', reject);
  });
}

/** Whether `b[start, end)` is only JSON whitespace (a keep-alive newline). */
function blank(b: Buffer, start: number, end: number): boolean {
  for (let i = start; i < end; i++) {
    const c = b[i];
    if (c !== 0x20 && c !== 0x09 && c !== 0x0d && c !== 0x0a) return false;
  }
  return true;
}

/** A response body → the typed model's shape: timestamps as Dates, managedFields dropped, `continue` as `_continue`. */
function parseObject<T>(text: string): T {
  const o = JSON.parse(text) as { items?: unknown[]; metadata?: { continue?: string; _continue?: string } };
  if (Array.isArray(o.items)) {
    for (const it of o.items) revive(it);
    if (o.metadata?.continue !== undefined) o.metadata._continue = o.metadata.continue;
    return o as T;
  }
  return revive<T>(o);
}

/** The Kubernetes verb of a request (a path, or a URL): get/list/watch/create/update/patch/delete/deletecollection. */
export function verbOf(method: string, pathOrURL: string): string {
  const m = method.toUpperCase();
  if (m === 'POST') return 'create';
  if (m === 'PUT') return 'update';
  if (m === 'PATCH') return 'patch';
  // Parsed by hand: this runs for every request, and a URL object costs more than the request's own JSON.
  const scheme = pathOrURL.indexOf('://');
  const slash = scheme < 0 ? 0 : pathOrURL.indexOf('/', scheme + 3);
  const path = slash < 0 ? '' : pathOrURL.slice(slash);
  const q = path.indexOf('?');
  const segs = (q < 0 ? path : path.slice(0, q)).split('/').filter(Boolean);
  // Drop the group/version prefix: /api/v1/... or /apis/<group>/<version>/...
  const rest = segs[0] === 'api' ? segs.slice(2) : segs.slice(3);
  // namespaces/<ns>/<resource>..., but not a Namespace's own subresources (namespaces/<ns>/status|finalize).
  const namespaced = rest[0] === 'namespaces' && rest.length >= 3 && !(rest.length === 3 && ['status', 'finalize'].includes(rest[2]));
  const isCollection = namespaced ? rest.length === 3 : rest.length === 1;
  if (m === 'DELETE') return isCollection ? 'deletecollection' : 'delete';
  const watch = q < 0 ? null : new URLSearchParams(path.slice(q + 1)).get('watch');
  if (watch === 'true' || watch === '1') return 'watch';
  return isCollection ? 'list' : 'get';
}
