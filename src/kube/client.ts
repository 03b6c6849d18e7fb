// One API client per cluster: typed APIs that share a client-side rate limit and count every
// request by verb and status code for /metrics.
import {
  CoordinationV1Api, CoreV1Api, EventsV1Api, KubeConfig, ServerConfiguration, createConfiguration,
  type RequestContext, type ResponseContext,
} from '@kubernetes/client-node';
import { TokenBucket } from '../util/ratelimit.ts';
import { metrics } from '../metrics.ts';

export interface ClientOptions {
  /** Name used in metrics and logs: "host" or the member's name. */
  cluster: string;
  qps: number;
  burst: number;
}

type Dispatcher = ReturnType<RequestContext['getDispatcher']>;
type ApiClass<T> = new (config: ReturnType<typeof createConfiguration>) => T;

export class ClusterClient {
  readonly name: string;
  readonly kc: KubeConfig;
  readonly core: CoreV1Api;
  readonly coordination: CoordinationV1Api;
  readonly events: EventsV1Api;
  readonly limiter: TokenBucket;
  /**
   * One connection pool for every request to this cluster. client-node 2.0.1 builds a new undici Agent for
   * each request, so each request paid a TLS handshake; the first request's agent is kept and reused.
   */
  #dispatcher: Dispatcher;

  constructor(kc: KubeConfig, opts: ClientOptions) {
    this.name = opts.cluster;
    this.kc = kc;
    this.limiter = new TokenBucket(opts.qps, opts.burst);
    this.core = this.#make(CoreV1Api);
    this.coordination = this.#make(CoordinationV1Api);
    this.events = this.#make(EventsV1Api);
  }

  get server(): string {
    const c = this.kc.getCurrentCluster();
    if (!c) throw new Error(`kubeconfig for ${this.name} has no current cluster`);
    return c.server;
  }

  #make<T>(cls: ApiClass<T>): T {
    const limiter = this.limiter;
    const cluster = this.name;
    const pool = (ctx: RequestContext): void => {
      this.#dispatcher ??= ctx.getDispatcher();
      if (this.#dispatcher) ctx.setDispatcher(this.#dispatcher);
    };
    const config = createConfiguration({
      baseServer: new ServerConfiguration(this.server, {}),
      authMethods: { default: this.kc },
      promiseMiddleware: [{
        async pre(ctx: RequestContext): Promise<RequestContext> {
          await limiter.take();
          pool(ctx);
          metrics.apiRequests.inc({ cluster, verb: verbOf(String(ctx.getHttpMethod()), ctx.getUrl()) });
          return ctx;
        },
        async post(res: ResponseContext): Promise<ResponseContext> {
          if (res.httpStatusCode >= 400) metrics.apiErrors.inc({ cluster, code: String(res.httpStatusCode) });
          return res;
        },
      }],
    });
    return new cls(config);
  }
}

/** The Kubernetes verb of a request: get/list/watch/create/update/patch/delete/deletecollection. */
export function verbOf(method: string, url: string): string {
  const u = new URL(url);
  const m = method.toUpperCase();
  if (m === 'POST') return 'create';
  if (m === 'PUT') return 'update';
  if (m === 'PATCH') return 'patch';
  const segs = u.pathname.split('/').filter(Boolean);
  // Drop the group/version prefix: /api/v1/... or /apis/<group>/<version>/...
  const rest = segs[0] === 'api' ? segs.slice(2) : segs.slice(3);
  // namespaces/<ns>/<resource>..., but not a Namespace's own subresources (namespaces/<ns>/status|finalize).
  const namespaced = rest[0] === 'namespaces' && rest.length >= 3 && !(rest.length === 3 && ['status', 'finalize'].includes(rest[2]));
  const isCollection = namespaced ? rest.length === 3 : rest.length === 1;
  if (m === 'DELETE') return isCollection ? 'deletecollection' : 'delete';
  const watch = u.searchParams.get('watch');
  if (watch === 'true' || watch === '1') return 'watch';
  return isCollection ? 'list' : 'get';
}
