// The reaper of earlier runs (test/harness/reaper.ts) against run directories crafted in a temp dir of this test's
// own, its effects on the machine faked: what it does for a dead run of its own, and each thing it refuses.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, chown, mkdir, mkdtemp, readdir, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRunDir, reapStaleRuns, RUN_FILES, RUN_PREFIX, STARTING_PREFIX, writeOwner, type ReapEffects } from '../../harness/reaper.ts';

/** A pid above any pid_max: no process has it. */
const DEAD_PID = 4_194_305;

let top: string;
const children: ChildProcess[] = [];
before(async () => { top = await mkdtemp(join(tmpdir(), 'reaper-test-')); });
after(async () => {
  for (const c of children) c.kill('SIGKILL');
  await rm(top, { recursive: true, force: true });
});
/** A base directory of the test's own, where the reaper looks for runs. */
const newBase = (): Promise<string> => mkdtemp(join(top, 'base-'));

interface Calls { kills: [number, NodeJS.Signals | 0][]; cgroups: string[]; sysctls: [string, string][]; netns: string[] }

/** Effects that record what the reaper asks for (signal 0 too) and do nothing. */
function fakeEffects(live: string[] = []): { fx: ReapEffects; calls: Calls } {
  const calls: Calls = { kills: [], cgroups: [], sysctls: [], netns: [] };
  const fx: ReapEffects = {
    kill: (pid, signal) => { calls.kills.push([pid, signal]); },
    cleanCgroupRoot: async (root) => { calls.cgroups.push(root); },
    writeSysctl: async (key, value) => { calls.sysctls.push([key, value]); },
    listNetns: async () => live,
    removeNetns: async (name) => { calls.netns.push(name); },
  };
  return { fx, calls };
}

/** A run directory as the harness writes it (mode 0700, this user's), its owner DEAD_PID, no processes recorded, unless given. */
async function craftRun(at: string, id: string, files: Record<string, string> = {}): Promise<string> {
  const dir = join(at, `${RUN_PREFIX}${id}`);
  await mkdir(dir, { mode: 0o700 });
  await writeFile(join(dir, 'owner.pid'), String(DEAD_PID));
  await writeFile(join(dir, RUN_FILES.pids), '');
  for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
  return dir;
}

/** The start time of a process (field 22 of /proc/<pid>/stat), as the harness records it. */
function startTime(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
}

/** A shell waiting on its stdin (a pipe nobody writes), `args` on its command line, as user `uid` when given. */
function sleeper(args: string[] = [], detached = false, uid?: number): ChildProcess {
  const c = spawn('sh', ['-c', 'read -r x', 'sh', ...args], { stdio: ['pipe', 'ignore', 'ignore'], detached,
    ...uid === undefined ? {} : { uid, gid: uid } });
  children.push(c);
  return c;
}

test('a dead run of its own: its recorded processes, cgroup roots, sysctls and network namespaces undone, its directory removed', async () => {
  const base = await newBase();
  const id = 'Ab12Cd';
  const p = sleeper([], true);
  const dir = await craftRun(base, id, {
    pids: `${p.pid} ${startTime(p.pid!)}\n`,
    realnodes: `/clusterlet-${id}-host-real\n/clusterlet-${id}-member-real\n`,
    'sysctls.json': JSON.stringify({ 'kernel/panic': '0', 'vm/overcommit_memory': '0' }),
    netns: 'clusterlet-0a1b2c\nclusterlet-3d4e5f',
  });
  const { fx, calls } = fakeEffects(['clusterlet-0a1b2c', 'other']);
  await reapStaleRuns({ base, effects: fx });
  assert.deepEqual(calls.kills.filter(([pid]) => Math.abs(pid) === p.pid).sort(), [[-p.pid!, 'SIGKILL'], [p.pid!, 'SIGKILL']]);
  assert.deepEqual(calls.cgroups, [`/clusterlet-${id}-host-real`, `/clusterlet-${id}-member-real`]);
  assert.deepEqual(calls.sysctls, [['kernel/panic', '0'], ['vm/overcommit_memory', '0']]);
  assert.deepEqual(calls.netns, ['clusterlet-0a1b2c']);
  assert.equal(existsSync(dir), false);
});

