/** Capped exponential backoff with ±20 % jitter: base·2^attempt, at most `max` ms. */
export function backoffDelay(attempt: number, baseMs = 200, maxMs = 30_000): number {
  const raw = Math.min(maxMs, baseMs * 2 ** Math.min(attempt, 30));
  return Math.round(raw * (0.8 + Math.random() * 0.4));
}

/**
 * Runs `fn` until it succeeds, waiting with capped backoff (1 s … 30 s) between attempts and logging each failure
 * as `what`. Gives up (rethrowing the last error) once `stopped()` says so.
 */
export async function retryWithBackoff<T>(fn: () => Promise<T>, what: string,
  log: { warn(obj: object, msg: string): void }, stopped: () => boolean = () => false): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (stopped()) throw err;
      const delay = backoffDelay(attempt, 1000, 30_000);
      log.warn({ err: (err as Error).message, retryInMs: delay }, `${what}; retrying`);
      await new Promise((r) => setTimeout(r, delay).unref());
    }
  }
}
