// Mocked time for timer-driven unit tests (node:test's mock timers): setTimeout, setInterval and Date move only
// when the test says, and the fakes' answers (promises, no time) run between steps, so minutes take milliseconds.
import type { TestContext } from 'node:test';

export const T0 = Date.parse('2025-06-01T12:00:00.000Z');

/** Mocks setTimeout, setInterval and Date from T0 for this test (restored when it ends). */
export function mockTime(t: TestContext): void {
  t.mock.timers.enable({ apis: ['setInterval', 'setTimeout', 'Date'], now: T0 });
}

/** Lets pending promise chains run (answers of in-memory fakes take no time); setImmediate is not mocked. */
export async function flush(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
}

/** Moves the mocked clock to `to` (ms since the epoch) in steps of at most `stepMs`, letting promises run after each. */
export async function advanceTo(t: TestContext, to: number, stepMs = 50): Promise<void> {
  await flush();
  while (Date.now() < to) {
    t.mock.timers.tick(Math.min(stepMs, to - Date.now()));
    await flush();
  }
}
