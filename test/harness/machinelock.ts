// One run with real nodes a machine: its kubelets set kernel tunables of the whole machine (kernel.panic_on_oops=1
// and the like, realnode.ts), which the run saves before its nodes start and restores after they stop. Saved while
// another run's kubelet is up, they would be that kubelet's, "restored" for good: so a run with real nodes refuses to
// start beside a live one. The lock is a file in a directory only root writes (/run), holding its owner's pid and
// start time and its run directory; a lock whose owner is gone is taken over (the reaper has undone that run).
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { processRecord, stillRuns } from './reaper.ts';

export const LOCK_DIR = '/run';
export const LOCK_NAME = 'clusterlet-harness-realnodes.lock';

export interface MachineLock {
  /** Removes the lock, if it is still this run's. */
  release(): Promise<void>;
}

export async function lockRealNodes(runDir: string, dir = LOCK_DIR): Promise<MachineLock> {
  const path = join(dir, LOCK_NAME);
  const mine = `${processRecord(process.pid)}\n${runDir}\n`;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await writeFile(path, mine, { flag: 'wx', mode: 0o600 });
      return {
        release: async () => {
          if (await readFile(path, 'utf8').catch(() => '') === mine) await rm(path, { force: true });
        },
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const [owner = '', ownerDir = ''] = (await readFile(path, 'utf8').catch(() => '')).split('\n');
    if (stillRuns(owner)) {
      throw new Error(`another run has real nodes up on this machine (process ${owner.split(' ')[0]}, ${ownerDir}; lock ${path}): `
        + 'its kubelets hold the kernel tunables this run would save and restore; wait for it to end');
    }
    await rm(path, { force: true });
  }
  throw new Error(`could not take ${path}: another run took it meanwhile`);
}
