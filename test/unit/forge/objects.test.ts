// sameValue (forge/objects.ts): the equality hot paths use instead of comparing two JSON texts. Each case also
// checks the answer JSON would give, where JSON can tell (key order aside).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sameValue } from '../../../src/forge/objects.ts';

const T = new Date('2026-03-01T10:00:00Z');

describe('sameValue', () => {
  const cases: [string, unknown, unknown, boolean][] = [
    ['both absent', undefined, undefined, true],
    ['absent and empty', undefined, {}, false],
    ['equal strings', 'a', 'a', true],
    ['a number and its text', 1, '1', false],
    ['null and absent', null, undefined, false],
    ['equal maps', { a: '1', b: '2' }, { a: '1', b: '2' }, true],
    ['a key more', { a: '1' }, { a: '1', b: '2' }, false],
    ['a key fewer', { a: '1', b: '2' }, { a: '1' }, false],
    ['a value changed', { a: '1' }, { a: '2' }, false],
    ['an undefined key is absent', { a: '1', b: undefined }, { a: '1' }, true],
    ['nested, equal', { c: [{ name: 'x', env: [{ name: 'A', value: '1' }] }] }, { c: [{ name: 'x', env: [{ name: 'A', value: '1' }] }] }, true],
    ['nested, a value deep down', { c: [{ name: 'x', env: [{ name: 'A', value: '1' }] }] }, { c: [{ name: 'x', env: [{ name: 'A', value: '2' }] }] }, false],
    ['arrays in another order', ['a', 'b'], ['b', 'a'], false],
    ['an array and an object', [], {}, false],
    ['arrays of other lengths', ['a'], ['a', 'a'], false],
    ['equal dates', { t: T }, { t: new Date(T.getTime()) }, true],
    ['other dates', { t: T }, { t: new Date(T.getTime() + 1000) }, false],
    ['a date and an object', { t: T }, { t: {} }, false],
  ];
  for (const [what, a, b, expected] of cases) {
    it(what, () => {
      assert.equal(sameValue(a, b), expected);
      assert.equal(sameValue(b, a), expected, 'symmetric');
      if (a !== undefined && b !== undefined) assert.equal(JSON.stringify(a) === JSON.stringify(b), expected, 'as JSON tells');
    });
  }
  it('keys in another order are the same value (JSON texts would differ)', () => {
    assert.equal(sameValue({ a: '1', b: '2' }, { b: '2', a: '1' }), true);
  });
});
