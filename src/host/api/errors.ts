// Errors of the kubelet API, typed once and mapped to HTTP status codes in one place (as virtual-kubelet's
// node/api does). Handlers throw; the server answers. The runtime's refusals keep their status (the caller sees
// "container not found" as the back end said it), except refusals of clusterlet's own credentials, which are a
// server-side problem (502), not the caller's.
import type { ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { toKubeError, type KubeError } from '../../kube/errors.ts';
import { isProviderError, type ProviderError } from '../../provider/errors.ts';

export type ApiErrorKind =
  | 'BadRequest' | 'Unauthorized' | 'Forbidden' | 'NotFound' | 'MethodNotAllowed' | 'Invalid'
  | 'BadGateway' | 'Unavailable' | 'Internal';

const STATUS: Record<ApiErrorKind, number> = {
  BadRequest: 400, Unauthorized: 401, Forbidden: 403, NotFound: 404, MethodNotAllowed: 405, Invalid: 422,
  BadGateway: 502, Unavailable: 503, Internal: 500,
};

export class ApiError extends Error {
  readonly kind: ApiErrorKind;
  /** Set when the status comes from the back end as is. */
  readonly #status: number | undefined;

  constructor(kind: ApiErrorKind, message: string, options?: { cause?: unknown; status?: number }) {
    super(message, options);
    this.name = 'ApiError';
    this.kind = kind;
    this.#status = options?.status;
  }

  get status(): number { return this.#status ?? STATUS[this.kind]; }
}

/**
 * A runtime's failure as the caller sees it: no such pod or container → 404, a request the back end refused → its
 * status; the back end unreachable, failing or refusing clusterlet's own credentials → 502.
 */
function fromProvider(err: ProviderError): ApiError {
  switch (err.kind) {
    case 'NotFound': return new ApiError('NotFound', err.message, { cause: err });
    case 'InvalidInput': return new ApiError('BadRequest', err.message, { cause: err, status: err.status });
    case 'Forbidden':
    case 'Unavailable':
    case 'Upstream': return new ApiError('BadGateway', err.message, { cause: err });
  }
}

/** Anything thrown → ApiError. Provider and Kubernetes client errors keep their meaning. */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (isProviderError(err)) return fromProvider(err);
  const e = err as { name?: string; code?: unknown };
  if (e?.name === 'ApiException' || e?.name === 'KubeError' || typeof e?.code === 'number') {
    const k: KubeError = toKubeError(err);
    if (k.kind === 'Unavailable') return new ApiError('Unavailable', k.message, { cause: err });
    if (k.kind === 'NotFound') return new ApiError('NotFound', k.message, { cause: err });
    return new ApiError('Internal', k.message, { cause: err });
  }
  return new ApiError('Internal', (err as Error)?.message ?? String(err), { cause: err });
}

/** Plain-text error answer, as the kubelet gives. */
export function sendError(res: ServerResponse, err: unknown): void {
  const e = toApiError(err);
  if (res.headersSent) {
    res.destroy(e);
    return;
  }
  const body = `${e.message}\n`;
  res.writeHead(e.status, {
    'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(body),
    ...(e.kind === 'Unauthorized' ? { 'WWW-Authenticate': 'Bearer realm="clusterlet"' } : {}),
  });
  res.end(body);
}

/** The same for a request that asked to upgrade: the answer is written on the raw socket. */
export function sendUpgradeError(socket: Duplex, err: unknown): void {
  const e = toApiError(err);
  const body = `${e.message}\n`;
  if (!socket.writable) { socket.destroy(); return; }
  socket.end(`HTTP/1.1 ${e.status} ${reasonPhrase(e.status)}\r\nContent-Type: text/plain; charset=utf-8\r\n`
    + `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
}

function reasonPhrase(status: number): string {
  return ({ 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 405: 'Method Not Allowed',
    422: 'Unprocessable Entity', 500: 'Internal Server Error', 502: 'Bad Gateway', 503: 'Service Unavailable' } as Record<number, string>)[status]
    ?? 'Error';
}
