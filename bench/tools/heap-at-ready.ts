// Where clusterlet's memory is with N offloaded pods all Ready: starts the local clusters and clusterlet as the bench
// does (bench/clusterlet.ts), offloads a Deployment of N, and once all N proxies are Ready reads clusterlet's RSS
// (anonymous and file pages), V8's heap spaces, and writes a heap snapshot (bench/tools/memreport.mjs, preloaded), to be
// summed by `node bench/tools/heapsummary.mjs FILE`.
//   node bench/tools/heap-at-ready.ts --n 1000 --out /tmp/heap-1000
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { AppsV1Api } from '@kubernetes/client-node';
import { ClusterClient } from '../../src/kube/client.ts';
import { loadKubeconfigFile } from '../../src/kube/kubeconfig.ts';
import { Harness } from '../../test/harness/harness.ts';
import { pollUntil } from '../../test/harness/net.ts';
import { ReadyTracker, deployment, rssKB } from '../bench.ts';
import { startBenchClusterlet } from '../clusterlet.ts';

const { values } = parseArgs({ options: { n: { type: 'string', default: '1000' }, out: { type: 'string', default: '/tmp/heap-at-ready' } } });
const n = Number(values.n);
const report = `${values.out}.jsonl`;
const snapshot = `${values.out}.heapsnapshot`;
rmSync(report, { force: true });
rmSync(snapshot, { force: true });
const log = (l: string): void => { process.stderr.write(`[heap] ${l}\n`); };
const memreport = fileURLToPath(new URL('./memreport.mjs', import.meta.url));
process.env.CLUSTERLET_NODE_OPTIONS = `${process.env.CLUSTERLET_NODE_OPTIONS ?? ''} --import=${memreport}`;
process.env.MEMREPORT_OUT = report;
process.env.MEMREPORT_SNAPSHOT = snapshot;

const h = await Harness.start({ componentQPS: 2000, log });
await h.createLeaseNamespace();
const cl = await startBenchClusterlet(h, ['--member-kubeconfig', h.member.kubeconfig, '--member-name', 'member'], 'clusterlet.log', 'heap-at-ready');
try {
  await cl.ready(60_000);
  const host = new ClusterClient(loadKubeconfigFile(h.host.kubeconfig), { cluster: 'heap-host', qps: 5000, burst: 10000 });
  const ns = 'heap';
  await host.core.createNamespace({ body: { metadata: { name: ns } } });
  const proxies = new ReadyTracker(host, ns);
  await proxies.start();
  const t0 = performance.now();
  await h.host.kubeConfig().makeApiClient(AppsV1Api).createNamespacedDeployment({ namespace: ns, body: deployment('heap', n, 'clusterlet-member') });
  await proxies.until(n, 30 * 60_000, `N=${n}`);
  log(`${n} Ready in ${((performance.now() - t0) / 1000).toFixed(1)} s; RSS ${JSON.stringify(rssKB(cl.pid))} kB`);
  proxies.stop();
  process.kill(cl.pid, 'SIGUSR2');
  await pollUntil('the memory report', async () => (existsSync(report) && readFileSync(report, 'utf8').includes('\n') ? true : undefined), 120_000, 500);
  const r = JSON.parse(readFileSync(report, 'utf8').trim().split('\n').at(-1)!) as Record<string, unknown>;
  const mb = (v: unknown): string => `${((v as number) / 2 ** 20).toFixed(1)} MB`;
  log(`rss ${mb(r.rss)}, heapUsed ${mb(r.heapUsed)}, heapTotal ${mb(r.heapTotal)}, external ${mb(r.external)}, arrayBuffers ${mb(r.arrayBuffers)}`);
  log(`spaces: ${Object.entries(r.spaces as Record<string, number>).map(([k, v]) => `${k} ${mb(v)}`).join(', ')}`);
  log(`snapshot: ${snapshot} (node bench/tools/heapsummary.mjs ${snapshot})`);
} finally {
  await cl.stop();
  await h.stop();
}