test('refuses a run directory another user owns, and leaves it', { skip: process.getuid?.() !== 0 ? 'needs root to chown' : false }, async () => {
  const base = await newBase();
  const id = 'Own3rX';
  const dir = await craftRun(base, id, { realnodes: '/\n', 'sysctls.json': JSON.stringify({ 'kernel/panic': '0' }) });
  await chown(dir, 65534, 65534);
  const { fx, calls } = fakeEffects();
  await reapStaleRuns({ base, effects: fx });
  assert.deepEqual(calls, { kills: [], cgroups: [], sysctls: [], netns: [] });
  assert.equal(existsSync(dir), true);
});

test('refuses a run directory others may write to, and leaves it', async () => {
  const base = await newBase();
  const id = 'Wr1teX';
  const dir = await craftRun(base, id, { realnodes: `/clusterlet-${id}-host-real\n` });
  await chmod(dir, 0o777);
  const { fx, calls } = fakeEffects();
  await reapStaleRuns({ base, effects: fx });
  assert.deepEqual(calls, { kills: [], cgroups: [], sysctls: [], netns: [] });
  assert.equal(existsSync(dir), true);
});

test('refuses a symbolic link named as a run', async () => {
  const base = await newBase();
  const elsewhere = await newBase();
  const target = await craftRun(elsewhere, 'L1nkXx', { realnodes: '/clusterlet-L1nkXx-host-real\n' });
  await symlink(target, join(base, `${RUN_PREFIX}L1nkXx`));
  const { fx, calls } = fakeEffects();
  await reapStaleRuns({ base, effects: fx });
  assert.deepEqual(calls, { kills: [], cgroups: [], sysctls: [], netns: [] });
  assert.equal(existsSync(target), true);
});

test('cleans only cgroup roots of the harness\'s own pattern for that run', async () => {
  const base = await newBase();
  const id = 'Cg9rOo';
  await craftRun(base, id, { realnodes: ['/', '/system.slice', '/clusterlet-Zz9zZz-host-real', `/clusterlet-${id}-host-real/../..`,
    `/clusterlet-${id}-host-real/../../system.slice`, 'clusterlet-relative', `/clusterlet-${id}-host-real`, ''].join('\n') });
  const { fx, calls } = fakeEffects();
  await reapStaleRuns({ base, effects: fx });
  assert.deepEqual(calls.cgroups, [`/clusterlet-${id}-host-real`]);
});

test('restores only the kubelet\'s sysctls, and only integer values', async () => {
  const base = await newBase();
  await craftRun(base, 'Sy5ctl', { 'sysctls.json': JSON.stringify({
    '../../../etc/cron.d/x': '1', 'kernel/../../../../etc/shadow': '1', 'kernel/core_pattern': '|/tmp/x', 'net/ipv4/ip_forward': '0',
    'vm/overcommit_memory': '1; rm -rf /', 'kernel/panic_on_oops': '1\n0', 'vm/panic_on_oom': '', 'kernel/panic': '10',
    'kernel/keys/root_maxkeys': '-1',
  }) });
  const { fx, calls } = fakeEffects();
  await reapStaleRuns({ base, effects: fx });
  assert.deepEqual(calls.sysctls, [['kernel/panic', '10'], ['kernel/keys/root_maxkeys', '-1']]);
});

test('kills only the recorded processes still of that run (same start time), never by command line', async () => {
  const base = await newBase();
  const id = 'K1llXx';
  const dir = join(base, `${RUN_PREFIX}${id}`);
  // It names the run's directory on its command line, and is no process of the run's.
  const mentions = sleeper([dir]);
  // Recorded by the run, but its pid now belongs to another process (another start time).
  const reused = sleeper();
  const recorded = sleeper();
  await craftRun(base, id, { pids: [`${reused.pid} ${Number(startTime(reused.pid!)) + 1}`, `${recorded.pid} ${startTime(recorded.pid!)}`,
    `${DEAD_PID} 1`, 'x y', '1'].join('\n') });
  const { fx, calls } = fakeEffects();
  await reapStaleRuns({ base, effects: fx });
  // `recorded` leads no process group of its own: it alone is killed.
  assert.deepEqual(calls.kills, [[recorded.pid, 'SIGKILL']]);
  assert.ok(!calls.kills.some(([pid]) => Math.abs(pid) === mentions.pid));
});

