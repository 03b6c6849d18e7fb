// Ctrl-C and SIGTERM of e2e/local/run.ts (test/harness/interrupt.ts): the first stops, the second says it is still
// stopping, the third exits at once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { interruptible } from '../../harness/interrupt.ts';

test('the first signal starts the stop; the second says it is still stopping; the third exits at once, saying what may be left', () => {
  const said: string[] = [];
  const exits: number[] = [];
  const i = interruptible((l) => said.push(l), () => 'processes of /tmp/clusterlet-harness-Ab12Cd', (c) => exits.push(c));
  i.handle('SIGINT');
  assert.equal(i.signal.aborted, true);
  assert.equal(i.code(), 130);
  assert.deepEqual(exits, []);
  i.handle('SIGINT');
  assert.match(said[1], /^SIGINT: still stopping .*another signal exits at once/);
  assert.deepEqual(exits, []);
  i.handle('SIGINT');
  assert.match(said[2], /^SIGINT: exiting now; what this run started may be left: processes of \/tmp\/clusterlet-harness-Ab12Cd$/);
  assert.deepEqual(exits, [130]);
});

test('SIGTERM first: the code is 143', () => {
  const i = interruptible(() => undefined, () => '', () => undefined);
  i.handle('SIGTERM');
  i.handle('SIGINT');
  assert.equal(i.code(), 143);
});
