// The reaper of earlier runs: a run whose owner process is gone (SIGKILL) leaves its processes, its real nodes'
// cgroups, the kernel tunables its kubelets set and its network namespaces; the next run's start undoes them from
// what the dead run wrote in its directory (`<base>/clusterlet-harness-<id>`).
//
// The base is the machine's temp dir, which anyone may write to, and the reaper runs as root for real nodes: it
// trusts a run directory only when it is a directory (no link) of this user that no one else may write to, as
// mkdtemp makes it, and then acts only within what the harness itself writes there: the processes it recorded (pid
// and start time, never a command line nor a pid alone), cgroup roots of that run's own pattern, the kubelet's tunables with integer
// values, network namespaces named as testnet.ts names them.
import { appendFileSync, readFileSync } from 'node:fs';
import { lstat, mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { cleanNode, KUBELET_SYSCTLS } from './realnode.ts';
import { listNetns, NETNS_PREFIX, removeNetns } from './testnet.ts';

export const RUN_PREFIX = 'clusterlet-harness-';
/** The files of a run directory the reaper reads. */
export const RUN_FILES = { owner: 'owner.pid', ownerStart: 'owner.start', pids: 'pids', cgroupRoots: 'realnodes', sysctls: 'sysctls.json',
  netns: 'netns' };

/** The part of a run directory's name mkdtemp makes. */
const RUN_ID = /^[A-Za-z0-9]{6}$/;
const NETNS = new RegExp(`^${NETNS_PREFIX}[0-9a-f]{6}$`);
const INTEGER = /^-?\d{1,19}$/;
/** How long a run directory without an owner is taken for one still starting. */
const STARTING_GRACE_MS = 60_000;

/** The cgroup root of a real node of run `id` (realnode.ts), as the reaper accepts it. */
export const cgroupRootOf = (id: string, node: string): string => `/clusterlet-${id}-${node}`;
const cgroupRootPattern = (id: string): RegExp => new RegExp(`^/clusterlet-${id}-[a-z0-9]+(-[a-z0-9]+)*$`);

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

/** A process as /proc shows it: its start time (clock ticks after boot) and its process group. */
export interface ProcStat { start: string; pgid: number }

export function procStat(pid: number): ProcStat | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // After the command name (in parentheses, which may hold anything): state, ppid, pgrp, ..., starttime (field 22).
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { start: f[19], pgid: Number(f[2]) };
  } catch {
    return undefined;
  }
}

/** `<pid> <start time>`: a process as a run records it, so that a later pid of the same number is not taken for it. */
export function processRecord(pid: number): string {
  return `${pid} ${procStat(pid)?.start ?? ''}`.trim();
}

/**
 * Marks `runDir` as the run of this process: its pid in owner.pid (the pid alone, as the reapers of older checkouts
 * read it: they take anything else for a dead owner and reap a live run) and its start time beside it.
 */
export async function writeOwner(runDir: string): Promise<void> {
  await writeFile(join(runDir, RUN_FILES.ownerStart), procStat(process.pid)?.start ?? '');
  await writeFile(join(runDir, RUN_FILES.owner), String(process.pid));
}

/** The name of a run directory while it is made: `.clusterlet-harness-<id>`, which no reaper looks at. */
export const STARTING_PREFIX = `.${RUN_PREFIX}`;

/**
 * Makes the directory of a new run in `base`, this process's from the moment it bears a run's name: made under a name
 * no reaper looks at (STARTING_PREFIX), its owner (`writeOwnerOf`, writeOwner but in the unit tests) and an empty
 * record of its processes written, then renamed to `clusterlet-harness-<id>`. A reaper starting meanwhile never sees
 * it without its owner.
 */
export async function createRunDir(base = tmpdir(), writeOwnerOf = writeOwner): Promise<string> {
  for (;;) {
    const starting = await mkdtemp(join(base, STARTING_PREFIX));
    await writeFile(join(starting, RUN_FILES.pids), '');
    await writeOwnerOf(starting);
    const dir = join(base, basename(starting).slice(1));
    // rename(2) replaces an empty directory of that name: the name is taken only when nothing has it.
    if (!await lstat(dir).catch(() => undefined)) {
      await rename(starting, dir);
      return dir;
    }
    await rm(starting, { recursive: true, force: true });
  }
}

/** Appends process `pid` to the run's record of its processes (what the reaper may kill). */
export function recordProcess(runDir: string, pid: number): void {
  appendFileSync(join(runDir, RUN_FILES.pids), `${processRecord(pid)}\n`);
}

/** Whether the recorded process still runs (the same pid and, when recorded, the same start time). */
export function stillRuns(record: string): ProcStat & { pid: number } | undefined {
  const [pid, start] = record.trim().split(' ');
  if (!/^\d+$/.test(pid) || Number(pid) <= 1 || (start !== undefined && !/^\d+$/.test(start))) return undefined;
  const stat = procStat(Number(pid));
  return stat && (start === undefined || stat.start === start) ? { ...stat, pid: Number(pid) } : undefined;
}

/** Why the reaper may not trust `dir` (undefined: it may). */
async function untrusted(dir: string, uid: number | undefined): Promise<string | undefined> {
  const st = await lstat(dir).catch(() => undefined);
  if (!st?.isDirectory()) return 'not a directory';
  if (uid !== undefined && st.uid !== uid) return `owned by uid ${st.uid}, not ${uid}`;
  if (st.mode & 0o022) return `others may write to it (mode ${(st.mode & 0o777).toString(8)})`;
  return undefined;
}

