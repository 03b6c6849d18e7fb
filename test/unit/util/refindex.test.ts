import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { RefIndex } from '../../../src/util/refindex.ts';

describe('RefIndex', () => {
  it('tells when a key gets its first holder and loses its last', () => {
    const idx = new RefIndex<string>();
    assert.deepEqual(idx.update('p1', ['a', 'b'], 'ns1'), { added: ['a', 'b'], released: [], previousTag: undefined });
    assert.deepEqual(idx.update('p2', ['b'], 'ns2'), { added: [], released: [], previousTag: undefined });
    assert.equal(idx.update('p1', ['a', 'b'], 'ns1'), undefined, 'unchanged');
    assert.deepEqual(idx.update('p1', [], 'ns1'), { added: [], released: ['a'], previousTag: 'ns1' });
    assert.ok(idx.has('b') && !idx.has('a'));
    assert.deepEqual([...idx.keys()], ['b']);
    assert.deepEqual(idx.update('p2', [], ''), { added: [], released: ['b'], previousTag: 'ns2' });
    assert.ok(!idx.has('b'));
    assert.equal(idx.update('p3', [], ''), undefined, 'nothing before, nothing now');
  });
});
