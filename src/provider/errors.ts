// Errors a provider reports across the seam, typed once (as virtual-kubelet's errdefs): the host side decides
// what each means to its caller (a proxy condition, an HTTP status of the kubelet API), never by parsing text.

/**
 * Why the back end refused a pod: shown on the proxy (condition + Warning event) and retried with capped backoff,
 * unless `retry` is false (nothing but a change of configuration can make it work: the pod waits for an update).
 */
export class PodRejectedError extends Error {
  readonly reason: string;
  readonly retry: boolean;
  /**
   * Its message changes with the back end's state (free room, counts) while its reason stays: the proxy's condition
   * and event are rewritten on a change of reason, and only seldom for a change of message alone.
   */
  readonly changing: boolean;
  /**
   * Tried again this soon, without backoff: what it waits for ends by itself, soon, and nothing tells when (a member
   * namespace being deleted). Undefined: capped backoff.
   */
  readonly retryAfterMs: number | undefined;
  constructor(reason: string, message: string, options?: { cause?: unknown; retry?: boolean; changing?: boolean; retryAfterMs?: number }) {
    super(message, options);
    this.name = 'PodRejectedError';
    this.reason = reason;
    this.retry = options?.retry ?? true;
    this.changing = options?.changing ?? false;
    this.retryAfterMs = options?.retryAfterMs;
  }
}

/**
 * The back end cannot judge the pod yet: what it needs is still being read (a member's node list). Nothing is shown
 * on the proxy; it is tried again after `retryAfterMs`.
 */
export class PodNotReadyError extends Error {
  readonly retryAfterMs: number;
  constructor(message: string, retryAfterMs: number) {
    super(message);
    this.name = 'PodNotReadyError';
    this.retryAfterMs = retryAfterMs;
  }
}

export type ProviderErrorKind =
  /** No such pod, container or delegate (yet). */
  | 'NotFound'
  /** The request cannot work as asked (a bad option, a container the back end refuses); `status` keeps the back end's code. */
  | 'InvalidInput'
  /** The back end cannot be reached, or did not answer in time. */
  | 'Unavailable'
  /** The back end refused clusterlet's own credentials: a problem of its set-up, not of the caller. */
  | 'Forbidden'
  /** The back end failed otherwise. */
  | 'Upstream';

export class ProviderError extends Error {
  readonly kind: ProviderErrorKind;
  /** The back end's HTTP status, when it answered with one. */
  readonly status: number | undefined;
  constructor(kind: ProviderErrorKind, message: string, options?: { cause?: unknown; status?: number }) {
    super(message, options);
    this.name = 'ProviderError';
    this.kind = kind;
    this.status = options?.status;
  }
}

export function isProviderError(err: unknown, kind?: ProviderErrorKind): err is ProviderError {
  return err instanceof ProviderError && (kind === undefined || err.kind === kind);
}