const lines = async (dir: string, file: string): Promise<string[]> =>
  (await readFile(join(dir, file), 'utf8').catch(() => '')).split('\n').filter((l) => l !== '');

/** Undoes what runs whose owner process is gone left on the machine, and removes their dirs. */
export async function reapStaleRuns(opts: ReapOptions = {}): Promise<void> {
  const base = opts.base ?? tmpdir();
  const log = opts.log ?? (() => undefined);
  const fx = opts.effects ?? machineEffects;
  const uid = process.getuid?.();
  for (const entry of await readdir(base)) {
    const starting = entry.startsWith(STARTING_PREFIX);
    if (!starting && !entry.startsWith(RUN_PREFIX)) continue;
    const dir = join(base, entry);
    const id = entry.slice((starting ? STARTING_PREFIX : RUN_PREFIX).length);
    const why = RUN_ID.test(id) ? await untrusted(dir, uid) : 'not a name mkdtemp makes';
    if (why) {
      log(`leaving ${dir} alone: ${why}`);
      continue;
    }
    const [owner] = await lines(dir, RUN_FILES.owner);
    const [ownerStart = ''] = await lines(dir, RUN_FILES.ownerStart);
    if (owner !== undefined && stillRuns(`${owner} ${ownerStart}`)) continue;
    // A run of an older checkout, which makes its directory under its run's name and writes its owner after; or one
    // of this checkout making its directory (createRunDir, under STARTING_PREFIX).
    if (owner === undefined && Date.now() - ((await lstat(dir).catch(() => undefined))?.mtimeMs ?? 0) < STARTING_GRACE_MS) {
      log(`leaving ${dir} alone: no owner yet, made less than ${STARTING_GRACE_MS / 1000} s ago (a run starting)`);
      continue;
    }
    if (starting) {
      // A run gone while its directory was made (createRunDir): it started nothing yet, the directory is all it left.
      log(`removing ${dir}: a run directory whose owner is gone before it finished making it`);
      await rm(dir, { recursive: true, force: true });
      continue;
    }
    // What a run of an older checkout left: no record of its processes, or processes recorded by pid alone. Its
    // processes are not known for sure, and undoing the rest (its kubelets' tunables, cgroups, network namespaces)
    // under them would not hold: the directory stays, and the log says what is left to do.
    const pids = await readFile(join(dir, RUN_FILES.pids), 'utf8').catch(() => undefined);
    if (pids === undefined) {
      log(`leaving ${dir} alone: its owner is gone, but it records no processes (a run of an older checkout): stop what `
        + `of that run still runs (etcd, API servers, kubelets, containerd; \`ps -eo pid,lstart,args\`), then remove ${dir}`);
      continue;
    }
    const records = pids.split('\n').filter((l) => l !== '');
    const byPidAlone = records.map((r) => r.trim()).filter((r) => !r.includes(' ') && stillRuns(r));
    if (byPidAlone.length) {
      log(`leaving ${dir} alone: its owner is gone, but processes ${byPidAlone.join(', ')} it records without a start time `
        + `(a run of an older checkout) run, and their pids may be other processes' now: check them (\`ps -o pid,lstart,args `
        + `-p ${byPidAlone.join(',')}\`), stop those still of that run, then remove ${dir}`);
      continue;
    }
    log(`reaping stale run ${dir}`);
    for (const record of records) {
      // Only a process whose start time the run recorded: a pid alone may be another process's now.
      const p = record.trim().includes(' ') ? stillRuns(record) : undefined;
      if (!p) continue;
      // A process the harness started leads a process group of its own: what it started goes with it.
      for (const target of p.pgid === p.pid ? [-p.pid, p.pid] : [p.pid]) {
        try { fx.kill(target, 'SIGKILL'); } catch { /* gone */ }
      }
    }
    const ownRoot = cgroupRootPattern(id);
    for (const root of await lines(dir, RUN_FILES.cgroupRoots)) {
      if (ownRoot.test(root)) await fx.cleanCgroupRoot(root);
      else log(`${dir}: not cleaning cgroup root ${JSON.stringify(root)}: not one of this run's`);
    }
    const sysctls = await readFile(join(dir, RUN_FILES.sysctls), 'utf8').catch(() => '');
    if (sysctls) {
      let saved: unknown;
      try { saved = JSON.parse(sysctls); } catch { saved = undefined; }
      for (const [k, v] of Object.entries(typeof saved === 'object' && saved !== null ? saved : {})) {
        if (KUBELET_SYSCTLS.includes(k) && typeof v === 'string' && INTEGER.test(v)) await fx.writeSysctl(k, v).catch(() => undefined);
        else if (v !== '') log(`${dir}: not restoring ${JSON.stringify(k)}=${JSON.stringify(v)}: not a kubelet tunable with an integer value`);
      }
    }
    const live = await fx.listNetns();
    for (const netns of await lines(dir, RUN_FILES.netns)) {
      if (NETNS.test(netns) && live.includes(netns)) await fx.removeNetns(netns);
    }
    await rm(dir, { recursive: true, force: true });
  }
}
