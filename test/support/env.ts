// What integration tests share: the harness of this run, API clients for its clusters, namespaces
// made per test and cleaned up after it, and clusterlet processes started for a test.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';
import { once } from 'node:events';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { after, before, type TestContext } from 'node:test';
import type { Harness } from '../harness/harness.ts';
import type { LocalCluster } from '../harness/cluster.ts';
import { ClusterClient } from '../../src/kube/client.ts';
import { loadKubeconfigFile } from '../../src/kube/kubeconfig.ts';
import { toKubeError } from '../../src/kube/errors.ts';
import { waitUntil } from './wait.ts';
import { NODE_ENV_VARS, NODE_FLAGS } from '../../src/nodeflags.ts';
import { waitVirtualNodeSchedulable } from './objects.ts';
import { freePort } from '../harness/net.ts';
import { identity, identityKubeconfig, lastingDenials, rbacDenials } from './identity.ts';

let current: Harness | undefined;
export function setHarness(h: Harness): void { current = h; }
export function harness(): Harness {
  if (!current) throw new Error('the harness is not started (run through test/integration/run.ts)');
  return current;
}

export function client(cluster: LocalCluster, name = cluster.name): ClusterClient {
  return new ClusterClient(loadKubeconfigFile(cluster.kubeconfig), { cluster: name, qps: 500, burst: 1000 });
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
  /** SIGTERM and wait for exit; resolves with the exit code. Rejects if RBAC refused clusterlet anything. */
  stop(): Promise<number | null>;
  /** SIGKILL and wait. Rejects if RBAC refused clusterlet anything. */
  kill(): Promise<void>;
}

const spawned = new Set<ClusterletProcess>();
// CLUSTERLET_CLI=dist/cli.js runs the suite against the build (`npm run build` first) instead of the sources.
const CLI = process.env.CLUSTERLET_CLI ? resolve(process.env.CLUSTERLET_CLI) : fileURLToPath(new URL('../../src/cli.ts', import.meta.url));

/** Runs clusterlet as a process (as a user would), its output captured to a file in the harness dir. */
export function startClusterlet(args: string[], env: NodeJS.ProcessEnv = {}): ClusterletProcess {
  const logFile = join(harness().dir, `${uniqueName('clusterlet')}.log`);
  const out = createWriteStream(logFile);
  const child = spawn(process.execPath, [...NODE_FLAGS, CLI, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...NODE_ENV_VARS, LOG_LEVEL: 'debug', ...env },
  });
  if (child.pid !== undefined) harness().recordProcess(child.pid);
  child.stdout!.pipe(out);
  child.stderr!.pipe(out);
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  // Everything the process wrote is in the file.
  const flushed = once(child, 'close').then(() => out.writableFinished ? undefined : once(out, 'finish'))
    .then(() => undefined, () => undefined);
  /** A permission missing from manifests/ fails the test that stops this process, even where clusterlet only retries. */
  const checkRbac = async (): Promise<void> => {
    await flushed;
    const denied = await lastingDenials(rbacDenials(readFileSync(logFile, 'utf8')));
    if (denied.length) {
      throw new Error(`clusterlet was refused by RBAC (a rule missing from manifests/), ${denied.length} time(s); `
        + `see ${logFile}:\n${denied.slice(0, 5).map((d) => d.line).join('\n')}`);
    }
  };
  const p: ClusterletProcess = {
    child, logFile,
    logs: () => readFileSync(logFile, 'utf8'),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const code = await exited;
      spawned.delete(p);
      await checkRbac();
      return code;
    },
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
      spawned.delete(p);
      await checkRbac();
    },
  };
  spawned.add(p);
  return p;
}

/** Every clusterlet process a test started and did not stop, for the suite's teardown. */
export async function stopSpawned(): Promise<void> {
  await Promise.allSettled([...spawned].map((p) => p.kill()));
}

/**
 * Sets up clusterlet's identities (manifests/host on the host, manifests/member on the member): once per
 * run, before any clusterlet starts. Other members get theirs with `clusterletKubeconfig`.
 */
export async function setUpIdentities(h: Harness): Promise<void> {
  await Promise.all([identity(h.host, 'host', h.bin.kubectl), identity(h.member, 'member', h.bin.kubectl)]);
}

/** The kubeconfig clusterlet uses for a cluster of the harness: the manifests' ServiceAccount, never the admin. */
export function clusterletKubeconfig(cluster: LocalCluster): Promise<string> {
  const h = harness();
  return identity(cluster, cluster === h.host || h.extraHosts.includes(cluster) ? 'host' : 'member', h.bin.kubectl);
}

/**
 * Flags that run clusterlet between the harness's host and a member, under the manifests' RBAC identities.
 * Members are probed every 2 s (3 failures make an outage), so fault tests stay short; `extra` may override.
 */
export function clusterletArgs(member: LocalCluster, extra: string[] = []): string[] {
  return ['--host-kubeconfig', identityKubeconfig(harness().host, 'host'),
    '--member-kubeconfig', identityKubeconfig(member, 'member'),
    '--member-name', member.name, '--health-port', '0', '--watch-silence-seconds', '30',
    '--probe-period-seconds', '2', ...extra];
}

/** A host cluster's identity as clusterlet stamps it by default: the UID of its kube-system namespace. */
export async function clusterID(c: ClusterClient): Promise<string> {
  return (await c.core.readNamespace({ name: 'kube-system' })).metadata!.uid!;
}

/** Starts a clusterlet between the harness's host and member, and waits until its virtual node takes pods. */
export async function startSuiteClusterlet(extra: string[] = []):
  Promise<{ host: ClusterClient; member: ClusterClient; cl: ClusterletProcess }> {
  const host = client(harness().host);
  const member = client(harness().member);
  const cl = startClusterlet(clusterletArgs(harness().member, extra));
  await waitVirtualNodeSchedulable(host);
  return { host, member, cl };
}

/**
 * For a describe block whose tests share one clusterlet: starts it (startSuiteClusterlet) before them, hands `use`
 * the host and member clients, and stops it after them. The harness exists only once the run's `before` ran, hence
 * the clients handed over then rather than returned.
 */
export function withSuiteClusterlet(use: (clients: { host: ClusterClient; member: ClusterClient }) => void, extra: string[] = []): void {
  let cl: ClusterletProcess | undefined;
  before(async () => {
    const started = await startSuiteClusterlet(extra);
    cl = started.cl;
    use(started);
  });
  after(async () => { await cl?.stop(); });
}

/**
 * startSuiteClusterlet with its kubelet API where the host API server reaches it (kubectl logs, exec, attach, ...):
 * on a free port, at the run's test network address (the API server's node proxy refuses loopback addresses).
 */
export async function startKubeletApiClusterlet(extra: string[] = []):
  Promise<{ host: ClusterClient; member: ClusterClient; cl: ClusterletProcess; port: number; nodeIP: string }> {
  const port = await freePort();
  const nodeIP = harness().nodeAddress;
  return { ...await startSuiteClusterlet(['--kubelet-port', String(port), '--node-ip', nodeIP, ...extra]), port, nodeIP };
}

/**
 * Stops `cl` and deletes its virtual node, which stays registered after a stop (as a kubelet's does) with this
 * file's kubelet port and IP: the next file's clusterlet registers it afresh.
 */
export async function stopAndForgetNode(cl: ClusterletProcess, host: ClusterClient, node = 'clusterlet-member'): Promise<void> {
  await cl.stop();
  await host.core.deleteNode({ name: node }).catch((err: unknown) => {
    if (toKubeError(err).kind !== 'NotFound') throw err;
  });
}
