// `make demo`: local host + member clusters, clusterlet between them, a sample workload offloaded
// to the virtual node, and what to look at. Ctrl-C stops everything and removes the temp dir.
// The commands it suggests come from demoHints, which test/integration/docs.test.ts runs against the suite's clusters.
import { execFileSync, spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AppsV1Api, BatchV1Api, CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { Harness } from '../test/harness/harness.ts';
import { ensureBinaries } from '../test/harness/binaries.ts';
import { ClusterClient } from '../src/kube/client.ts';
import { loadKubeconfigFile } from '../src/kube/kubeconfig.ts';
import { NODE_ENV_VARS, NODE_FLAGS } from '../src/nodeflags.ts';
import { ORIGIN_LABEL } from '../src/forge/keys.ts';
import { hostClusterID } from '../src/host/identity.ts';
import { createLogger } from '../src/log.ts';
import { waitUntil } from '../test/support/wait.ts';
import { condition, isReady, job, jobsSpec } from '../test/support/objects.ts';

export const DEMO_MEMBER = 'member';
export const DEMO_NODE = `clusterlet-${DEMO_MEMBER}`;
const DEMO_NAMESPACE = 'demo';

/** What the demo's hints are about: the clusters it started and what runs between them. */
export interface DemoSetting {
  kubectl: string;
  hostKubeconfig: string;
  memberKubeconfig: string;
  /** The host namespace of the sample workload. */
  namespace: string;
  member: string;
  node: string;
  /** The host identity: the value of clusterlet.io/origin on the delegates (the UID of the host's kube-system namespace). */
  hostID: string;
}

/** A command the demo suggests, what it says the command shows, and what its output holds when it does. */
export interface DemoHint {
  /** The shell command as printed; `$HOST` and `$MEMBER` are the kubeconfigs exported before it. */
  command: string;
  says: string;
  shows: RegExp;
}

/** The demo's "look around" lines: the exports, then each command with what it shows. */
export function demoHints(s: DemoSetting): { exports: string[]; hints: DemoHint[] } {
  const k = (cluster: 'HOST' | 'MEMBER', args: string): string => `${s.kubectl} --kubeconfig $${cluster} ${args}`;
  const re = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return {
    exports: [`export HOST=${s.hostKubeconfig}`, `export MEMBER=${s.memberKubeconfig}`],
    hints: [
      { command: k('HOST', 'get nodes'), says: `the virtual node ${s.node}, Ready`,
        shows: new RegExp(`^${re(s.node)}\\s+Ready\\s`, 'm') },
      // kubectl describes several objects without their events unless asked.
      { command: k('HOST', `describe pods -n ${s.namespace} --show-events=true`),
        says: `the member's events about each delegate appear here, From "<component> (member ${s.member})"`,
        shows: new RegExp(`\\(member ${re(s.member)}\\)`) },
      { command: k('HOST', `scale deploy/hello -n ${s.namespace} --replicas=10`), says: 'more proxies on the virtual node, more delegates',
        shows: /^deployment\.apps\/hello scaled$/m },
      { command: k('MEMBER', `get pods -A -l ${ORIGIN_LABEL}=${s.hostID}`),
        says: `the delegates: ${ORIGIN_LABEL} is the host's cluster ID (the UID of its kube-system namespace)`,
        shows: new RegExp(`^${re(s.namespace)}\\s+hello-`, 'm') },
    ],
  };
}

/** The hints as printed: the exports, then each command with what it shows as a comment. */
export function hintLines(h: { exports: string[]; hints: DemoHint[] }): string[] {
  return [...h.exports, ...h.hints.map((x) => `${x.command}   # ${x.says}`)];
}

/**
 * The sample workload in host namespace `ns`: a Deployment of 3 tolerating the virtual node, with a ConfigMap, and a
 * Job of 2 pods bound to `node`.
 */
export async function createDemoWorkload(host: KubeConfig, ns: string, node: string): Promise<void> {
  const core = host.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: ns } } });
  await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'greeting' }, data: { message: 'hello from the host' } } });
  await host.makeApiClient(AppsV1Api).createNamespacedDeployment({ namespace: ns, body: {
    metadata: { name: 'hello' },
    spec: {
      replicas: 3, selector: { matchLabels: { app: 'hello' } },
      template: { metadata: { labels: { app: 'hello' } }, spec: {
        tolerations: [{ key: 'virtual-kubelet.io/provider', operator: 'Exists', effect: 'NoSchedule' }],
        nodeSelector: { type: 'virtual-kubelet' },
        containers: [{ name: 'hello', image: 'registry.example/hello:1',
          envFrom: [{ configMapRef: { name: 'greeting' } }],
          resources: { requests: { cpu: '100m', memory: '64Mi' } } }],
      } },
    },
  } });
  // A Job too: its pods complete in the member (KWOK completes a Job's pods), so it completes on the host.
  await host.makeApiClient(BatchV1Api).createNamespacedJob({ namespace: ns, body: job('once', ns, 2, 2, { virtualNode: node }) });
}

/** Waits until the workload's 3 proxies are Ready, their 3 delegates exist and the Job is complete. */
export async function waitDemoWorkload(host: ClusterClient, member: ClusterClient, batch: BatchV1Api, ns: string): Promise<void> {
  await waitUntil(host, { path: `/api/v1/namespaces/${ns}/pods`, model: 'V1Pod', resource: 'pods', labelSelector: 'app=hello',
    list: (p) => host.core.listNamespacedPod({ namespace: ns, ...p }) },
  (ps) => ps.length === 3 && ps.every(isReady), 120_000, '3 offloaded pods Ready');
  await waitUntil(member, { path: `/api/v1/namespaces/${ns}/pods`, model: 'V1Pod', resource: 'pods', labelSelector: 'app=hello',
    list: (p) => member.core.listNamespacedPod({ namespace: ns, ...p }) },
  (ps) => ps.length === 3, 30_000, '3 delegates');
  await waitUntil(host, jobsSpec(batch, ns), (js) => condition(js[0], 'Complete')?.status === 'True', 120_000, 'the offloaded Job Complete');
}

