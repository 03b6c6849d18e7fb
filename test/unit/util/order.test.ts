import { test } from 'node:test';
import assert from 'node:assert/strict';
import { byCodeUnits } from '../../../src/util/order.ts';

test('byCodeUnits orders by UTF-16 code units, as the default sort', () => {
  const keys = ['b', 'a-b', 'B', 'a/b', 'a', 'ab', 'a.b', '10', '9'];
  assert.deepEqual([...keys].sort(byCodeUnits), [...keys].sort());
  assert.equal(byCodeUnits('x', 'x'), 0);
  assert.ok(byCodeUnits('a', 'b') < 0 && byCodeUnits('b', 'a') > 0);
});
