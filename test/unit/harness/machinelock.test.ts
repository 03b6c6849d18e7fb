// One run with real nodes a machine (test/harness/machinelock.ts), the lock in a temp dir of this test's own.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LOCK_NAME, lockRealNodes } from '../../harness/machinelock.ts';
import { processRecord } from '../../harness/reaper.ts';

let dir: string;
before(async () => { dir = await mkdtemp(join(tmpdir(), 'machinelock-test-')); });
after(async () => { await rm(dir, { recursive: true, force: true }); });

test('a second run refuses to start beside a live one, and starts once the first has released the lock', async () => {
  const first = await lockRealNodes('/tmp/clusterlet-harness-first1', dir);
  await assert.rejects(lockRealNodes('/tmp/clusterlet-harness-second', dir),
    /another run has real nodes up on this machine \(process \d+, \/tmp\/clusterlet-harness-first1/);
  await first.release();
  assert.equal(existsSync(join(dir, LOCK_NAME)), false);
  const second = await lockRealNodes('/tmp/clusterlet-harness-second', dir);
  await second.release();
});

test('the lock of a run whose owner is gone, or whose pid is now another process\'s, is taken over', async () => {
  for (const owner of ['4194305 1', `${process.pid} 1`]) {
    await writeFile(join(dir, LOCK_NAME), `${owner}\n/tmp/clusterlet-harness-dead00\n`);
    const lock = await lockRealNodes('/tmp/clusterlet-harness-alive0', dir);
    assert.equal(readFileSync(join(dir, LOCK_NAME), 'utf8'), `${processRecord(process.pid)}\n/tmp/clusterlet-harness-alive0\n`);
    await lock.release();
  }
});

test('release leaves a lock that is no longer its own', async () => {
  const lock = await lockRealNodes('/tmp/clusterlet-harness-mine00', dir);
  await writeFile(join(dir, LOCK_NAME), `${processRecord(process.pid)}\n/tmp/clusterlet-harness-other0\n`);
  await lock.release();
  assert.equal(existsSync(join(dir, LOCK_NAME)), true);
  await rm(join(dir, LOCK_NAME));
});

test('the lock of a gone run whose directory is still there is not taken over: its kubelets may still be up', async () => {
  const runDir = join(dir, 'clusterlet-harness-left00');
  await mkdir(runDir);
  const stale = `4194305 1\n${runDir}\n`;
  await writeFile(join(dir, LOCK_NAME), stale);
  await assert.rejects(lockRealNodes('/tmp/clusterlet-harness-alive0', dir),
    new RegExp(`is gone, but its directory ${runDir} is still there.*TMPDIR=${dir}`));
  assert.equal(readFileSync(join(dir, LOCK_NAME), 'utf8'), stale);
  // Once the reaper has removed it, the lock is taken over.
  await rm(runDir, { recursive: true });
  const lock = await lockRealNodes('/tmp/clusterlet-harness-alive0', dir);
  await lock.release();
});

test('of runs racing for one stale lock, one takes it over; the others find its lock, which stays', async () => {
  for (let round = 0; round < 100; round++) {
    await writeFile(join(dir, LOCK_NAME), '4194305 1\n/tmp/clusterlet-harness-dead00\n');
    const runs = ['racer0', 'racer1', 'racer2', 'racer3'].map((r) => `/tmp/clusterlet-harness-${r}`);
    // Each starts a few turns of the event loop after the one before: one may read the stale lock while another has
    // already taken it over.
    const results = await Promise.allSettled(runs.map(async (r, i) => {
      for (let turn = 0; turn < i * (round % 4); turn++) await new Promise(setImmediate);
      return lockRealNodes(r, dir);
    }));
    const won = results.flatMap((r, i) => r.status === 'fulfilled' ? [runs[i]] : []);
    assert.equal(won.length, 1, `round ${round}: ${won.length} runs took the lock: ${JSON.stringify(results)}`);
    assert.equal(readFileSync(join(dir, LOCK_NAME), 'utf8'), `${processRecord(process.pid)}\n${won[0]}\n`);
    await (results.find((r) => r.status === 'fulfilled') as PromiseFulfilledResult<{ release(): Promise<void> }>).value.release();
    // Nothing else of theirs left beside the lock.
    assert.deepEqual(await readdir(dir), []);
  }
});
