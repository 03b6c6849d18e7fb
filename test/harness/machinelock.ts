// One run with real nodes a machine: its kubelets set kernel tunables of the whole machine (kernel.panic_on_oops=1
// and the like, realnode.ts), which the run saves before its nodes start and restores after they stop. Saved while
// another run's kubelet is up, they would be that kubelet's, "restored" for good: so a run with real nodes refuses to
// start beside a live one. The lock is a file in a directory only root writes (/run), holding its owner's pid and
// start time and its run directory, whole from the moment it has the lock's name (written under another name and
// linked, link(2) failing when the name is taken).
//
// A lock whose owner is gone is taken over once that run's directory is gone (the reaper has undone that run);
// while the directory is still there (under another TMPDIR, or left by the reaper) its kubelets may still be up, and
// the run refuses to start. Of runs racing for one stale lock, one takes it over: the one that links it to a
// takeover name first, which removes the lock only while it is still that stale one; the others find the new lock.
import { randomBytes } from 'node:crypto';
import { link, lstat, readFile, rm, unlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { processRecord, stillRuns } from './reaper.ts';

export const LOCK_DIR = '/run';
export const LOCK_NAME = 'clusterlet-harness-realnodes.lock';

export interface MachineLock {
  /** Removes the lock, if it is still this run's. */
  release(): Promise<void>;
}

/** A lock file as read: its text and its inode (which tells one file of that text from a later one). */
async function readLock(path: string): Promise<{ text: string; ino: number } | undefined> {
  const st = await lstat(path).catch(() => undefined);
  const text = await readFile(path, 'utf8').catch(() => undefined);
  return st && text !== undefined ? { text, ino: st.ino } : undefined;
}

const code = (err: unknown): string | undefined => (err as NodeJS.ErrnoException).code;

export async function lockRealNodes(runDir: string, dir = LOCK_DIR): Promise<MachineLock> {
  const path = join(dir, LOCK_NAME);
  const takeover = `${path}.takeover`;
  const mine = `${processRecord(process.pid)}\n${runDir}\n`;
  const draft = `${path}.${process.pid}-${randomBytes(4).toString('hex')}`;
  await writeFile(draft, mine, { flag: 'wx', mode: 0o600 });
  try {
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        await link(draft, path);
        return {
          release: async () => {
            if (await readFile(path, 'utf8').catch(() => '') === mine) await rm(path, { force: true });
          },
        };
      } catch (err) {
        if (code(err) !== 'EEXIST') throw err;
      }
      const held = await readLock(path);
      if (!held) continue;
      const [owner = '', ownerDir = ''] = held.text.split('\n');
      if (stillRuns(owner)) {
        throw new Error(`another run has real nodes up on this machine (process ${owner.split(' ')[0]}, ${ownerDir}; lock ${path}): `
          + 'its kubelets hold the kernel tunables this run would save and restore; wait for it to end');
      }
      if (ownerDir !== '' && await lstat(ownerDir).catch(() => undefined)) {
        throw new Error(`the run that holds ${path} (process ${owner.split(' ')[0]}) is gone, but its directory ${ownerDir} is still `
          + 'there: its kubelets may still be up and hold the kernel tunables this run would save. A harness run with '
          + `TMPDIR=${dirname(ownerDir)} undoes that run first (test/harness/reaper.ts; its log says when it cannot); or stop what of `
          + `it still runs, restore what it changed, and remove ${ownerDir} and ${path}`);
      }
      try {
        await link(path, takeover);
      } catch (err) {
        if (code(err) === 'ENOENT') continue;
        if (code(err) === 'EEXIST') {
          throw new Error(`another run is taking over the stale lock ${path} (${takeover} exists); if no run is starting, `
            + `one was killed while it did: remove ${takeover}`);
        }
        throw err;
      }
      try {
        // Still the stale lock read above (the same file, the same text): no other run has taken it over meanwhile.
        const now = await readLock(takeover);
        if (now?.ino === held.ino && now.text === held.text) await unlink(path);
      } finally {
        await unlink(takeover).catch(() => undefined);
      }
    }
    throw new Error(`could not take ${path}: another run took it meanwhile`);
  } finally {
    await unlink(draft).catch(() => undefined);
  }
}
