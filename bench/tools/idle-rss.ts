// Idle memory of clusterlet: one member, no pods. Starts the local clusters, then runs clusterlet once per case
// (a variant: the TypeScript sources, the build, or a path to an entry file; with a set of extra flags), waits for the
// virtual node Ready, lets it settle (its health port scraped every 10 s, as deployed) and samples VmRSS; then asks
// it (bench/tools/memreport.mjs, on SIGUSR2) for heapUsed/external and optionally a heap snapshot. It also measures the
// modules alone: the entry run with --help.
//   node bench/tools/idle-rss.ts [--variants src,dist,PATH] [--flags='--lite-mode;MALLOC_ARENA_MAX=2 --v8-pool-size=1']
//     [--runs 3] [--settle 20] [--samples 5] [--snapshot] [--pages]
// --flags: sets separated by `;`, each a case after the one with none; a NAME=value word is an environment variable.
// --runs: runs per case, interleaved, summed up as the median at the end. --pages: which parts of the node binary
// stay resident (bench/tools/binpages.mjs; needs root). `npm run build` first for the dist variant.
import { spawn, execFileSync } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Harness } from '../../test/harness/harness.ts';
import { freePort, pollUntil } from '../../test/harness/net.ts';
import { ClusterClient } from '../../src/kube/client.ts';
import { loadKubeconfigFile } from '../../src/kube/kubeconfig.ts';
import { NODE_ENV_VARS, NODE_FLAGS } from '../../src/nodeflags.ts';
import { IDLE_RSS, idleRssSamples, median, type Rss } from '../bench.ts';

const { values } = parseArgs({ options: {
  variants: { type: 'string', default: 'src,dist' },
  flags: { type: 'string', default: '' },
  settle: { type: 'string', default: String(IDLE_RSS.settleMs / 1000) },
  samples: { type: 'string', default: String(IDLE_RSS.samples) },
  runs: { type: 'string', default: '1' },
  snapshot: { type: 'boolean', default: false },
  pages: { type: 'boolean', default: false },
} });
const say = (s: string): void => { process.stdout.write(`${s}\n`); };
const here = (p: string): string => fileURLToPath(new URL(p, import.meta.url));
const preload = here('./memreport.mjs');
/** A set of extra node flags and environment variables (its NAME=value words), run as one case. */
interface FlagSet { label: string; flags: string[]; env: Record<string, string> }
const flagSets: FlagSet[] = ['', ...values.flags.split(';').filter((f) => f.trim())].map((f) => {
  const words = f.split(' ').filter(Boolean);
  return { label: words.join(' '), flags: words.filter((w) => w.startsWith('-')),
    env: Object.fromEntries(words.filter((w) => !w.startsWith('-')).map((w) => w.split('=', 2))) };
});
type Sample = Rss & { heapUsed: number };
const entries: Record<string, string> = { dist: here('../../dist/cli.js'), src: here('../../src/cli.ts') };
const entry = (variant: string): string => entries[variant] ?? resolve(variant);
const mb = (bytes: number): string => (bytes / 1048576).toFixed(1);

/** The modules alone: the entry run with --help, which loads everything it imports and starts nothing. */
function modulesOnly(variant: string, extraFlags: string[], env: Record<string, string>): string {
  const out = join(tmpdir(), `idle-rss-modules-${process.pid}.jsonl`);
  const measure = (args: string[]): { rss: number; heapUsed: number } => {
    rmSync(out, { force: true });
    execFileSync(process.execPath, [...NODE_FLAGS, ...extraFlags, '--import', preload, ...args],
      { env: { ...process.env, ...NODE_ENV_VARS, ...env, MEMREPORT_OUT: out, MEMREPORT_AT_EXIT: '1' }, stdio: 'ignore' });
    return JSON.parse(readFileSync(out, 'utf8').trim().split('\n').at(-1)!);
  };
  const bare = measure(['-e', '']);
  const loaded = measure([entry(variant), '--help']);
  return `bare node: RSS ${mb(bare.rss)} MB heapUsed ${mb(bare.heapUsed)} MB; `
    + `${variant} modules loaded: RSS ${mb(loaded.rss)} MB heapUsed ${mb(loaded.heapUsed)} MB`;
}

