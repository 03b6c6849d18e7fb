// What integration tests share: the harness of this run, API clients for its clusters, namespaces
// made per test and cleaned up after it, and clusterlet processes started for a test.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';
import { once } from 'node:events';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import type { TestContext } from 'node:test';
import type { Harness } from '../harness/harness.ts';
import type { LocalCluster } from '../harness/cluster.ts';
import { ClusterClient } from '../../src/kube/client.ts';
import { toKubeError } from '../../src/kube/errors.ts';
import { waitUntil } from './wait.ts';

let current: Harness | undefined;
export function setHarness(h: Harness): void { current = h; }
export function harness(): Harness {
  if (!current) throw new Error('the harness is not started (run through test/integration/run.ts)');
  return current;
}

export function client(cluster: LocalCluster, name = cluster.name): ClusterClient {
  return new ClusterClient(cluster.kubeConfig(), { cluster: name, qps: 500, burst: 1000 });
}

export function uniqueName(prefix: string): string {
  return `${prefix}-${randomBytes(3).toString('hex')}`;
}

/** A fresh namespace in each given cluster, deleted (and awaited) when the test ends. */
export async function namespaces(t: TestContext, prefix: string, clusters: ClusterClient[]): Promise<string> {
  const name = uniqueName(prefix);
  for (const c of clusters) await c.core.createNamespace({ body: { metadata: { name, labels: { 'clusterlet.io/test': 'true' } } } });
  t.after(async () => {
    for (const c of clusters) {
      await c.core.deleteNamespace({ name }).catch((err: unknown) => {
        if (toKubeError(err).kind !== 'NotFound') throw err;
      });
    }
  });
  return name;
}

/** Deletes a namespace and waits until it is gone (the controller-manager finalizes it). */
export async function deleteNamespaceAndWait(c: ClusterClient, name: string, timeoutMs = 60_000): Promise<void> {
  await c.core.deleteNamespace({ name });
  await waitUntil(c, { path: '/api/v1/namespaces', model: 'V1Namespace', resource: 'namespaces',
    fieldSelector: `metadata.name=${name}`, list: (p) => c.core.listNamespace(p) },
  (items) => items.length === 0, timeoutMs, `namespace ${name} deleted`);
}

export interface ClusterletProcess {
  readonly child: ChildProcess;
  readonly logFile: string;
  logs(): string;
  /** SIGTERM and wait for exit; resolves with the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL and wait. */
  kill(): Promise<void>;
}

const spawned = new Set<ClusterletProcess>();
const CLI = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));

/** Runs clusterlet as a process (as a user would), its output captured to a file in the harness dir. */
export function startClusterlet(args: string[], env: NodeJS.ProcessEnv = {}): ClusterletProcess {
  const logFile = join(harness().dir, `${uniqueName('clusterlet')}.log`);
  const out = createWriteStream(logFile);
  const child = spawn(process.execPath, [CLI, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LOG_LEVEL: 'debug', ...env },
  });
  child.stdout!.pipe(out);
  child.stderr!.pipe(out);
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  const p: ClusterletProcess = {
    child, logFile,
    logs: () => readFileSync(logFile, 'utf8'),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const code = await exited;
      spawned.delete(p);
      return code;
    },
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
      spawned.delete(p);
    },
  };
  spawned.add(p);
  return p;
}

/** Every clusterlet process a test started and did not stop, for the suite's teardown. */
export async function stopSpawned(): Promise<void> {
  await Promise.all([...spawned].map((p) => p.kill()));
}

/** Flags that run clusterlet between the harness's host and a member. */
export function clusterletArgs(member: LocalCluster, extra: string[] = []): string[] {
  return ['--host-kubeconfig', harness().host.kubeconfig, '--member-kubeconfig', member.kubeconfig,
    '--member-name', member.name, '--health-port', '0', '--watch-silence-seconds', '30', ...extra];
}
