// clusterlet as the benchmark runs it (bench/run.ts for the size runs, bench/members.ts for the many-members run):
// the build from dist/, as deployed, with the node flags and environment it is deployed with (src/nodeflags.ts), the
// API rates the bench needs, and its output straight into a file of the harness dir.
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Harness } from '../test/harness/harness.ts';
import { freePort, pollUntil } from '../test/harness/net.ts';
import { NODE_ENV_VARS, NODE_FLAGS } from '../src/nodeflags.ts';

export interface BenchClusterlet {
  pid: number;
  healthPort: number;
  logFile: string;
  /** Rejects if clusterlet exits before stop(): the run in progress fails with this, not with a timeout. */
  exited: Promise<never>;
  /** Resolves once its /readyz answers OK; fails at once if it exits first. */
  ready(timeoutMs: number): Promise<void>;
  /** SIGTERM, and its exit awaited (at once if it is gone). */
  stop(): Promise<void>;
}

const words = (s: string | undefined): string[] => (s ?? '').split(' ').filter(Boolean);

/**
 * Starts clusterlet on the harness's host with `args` (its members) and its log in `<harness dir>/<logName>`; `what`
 * names the run in the error if it exits early.
 */
export async function startBenchClusterlet(h: Harness, args: string[], logName: string, what: string): Promise<BenchClusterlet> {
  // The compiled build, as deployed (running the TypeScript sources directly costs about 40 MB more).
  // CLUSTERLET_CLI runs another build's bundle under this bench (bench/ab.sh compares two builds in one run).
  const cli = process.env.CLUSTERLET_CLI ?? fileURLToPath(new URL('../dist/cli.js', import.meta.url));
  if (!existsSync(cli)) throw new Error(`${cli} is missing: run \`npm run build\` (make bench does)`);
  const [healthPort, kubeletPort] = await Promise.all([freePort(), freePort()]);
  const logFile = join(h.dir, logName);
  const fd = openSync(logFile, 'a');
  // Extra node flags in CLUSTERLET_NODE_OPTIONS (e.g. --cpu-prof: NODE_OPTIONS refuses most V8 flags), extra clusterlet
  // flags for experiments in CLUSTERLET_ARGS (e.g. '--pod-sync-workers 50').
  const child = spawn(process.execPath, [...NODE_FLAGS, ...words(process.env.CLUSTERLET_NODE_OPTIONS), cli,
    '--host-kubeconfig', h.host.kubeconfig, ...args, '--health-port', String(healthPort), '--kubelet-port', String(kubeletPort),
    '--log-level', 'warn', '--host-qps', '2000', '--host-burst', '4000', '--member-qps', '2000', '--member-burst', '4000',
    '--pod-sync-workers', '20', ...words(process.env.CLUSTERLET_ARGS)],
  // Straight into the file, not through this process: whatever clusterlet writes as it dies is kept.
  { stdio: ['ignore', fd, fd], env: { ...process.env, ...NODE_ENV_VARS } });
  if (child.pid !== undefined) h.recordProcess(child.pid);
  closeSync(fd);
  let stopping = false;
  const exited = new Promise<never>((_, reject) => {
    child.once('exit', (code, signal) => {
      if (!stopping) reject(new Error(`clusterlet exited during ${what} (code ${code}, signal ${signal}); see ${logFile}`));
    });
  });
  exited.catch(() => undefined);
  const gone = (): boolean => child.exitCode !== null || child.signalCode !== null;
  return {
    pid: child.pid!, healthPort, logFile, exited,
    ready: (timeoutMs) => pollUntil(`clusterlet /readyz (${what})`,
      async () => (await fetch(`http://127.0.0.1:${healthPort}/readyz`).catch(() => undefined))?.ok ? true : undefined, timeoutMs, 250,
      () => (gone() ? `clusterlet exited with ${child.exitCode ?? child.signalCode}; see ${logFile}` : undefined)).then(() => undefined),
    async stop() {
      stopping = true;
      if (gone()) return;
      const exit = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exit;
    },
  };
}
