// Idle memory of clusterlet: one member, no pods. Starts the local clusters, then runs clusterlet once per variant
// (the TypeScript sources or the build, with extra V8 flags), waits for the virtual node Ready, lets it settle and
// samples VmRSS; then asks it (hack/memreport.mjs, on SIGUSR2) for heapUsed/external and optionally a heap snapshot.
// It also measures the modules alone: cli.ts's imports loaded in a bare process, nothing started.
//   node hack/idle-rss.ts [--variants src,dist] [--flags '--lite-mode;--v8-pool-size=1'] [--settle 20] [--snapshot]
// (--flags: sets of extra V8 flags separated by `;`, each run in turn after one run with none.)
// `npm run build` first for the dist variant.
import { spawn, execFileSync } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { Harness } from '../test/harness/harness.ts';
import { ClusterClient } from '../src/kube/client.ts';
import { loadKubeconfigFile } from '../src/kube/kubeconfig.ts';
import { NODE_FLAGS } from '../src/nodeflags.ts';
import { IDLE_RSS, idleRssSamples, median } from '../bench/bench.ts';

const { values } = parseArgs({ options: {
  variants: { type: 'string', default: 'src,dist' },
  flags: { type: 'string', default: '' },
  settle: { type: 'string', default: '20' },
  samples: { type: 'string', default: '5' },
  snapshot: { type: 'boolean', default: false },
} });
const say = (s: string): void => { process.stdout.write(`${s}\n`); };
const here = (p: string): string => fileURLToPath(new URL(p, import.meta.url));
const preload = here('./memreport.mjs');
const flagSets = ['', ...values.flags.split(';').filter((f) => f.trim())].map((f) => f.split(' ').filter(Boolean));
const entry = (variant: string): string => variant === 'dist' ? here('../dist/cli.js') : here('../src/cli.ts');
const mb = (bytes: number): string => (bytes / 1048576).toFixed(1);

/** The modules alone: what cli.ts imports, loaded in a process that starts nothing. */
function modulesOnly(variant: string, extraFlags: string[]): string {
  const dir = variant === 'dist' ? here('../dist/') : here('../src/');
  const ext = variant === 'dist' ? 'js' : 'ts';
  const mods = ['config', 'crash', 'log', 'manager', 'health', 'host/api/kubelet', 'version'].map((m) => `${dir}${m}.${ext}`);
  const code = `await import('rxjs'); for (const m of ${JSON.stringify(mods)}) await import(m);
    await new Promise((r) => setTimeout(r, 2000));
    const rss = Number(/VmRSS:\\s+(\\d+) kB/.exec(require('node:fs').readFileSync('/proc/self/status', 'utf8'))[1]);
    const u = process.memoryUsage();
    console.log(JSON.stringify({ rssKB: rss, heapUsed: u.heapUsed, external: u.external }));`;
  const bare = JSON.parse(execFileSync(process.execPath, [...NODE_FLAGS, ...extraFlags, '--input-type=commonjs', '-e',
    `setTimeout(() => { const u = process.memoryUsage(); console.log(JSON.stringify({ rssKB: Number(/VmRSS:\\s+(\\d+) kB/.exec(require('node:fs').readFileSync('/proc/self/status', 'utf8'))[1]), heapUsed: u.heapUsed, external: u.external })); }, 2000)`],
  { encoding: 'utf8' }));
  const loaded = JSON.parse(execFileSync(process.execPath, [...NODE_FLAGS, ...extraFlags, '--input-type=module', '-e',
    `import { createRequire } from 'node:module'; const require = createRequire(${JSON.stringify(here('../package.json'))}); ${code}`],
  { encoding: 'utf8', cwd: here('..') }));
  return `bare node: RSS ${(bare.rssKB / 1024).toFixed(1)} MB heapUsed ${mb(bare.heapUsed)} MB; `
    + `${variant} modules loaded: RSS ${(loaded.rssKB / 1024).toFixed(1)} MB heapUsed ${mb(loaded.heapUsed)} MB external ${mb(loaded.external)} MB`;
}

const h = await Harness.start({ log: (l) => process.stderr.write(`[harness] ${l}\n`) });
try {
  const host = new ClusterClient(loadKubeconfigFile(h.host.kubeconfig), { cluster: 'host', qps: 50, burst: 100 });
  await h.createLeaseNamespace();
  for (const variant of values.variants.split(',')) for (const extraFlags of flagSets) {
    if (!existsSync(entry(variant))) { say(`${variant}: ${entry(variant)} missing (npm run build)`); continue; }
    say(`${modulesOnly(variant, extraFlags)} ${extraFlags.join(' ')}`);
    const report = join(h.dir, `mem-${variant}${extraFlags.join('')}.jsonl`);
    const logFd = openSync(join(h.dir, `clusterlet-${variant}.log`), 'a');
    const child = spawn(process.execPath, [...NODE_FLAGS, ...extraFlags, '--import', preload, entry(variant),
      '--host-kubeconfig', h.host.kubeconfig, '--member-kubeconfig', h.member.kubeconfig, '--member-name', 'member',
      '--health-port', '0', '--log-level', 'warn'],
    { stdio: ['ignore', logFd, logFd], env: { ...process.env, MEMREPORT_OUT: report,
      ...(values.snapshot ? { MEMREPORT_SNAPSHOT: `/tmp/idle-${variant}.heapsnapshot` } : {}) } });
    closeSync(logFd);
    const rss = await idleRssSamples(host, 'clusterlet-member', child.pid!,
      { ...IDLE_RSS, settleMs: Number(values.settle) * 1000, samples: Number(values.samples) });
    child.kill('SIGUSR2');
    await sleep(values.snapshot ? 8000 : 1000);
    const mem = JSON.parse(readFileSync(report, 'utf8').trim().split('\n').at(-1)!);
    say(`${variant} ${extraFlags.join(' ')}: idle VmRSS min ${Math.min(...rss).toFixed(1)} MB median ${median(rss).toFixed(1)} MB; `
      + `heapTotal ${mb(mem.heapTotal)} heapUsed ${mb(mem.heapUsed)} external ${mb(mem.external)} arrayBuffers ${mb(mem.arrayBuffers)} MB`
      + `; spaces ${Object.entries(mem.spaces as Record<string, number>).map(([k, v]) => `${k} ${mb(v)}`).join(', ')}`
      + (mem.snapshot ? `; snapshot ${mem.snapshot}` : ''));
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
    await host.core.deleteNode({ name: 'clusterlet-member' }).catch(() => undefined);
  }
} finally {
  await h.stop();
}
