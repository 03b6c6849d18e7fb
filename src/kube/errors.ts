// API errors mapped once to typed errors (docs/CONVENTIONS.md): callers branch on `kind`, never on raw codes.

export type KubeErrorKind =
  | 'NotFound' | 'AlreadyExists' | 'Conflict' | 'Invalid' | 'Forbidden' | 'Unauthorized'
  | 'Gone' | 'TooManyRequests' | 'Unavailable' | 'BadRequest' | 'Unknown';

export class KubeError extends Error {
  readonly kind: KubeErrorKind;
  readonly code: number;
  /** The API server's Status.reason, e.g. "Forbidden", "AlreadyExists". */
  readonly reason: string;

  constructor(kind: KubeErrorKind, code: number, reason: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'KubeError';
    this.kind = kind;
    this.code = code;
    this.reason = reason;
  }
}

interface StatusBody { message?: string; reason?: string; code?: number }

function parseBody(body: unknown): StatusBody {
  if (typeof body === 'string') {
    try {
      const parsed: unknown = JSON.parse(body);
      return parsed && typeof parsed === 'object' ? parsed as StatusBody : { message: body };
    } catch { return { message: body }; }
  }
  return (body && typeof body === 'object') ? body as StatusBody : {};
}

function kindOf(code: number, reason: string): KubeErrorKind {
  switch (code) {
    case 400: return 'BadRequest';
    case 401: return 'Unauthorized';
    case 403: return 'Forbidden';
    case 404: return 'NotFound';
    case 409: return reason === 'AlreadyExists' ? 'AlreadyExists' : 'Conflict';
    case 410: return 'Gone';
    case 422: return 'Invalid';
    case 429: return 'TooManyRequests';
    default: return code >= 500 || code === 0 ? 'Unavailable' : 'Unknown';
  }
}

/** An error response (status code and body text, usually a Status) → KubeError. */
export function statusError(code: number, body: string): KubeError {
  const s = parseBody(body);
  const reason = s.reason ?? '';
  return new KubeError(kindOf(code, reason), code, reason, s.message || body.trim() || `HTTP ${code}`);
}

/** Any thrown value → KubeError. Connection failures (no HTTP status) are Unavailable. */
export function toKubeError(err: unknown): KubeError {
  if (err instanceof KubeError) return err;
  // client-node's ApiException (tests and tools still use its typed clients): { code, body }.
  const ae = err as { code?: unknown; body?: unknown; message?: string };
  if (typeof ae?.code === 'number' && 'body' in (ae as object)) {
    const body = parseBody(ae.body);
    const reason = body.reason ?? '';
    return new KubeError(kindOf(ae.code, reason), ae.code, reason, body.message ?? ae.message ?? String(err), { cause: err });
  }
  const e = err as { statusCode?: number; code?: string; message?: string; name?: string };
  if (typeof e?.statusCode === 'number') {
    return new KubeError(kindOf(e.statusCode, ''), e.statusCode, '', e.message ?? String(err), { cause: err });
  }
  const message = e?.message ?? String(err);
  const causeCode = (err as { cause?: { code?: string } })?.cause?.code;
  return new KubeError('Unavailable', 0, e?.code ?? causeCode ?? e?.name ?? '', message, { cause: err });
}

/** The reason of a write a fenced client did not send (kube/client.ts: its replica cannot be sure it still leads). */
export const NOT_LEADER = 'NotLeader';

/** A write the replica's fence kept back: never sent, so nothing of it happened. */
export function refusedByFence(err: unknown): boolean {
  return err instanceof KubeError && err.reason === NOT_LEADER;
}

export function isKind(err: unknown, ...kinds: KubeErrorKind[]): boolean {
  return kinds.includes(toKubeError(err).kind);
}

/** Runs `fn`, mapping errors; resolves undefined on NotFound. */
export async function ignoreNotFound<T>(fn: () => Promise<T>): Promise<T | undefined> {
  try { return await fn(); } catch (err) {
    const k = toKubeError(err);
    if (k.kind === 'NotFound') return undefined;
    throw k;
  }
}

/** For deletes with a UID precondition: gone already (NotFound) or replaced by another object (Conflict). */
export function isGone(err: unknown): boolean {
  return isKind(err, 'NotFound', 'Conflict');
}

/** For deletes with a UID precondition: throws the error mapped, unless it says the object is gone (isGone). */
export function ignoreGone(err: unknown): void {
  if (!isGone(err)) throw toKubeError(err);
}
