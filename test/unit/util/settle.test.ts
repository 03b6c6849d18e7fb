import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { settle } from '../../../src/util/settle.ts';

/** A logger that keeps what is logged at error level. */
function errorLog(): { error(obj: object, msg: string): void; logged: { obj: object; msg: string }[] } {
  const logged: { obj: object; msg: string }[] = [];
  return { logged, error: (obj, msg) => { logged.push({ obj, msg }); } };
}

/** Lets pending promise callbacks run. */
const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('settle', () => {
  it('logs a rejection at error level, with the error and what failed', async () => {
    const log = errorLog();
    const err = new Error('boom');
    settle(Promise.reject(err), log, 'member setup failed');
    await flush();
    assert.deepEqual(log.logged, [{ obj: { err }, msg: 'member setup failed' }]);
  });

  it('describes a rejection that is not an Error', async () => {
    const log = errorLog();
    settle(Promise.reject(new Map([['code', 7]])), log, 'sync failed');
    await flush();
    assert.deepEqual(log.logged, [{ obj: { err: "Map(1) { 'code' => 7 }" }, msg: 'sync failed' }]);
  });

  it('logs nothing when the promise resolves', async () => {
    const log = errorLog();
    settle(Promise.resolve(42), log, 'never');
    await flush();
    assert.deepEqual(log.logged, []);
  });
});