async function main(): Promise<void> {
  const say = (s: string): void => { process.stdout.write(`${s}\n`); };
  say('clusterlet demo: a host cluster, a member cluster, and clusterlet making the member one node of the host.');
  say('Step 1/4: the Kubernetes binaries (the first run on a machine builds them from Go modules: 10-20 min, progress below).');
  const { kubectl } = await ensureBinaries();
  say('Step 2/4: starting the local host and member control planes (etcd, kube-apiserver, controller-manager, scheduler, KWOK nodes).');
  const h = await Harness.start({ log: (l) => say(`  ${l}`) });

  let stopping = false;
  const logFile = join(h.dir, 'clusterlet.log');
  const cli = fileURLToPath(new URL('../src/cli.ts', import.meta.url));
  say(`Step 3/4: starting clusterlet (logs: ${logFile}).`);
  // Its Leases (one per member: which replica leads it) live in namespace clusterlet, as manifests/host installs it.
  await h.createLeaseNamespace();
  const child = spawn(process.execPath, [...NODE_FLAGS, cli, '--host-kubeconfig', h.host.kubeconfig, '--member-kubeconfig', h.member.kubeconfig,
    '--member-name', DEMO_MEMBER, '--health-port', '0'], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...NODE_ENV_VARS } });
  if (child.pid !== undefined) h.recordProcess(child.pid);
  const out = createWriteStream(logFile);
  child.stdout.pipe(out);
  child.stderr.pipe(out);
  child.on('exit', (code) => { if (!stopping) { say(`clusterlet exited with ${code}; see ${logFile}`); stop(1).catch(failed); } });

  // A stop that fails says why and exits 1.
  const failed = (err: unknown): never => { console.error('stopping failed:', err); process.exit(1); };
  async function stop(code = 0): Promise<void> {
    if (stopping) return;
    stopping = true;
    say('\nstopping clusterlet and the local clusters...');
    child.kill('SIGTERM');
    await h.stop();
    say('stopped; nothing left behind.');
    process.exit(code);
  }
  process.on('SIGINT', () => { stop().catch(failed); });
  process.on('SIGTERM', () => { stop().catch(failed); });

  try {
    const host = new ClusterClient(loadKubeconfigFile(h.host.kubeconfig), { cluster: 'host', qps: 50, burst: 100 });
    const member = new ClusterClient(loadKubeconfigFile(h.member.kubeconfig), { cluster: 'member', qps: 50, burst: 100 });
    await waitUntil(host, { path: '/api/v1/nodes', model: 'V1Node', resource: 'nodes', fieldSelector: `metadata.name=${DEMO_NODE}`,
      list: (p) => host.core.listNode(p) }, (ns) => ns.length === 1 && isReady(ns[0]), 120_000, 'the virtual node Ready');

    say('Step 4/4: a sample workload: a Deployment of 3 tolerating the virtual node, with a ConfigMap, and a Job of 2 pods.');
    const ns = DEMO_NAMESPACE;
    await createDemoWorkload(h.host.kubeConfig(), ns, DEMO_NODE);
    await waitDemoWorkload(host, member, h.host.kubeConfig().makeApiClient(BatchV1Api), ns);

    const k = (kc: string, ...args: string[]): string => execFileSync(kubectl, ['--kubeconfig', kc, ...args], { encoding: 'utf8' });
    say('\n=== host: kubectl get nodes (the virtual node aggregates the member\'s 3 KWOK nodes)');
    say(k(h.host.kubeconfig, 'get', 'nodes', '-o', 'custom-columns=NAME:.metadata.name,READY:.status.conditions[?(@.type=="Ready")].status,ROLE:.metadata.labels.kubernetes\\.io/role,CPU:.status.capacity.cpu,MEMORY:.status.capacity.memory,PODS:.status.capacity.pods,GPU:.status.capacity.nvidia\\.com/gpu,VERSION:.status.nodeInfo.kubeletVersion'));
    say(`=== host: kubectl get jobs -n ${ns} (the offloaded Job, complete)`);
    say(k(h.host.kubeconfig, 'get', 'jobs', '-n', ns));
    say(`=== host: kubectl get pods -n ${ns} -o wide (proxy pods, bound to the virtual node)`);
    say(k(h.host.kubeconfig, 'get', 'pods', '-n', ns, '-o', 'wide'));
    say(`=== member: kubectl get pods -n ${ns} -o wide (their delegates, on the member's nodes)`);
    say(k(h.member.kubeconfig, 'get', 'pods', '-n', ns, '-o', 'wide', '-L', ORIGIN_LABEL));
    // As clusterlet computes it: a host that does not answer is retried, never printed as an empty selector.
    const hostID = await hostClusterID(host, createLogger('silent'));
    say('Look around yourself:');
    for (const line of hintLines(demoHints({ kubectl, hostKubeconfig: h.host.kubeconfig, memberKubeconfig: h.member.kubeconfig,
      namespace: ns, member: DEMO_MEMBER, node: DEMO_NODE, hostID }))) say(`  ${line}`);
    say(`  clusterlet's logs: ${logFile}`);
    say('\nRunning. Press Ctrl-C to stop everything.');
  } catch (err) {
    say(`demo failed: ${(err as Error).message}`);
    await stop(1);
  }
}

if (import.meta.main) await main();
