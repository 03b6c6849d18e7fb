import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { IDLE_COLLECT, startIdleCollect, type IdleCollectHooks } from '../../src/idlecollect.ts';
import { NODE_FLAGS } from '../../src/nodeflags.ts';

const MB = 1024 * 1024;
/** The committed heap the fake collection leaves. */
const COLLECTED_HEAP = 10 * MB;

/**
 * Fake hooks: `tick(cpuMs, grownBytes)` runs one interval in which the process used that much CPU and its heap grew
 * that much. It starts with a heap of 20 MB; a collection leaves COLLECTED_HEAP.
 */
function fake(): { hooks: IdleCollectHooks; tick(cpuMs: number, grownBytes?: number): void; collected: number; stopped: boolean } {
  let cpu = 0;
  let heap = 20 * MB;
  let cb: () => void = () => undefined;
  const f = {
    collected: 0,
    stopped: false,
    hooks: {
      cpuMs: () => cpu,
      heapBytes: () => heap,
      collect: () => { f.collected++; cpu += 500; heap = COLLECTED_HEAP; },
      every: (ms: number, run: () => void) => {
        assert.equal(ms, IDLE_COLLECT.intervalMs);
        cb = run;
        return () => { f.stopped = true; cb = () => undefined; };
      },
    } satisfies IdleCollectHooks,
    tick(cpuMs: number, grownBytes = 0) { cpu += cpuMs; heap += grownBytes; cb(); },
  };
  return f;
}

describe('idle collection', () => {
  const busy = IDLE_COLLECT.quietCpuMs * 5;
  const quiet = IDLE_COLLECT.quietCpuMs / 2;

  it('collects once after start-up, when the process has been quiet for the intervals it needs, and not again', () => {
    const f = fake();
    startIdleCollect(f.hooks);
    for (let i = 1; i < IDLE_COLLECT.quietIntervals; i++) f.tick(quiet);
    assert.equal(f.collected, 0, 'not quiet long enough');
    f.tick(quiet);
    assert.equal(f.collected, 1);
    for (let i = 0; i < 10; i++) f.tick(quiet);
    assert.equal(f.collected, 1, 'an idle process is collected once, and the collection itself is not work');
  });

  it('collects again after work that grew the heap, and a busy interval in a quiet spell starts the count again', () => {
    const f = fake();
    const took: number[] = [];
    startIdleCollect(f.hooks, (ms) => took.push(ms));
    for (let i = 0; i < IDLE_COLLECT.quietIntervals; i++) f.tick(quiet);
    assert.equal(f.collected, 1);
    f.tick(busy, 30 * MB);
    f.tick(quiet);
    f.tick(busy);
    for (let i = 1; i < IDLE_COLLECT.quietIntervals; i++) f.tick(quiet);
    assert.equal(f.collected, 1, 'the busy interval reset the quiet count');
    f.tick(quiet);
    assert.equal(f.collected, 2);
    assert.equal(took.length, 2);
    assert.ok(took.every((ms) => ms >= 0));
  });

  // An idle clusterlet works a little every minute or two (its silent watches restarted together, a node status
  // refresh): that used to bring a collection back each time, with nothing to give back.
  it('work that did not grow the heap, or not by minGrowthBytes, does not bring the collection back', () => {
    const f = fake();
    startIdleCollect(f.hooks);
    for (let i = 0; i < IDLE_COLLECT.quietIntervals; i++) f.tick(quiet);
    assert.equal(f.collected, 1);
    for (let round = 0; round < 5; round++) {
      f.tick(busy, round === 0 ? IDLE_COLLECT.minGrowthBytes - 1 : 0);
      for (let i = 0; i < IDLE_COLLECT.quietIntervals + 2; i++) f.tick(quiet);
    }
    assert.equal(f.collected, 1, 'small work at idle');
    f.tick(quiet, 1);
    assert.equal(f.collected, 2, 'quiet, and grown by minGrowthBytes since the last collection: collected');
  });

  it('a heap that grew in a burst and was shrunk by V8 before the process went quiet is still collected', () => {
    const f = fake();
    startIdleCollect(f.hooks);
    for (let i = 0; i < IDLE_COLLECT.quietIntervals; i++) f.tick(quiet);
    assert.equal(f.collected, 1);
    f.tick(busy, 30 * MB);
    f.tick(busy, -30 * MB); // V8's memory reducer, before two quiet intervals
    for (let i = 0; i < IDLE_COLLECT.quietIntervals; i++) f.tick(quiet);
    assert.equal(f.collected, 2, 'what the burst left fragmented is compacted');
    for (let i = 0; i < 10; i++) f.tick(quiet);
    assert.equal(f.collected, 2, 'and the peak is forgotten with the collection');
  });

  it('a process that is never quiet is never collected; stop ends it', () => {
    const f = fake();
    const stop = startIdleCollect(f.hooks);
    for (let i = 0; i < 20; i++) f.tick(busy);
    assert.equal(f.collected, 0);
    stop();
    assert.ok(f.stopped);
  });

  it('the shipped flags expose the collector it uses', () => {
    assert.ok(NODE_FLAGS.includes('--expose-gc'));
  });

  // The point of it relies on V8 shrinking the young generation it grew, and handing back old-generation pages, in a
  // last-resort collection: pinned here against the Node that runs the tests, with the shipped flags.
  it('with the shipped flags, the collection shrinks a grown young generation and hands memory back', () => {
    const script = `
      const v8 = require('node:v8');
      const { v8Hooks, exposedGc } = require(${JSON.stringify(new URL('../../src/idlecollect.ts', import.meta.url).pathname)});
      const young = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size;
      const keep = []; for (let i = 0; i < 3e5; i++) keep.push({ i, s: 'x' + i });
      for (let r = 0; r < 40; r++) { const t = []; for (let i = 0; i < 1e5; i++) t.push({ i }); if (r % 4 === 0) keep.push(t); }
      keep.length = 1e5;
      const before = { young: young(), total: v8.getHeapStatistics().total_heap_size };
      v8Hooks(exposedGc()).collect();
      const after = { young: young(), total: v8.getHeapStatistics().total_heap_size };
      console.log(JSON.stringify({ before, after, kept: keep.length }));`;
    const out = execFileSync(process.execPath, [...NODE_FLAGS, '-e', script], { encoding: 'utf8' });
    const { before, after } = JSON.parse(out) as Record<'before' | 'after', { young: number; total: number }>;
    assert.ok(after.young < before.young, `young generation ${before.young} → ${after.young}`);
    assert.ok(after.total < before.total * 0.8, `heap ${before.total} → ${after.total}`);
  });
});
