import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Lanes, PASS_LIMIT, type Priority } from '../../../src/util/lanes.ts';

describe('Lanes', () => {
  it('serves the most urgent lane first, in order within a lane', () => {
    const cases: { name: string; pushes: [string, Priority | undefined][]; want: string[] }[] = [
      { name: 'one lane: first in, first out', pushes: [['a', undefined], ['b', undefined], ['c', undefined]], want: ['a', 'b', 'c'] },
      { name: 'high overtakes normal and low', pushes: [['l1', 'low'], ['n1', 'normal'], ['h1', 'high'], ['n2', undefined], ['h2', 'high']],
        want: ['h1', 'h2', 'n1', 'n2', 'l1'] },
      { name: 'low only once nothing else waits', pushes: [['l1', 'low'], ['l2', 'low'], ['n1', 'normal']], want: ['n1', 'l1', 'l2'] },
      { name: 'empty', pushes: [], want: [] },
    ];
    for (const c of cases) {
      const l = new Lanes<string>();
      for (const [item, p] of c.pushes) l.push(item, p);
      assert.equal(l.length, c.want.length, c.name);
      const got: string[] = [];
      for (let x = l.shift(); x !== undefined; x = l.shift()) got.push(x);
      assert.deepEqual(got, c.want, c.name);
      assert.equal(l.length, 0, c.name);
    }
  });

  it('never starves a less urgent lane: after PASS_LIMIT served ahead of it, the one waiting longest goes', () => {
    const l = new Lanes<string>();
    l.push('low 1', 'low');
    l.push('normal 1');
    l.push('low 2', 'low');
    for (let i = 1; i <= 2 * PASS_LIMIT + 4; i++) l.push(`high ${i}`, 'high');
    const got: string[] = [];
    for (let x = l.shift(); x !== undefined; x = l.shift()) got.push(x);
    const high = (from: number, n: number): string[] => Array.from({ length: n }, (_, i) => `high ${from + i}`);
    assert.deepEqual(got, [
      ...high(1, PASS_LIMIT), 'low 1', // the oldest of those behind, whatever its lane
      ...high(PASS_LIMIT + 1, PASS_LIMIT), 'normal 1',
      ...high(2 * PASS_LIMIT + 1, 4), 'low 2', // nothing more urgent waits: no count needed
    ]);
  });

  it('counts only what is served while a less urgent lane waits', () => {
    const l = new Lanes<string>();
    for (let i = 1; i <= PASS_LIMIT; i++) l.push(`high ${i}`, 'high');
    for (let i = 0; i < PASS_LIMIT; i++) l.shift(); // nobody behind: not passing anyone
    l.push('low', 'low');
    l.push('high', 'high');
    assert.equal(l.shift(), 'high', 'the first pass of low, not the ninth');
    assert.equal(l.shift(), 'low');
  });

  it('removes an item from its lane', () => {
    const l = new Lanes<string>();
    l.push('n1');
    l.push('n2');
    l.push('h1', 'high');
    assert.equal(l.shift(), 'h1');
    assert.equal(l.remove('n2', 'high'), false, 'not in that lane');
    assert.equal(l.remove('n2'), true);
    assert.equal(l.remove('n2'), false, 'already removed');
    assert.equal(l.length, 1);
    assert.equal(l.shift(), 'n1');
    assert.equal(l.shift(), undefined);
  });
});
