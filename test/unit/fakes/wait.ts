// Waiting in unit tests against fakes: for a condition (polled, bounded: the test fails naming what it waited
// for), or for queues to handle what is pending.
import assert from 'node:assert/strict';

export async function eventually(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    // A synchronous check is answered without a turn of the microtask queue, as callers that read the fakes expect.
    const r = check();
    if (r === true || (r !== false && await r)) return;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((res) => setTimeout(res, 5));
  }
}

/** Long enough for work queues to have handled what is pending: for asserting that something did not happen. */
export const settle = (): Promise<void> => new Promise((r) => setTimeout(r, 20));
