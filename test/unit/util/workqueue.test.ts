import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { priorityNames, WorkQueue } from '../../../src/util/workqueue.ts';
import { metrics, registry } from '../../../src/metrics.ts';
import type { Handler, HandlerResult, WorkQueueOptions } from '../../../src/util/workqueue.ts';

interface Deferred<T = void> {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (err: Error) => void;
}

function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (err: Error) => void;
  const promise = new Promise<T>((res, rej) => { resolve = res; reject = rej; });
  return { promise, resolve, reject };
}

/** Lets pending promise callbacks and immediates run. */
const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * A handler whose calls each wait for the test to release them, recording what ran and how much ran at once.
 */
class Gate {
  readonly calls: string[] = [];
  readonly running = new Map<string, number>();
  maxRunning = 0;
  maxSameKey = 0;
  #pending: { key: string; done: Deferred<HandlerResult | void> }[] = [];
  #arrivals: Deferred[] = [];

  readonly handler: Handler = (key) => {
    this.calls.push(key);
    const n = (this.running.get(key) ?? 0) + 1;
    this.running.set(key, n);
    this.maxSameKey = Math.max(this.maxSameKey, n);
    this.maxRunning = Math.max(this.maxRunning, this.active);
    const done = deferred<HandlerResult | void>();
    this.#pending.push({ key, done });
    for (const a of this.#arrivals.splice(0)) a.resolve();
    return done.promise.finally(() => {
      this.running.set(key, (this.running.get(key) ?? 1) - 1);
    });
  };

  get active(): number {
    let n = 0;
    for (const v of this.running.values()) n += v;
    return n;
  }

  /** Keys of the calls not yet released, oldest first. */
  get pending(): string[] { return this.#pending.map((p) => p.key); }

  /** Resolves once `n` calls are waiting to be released. */
  async waiting(n: number): Promise<void> {
    while (this.#pending.length < n) {
      const d = deferred();
      this.#arrivals.push(d);
      await d.promise;
    }
  }

  /** Releases the oldest waiting call of `key` (or the oldest call). */
  release(key?: string, result?: HandlerResult | Error): void {
    const i = key === undefined ? 0 : this.#pending.findIndex((p) => p.key === key);
    assert.ok(i >= 0 && i < this.#pending.length, `no waiting call for ${key ?? 'any key'}`);
    const [p] = this.#pending.splice(i, 1);
    if (result instanceof Error) p.done.reject(result);
    else p.done.resolve(result);
  }
}

/** A queue started on a new Gate. */
function started(opts: WorkQueueOptions): { q: WorkQueue; gate: Gate } {
  const q = new WorkQueue(opts);
  const gate = new Gate();
  q.start(gate.handler);
  return { q, gate };
}

/** What one worker does with keys added as (key, priority) before it starts: the order it processes them in, and how many were queued. */
async function processing(adds: [string, number?][]): Promise<{ order: string[]; depth: number }> {
  const q = new WorkQueue({ name: 'order', workers: 1 });
  const order: string[] = [];
  for (const [key, priority] of adds) q.add(key, priority);
  const depth = q.depth;
  q.start(async (key) => { order.push(key); });
  await q.idle();
  return { order, depth };
}

describe('WorkQueue', () => {
  it('rejects fewer than one worker', () => {
    assert.throws(() => new WorkQueue({ name: 'q', workers: 0 }), /workers/);
    assert.throws(() => new WorkQueue({ name: 'q', workers: Number.NaN }), /workers/);
  });

  it('processes a key added many times while queued once', async () => {
    const q = new WorkQueue({ name: 'dedup', workers: 1 });
    const calls: string[] = [];
    for (let i = 0; i < 5; i++) q.add('a');
    q.add('b');
    q.add('a');
    assert.equal(q.depth, 2);
    q.start(async (key) => { calls.push(key); });
    await q.idle();
    assert.deepEqual(calls, ['a', 'b']);
  });

  it('processes a key queued behind a busy worker once', async () => {
    const { q, gate } = started({ name: 'dedup-busy', workers: 1 });
    q.add('x');
    await gate.waiting(1);
    q.add('a');
    q.add('a');
    q.add('a');
    assert.equal(q.depth, 1);
    gate.release('x');
    await gate.waiting(1);
    gate.release('a');
    await q.idle();
    assert.deepEqual(gate.calls, ['x', 'a']);
  });

  describe('clusterlet_queue_wait_seconds', () => {
    /** The queue's observed waits: how many, and their sum in seconds. */
    async function waits(queue: string): Promise<{ count: number; sum: number }> {
      const values = (await metrics.queueWait.get()).values.filter((v) => v.labels.queue === queue);
      const of = (suffix: string): number => values.find((v) => v.metricName === `clusterlet_queue_wait_seconds${suffix}`)?.value ?? 0;
      return { count: of('_count'), sum: of('_sum') };
    }

    it('observes how long each key waited for a worker, by queue', async (t) => {
      let now = 1000;
      t.mock.method(performance, 'now', () => now);
      const { q, gate } = started({ name: 'wait-worker', workers: 1 });
      q.add('a');
      q.add('b');
      await gate.waiting(1);
      assert.deepEqual(await waits('wait-worker'), { count: 1, sum: 0 }, 'a was taken at once');
      now += 250;
      q.add('b'); // again while it waits: its wait still counts from its first add
      gate.release('a');
      await gate.waiting(1);
      assert.deepEqual(gate.pending, ['b']);
      assert.deepEqual(await waits('wait-worker'), { count: 2, sum: 0.25 }, 'b waited 250 ms for the one worker');
      gate.release('b');
      await q.idle();
      q.shutdown();
    });

    it('observes the waits by the priority each key ran at, named as the queue names them, and drops them at shutdown', async (t) => {
      let now = 1000;
      t.mock.method(performance, 'now', () => now);
      const names = priorityNames({ later: 0, first: 1 });
      assert.deepEqual(names, ['later', 'first']);
      const { q, gate } = started({ name: 'wait-lanes', workers: 1, priorityNames: names });
      q.add('x', 1);
      await gate.waiting(1);
      q.add('a', 0);
      q.add('b', 1);
      now += 100;
      gate.release('x');
      await gate.waiting(1);
      now += 200;
      gate.release('b');
      await gate.waiting(1);
      gate.release('a');
      await q.idle();
      const byLane = async (priority: string) => (await metrics.queueWait.get()).values
        .filter((v) => v.labels.queue === 'wait-lanes' && v.labels.priority === priority && v.metricName === 'clusterlet_queue_wait_seconds_sum')
        .map((v) => Math.round(v.value * 1000));
      assert.deepEqual(await byLane('first'), [100], 'x at once, b after x\'s 100 ms');
      assert.deepEqual(await byLane('later'), [300], 'a behind both');
      q.shutdown();
      assert.doesNotMatch(await registry.metrics(), /queue="wait-lanes"/);
    });

    it('a key added while it runs waits from the end of that run, not during it (as client-go\'s)', async (t) => {
      let now = 1000;
      t.mock.method(performance, 'now', () => now);
      const { q, gate } = started({ name: 'wait-dirty', workers: 1 });
      q.add('a');
      await gate.waiting(1);
      now += 500;
      q.add('a');
      now += 300;
      gate.release('a');
      await gate.waiting(1);
      assert.deepEqual(gate.calls, ['a', 'a']);
      assert.deepEqual(await waits('wait-dirty'), { count: 2, sum: 0 }, 'its second run started as its first ended');
      gate.release('a');
      await q.idle();
      q.shutdown();
    });
  });

  it('processes a key added while it is processed again afterwards, never concurrently', async () => {
    const { q, gate } = started({ name: 'dirty', workers: 4 });
    q.add('a');
    await gate.waiting(1);
    q.add('a');
    q.add('a');
    await flush();
    assert.deepEqual(gate.calls, ['a'], 'a must not run twice at once');
    assert.equal(q.depth, 1, 'a waits for its run to end');
    gate.release('a');
    await gate.waiting(1);
    assert.deepEqual(gate.calls, ['a', 'a']);
    gate.release('a');
    await q.idle();
    assert.deepEqual(gate.calls, ['a', 'a']);
    assert.equal(gate.maxSameKey, 1);
  });

  it('runs at most `workers` keys at once and all of them eventually', async () => {
    const { q, gate } = started({ name: 'bounded', workers: 2 });
    for (const k of ['a', 'b', 'c', 'd', 'e']) q.add(k);
    await gate.waiting(2);
    await flush();
    assert.deepEqual(gate.pending, ['a', 'b']);
    assert.equal(q.depth, 3);
    gate.release('b');
    await gate.waiting(2);
    assert.deepEqual(gate.pending, ['a', 'c']);
    while (gate.calls.length < 5 || gate.pending.length > 0) {
      await gate.waiting(1);
      gate.release();
    }
    await q.idle();
    assert.deepEqual([...gate.calls].sort(), ['a', 'b', 'c', 'd', 'e']);
    assert.equal(gate.maxRunning, 2);
  });

  it('keeps keys in FIFO order with one worker', async () => {
    assert.deepEqual((await processing([['c'], ['a'], ['b']])).order, ['c', 'a', 'b']);
  });

  describe('priorities', () => {
    it('runs keys of a higher priority first, each priority in the order added', async () => {
      const { order } = await processing([['low1', 0], ['mid1', 1], ['low2', 0], ['high', 2], ['mid2', 1]]);
      assert.deepEqual(order, ['high', 'mid1', 'mid2', 'low1', 'low2']);
    });

    it('raises a queued key added again at a higher priority, keeping it queued once; a lower one never demotes it', async () => {
      const { order, depth } = await processing([['a', 1], ['b', 1], ['c', 0], ['c', 2], ['a', 0]]);
      assert.equal(depth, 3);
      assert.deepEqual(order, ['c', 'a', 'b']);
    });

    it('a key added while it runs keeps its place: it runs, once that run ends, before keys added after it', async () => {
      const { q, gate } = started({ name: 'prio-running', workers: 2 });
      q.add('a');
      q.add('x');
      await gate.waiting(2);
      q.add('a');
      q.add('b');
      q.add('c');
      gate.release('x');
      await gate.waiting(2);
      assert.deepEqual(gate.pending, ['a', 'b'], 'a still runs: b takes the free worker');
      gate.release('a');
      await gate.waiting(2);
      assert.deepEqual(gate.pending, ['b', 'a'], 'a, added again before c, goes first');
      gate.release('b');
      gate.release('a');
      await gate.waiting(1);
      gate.release('c');
      await q.idle();
      assert.deepEqual(gate.calls, ['a', 'x', 'b', 'a', 'c']);
      assert.equal(gate.maxSameKey, 1);
    });

    it('a key raised while it runs runs next, at that priority', async () => {
      const { q, gate } = started({ name: 'prio-running-raise', workers: 1 });
      q.add('a');
      await gate.waiting(1);
      q.add('c', 1);
      q.add('a', 2);
      gate.release('a');
      await gate.waiting(1);
      gate.release('a');
      await gate.waiting(1);
      gate.release('c');
      await q.idle();
      assert.deepEqual(gate.calls, ['a', 'a', 'c']);
    });

    it('runs urgent keys on their own workers when the others are taken, and only them', async () => {
      const { q, gate } = started({ name: 'prio-urgent', workers: 1, urgent: { priority: 2, workers: 1 } });
      q.add('a');
      await gate.waiting(1);
      q.add('b', 1);
      q.add('u', 2);
      await gate.waiting(2);
      q.add('v', 3);
      await flush();
      assert.deepEqual(gate.pending, ['a', 'u'], 'b waits for a worker; u takes the urgent one; v waits for one');
      gate.release('a');
      await gate.waiting(2);
      assert.deepEqual(gate.pending, ['u', 'v']);
      gate.release('u');
      await gate.waiting(2);
      assert.deepEqual(gate.pending, ['v', 'b']);
      gate.release('v');
      gate.release('b');
      await q.idle();
      assert.equal(gate.maxRunning, 2);
    });

    it('retries a failed key at the priority it ran with', async (t) => {
      t.mock.timers.enable({ apis: ['setTimeout'] });
      const { q, gate } = started({ name: 'prio-retry', workers: 1, baseDelayMs: 100, maxDelayMs: 100 });
      q.add('a', 2);
      await gate.waiting(1);
      gate.release('a', new Error('once'));
      q.add('x');
      await gate.waiting(1);
      q.add('b', 1);
      t.mock.timers.tick(200);
      gate.release('x');
      await gate.waiting(1);
      assert.deepEqual(gate.pending, ['a'], 'the retry of a goes before b, queued earlier at a lower priority');
      gate.release('a');
      await gate.waiting(1);
      gate.release('b');
      await q.idle();
      assert.deepEqual(gate.calls, ['a', 'x', 'a', 'b']);
    });

    it('addAfter: the key comes at its priority once due, ahead of lower ones queued earlier', async (t) => {
      t.mock.timers.enable({ apis: ['setTimeout'] });
      const q = new WorkQueue({ name: 'prio-after', workers: 1 });
      const calls: string[] = [];
      q.addAfter('later', 100, 1);
      q.add('early', 0);
      t.mock.timers.tick(100);
      q.start(async (key) => { calls.push(key); });
      await q.idle();
      assert.deepEqual(calls, ['later', 'early']);
    });
  });

  describe('settled', () => {
    /** settled() never rejects: were it to, this assertion fails the test (a rejection of the chain it ends). */
    const rejected = (err: unknown): never => assert.fail(`settled() rejected: ${String(err)}`);
    it('resolves once no key of that priority or above is queued or running; lower ones do not count', async () => {
      const q = new WorkQueue({ name: 'settled', workers: 1 });
      const gate = new Gate();
      await q.settled(0);
      q.add('low', 0);
      q.add('high', 2);
      q.start(gate.handler);
      await gate.waiting(1);
      let settled = false;
      const done = q.settled(1).then(() => { settled = true; });
      q.add('low2', 0);
      q.add('mid', 1);
      gate.release('high');
      await gate.waiting(1);
      await flush();
      assert.deepEqual([gate.pending, settled], [['mid'], false], 'mid holds it, running');
      q.add('mid', 2);
      gate.release('mid');
      await gate.waiting(1);
      assert.deepEqual(gate.pending, ['mid'], 'added again while it ran, at a higher priority: runs again');
      await flush();
      assert.equal(settled, false);
      gate.release('mid');
      await done;
      await gate.waiting(1);
      assert.deepEqual(gate.pending, ['low'], 'the low keys remain');
      await q.settled(1);
      gate.release('low');
      await gate.waiting(1);
      gate.release('low2');
      await q.idle();
    });

    it('a key raised into the range holds it, one raised within it still counts once', async () => {
      const q = new WorkQueue({ name: 'settled-raise', workers: 1 });
      const gate = new Gate();
      q.add('a', 0);
      q.add('a', 1);
      q.add('a', 2);
      let settled = false;
      q.settled(1).then(() => { settled = true; }, rejected);
      q.start(gate.handler);
      await gate.waiting(1);
      await flush();
      assert.equal(settled, false);
      gate.release('a');
      await q.idle();
      await flush();
      assert.equal(settled, true);
    });

    it('with a bound, resolves after it while the queue stays busy, at once when none is left, or once settled', async (t) => {
      t.mock.timers.enable({ apis: ['setTimeout'] });
      const { q, gate } = started({ name: 'settled-within', workers: 1 });
      q.add('a', 1);
      await gate.waiting(1);
      let settled = 0;
      q.settled(1, 100).then(() => { settled++; }, rejected);
      t.mock.timers.tick(99);
      await flush();
      assert.equal(settled, 0, 'a still runs');
      t.mock.timers.tick(1);
      await flush();
      assert.equal(settled, 1, 'given up waiting after 100 ms');
      q.settled(1, 0).then(() => { settled++; }, rejected);
      await flush();
      assert.equal(settled, 2, 'no time left: at once');
      q.settled(1, 100).then(() => { settled++; }, rejected);
      gate.release('a');
      await q.idle();
      await flush();
      assert.equal(settled, 3, 'settled before the bound');
    });

    it('never resolves once shut down, not even when the key under way ends', async () => {
      const q = new WorkQueue({ name: 'settled-shutdown', workers: 1 });
      const gate = new Gate();
      q.add('a', 1);
      q.add('b', 1);
      q.start(gate.handler);
      await gate.waiting(1);
      let settled = 0;
      q.settled(1).then(() => { settled++; }, rejected);
      q.shutdown();
      q.settled(0).then(() => { settled++; }, rejected);
      gate.release('a');
      await q.idle();
      await flush();
      assert.equal(settled, 0);
    });
  });

  it('retries a failing key with backoff and counts failures until it succeeds', async () => {
    const q = new WorkQueue({ name: 'retry', workers: 1, baseDelayMs: 5, maxDelayMs: 50 });
    const seen: { at: number; failures: number }[] = [];
    const succeeded = deferred();
    q.start(async (key) => {
      seen.push({ at: performance.now(), failures: q.failures(key) });
      if (seen.length < 3) throw new Error(`attempt ${seen.length} failed`);
      succeeded.resolve();
    });
    q.add('a');
    await succeeded.promise;
    await q.idle();
    assert.deepEqual(seen.map((s) => s.failures), [0, 1, 2]);
    assert.equal(q.failures('a'), 0);
    // base·2^attempt with ±20 % jitter: ≥ 4 ms, then ≥ 8 ms (less a little timer rounding).
    assert.ok(seen[1].at - seen[0].at >= 3, `first retry after ${(seen[1].at - seen[0].at).toFixed(1)} ms`);
    assert.ok(seen[2].at - seen[1].at >= 7, `second retry after ${(seen[2].at - seen[1].at).toFixed(1)} ms`);
  });

  it('counts failures per key', async () => {
    const q = new WorkQueue({ name: 'retry-per-key', workers: 2, baseDelayMs: 60_000 });
    const failed = deferred();
    q.start(async (key) => {
      if (key === 'bad') {
        failed.resolve();
        throw new Error('no');
      }
    });
    q.add('bad');
    q.add('good');
    await failed.promise;
    await q.idle();
    assert.equal(q.failures('bad'), 1);
    assert.equal(q.failures('good'), 0);
    q.shutdown();
  });

  it('retries at once when the key is added while its retry waits', async () => {
    const q = new WorkQueue({ name: 'retry-add', workers: 1, baseDelayMs: 60_000 });
    let calls = 0;
    const second = deferred();
    q.start(async () => {
      calls++;
      if (calls === 1) throw new Error('first attempt fails');
      second.resolve();
    });
    q.add('a');
    await q.idle();
    assert.equal(q.failures('a'), 1);
    q.add('a');
    await second.promise;
    await q.idle();
    assert.equal(calls, 2);
    assert.equal(q.failures('a'), 0);
  });

  it('processes a key again after requeueAfterMs', async () => {
    const q = new WorkQueue({ name: 'requeue', workers: 1 });
    const times: number[] = [];
    const again = deferred();
    q.start(async () => {
      times.push(performance.now());
      if (times.length === 1) return { requeueAfterMs: 10 };
      again.resolve();
    });
    q.add('a');
    await again.promise;
    await q.idle();
    assert.equal(times.length, 2);
    assert.ok(times[1] - times[0] >= 9, `requeued after ${(times[1] - times[0]).toFixed(1)} ms`);
    assert.equal(q.failures('a'), 0);
  });

  // With mocked timers: nothing here may wait on a real timer.
  describe('addAfter', () => {
    it('adds the key once the delay has passed', async (t) => {
      t.mock.timers.enable({ apis: ['setTimeout'] });
      const q = new WorkQueue({ name: 'after', workers: 1 });
      const calls: string[] = [];
      q.start(async (key) => { calls.push(key); });
      q.addAfter('a', 1000);
      t.mock.timers.tick(999);
      await q.idle();
      assert.deepEqual(calls, []);
      t.mock.timers.tick(1);
      await q.idle();
      assert.deepEqual(calls, ['a']);
    });

    it('then add processes the key at once, and only once', async (t) => {
      t.mock.timers.enable({ apis: ['setTimeout'] });
      const q = new WorkQueue({ name: 'after-add', workers: 1 });
      const calls: string[] = [];
      q.start(async (key) => { calls.push(key); });
      q.addAfter('a', 1000);
      q.add('a');
      await q.idle();
      assert.deepEqual(calls, ['a']);
      t.mock.timers.tick(5000);
      await q.idle();
      assert.deepEqual(calls, ['a']);
    });

    it('keeps the first deadline when called again', async (t) => {
      t.mock.timers.enable({ apis: ['setTimeout'] });
      const q = new WorkQueue({ name: 'after-twice', workers: 1 });
      const calls: string[] = [];
      q.start(async (key) => { calls.push(key); });
      q.addAfter('a', 100);
      q.addAfter('a', 1000);
      t.mock.timers.tick(100);
      await q.idle();
      assert.deepEqual(calls, ['a']);
      t.mock.timers.tick(1000);
      await q.idle();
      assert.deepEqual(calls, ['a']);
    });

    it('does nothing after shutdown', async (t) => {
      t.mock.timers.enable({ apis: ['setTimeout'] });
      const q = new WorkQueue({ name: 'after-shutdown', workers: 1 });
      const calls: string[] = [];
      q.start(async (key) => { calls.push(key); });
      q.addAfter('a', 100);
      q.shutdown();
      q.addAfter('b', 100);
      t.mock.timers.tick(1000);
      await q.idle();
      assert.deepEqual(calls, []);
    });
  });

  describe('idle', () => {
    it('resolves at once when nothing is queued', async () => {
      const q = new WorkQueue({ name: 'idle-empty', workers: 1 });
      await q.idle();
      q.start(async () => {});
      await q.idle();
    });

    it('resolves only once every key has been processed', async () => {
      const { q, gate } = started({ name: 'idle-drain', workers: 2 });
      for (const k of ['a', 'b', 'c']) q.add(k);
      let idle = false;
      const drained = q.idle().then(() => { idle = true; });
      await gate.waiting(2);
      gate.release('a');
      await gate.waiting(2);
      gate.release('b');
      await flush();
      assert.equal(idle, false);
      await gate.waiting(1);
      gate.release('c');
      await drained;
      assert.equal(idle, true);
      assert.deepEqual([...gate.calls].sort(), ['a', 'b', 'c']);
    });

    it('waits for a re-run of a key added while it was processed', async () => {
      const q = new WorkQueue({ name: 'idle-dirty', workers: 1 });
      let calls = 0;
      const first = deferred();
      const started = deferred();
      q.start(async () => {
        calls++;
        if (calls === 1) {
          started.resolve();
          await first.promise;
        }
      });
      q.add('a');
      await started.promise;
      const drained = q.idle();
      q.add('a');
      first.resolve();
      await drained;
      assert.equal(calls, 2);
    });

    // idle() looks at the queue and the running handlers only: a key waiting on its retry timer is not work yet.
    it('resolves while a failed key waits for its retry', async () => {
      const q = new WorkQueue({ name: 'idle-retry', workers: 1, baseDelayMs: 60_000 });
      let calls = 0;
      q.start(async () => {
        calls++;
        if (calls === 1) throw new Error('fails once');
      });
      q.add('a');
      await q.idle();
      q.shutdown();
      assert.equal(calls, 1);
      assert.equal(q.failures('a'), 1);
    });
  });

  describe('shutdown', () => {
    it('drops queued keys and ignores later adds', async () => {
      const { q, gate } = started({ name: 'shutdown', workers: 1 });
      q.add('a');
      q.add('b');
      await gate.waiting(1);
      q.shutdown();
      assert.equal(q.depth, 0);
      q.add('c');
      q.add('a');
      assert.equal(q.depth, 0);
      gate.release('a');
      await q.idle();
      await flush();
      assert.deepEqual(gate.calls, ['a']);
    });

    it('takes its depth and sync-time series with it, even as the key under way ends', async () => {
      const { q, gate } = started({ name: 'shutdown-series', workers: 1 });
      q.add('a');
      q.add('b');
      await gate.waiting(1);
      const series = async (): Promise<string[]> => (await registry.metrics()).split('\n').filter((l) => l.includes('queue="shutdown-series"'));
      assert.ok((await series()).some((l) => l.startsWith('clusterlet_queue_depth')), 'a depth while it runs');
      q.shutdown();
      gate.release('a');
      await q.idle();
      await flush();
      assert.deepEqual(await series(), []);
    });

    it('queues of one name (a member\'s group nodes) share their series: depths summed, kept until the last one goes', async () => {
      const a = started({ name: 'shared-series', workers: 1 });
      const b = started({ name: 'shared-series', workers: 1 });
      for (const k of ['a1', 'a2', 'a3']) a.q.add(k);
      for (const k of ['b1', 'b2']) b.q.add(k);
      await a.gate.waiting(1);
      await b.gate.waiting(1);
      const depth = async (): Promise<number | undefined> => {
        const m = /^clusterlet_queue_depth\{queue="shared-series"\} (\S+)$/m.exec(await registry.metrics());
        return m ? Number(m[1]) : undefined;
      };
      assert.equal(await depth(), 3, 'two waiting in one, one in the other (each has one under way)');
      a.q.shutdown();
      a.gate.release('a1');
      await a.q.idle();
      assert.equal(await depth(), 1, 'the other one\'s still shown');
      b.q.shutdown();
      b.gate.release('b1');
      await b.q.idle();
      await flush();
      assert.equal(await depth(), undefined, 'gone with the last');
    });

    it('cancels pending retries', async (t) => {
      t.mock.timers.enable({ apis: ['setTimeout'] });
      const q = new WorkQueue({ name: 'shutdown-retry', workers: 1, baseDelayMs: 5 });
      let calls = 0;
      const failed = deferred();
      q.start(async () => {
        calls++;
        failed.resolve();
        throw new Error('always fails');
      });
      q.add('a');
      await failed.promise;
      await q.idle();
      q.shutdown();
      t.mock.timers.tick(1000); // well past the retry's 4–6 ms
      await q.idle();
      assert.equal(calls, 1);
    });

    it('lets the running handler finish, and idle() resolve', async () => {
      const { q, gate } = started({ name: 'shutdown-running', workers: 2 });
      q.add('a');
      await gate.waiting(1);
      const drained = q.idle();
      q.shutdown();
      gate.release('a');
      await drained;
      assert.deepEqual(gate.calls, ['a']);
    });
  });
});
