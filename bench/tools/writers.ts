// Who writes each version of an offloaded pod: the proxy in the host and the delegate in the member, over one
// Deployment's lifecycle (created, all Ready, deleted). For each watch event it reads the managedFields entries whose
// time or fields changed since the version before (their manager and subresource: the writer) and which fields
// differ (top-level ones, and each label, annotation and status field), and prints how many events per pod each
// (kind, event type, writers, fields changed) accounts for.
// The bench counts watch events per pod (clusterlet_watch_events_total); this says what they are, so that a
// modification clusterlet causes and could spare is seen.
//   node bench/tools/writers.ts [--pods 20]
import { parseArgs } from 'node:util';
import { AppsV1Api } from '@kubernetes/client-node';
import { Harness } from '../../test/harness/harness.ts';
import { ClusterClient } from '../../src/kube/client.ts';
import { loadKubeconfigFile } from '../../src/kube/kubeconfig.ts';
import { pollUntil } from '../../test/harness/net.ts';
import { deployment } from '../bench.ts';
import { startBenchClusterlet } from '../clusterlet.ts';

const { values } = parseArgs({ options: { pods: { type: 'string', default: '20' } } });
const pods = Number(values.pods);
const log = (l: string): void => { process.stderr.write(`[writers] ${l}\n`); };

interface Entry { manager?: string; operation?: string; subresource?: string; time?: string; fieldsV1?: unknown }
interface Obj { metadata?: { name?: string; resourceVersion?: string; managedFields?: Entry[]; [k: string]: unknown }; [k: string]: unknown }

/** The managedFields entries that are new or changed in `now` against `before`: who wrote this version. */
function writersOf(before: Obj | undefined, now: Obj): string[] {
  const key = (e: Entry): string => `${e.manager}/${e.operation}/${e.subresource ?? ''}`;
  const old = new Map((before?.metadata?.managedFields ?? []).map((e) => [key(e), JSON.stringify(e)]));
  const out = (now.metadata?.managedFields ?? []).filter((e) => old.get(key(e)) !== JSON.stringify(e))
    .map((e) => `${e.manager}${e.subresource ? `(${e.subresource})` : ''}`);
  return out.length ? out.sort() : ['(no managedFields change)'];
}

/** The fields that differ between two versions: metadata's keys one level down, others at the top level and status's. */
function changedFields(before: Obj | undefined, now: Obj): string[] {
  if (!before) return ['(new)'];
  const out: string[] = [];
  const diff = (a: Record<string, unknown> = {}, b: Record<string, unknown> = {}, prefix: string, skip: string[]): void => {
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
      if (skip.includes(k)) continue;
      if (JSON.stringify(a[k]) !== JSON.stringify(b[k])) out.push(prefix + k);
    }
  };
  diff(before.metadata, now.metadata, 'metadata.', ['resourceVersion', 'managedFields', 'labels', 'annotations']);
  diff(before.metadata?.labels as Record<string, unknown>, now.metadata?.labels as Record<string, unknown>, 'metadata.labels.', []);
  diff(before.metadata?.annotations as Record<string, unknown>, now.metadata?.annotations as Record<string, unknown>,
    'metadata.annotations.', []);
  diff(before, now, '', ['metadata', 'status']);
  diff(before.status as Record<string, unknown>, now.status as Record<string, unknown>, 'status.', []);
  return out.length ? out : ['(nothing but resourceVersion)'];
}

const h = await Harness.start({ componentQPS: 2000, log });
await h.createLeaseNamespace();
const cl = await startBenchClusterlet(h, ['--member-kubeconfig', h.member.kubeconfig, '--member-name', 'member'], 'clusterlet.log',
  'bench/tools/writers');
try {
  await cl.ready(60_000);
  const host = new ClusterClient(loadKubeconfigFile(h.host.kubeconfig), { cluster: 'host', qps: 500, burst: 1000 });
  const member = new ClusterClient(loadKubeconfigFile(h.member.kubeconfig), { cluster: 'member', qps: 500, burst: 1000 });
  const apps = h.host.kubeConfig().makeApiClient(AppsV1Api);
  const ns = 'writers';
  await host.core.createNamespace({ body: { metadata: { name: ns } } });
  const tally = new Map<string, number>();
  const seen = new Map<string, Obj>();
  const live = new Set<string>();
  const abort = new AbortController();
  // Each watch starts from its list's resourceVersion: no event after it is missed, however late the watch opens.
  const watchPods = (c: ClusterClient, kind: string, path: string, resourceVersion: string | undefined): void => {
    void c.watch(path, { allowWatchBookmarks: false, resourceVersion }, {
      signal: abort.signal, idleMs: 600_000,
      onEvent: (type, object) => {
        const o = object as Obj;
        const k = `${kind}/${o.metadata?.name}`;
        const line = `${kind} ${type.padEnd(8)} by ${writersOf(seen.get(k), o).join(', ')}: ${changedFields(seen.get(k), o).join(', ')}`;
        tally.set(line, (tally.get(line) ?? 0) + 1);
        if (type === 'DELETED') { seen.delete(k); live.delete(k); } else { seen.set(k, o); live.add(k); }
      },
    }).catch((err: unknown) => { if (!abort.signal.aborted) log(`watch ${kind}: ${String(err)}`); });
  };
  watchPods(host, 'proxy', `/api/v1/namespaces/${ns}/pods`, (await host.core.listNamespacedPod({ namespace: ns })).metadata?.resourceVersion);
  watchPods(member, 'delegate', '/api/v1/pods', (await member.core.listPodForAllNamespaces({})).metadata?.resourceVersion);
  await apps.createNamespacedDeployment({ namespace: ns, body: deployment('writers', pods, 'clusterlet-member') });
  const ready = (o: Obj): boolean => ((o.status as { conditions?: { type: string; status: string }[] })?.conditions ?? [])
    .some((c) => c.type === 'Ready' && c.status === 'True');
  await pollUntil('all proxies Ready', async () => ([...seen].filter(([k, o]) => k.startsWith('proxy/') && ready(o)).length === pods ? true : undefined),
    120_000, 200);
  log('all Ready; deleting');
  await apps.deleteNamespacedDeployment({ namespace: ns, name: 'writers', propagationPolicy: 'Background' });
  await pollUntil('no pod left', async () => (live.size === 0 ? true : undefined), 120_000, 200);
  abort.abort();
  const rows = [...tally].sort((a, b) => a[0].localeCompare(b[0]));
  process.stdout.write(`Watch events per pod (${pods} pods), by kind, type, the writers of the version and the fields it changed:\n\n`);
  process.stdout.write('| events per pod | event |\n|---:|---|\n');
  for (const [line, n] of rows) process.stdout.write(`| ${(n / pods).toFixed(2)} | ${line.replace(/\|/g, '\\|')} |\n`);
} finally {
  await cl.stop();
  await h.stop();
}