test('a run whose owner lives, by /proc (its pid with its start time), is left alone, also when the owner is another user\'s; the owner is never signalled', { skip: process.getuid?.() !== 0 ? 'needs root to start a process as another user' : false }, async () => {
  const base = await newBase();
  const id = 'Oth3rU';
  const dir = await craftRun(base, id, { realnodes: `/clusterlet-${id}-host-real\n` });
  // A live process of user nobody: a reaper not root may not signal it (EPERM), and it runs all the same.
  const owner = sleeper([], false, 65534);
  assert.notEqual(readFileSync(`/proc/${owner.pid}/status`, 'utf8').match(/^Uid:\s+(\d+)/m)?.[1], String(process.getuid?.()));
  await writeFile(join(dir, RUN_FILES.owner), String(owner.pid));
  await writeFile(join(dir, RUN_FILES.ownerStart), startTime(owner.pid!));
  const { fx, calls } = fakeEffects();
  await reapStaleRuns({ base, effects: fx });
  assert.deepEqual(calls, { kills: [], cgroups: [], sysctls: [], netns: [] });
  assert.equal(existsSync(dir), true);
  // Once it is gone, the run is reaped.
  owner.kill('SIGKILL');
  await once(owner, 'exit');
  await reapStaleRuns({ base, effects: fx });
  assert.deepEqual(calls.cgroups, [`/clusterlet-${id}-host-real`]);
  assert.equal(existsSync(dir), false);
});

test('removes only network namespaces named as the harness names them', async () => {
  const base = await newBase();
  await craftRun(base, 'N3tnsX', { netns: ['clusterlet-0a1b2c', 'cni-1234', 'clusterlet-../x', 'clusterlet-0a1b2c3'].join('\n') });
  const { fx, calls } = fakeEffects(['clusterlet-0a1b2c', 'cni-1234', 'clusterlet-../x', 'clusterlet-0a1b2c3']);
  await reapStaleRuns({ base, effects: fx });
  assert.deepEqual(calls.netns, ['clusterlet-0a1b2c']);
});

test('a run\'s owner file holds its pid alone, as the reapers of older checkouts read it; its start time tells a reused pid', async () => {
  const base = await newBase();
  const id = 'Own3r0';
  const dir = await craftRun(base, id, { realnodes: `/clusterlet-${id}-host-real\n` });
  await writeOwner(dir);
  // An older reaper's reading: Number() of the file, anything else than a live pid being a dead owner.
  assert.equal(Number(readFileSync(join(dir, RUN_FILES.owner), 'utf8')), process.pid);
  const { fx, calls } = fakeEffects();
  await reapStaleRuns({ base, effects: fx });
  assert.deepEqual(calls.cgroups, []);
  // The same pid, another start time: another process has it now, and the run is reaped.
  await writeFile(join(dir, RUN_FILES.ownerStart), '1');
  await reapStaleRuns({ base, effects: fx });
  assert.deepEqual(calls.cgroups, [`/clusterlet-${id}-host-real`]);
});

test('a run directory is never seen without its owner: a reaper starting while it is made leaves it', async () => {
  const base = await newBase();
  const { fx, calls } = fakeEffects();
  // The reaper of another harness runs just before the owner is written.
  const dir = await createRunDir(base, async (d) => {
    await reapStaleRuns({ base, effects: fx });
    await writeOwner(d);
  });
  assert.equal(Number(readFileSync(join(dir, RUN_FILES.owner), 'utf8')), process.pid);
  assert.match(dir, new RegExp(`/${RUN_PREFIX}[A-Za-z0-9]{6}$`));
  assert.deepEqual(await readdir(base), [dir.slice(base.length + 1)]);
  await reapStaleRuns({ base, effects: fx });
  assert.equal(existsSync(dir), true);
  assert.deepEqual(calls, { kills: [], cgroups: [], sysctls: [], netns: [] });
});

