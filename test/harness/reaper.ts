// The reaper of earlier runs: a run whose owner process is gone (SIGKILL) leaves its processes, its real nodes'
// cgroups, the kernel tunables its kubelets set and its network namespaces; the next run's start undoes them from
// what the dead run wrote in its directory (`<base>/clusterlet-harness-*`).
import { existsSync } from 'node:fs';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cleanNode } from './realnode.ts';
import { listNetns, removeNetns } from './testnet.ts';

export const RUN_PREFIX = 'clusterlet-harness-';

/** What the reaper does to the machine: the real ones by default, fakes in the unit tests. */
export interface ReapEffects {
  kill(pid: number, signal: NodeJS.Signals | 0): void;
  cleanCgroupRoot(root: string): Promise<void>;
  writeSysctl(key: string, value: string): Promise<void>;
  listNetns(): Promise<string[]>;
  removeNetns(name: string): Promise<void>;
}

export const machineEffects: ReapEffects = {
  kill: (pid, signal) => { process.kill(pid, signal); },
  cleanCgroupRoot: cleanNode,
  writeSysctl: (key, value) => writeFile(`/proc/sys/${key}`, value),
  listNetns,
  removeNetns,
};

export interface ReapOptions {
  /** The directory holding the runs' directories (default: the OS temp dir). */
  base?: string;
  log?: (line: string) => void;
  effects?: ReapEffects;
}

/** Kills the processes of runs whose owner process is gone and removes their dirs. */
export async function reapStaleRuns(opts: ReapOptions = {}): Promise<void> {
  const base = opts.base ?? tmpdir();
  const log = opts.log ?? (() => undefined);
  const fx = opts.effects ?? machineEffects;
  for (const entry of await readdir(base)) {
    if (!entry.startsWith(RUN_PREFIX)) continue;
    const dir = join(base, entry);
    const ownerFile = join(dir, 'owner.pid');
    const owner = existsSync(ownerFile) ? Number(await readFile(ownerFile, 'utf8')) : 0;
    if (owner && isAlive(fx, owner)) continue;
    log(`reaping stale run ${dir}`);
    await killProcessesUsing(fx, dir);
    for (const cgroupRoot of (await readFile(join(dir, 'realnodes'), 'utf8').catch(() => '')).split('\n')) {
      if (cgroupRoot) await fx.cleanCgroupRoot(cgroupRoot);
    }
    const sysctls = await readFile(join(dir, 'sysctls.json'), 'utf8').catch(() => '');
    if (sysctls) {
      for (const [k, v] of Object.entries(JSON.parse(sysctls) as Record<string, string>)) {
        if (v !== '') await fx.writeSysctl(k, v).catch(() => undefined);
      }
    }
    const live = await fx.listNetns();
    for (const netns of (await readFile(join(dir, 'netns'), 'utf8').catch(() => '')).split('\n')) {
      if (netns && live.includes(netns)) await fx.removeNetns(netns);
    }
    await rm(dir, { recursive: true, force: true });
  }
}

function isAlive(fx: ReapEffects, pid: number): boolean {
  try { fx.kill(pid, 0); return true; } catch { return false; }
}

async function killProcessesUsing(fx: ReapEffects, dir: string): Promise<void> {
  for (const pid of await readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(pid)) continue;
    const cmd = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (cmd.includes(dir)) {
      try { fx.kill(Number(pid), 'SIGKILL'); } catch { /* gone */ }
    }
  }
}
