import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { TokenBucket } from '../../../src/util/ratelimit.ts';

/** Whether `p` has settled (resolved or rejected) once pending microtasks and I/O callbacks have run. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  p.then(() => { done = true; }, () => { done = true; });
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

describe('TokenBucket', () => {
  it('hands out the burst at once', async () => {
    const b = new TokenBucket(100, 5);
    const takes = Array.from({ length: 5 }, () => b.take());
    for (const t of takes) assert.equal(await settled(t), true);
    assert.equal(b.qps, 100);
    assert.equal(b.burst, 5);
  });

  it('makes the next caller wait once the burst is spent', async () => {
    const b = new TokenBucket(10, 2);
    await b.take();
    await b.take();
    const third = b.take();
    assert.equal(await settled(third), false);
    await third;
  });

  it('then hands out about qps tokens a second', async () => {
    const b = new TokenBucket(100, 5);
    const start = performance.now();
    const first = Array.from({ length: 5 }, () => b.take());
    await Promise.all(first);
    assert.ok(performance.now() - start < 30, 'the burst should not wait');
    const rest = Array.from({ length: 10 }, () => b.take());
    await Promise.all(rest);
    const elapsed = performance.now() - start;
    // 10 tokens past the burst at 100 qps: 100 ms; allow for timer granularity.
    assert.ok(elapsed >= 90, `15 tokens took only ${elapsed.toFixed(1)} ms`);
    assert.ok(elapsed < 1000, `15 tokens took ${elapsed.toFixed(1)} ms`);
  });

  it('serves waiters in order', async () => {
    const b = new TokenBucket(200, 1);
    const order: number[] = [];
    const takes = Array.from({ length: 6 }, (_, i) => b.take().then(() => { order.push(i); }));
    await Promise.all(takes);
    assert.deepEqual(order, [0, 1, 2, 3, 4, 5]);
  });

  it('serves waiting high-priority callers before normal ones, and low ones last', async () => {
    const b = new TokenBucket(200, 1);
    await b.take(); // the burst is spent: everyone below waits
    const order: string[] = [];
    const takes = [
      b.take('low').then(() => { order.push('low'); }),
      b.take().then(() => { order.push('normal 1'); }),
      b.take('high').then(() => { order.push('high'); }),
      b.take('normal').then(() => { order.push('normal 2'); }),
    ];
    await Promise.all(takes);
    assert.deepEqual(order, ['high', 'normal 1', 'normal 2', 'low']);
  });

  it('does not let a new caller overtake waiters', async () => {
    const b = new TokenBucket(50, 1);
    const order: string[] = [];
    await b.take();
    const waiting = b.take().then(() => { order.push('first'); });
    // Hold the event loop past the waiter's due time, so a token is available before its timer fires:
    // the next caller must still queue behind the waiter.
    const until = performance.now() + 30;
    while (performance.now() < until) { /* busy */ }
    const late = b.take().then(() => { order.push('second'); });
    await Promise.all([waiting, late]);
    assert.deepEqual(order, ['first', 'second']);
  });

  it('banks at most burst tokens while idle', async () => {
    const b = new TokenBucket(1000, 2);
    await new Promise((resolve) => setTimeout(resolve, 20)); // 20 tokens' worth of time
    await b.take();
    await b.take();
    const third = b.take();
    assert.equal(await settled(third), false);
    await third;
  });

  it('rejects invalid arguments', () => {
    for (const [qps, burst] of [[0, 1], [-1, 1], [Number.NaN, 1], [10, 0], [10, 0.5], [10, -3], [10, Number.NaN]]) {
      assert.throws(() => new TokenBucket(qps, burst), /invalid rate limit/, `qps=${qps} burst=${burst}`);
    }
  });

  it('accepts a fractional qps', async () => {
    const b = new TokenBucket(0.5, 1);
    assert.equal(await settled(b.take()), true);
  });
});