test('a run directory without an owner made less than a minute ago (an older checkout\'s run starting) is left; older, it is reaped', async () => {
  const base = await newBase();
  const id = 'Y0ungX';
  const dir = await craftRun(base, id, { realnodes: `/clusterlet-${id}-host-real\n` });
  await rm(join(dir, RUN_FILES.owner));
  const { fx, calls } = fakeEffects();
  await reapStaleRuns({ base, effects: fx });
  assert.equal(existsSync(dir), true);
  assert.deepEqual(calls.cgroups, []);
  const old = new Date(Date.now() - 61_000);
  await utimes(dir, old, old);
  await reapStaleRuns({ base, effects: fx });
  assert.equal(existsSync(dir), false);
  assert.deepEqual(calls.cgroups, [`/clusterlet-${id}-host-real`]);
});

test('a run of an older checkout that records no processes: nothing undone, its directory left, the log says what to do', async () => {
  const base = await newBase();
  const id = 'N0pidX';
  const dir = await craftRun(base, id, { realnodes: `/clusterlet-${id}-host-real\n`, 'sysctls.json': JSON.stringify({ 'kernel/panic': '0' }) });
  await rm(join(dir, RUN_FILES.pids));
  const { fx, calls } = fakeEffects();
  const logged: string[] = [];
  await reapStaleRuns({ base, effects: fx, log: (l) => logged.push(l) });
  assert.deepEqual(calls, { kills: [], cgroups: [], sysctls: [], netns: [] });
  assert.equal(existsSync(dir), true);
  assert.match(logged.join('\n'), new RegExp(`leaving ${dir} alone: .*records no processes.*then remove ${dir}`));
});

test('a process recorded without its start time is not killed by pid alone: nothing undone, the directory left, the log says what to do', async () => {
  const base = await newBase();
  const id = 'P1dAlo';
  const byPid = sleeper([], true);
  const withStart = sleeper([], true);
  const dir = await craftRun(base, id, { pids: `${withStart.pid} ${startTime(withStart.pid!)}\n${byPid.pid}\n`,
    realnodes: `/clusterlet-${id}-host-real\n` });
  const { fx, calls } = fakeEffects();
  const logged: string[] = [];
  await reapStaleRuns({ base, effects: fx, log: (l) => logged.push(l) });
  assert.deepEqual(calls, { kills: [], cgroups: [], sysctls: [], netns: [] });
  assert.equal(existsSync(dir), true);
  assert.match(logged.join('\n'), new RegExp(`leaving ${dir} alone: .*processes ${byPid.pid} .*without a start time.*ps -o pid,lstart,args -p ${byPid.pid}`));
  // Once that process is gone, the run is reaped.
  await writeFile(join(dir, RUN_FILES.pids), `${withStart.pid} ${startTime(withStart.pid!)}\n${DEAD_PID}\n`);
  const later = fakeEffects();
  await reapStaleRuns({ base, effects: later.fx });
  assert.deepEqual(later.calls.kills.map(([pid]) => Math.abs(pid)), [withStart.pid, withStart.pid]);
  assert.equal(existsSync(dir), false);
});

test('a run directory left half made (its owner gone before the rename) is removed; one still being made is left', async () => {
  const base = await newBase();
  const gone = join(base, `${STARTING_PREFIX}H4lfXx`);
  const making = join(base, `${STARTING_PREFIX}M4k1ng`);
  for (const d of [gone, making]) {
    await mkdir(d, { mode: 0o700 });
    await writeFile(join(d, RUN_FILES.pids), '');
  }
  await writeFile(join(gone, RUN_FILES.owner), String(DEAD_PID));
  await writeOwner(making);
  const { fx, calls } = fakeEffects();
  await reapStaleRuns({ base, effects: fx });
  assert.equal(existsSync(gone), false);
  assert.equal(existsSync(making), true);
  assert.deepEqual(calls, { kills: [], cgroups: [], sysctls: [], netns: [] });
});
