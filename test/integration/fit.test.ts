// Fit before binding, on a member of its own whose nodes all carry a taint its admission tolerates (a mutating webhook
// served by this file): the fit judged on the pod the member would store, no verdict before the member's nodes are
// listed, a refusal that stays quiet while the member churns, and a member that adds nodes (a stand-in autoscaler
// here) getting the delegate to wait Pending until it has.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request, type Server } from 'node:https';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { AdmissionregistrationV1Api, type CoreV1Event, type V1Pod } from '@kubernetes/client-node';
import {
  client, clusterletKubeconfig, deleteNamespaceAndWait, harness, startClusterlet, stopAndForgetNode, uniqueName, type ClusterletProcess,
} from '../support/env.ts';
import { everyVersion, waitUntil } from '../support/wait.ts';
import { condition, eventSpec, isReady, podSpec, podsSpec, VIRTUAL_TOLERATION, waitNode } from '../support/objects.ts';
import { fakeNode, type LocalCluster } from '../harness/cluster.ts';
import { freePort } from '../harness/net.ts';
import type { ClusterClient } from '../../src/kube/client.ts';

const MEMBER = 'fitm';
const NODE = 'clusterlet-fitm';
const OFFLOADED = 'clusterlet.io/Offloaded';
/** Every node of the member has it; the member's admission (the webhook below) adds its toleration to labelled pods. */
const DEDICATED = { key: 'fit.example.com/dedicated', value: 'batch', effect: 'NoSchedule' };
const TOLERATE_DEDICATED = { key: DEDICATED.key, operator: 'Exists', effect: 'NoSchedule' };
const ADMIT_LABEL = 'fit.example.com/admit';

/**
 * A pod bound to the member's virtual node (as a user binding to it would), one container asking for `cpu`; with
 * `scheduled`, one the host's scheduler binds there (it selects the virtual node), as a user's pod usually is.
 */
function boundPod(name: string, namespace: string, cpu: string, opts: { admit?: boolean; tolerateDedicated?: boolean; scheduled?: boolean } = {}): V1Pod {
  const p = podSpec(name, { namespace, tolerate: true, resources: { requests: { cpu } },
    ...opts.scheduled ? { nodeSelector: { 'kubernetes.io/hostname': NODE } } : { nodeName: NODE },
    labels: opts.admit ? { [ADMIT_LABEL]: 'true' } : undefined });
  if (opts.tolerateDedicated) p.spec!.tolerations = [VIRTUAL_TOLERATION, TOLERATE_DEDICATED];
  return p;
}

/** The reasons of NoMemberNodeFits events on a proxy, summed over their counts. */
function noFitEvents(evs: CoreV1Event[], name: string): number {
  return evs.filter((e) => e.involvedObject?.name === name && e.reason === 'NoMemberNodeFits').reduce((n, e) => n + (e.count ?? 1), 0);
}

/**
 * A mutating webhook in the member, served here: pods labelled ADMIT_LABEL get the toleration of the member's
 * dedicated taint, as PodTolerationRestriction or a platform's webhook adds one. Counts the dry runs it is asked.
 */
async function serveAdmission(cluster: LocalCluster): Promise<{ server: Server; dryRuns: () => number }> {
  const cert = await cluster.serverCert('fit-webhook', 'fit-webhook', ['127.0.0.1']);
  let dryRuns = 0;
  const server = createServer({ cert: readFileSync(cert.cert), key: readFileSync(cert.key) }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const review = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { request: { uid: string; dryRun?: boolean; object: V1Pod } };
      if (review.request.dryRun) dryRuns++;
      const tolerations = review.request.object.spec?.tolerations;
      const patch = tolerations ? [{ op: 'add', path: '/spec/tolerations/-', value: TOLERATE_DEDICATED }]
        : [{ op: 'add', path: '/spec/tolerations', value: [TOLERATE_DEDICATED] }];
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: {
        uid: review.request.uid, allowed: true, patchType: 'JSONPatch', patch: Buffer.from(JSON.stringify(patch)).toString('base64') } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await cluster.kubeConfig().makeApiClient(AdmissionregistrationV1Api).createMutatingWebhookConfiguration({ body: {
    metadata: { name: 'fit-tolerate-dedicated' },
    webhooks: [{
      name: 'tolerate.fit.example.com', admissionReviewVersions: ['v1'], sideEffects: 'None', failurePolicy: 'Fail', timeoutSeconds: 5,
      clientConfig: { url: `https://127.0.0.1:${port}/mutate`, caBundle: readFileSync(cluster.caFile).toString('base64') },
      objectSelector: { matchLabels: { [ADMIT_LABEL]: 'true' } },
      rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] }],
    }],
  } });
  return { server, dryRuns: () => dryRuns };
}

