// Bounded polling for controller unit tests: fails the test, naming what it waited for, when time is up.
import assert from 'node:assert/strict';

export async function eventually(what: string, check: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
