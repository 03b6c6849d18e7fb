import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { HEAP_GROWTH, growingPercent, startHeapGrowth, type HeapGrowthHooks } from '../../src/heapgrowth.ts';
import { NODE_FLAGS } from '../../src/nodeflags.ts';

const MB = 1024 * 1024;

describe('heap growth', () => {
  it('starts from the percentage the shipped flags set', () => {
    assert.ok(NODE_FLAGS.includes(`--heap-growing-percent=${HEAP_GROWTH.basePercent}`));
  });

  const table: [number, number][] = [
    [0, 10], [30 * MB, 10], [48 * MB, 10], [60 * MB, 13], [96 * MB, 20], [120 * MB, 25], [144 * MB, 30], [400 * MB, 30],
  ];
  for (const [used, percent] of table) {
    it(`${used / MB} MB in use → ${percent} %`, () => assert.equal(growingPercent(used), percent));
  }

  it('sets the percentage after a full collection only when it changes, back down to the base too', () => {
    let fire: () => void = () => undefined;
    let used = 0;
    const set: number[] = [];
    const changes: number[] = [];
    const hooks: HeapGrowthHooks = {
      onFullGc: (cb) => { fire = cb; return () => { fire = () => undefined; }; },
      heapUsed: () => used,
      setPercent: (p) => set.push(p),
    };
    const stop = startHeapGrowth((p) => changes.push(p), hooks);
    for (const mb of [20, 40, 60, 61, 100, 100, 200, 30, 30, 96]) { used = mb * MB; fire(); }
    assert.deepEqual(set, [13, 21, 30, 10, 20]);
    assert.deepEqual(changes, set);
    stop();
    used = 200 * MB;
    fire();
    assert.equal(set.length, 5, 'stopped');
  });

  // The policy relies on V8 reading --heap-growing-percent each time it sets the next limit, and on Node letting it be
  // set after start (flags not frozen). A Node that changed either would leave it without effect or abort the process.
  it('this Node takes a new percentage at run time: the next full collection sets its limit with it', () => {
    const script = `const v8 = require('node:v8'); const keep = []; for (let i = 0; i < 100000; i++) keep.push({ i });
      gc(); console.log('SWITCH'); v8.setFlagsFromString('--heap-growing-percent=35'); gc(); console.log(keep.length);`;
    const out = execFileSync(process.execPath, ['--trace-gc-verbose', '--expose-gc', '--heap-growing-percent=10', '-e', script],
      { encoding: 'utf8', maxBuffer: 16 * MB });
    const factor = (text: string): string | undefined => /\[HeapController\] factor ([0-9.]+)/.exec(text)?.[1];
    const at = out.indexOf('SWITCH');
    assert.ok(at > 0, 'the script ran');
    assert.equal(factor(out.slice(0, at)), '1.1', 'the factor from the command line');
    assert.equal(factor(out.slice(at)), '1.4', 'the factor set at run time (1.35, printed to one decimal)');
  });
});
