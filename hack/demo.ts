// `make demo`: local host + member clusters, clusterlet between them, a sample workload offloaded
// to the virtual node, and what to look at. Ctrl-C stops everything and removes the temp dir.
import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AppsV1Api, BatchV1Api, CoreV1Api } from '@kubernetes/client-node';
import { Harness } from '../test/harness/harness.ts';
import { ensureBinaries } from '../test/harness/binaries.ts';
import { ClusterClient } from '../src/kube/client.ts';
import { loadKubeconfigFile } from '../src/kube/kubeconfig.ts';
import { NODE_ENV_VARS, NODE_FLAGS } from '../src/nodeflags.ts';
import { waitUntil } from '../test/support/wait.ts';
import { condition, isReady, job, jobsSpec } from '../test/support/objects.ts';
import { execFileSync } from 'node:child_process';

const say = (s: string): void => { process.stdout.write(`${s}\n`); };
const NODE = 'clusterlet-member';

say('clusterlet demo: a host cluster, a member cluster, and clusterlet making the member one node of the host.');
say('Step 1/4: the Kubernetes binaries (the first run on a machine builds them from Go modules: 10-20 min, progress below).');
await ensureBinaries();
say('Step 2/4: starting the local host and member control planes (etcd, kube-apiserver, controller-manager, scheduler, KWOK nodes).');
const h = await Harness.start({ log: (l) => say(`  ${l}`) });

let stopping = false;
const logFile = join(h.dir, 'clusterlet.log');
const cli = fileURLToPath(new URL('../src/cli.ts', import.meta.url));
say(`Step 3/4: starting clusterlet (logs: ${logFile}).`);
// Its Leases (one per member: which replica leads it) live in namespace clusterlet, as manifests/host installs it.
await h.createLeaseNamespace();
const child = spawn(process.execPath, [...NODE_FLAGS, cli, '--host-kubeconfig', h.host.kubeconfig, '--member-kubeconfig', h.member.kubeconfig,
  '--member-name', 'member', '--health-port', '0'], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...NODE_ENV_VARS } });
const out = createWriteStream(logFile);
child.stdout.pipe(out);
child.stderr.pipe(out);
child.on('exit', (code) => { if (!stopping) { say(`clusterlet exited with ${code}; see ${logFile}`); void stop(1); } });

async function stop(code = 0): Promise<void> {
  if (stopping) return;
  stopping = true;
  say('\nstopping clusterlet and the local clusters...');
  child.kill('SIGTERM');
  await h.stop();
  say('stopped; nothing left behind.');
  process.exit(code);
}
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());

try {
  const host = new ClusterClient(loadKubeconfigFile(h.host.kubeconfig), { cluster: 'host', qps: 50, burst: 100 });
  const member = new ClusterClient(loadKubeconfigFile(h.member.kubeconfig), { cluster: 'member', qps: 50, burst: 100 });
  await waitUntil(host, { path: '/api/v1/nodes', model: 'V1Node', resource: 'nodes', fieldSelector: `metadata.name=${NODE}`,
    list: (p) => host.core.listNode(p) }, (ns) => ns.length === 1 && isReady(ns[0]), 120_000, 'the virtual node Ready');

  say('Step 4/4: a sample workload: a Deployment of 3 tolerating the virtual node, with a ConfigMap, and a Job of 2 pods.');
  const ns = 'demo';
  const hostCore = h.host.kubeConfig().makeApiClient(CoreV1Api);
  await hostCore.createNamespace({ body: { metadata: { name: ns } } });
  await hostCore.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'greeting' }, data: { message: 'hello from the host' } } });
  await h.host.kubeConfig().makeApiClient(AppsV1Api).createNamespacedDeployment({ namespace: ns, body: {
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
  const batch = h.host.kubeConfig().makeApiClient(BatchV1Api);
  await batch.createNamespacedJob({ namespace: ns, body: job('once', ns, 2, 2, { virtualNode: NODE }) });
  await waitUntil(host, { path: `/api/v1/namespaces/${ns}/pods`, model: 'V1Pod', resource: 'pods', labelSelector: 'app=hello',
    list: (p) => host.core.listNamespacedPod({ namespace: ns, ...p }) },
  (ps) => ps.length === 3 && ps.every(isReady), 120_000, '3 offloaded pods Ready');
  await waitUntil(member, { path: `/api/v1/namespaces/${ns}/pods`, model: 'V1Pod', resource: 'pods', labelSelector: 'app=hello',
    list: (p) => member.core.listNamespacedPod({ namespace: ns, ...p }) },
  (ps) => ps.length === 3, 30_000, '3 delegates');
  await waitUntil(host, jobsSpec(batch, ns), (js) => condition(js[0], 'Complete')?.status === 'True', 120_000, 'the offloaded Job Complete');

  const { kubectl } = await ensureBinaries();
  const k = (kc: string, ...args: string[]): string => execFileSync(kubectl, ['--kubeconfig', kc, ...args], { encoding: 'utf8' });
  say('\n=== host: kubectl get nodes (the virtual node aggregates the member\'s 3 KWOK nodes)');
  say(k(h.host.kubeconfig, 'get', 'nodes', '-o', 'custom-columns=NAME:.metadata.name,STATUS:.status.conditions[?(@.type=="Ready")].type,ROLE:.metadata.labels.kubernetes\\.io/role,CPU:.status.capacity.cpu,MEMORY:.status.capacity.memory,PODS:.status.capacity.pods,GPU:.status.capacity.nvidia\\.com/gpu,VERSION:.status.nodeInfo.kubeletVersion'));
  say(`=== host: kubectl get jobs -n ${ns} (the offloaded Job, complete)`);
  say(k(h.host.kubeconfig, 'get', 'jobs', '-n', ns));
  say(`=== host: kubectl get pods -n ${ns} -o wide (proxy pods, bound to the virtual node)`);
  say(k(h.host.kubeconfig, 'get', 'pods', '-n', ns, '-o', 'wide'));
  say(`=== member: kubectl get pods -n ${ns} -o wide (their delegates, on the member's nodes)`);
  say(k(h.member.kubeconfig, 'get', 'pods', '-n', ns, '-o', 'wide', '-L', 'clusterlet.io/origin'));
  say('Look around yourself:');
  say(`  export HOST=${h.host.kubeconfig}`);
  say(`  export MEMBER=${h.member.kubeconfig}`);
  say(`  ${kubectl} --kubeconfig $HOST get nodes`);
  say(`  ${kubectl} --kubeconfig $HOST describe pod -n ${ns}          # events from the member appear here`);
  say(`  ${kubectl} --kubeconfig $HOST scale deploy/hello -n ${ns} --replicas=10`);
  say(`  ${kubectl} --kubeconfig $MEMBER get pods -A -l clusterlet.io/origin=host`);
  say(`  clusterlet's logs: ${logFile}`);
  say('\nRunning. Press Ctrl-C to stop everything.');
} catch (err) {
  say(`demo failed: ${(err as Error).message}`);
  await stop(1);
}
