// The kubelet API's paths (as pkg/kubelet/server registers them) → what a request asks for. Pure.
import { ApiError } from './errors.ts';

export type Route =
  | { kind: 'containerLogs'; namespace: string; pod: string; container: string }
  | { kind: 'exec' | 'attach'; namespace: string; pod: string; uid?: string; container: string }
  | { kind: 'portForward'; namespace: string; pod: string; uid?: string }
  | { kind: 'pods' | 'runningpods' | 'statsSummary' | 'metricsResource' | 'healthz' };

export type PodRoute = Extract<Route, { pod: string }>;
/** The routes about the node as a whole. */
export type NodeRoute = Exclude<Route, PodRoute>;
/** The routes that upgrade the connection to a stream. */
export type StreamRoute = Extract<Route, { kind: 'exec' | 'attach' | 'portForward' }>;

export function isPodRoute(r: Route): r is PodRoute { return 'pod' in r; }
export function isStreamRoute(r: Route): r is StreamRoute {
  return r.kind === 'exec' || r.kind === 'attach' || r.kind === 'portForward';
}

/** The route of `method path`; ApiError NotFound / MethodNotAllowed otherwise. */
export function route(method: string | undefined, path: string): Route {
  const m = (method ?? 'GET').toUpperCase();
  const segs = path.split('/').slice(1);
  if (segs.length && segs[segs.length - 1] === '' && segs.length > 1) segs.pop();
  let parts: string[];
  try {
    parts = segs.map((s) => decodeURIComponent(s));
  } catch {
    throw new ApiError('BadRequest', `malformed path ${path}`);
  }
  const [head, ...rest] = parts;
  const only = (...methods: string[]): void => {
    if (!methods.includes(m)) throw new ApiError('MethodNotAllowed', `${m} is not allowed on ${path}`);
  };
  const nonEmpty = rest.every((p) => p !== '');
  switch (head) {
    case 'containerLogs':
      if (rest.length === 3 && nonEmpty) {
        only('GET');
        return { kind: 'containerLogs', namespace: rest[0], pod: rest[1], container: rest[2] };
      }
      break;
    case 'exec':
    case 'attach':
      if ((rest.length === 3 || rest.length === 4) && nonEmpty) {
        only('GET', 'POST');
        return rest.length === 3
          ? { kind: head, namespace: rest[0], pod: rest[1], container: rest[2] }
          : { kind: head, namespace: rest[0], pod: rest[1], uid: rest[2], container: rest[3] };
      }
      break;
    case 'portForward':
      if ((rest.length === 2 || rest.length === 3) && nonEmpty) {
        only('GET', 'POST');
        return { kind: 'portForward', namespace: rest[0], pod: rest[1], ...(rest.length === 3 ? { uid: rest[2] } : {}) };
      }
      break;
    case 'pods':
      if (rest.length === 0) { only('GET'); return { kind: 'pods' }; }
      break;
    case 'runningpods':
      if (rest.length === 0) { only('GET'); return { kind: 'runningpods' }; }
      break;
    case 'stats':
      if (rest.length === 1 && rest[0] === 'summary') { only('GET', 'POST'); return { kind: 'statsSummary' }; }
      break;
    case 'metrics':
      if (rest.length === 1 && rest[0] === 'resource') { only('GET'); return { kind: 'metricsResource' }; }
      break;
    case 'healthz':
      if (rest.length === 0) { only('GET'); return { kind: 'healthz' }; }
      break;
  }
  throw new ApiError('NotFound', `${path} not found`);
}