/** One run: clusterlet started on the harness, idle once its node is Ready and settled. */
async function idleRun(h: Harness, host: ClusterClient, variant: string, set: FlagSet, run: number): Promise<Sample> {
  const name = `${variant}${set.label}-${run}`.replace(/[^\w=.-]+/g, '_');
  const report = join(h.dir, `mem-${name}.jsonl`);
  const logFd = openSync(join(h.dir, `clusterlet-${name}.log`), 'a');
  // The health port on, as deployed, and scraped as Prometheus and the probes would.
  const healthPort = await freePort();
  const child = spawn(process.execPath, [...NODE_FLAGS, ...set.flags, '--import', preload, entry(variant),
    '--host-kubeconfig', h.host.kubeconfig, '--member-kubeconfig', h.member.kubeconfig, '--member-name', 'member',
    '--health-port', String(healthPort), '--log-level', 'warn'],
  { stdio: ['ignore', logFd, logFd], env: { ...process.env, ...NODE_ENV_VARS, ...set.env, MEMREPORT_OUT: report,
    ...(values.snapshot ? { MEMREPORT_SNAPSHOT: `/tmp/idle-${name}.heapsnapshot` } : {}) } });
  if (child.pid !== undefined) h.recordProcess(child.pid);
  closeSync(logFd);
  try {
    const samples = await idleRssSamples(host, 'clusterlet-member', child.pid!,
      { ...IDLE_RSS, settleMs: Number(values.settle) * 1000, samples: Number(values.samples), healthPort });
    const mid: Rss = { total: median(samples.map((x) => x.total)), anon: median(samples.map((x) => x.anon)), file: median(samples.map((x) => x.file)) };
    if (values.pages) say(execFileSync(process.execPath, [here('./binpages.mjs'), String(child.pid), '12'], { encoding: 'utf8' }));
    child.kill('SIGUSR2');
    // memreport.mjs writes its one line (after the heap snapshot, if asked) in a single synchronous append.
    const mem = await pollUntil('its memory report', async () => (existsSync(report) ? JSON.parse(readFileSync(report, 'utf8')) : undefined), 60_000);
    say(`${variant} ${set.label} #${run}: idle VmRSS min ${Math.min(...samples.map((x) => x.total)).toFixed(1)} MB median ${mid.total.toFixed(1)} MB (anon ${mid.anon.toFixed(1)}, file ${mid.file.toFixed(1)}); `
      + `heapTotal ${mb(mem.heapTotal)} heapUsed ${mb(mem.heapUsed)} external ${mb(mem.external)} arrayBuffers ${mb(mem.arrayBuffers)} MB`
      + `; spaces ${Object.entries(mem.spaces as Record<string, number>).filter(([, v]) => v > 0).map(([k, v]) => `${k} ${mb(v)}`).join(', ')}`
      + (mem.snapshot ? `; snapshot ${mem.snapshot}` : ''));
    return { ...mid, heapUsed: mem.heapUsed };
  } finally {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
    await host.core.deleteNode({ name: 'clusterlet-member' }).catch(() => undefined);
  }
}

const h = await Harness.start({ log: (l) => process.stderr.write(`[harness] ${l}\n`) });
try {
  const host = new ClusterClient(loadKubeconfigFile(h.host.kubeconfig), { cluster: 'host', qps: 50, burst: 100 });
  await h.createLeaseNamespace();
  const cases = values.variants.split(',').flatMap((variant) => flagSets.map((set) => ({ variant, set })))
    .filter(({ variant }) => existsSync(entry(variant)) || (say(`${variant}: ${entry(variant)} missing (npm run build)`), false));
  for (const { variant, set } of cases) say(`${modulesOnly(variant, set.flags, set.env)} ${set.label}`);
  // Runs interleaved (A B A B ...) so that a drift of the machine spreads over every case alike.
  const results = new Map(cases.map((c) => [c, [] as Sample[]]));
  for (let run = 1; run <= Number(values.runs); run++) {
    for (const c of cases) results.get(c)!.push(await idleRun(h, host, c.variant, c.set, run));
  }
  say(`\nmedian of ${values.runs} run(s), each the median of ${values.samples} samples (MB):`);
  for (const [{ variant, set }, rs] of results) {
    const med = (f: (r: Sample) => number): string => median(rs.map(f)).toFixed(1);
    say(`${`${variant} ${set.label}`.padEnd(40)} VmRSS ${med((r) => r.total)} (runs ${rs.map((r) => r.total.toFixed(1)).join(' ')}) `
      + `anon ${med((r) => r.anon)} file ${med((r) => r.file)} heapUsed ${med((r) => r.heapUsed / 1048576)}`);
  }
} finally {
  await h.stop();
}