/**
 * A TLS proxy in front of the member's API server that answers lists of the member's nodes `delayMs` late (their
 * watches and everything else at once): a member whose node list is slow. Returns a kubeconfig through it.
 */
async function slowNodeList(cluster: LocalCluster, kubeconfig: string, delayMs: number): Promise<{ server: Server; kubeconfig: string }> {
  const cert = await cluster.serverCert('fit-proxy', 'fit-proxy', ['127.0.0.1']);
  const upstream = new URL(cluster.server);
  const ca = readFileSync(cluster.caFile);
  const server = createServer({ cert: readFileSync(cert.cert), key: readFileSync(cert.key) }, (req, res) => {
    const url = req.url ?? '/';
    const slow = req.method === 'GET' && /^\/api\/v1\/nodes(\?|$)/.test(url) && !/[?&]watch=(1|true)/.test(url);
    const forward = (): void => {
      const up = request({ host: upstream.hostname, port: upstream.port, path: url, method: req.method, headers: req.headers, ca }, (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      });
      up.on('error', () => res.destroy());
      req.pipe(up);
    };
    if (slow) setTimeout(forward, delayMs); else forward();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const through = join(cluster.dir, 'clusterlet-member-slow-nodes.kubeconfig');
  writeFileSync(through, readFileSync(kubeconfig, 'utf8').replace(cluster.server, `https://127.0.0.1:${(server.address() as AddressInfo).port}`),
    { mode: 0o600 });
  return { server, kubeconfig: through };
}

describe('fit before binding, on what the member admits', () => {
  let host: ClusterClient;
  let member: ClusterClient;
  let cluster: LocalCluster;
  let args: (memberKc: string) => string[];
  let memberKc: string;
  let admission: { server: Server; dryRuns: () => number };
  let cl: ClusterletProcess | undefined;
  const servers: Server[] = [];
  const namespaces: string[] = [];

  /** A namespace on the host (and its mapped one in the member, once used), removed after the suite. */
  const hostNamespace = async (prefix: string): Promise<string> => {
    const ns = uniqueName(prefix);
    await host.core.createNamespace({ body: { metadata: { name: ns, labels: { 'clusterlet.io/test': 'true' } } } });
    namespaces.push(ns);
    return ns;
  };
  const start = (kubeconfig = memberKc): ClusterletProcess => (cl = startClusterlet(args(kubeconfig)));
  const stop = async (): Promise<void> => {
    if (cl) await stopAndForgetNode(cl, host, NODE);
    cl = undefined;
  };

  before(async () => {
    const h = harness();
    host = client(h.host);
    cluster = h.extraMembers.find((m) => m.name === MEMBER) ?? await h.addMember(MEMBER, '10.50', { nodes: [
      { name: `${MEMBER}-a`, capacity: { cpu: '8', memory: '32Gi', pods: '110' }, taints: [DEDICATED] },
      { name: `${MEMBER}-b`, capacity: { cpu: '16', memory: '64Gi', pods: '110' }, taints: [DEDICATED] },
    ] });
    member = client(cluster);
    const [hostKc, kc] = await Promise.all([h.host, cluster].map((c) => clusterletKubeconfig(c)));
    memberKc = kc;
    const kubeletPort = await freePort();
    args = (k) => ['--host-kubeconfig', hostKc, '--member-kubeconfig', k, '--member-name', MEMBER, '--nodename', NODE,
      '--health-port', '0', '--kubelet-port', String(kubeletPort), '--watch-silence-seconds', '30', '--probe-period-seconds', '2'];
    admission = await serveAdmission(cluster);
    servers.push(admission.server);
  });
  after(async () => {
    for (const ns of namespaces) await deleteNamespaceAndWait(host, ns, 90_000).catch(() => undefined);
    await stop();
    for (const s of servers) s.close();
  });

  it('no verdict before the member\'s nodes are listed: a pod created while the node list is slow runs, never NoMemberNodeFits', async () => {
    const slow = await slowNodeList(cluster, memberKc, 8_000);
    servers.push(slow.server);
    const ns = await hostNamespace('fit-slow');
    const reasons = new Set<string>();
    const unwatch = everyVersion(host, podsSpec(host, ns), (p) => { const r = condition(p, OFFLOADED)?.reason; if (r) reasons.add(r); });
    try {
      start(slow.kubeconfig);
      // Tolerating the member's taint itself: it fits a member node as sent, once the nodes are known.
      await host.core.createNamespacedPod({ namespace: ns, body: boundPod('early', ns, '1', { tolerateDedicated: true }) });
      await waitUntil(host, podsSpec(host, ns), (ps) => ps[0]?.status?.phase === 'Running', 60_000, 'the proxy Running');
    } finally {
      unwatch();
    }
    const evs = (await host.core.listNamespacedEvent({ namespace: ns })).items;
    assert.equal(noFitEvents(evs, 'early'), 0, 'no NoMemberNodeFits Warning');
    assert.ok(!reasons.has('NoMemberNodeFits'), `Offloaded reasons seen: ${[...reasons].join(', ')}`);
    await stop();
  });

  it('judged as the member admits it: nodes all tainted, a toleration its admission adds; the pod runs, no NoMemberNodeFits', async () => {
    start();
    await waitNode(host, NODE, isReady, 'the virtual node Ready');
    const ns = await hostNamespace('fit-admit');
    await host.core.createNamespacedPod({ namespace: ns, body: boundPod('admitted', ns, '2', { admit: true }) });
    const [proxy] = await waitUntil(host, podsSpec(host, ns), (ps) => ps[0]?.status?.phase === 'Running'
      || condition(ps[0], OFFLOADED)?.reason === 'NoMemberNodeFits', 60_000, 'the proxy Running (or refused)');
    // A proxy never refused has no Offloaded condition.
    assert.equal(condition(proxy, OFFLOADED), undefined, condition(proxy, OFFLOADED)?.message);
    assert.equal(noFitEvents((await host.core.listNamespacedEvent({ namespace: ns })).items, 'admitted'), 0, 'no NoMemberNodeFits Warning');
    const [d] = (await member.core.listNamespacedPod({ namespace: ns })).items;
    assert.ok(d?.spec?.tolerations?.some((t) => t.key === DEDICATED.key), 'the delegate has the toleration the member added');
    assert.ok(admission.dryRuns() >= 1, 'the member was asked what it would store');
  });

  it('quiet when nothing changes: one pod no node has room for, during 60 s of member pod churn, written a handful of times', async () => {
    if (!cl) start();
    const ns = await hostNamespace('fit-quiet');
    const churnNs = uniqueName('fit-churn');
    await member.core.createNamespace({ body: { metadata: { name: churnNs } } });
    // It tolerates the taint itself, so the refusal names the free room of the member's nodes, which the churn changes.
    await host.core.createNamespacedPod({ namespace: ns, body: boundPod('big', ns, '40', { tolerateDedicated: true }) });
    const [first] = await waitUntil(host, podsSpec(host, ns), (ps) => condition(ps[0], OFFLOADED)?.reason === 'NoMemberNodeFits',
      60_000, 'Offloaded=False NoMemberNodeFits');
    const evs0 = noFitEvents(await waitUntil(host, eventSpec(host, ns), (evs) => noFitEvents(evs, 'big') > 0, 30_000, 'its Warning'), 'big');
    const versions = new Set<string>();
    const unwatch = everyVersion(host, podsSpec(host, ns), (p) => {
      if (p.metadata?.resourceVersion !== first.metadata?.resourceVersion) versions.add(p.metadata!.resourceVersion!);
    });
    // The churn: a member pod every 2 s on the larger node, of 1 to 3 CPUs, each deleted 2 s later, for 60 s (a load
    // paced by the clock, not a wait): the most one node has free changes with each.
    const until = Date.now() + 60_000;
    let i = 0;
    try {
      while (Date.now() < until) {
        const name = `churn-${i}`;
        await member.core.createNamespacedPod({ namespace: churnNs, body: { metadata: { name }, spec: {
          nodeName: `${MEMBER}-b`, tolerations: [TOLERATE_DEDICATED],
          containers: [{ name: 'main', image: 'registry.example/app:1', resources: { requests: { cpu: String(1 + (i % 3)) } } }] } } });
        if (i > 0) await member.core.deleteNamespacedPod({ namespace: churnNs, name: `churn-${i - 1}`, gracePeriodSeconds: 0 });
        i++;
        await new Promise((r) => setTimeout(r, 2_000));
      }
    } finally {
      unwatch();
    }
    const evs = noFitEvents((await host.core.listNamespacedEvent({ namespace: ns })).items, 'big') - evs0;
    const dryRuns = admission.dryRuns();
    // Gone before the next test, whose pod the host's scheduler binds only while the member's free room is there.
    await deleteNamespaceAndWait(member, churnNs, 90_000);
    process.stderr.write(`fit quiet: ${i} member pods churned; proxy versions written ${versions.size}, NoMemberNodeFits events ${evs}, dry runs so far ${dryRuns}\n`);
    assert.ok(versions.size <= 2, `the proxy was written ${versions.size} times during the churn`);
    assert.ok(evs <= 2, `${evs} more NoMemberNodeFits events during the churn`);
    // Gone before the member shows it adds nodes (the next test): it would wait there for a node too.
    await deleteNamespaceAndWait(host, ns, 90_000);
  });

  it('a member that adds nodes: a pod the host\'s scheduler binds (it fits the member\'s total, no single node) waits Pending (WaitingForMemberScaleUp), the member scales up, the pod runs', async () => {
    await stop();
    // The member shows it can grow as a cluster-autoscaler does: its status ConfigMap, stamped as it stamps it.
    const now = new Date().toISOString().replace('T', ' ').replace('Z', '000000 +0000 UTC');
    await member.core.createNamespacedConfigMap({ namespace: 'kube-system', body: {
      metadata: { name: 'cluster-autoscaler-status', annotations: { 'cluster-autoscaler.kubernetes.io/last-updated': now } },
      data: { status: `Cluster-autoscaler status at ${now}: Running` } } });
    start();
    await waitNode(host, NODE, isReady, 'the virtual node Ready');
    const ns = await hostNamespace('fit-scale');
    // 17 CPUs: more than either member node has (8 and 16), less than the virtual node's 24 less the 3 of the earlier
    // tests' pods: the host's scheduler binds it to the virtual node, as it would a user's. It tolerates the member's
    // taint, which every member node has and so the virtual node too.
    await host.core.createNamespacedPod({ namespace: ns, body: boundPod('gpuish', ns, '17', { tolerateDedicated: true, scheduled: true }) });
    const [waiting] = await waitUntil(host, podsSpec(host, ns), (ps) => condition(ps[0], OFFLOADED)?.reason === 'WaitingForMemberScaleUp'
      || condition(ps[0], OFFLOADED)?.reason === 'NoMemberNodeFits', 60_000, 'Offloaded WaitingForMemberScaleUp (or refused)');
    const cond = condition(waiting, OFFLOADED);
    assert.equal(cond?.reason, 'WaitingForMemberScaleUp', cond?.message);
    assert.equal(cond?.status, 'True');
    assert.match(cond?.message ?? '', /waits Pending in the member for it to add a node \(its cluster-autoscaler reports in kube-system\/cluster-autoscaler-status\)/);

    // The stand-in autoscaler: a node with room for a pod the member's scheduler finds Unschedulable in that namespace.
    const added = `${MEMBER}-scaled`;
    let adding: Promise<unknown> | undefined;
    const unwatch = everyVersion(member, podsSpec(member, ns), (p) => {
      const s = condition(p, 'PodScheduled');
      if (adding || s?.status !== 'False' || s.reason !== 'Unschedulable') return;
      adding = member.core.createNode({ body: fakeNode({ name: added, capacity: { cpu: '64', memory: '256Gi', pods: '110' }, taints: [DEDICATED] }) });
    });
    try {
      const [running] = await waitUntil(host, podsSpec(host, ns), (ps) => ps[0]?.status?.phase === 'Running', 90_000, 'the proxy Running');
      assert.ok(adding, 'the member scaled up for it');
      await adding;
      const [d] = (await member.core.listNamespacedPod({ namespace: ns })).items;
      assert.equal(d?.spec?.nodeName, added, 'the delegate runs on the node the member added');
      await waitUntil(host, podsSpec(host, ns), (ps) => condition(ps[0], OFFLOADED)?.reason === 'DelegateCreated', 30_000,
        'Offloaded DelegateCreated once bound');
      assert.equal(running.metadata?.name, 'gpuish');
      const evs = (await host.core.listNamespacedEvent({ namespace: ns })).items;
      assert.equal(noFitEvents(evs, 'gpuish'), 0, 'never NoMemberNodeFits');
      assert.ok(evs.some((e) => e.involvedObject?.name === 'gpuish' && e.reason === 'WaitingForMemberScaleUp' && e.type === 'Normal'));
    } finally {
      unwatch();
      await member.core.deleteNode({ name: added }).catch(() => undefined);
      await member.core.deleteNamespacedConfigMap({ namespace: 'kube-system', name: 'cluster-autoscaler-status' }).catch(() => undefined);
    }
  });
});
