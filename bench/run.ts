// `npm run bench` / `make bench`: starts the local clusters and clusterlet, runs the benchmark, prints a
// markdown table and writes JSON to bench/results/ (markdown to latest.md). Options: --sizes 10,100,1000,10000
// --pairs 3 --out FILE.json (writes FILE.json and FILE.md instead); after the sizes, the many-members run
// (bench/members.ts): --members 10 --pods-per-member 500 (--members 0 skips it).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, existsSync, mkdirSync, openSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { HOST_FLOOR_NODE, Harness } from '../test/harness/harness.ts';
import { freePort, pollUntil } from '../test/harness/net.ts';
import { runBench, toMarkdown, type BenchResult } from './bench.ts';
import { NODE_ENV_VARS, NODE_FLAGS } from '../src/nodeflags.ts';
import { membersMarkdown, runMembers, type MembersResult } from './members.ts';

const { values } = parseArgs({ options: {
  sizes: { type: 'string', default: '10,100,1000,10000' },
  pairs: { type: 'string', default: '3' },
  out: { type: 'string' },
  members: { type: 'string', default: '10' },
  'pods-per-member': { type: 'string', default: '500' },
} });
const sizes = values.sizes.split(',').map(Number);
const pairs = Number(values.pairs);
const log = (l: string): void => { process.stderr.write(`[bench] ${l}\n`); };

const h = await Harness.start({ componentQPS: 2000, log, hostFloorNode: true });
// clusterlet's Leases (which replica leads the member) live in namespace clusterlet, as manifests/host installs it.
await h.createLeaseNamespace();
const [port, kubeletPort] = await Promise.all([freePort(), freePort()]);
const logFile = join(h.dir, 'clusterlet.log');
// The compiled build, as deployed (running the TypeScript sources directly costs about 40 MB more).
const cli = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
if (!existsSync(cli)) throw new Error('dist/cli.js is missing: run `npm run build` (make bench does)');
// clusterlet runs with the flags it is deployed with (src/nodeflags.ts), plus any in CLUSTERLET_NODE_OPTIONS
// (e.g. --cpu-prof): NODE_OPTIONS refuses most V8 flags.
const nodeFlags = [...NODE_FLAGS, ...(process.env.CLUSTERLET_NODE_OPTIONS ?? '').split(' ').filter(Boolean)];
const logFd = openSync(logFile, 'a');
const child = spawn(process.execPath, [...nodeFlags, cli, '--host-kubeconfig', h.host.kubeconfig, '--member-kubeconfig', h.member.kubeconfig,
  '--member-name', 'member', '--health-port', String(port), '--kubelet-port', String(kubeletPort), '--log-level', 'warn',
  '--host-qps', '2000', '--host-burst', '4000', '--member-qps', '2000', '--member-burst', '4000', '--pod-sync-workers', '20',
  // Extra flags for experiments, e.g. CLUSTERLET_ARGS='--pod-sync-workers 50'.
  ...(process.env.CLUSTERLET_ARGS ?? '').split(' ').filter(Boolean)],
// Straight into the file, not through this process: whatever clusterlet writes as it dies is kept.
{ stdio: ['ignore', logFd, logFd], env: { ...process.env, ...NODE_ENV_VARS } });
closeSync(logFd);
let stopping = false;
// Rejects if clusterlet exits before the bench is done: the run in progress fails with this, not with a timeout.
const clusterletExited = new Promise<never>((_, reject) => {
  child.once('exit', (code, signal) => {
    if (!stopping) reject(new Error(`clusterlet exited during the bench (code ${code}, signal ${signal}); see ${logFile}`));
  });
});
clusterletExited.catch(() => undefined);
const stop = async (): Promise<void> => { stopping = true; child.kill('SIGTERM'); await h.stop(); };
process.once('SIGINT', () => { void stop().finally(() => process.exit(130)); });

try {
  await pollUntil('clusterlet /readyz', async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.ok ? true : undefined,
    60_000, 250, () => child.exitCode !== null ? `clusterlet exited with ${child.exitCode}; see ${logFile}` : undefined);
  const dir = fileURLToPath(new URL('./results/', import.meta.url));
  mkdirSync(dir, { recursive: true });
  let file = values.out;
  const markdown = (r: BenchResult & { members?: MembersResult }): string => toMarkdown(r) + (r.members ? membersMarkdown(r.members) : '');
  const write = (r: BenchResult & { members?: MembersResult }): void => {
    file ??= join(dir, `bench-${r.startedAt.replace(/[:.]/g, '-')}.json`);
    writeFileSync(file, JSON.stringify(r, null, 2));
    // With --out, the markdown goes beside it, and the committed latest.md stays as it is.
    writeFileSync(values.out ? file.replace(/(\.json)?$/, '.md') : join(dir, 'latest.md'), markdown(r));
  };
  const result: BenchResult & { members?: MembersResult } = await runBench({ harness: h, sizes, pairs, clusterletPid: child.pid!,
    metricsURL: `http://127.0.0.1:${port}/metrics`, virtualNode: 'clusterlet-member', hostOnlyNode: HOST_FLOOR_NODE.name, log,
    onProgress: write, clusterletExited });
  write(result);
  if (Number(values.members) > 0) {
    // The size runs' clusterlet goes: the many-members run starts one of its own, leading only its members.
    stopping = true;
    if (child.exitCode === null && child.signalCode === null) { child.kill('SIGTERM'); await once(child, 'exit'); }
    result.members = await runMembers({ harness: h, members: Number(values.members), podsPerMember: Number(values['pods-per-member']),
      log, onProgress: (members) => write({ ...result, members }) });
    write(result);
  }
  process.stdout.write(markdown(result));
  log(`results: ${file}`);
} finally {
  await stop();
}
