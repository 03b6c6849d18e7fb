/** Capped exponential backoff with ±20 % jitter: base·2^attempt, at most `max` ms. */
export function backoffDelay(attempt: number, baseMs = 200, maxMs = 30_000): number {
  const raw = Math.min(maxMs, baseMs * 2 ** Math.min(attempt, 30));
  return Math.round(raw * (0.8 + Math.random() * 0.4));
}
