// Host Services follow offloaded pods into the member: the member's own EndpointSlice controller lists the
// delegates under the copy (and, headless, the StatefulSet pods' hostnames); updates follow, deletion follows;
// a Service selecting only host pods stays home; a member Service clusterlet did not create is left alone; where
// the member has the Multi-Cluster Services API, an annotated Service is exported there.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { AppsV1Api, PatchStrategy, setHeaderOptions, type KubernetesObject, type V1EndpointSlice, type V1Service, type V1StatefulSet } from '@kubernetes/client-node';
import { client, harness, namespaces, startSuiteClusterlet, type ClusterletProcess } from '../support/env.ts';
import { installServiceExportCRD, MCS_API, removeServiceExportCRD } from '../support/mcs.ts';
import { waitUntil } from '../support/wait.ts';
import { deployment, eventSpec, isReady, podsSpec, VIRTUAL_TOLERATION } from '../support/objects.ts';
import { PATCH, queryOf, type ClusterClient } from '../../src/kube/client.ts';
import type { ListWatchSpec } from '../../src/kube/listwatch.ts';

const NODE = 'clusterlet-member';
const mergeApps = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

function servicesSpec(c: ClusterClient, ns: string): ListWatchSpec<V1Service> {
  return { path: `/api/v1/namespaces/${ns}/services`, model: 'V1Service', resource: 'services',
    list: (p) => c.core.listNamespacedService({ namespace: ns, ...p }) };
}

/** The EndpointSlices of Service `service` (the label its controller puts on them), as `kubectl get endpointslices` lists them. */
function slicesSpec(c: ClusterClient, ns: string, service: string): ListWatchSpec<V1EndpointSlice> {
  const path = `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices`;
  return { path, model: 'V1EndpointSlice', resource: 'endpointslices', labelSelector: `kubernetes.io/service-name=${service}`,
    list: (p) => c.request('GET', path + queryOf({ ...p })) };
}

/** Every ready endpoint address of the slices, sorted. */
const readyAddresses = (slices: V1EndpointSlice[]): string[] => slices.flatMap((s) => (s.endpoints ?? [])
  .filter((e) => e.conditions?.ready !== false).flatMap((e) => e.addresses)).sort();

/** The ServiceExports of a member namespace. */
function exportsSpec(c: ClusterClient, ns: string): ListWatchSpec<KubernetesObject> {
  const path = `${MCS_API}/namespaces/${ns}/serviceexports`;
  return { path, model: 'ServiceExport', resource: 'serviceexports', list: (p) => c.request('GET', path + queryOf({ ...p })) };
}

const named = <T extends { metadata?: { name?: string } }>(items: T[], name: string): T | undefined => items.find((i) => i.metadata?.name === name);

function service(name: string, spec: V1Service['spec']): V1Service {
  return { metadata: { name }, spec };
}

const webPorts = [{ name: 'http', port: 80, targetPort: 8080 }];

describe('Services follow offloaded pods', () => {
  let cl: ClusterletProcess;
  let host: ClusterClient;
  let member: ClusterClient;
  let apps: AppsV1Api;

  before(async () => {
    // The member has the MCS API before clusterlet starts: it looks the API up at start (then every 5 minutes).
    await installServiceExportCRD(client(harness().member));
    ({ host, member, cl } = await startSuiteClusterlet());
    apps = harness().host.kubeConfig().makeApiClient(AppsV1Api);
  });
  after(async () => {
    await cl?.stop();
    await removeServiceExportCRD(client(harness().member));
  });

  /** Waits until the member's slices of `svc` list exactly the delegates' IPs, `n` of them; returns the addresses. */
  async function slicesListDelegates(ns: string, svc: string, selector: string, n: number): Promise<string[]> {
    const delegates = await waitUntil(member, podsSpec(member, ns, selector),
      (ps) => ps.length === n && ps.every((p) => p.status?.phase === 'Running' && p.status.podIP), 90_000, `${n} delegates Running with IPs`);
    const ips = delegates.map((p) => p.status!.podIP!).sort();
    await waitUntil(member, slicesSpec(member, ns, svc), (slices) => JSON.stringify(readyAddresses(slices)) === JSON.stringify(ips),
      60_000, `the member's EndpointSlices of ${svc} list the ${n} delegates' IPs ${ips.join(', ')}`);
    return ips;
  }

  it('a ClusterIP Service of a Deployment: reflected, its EndpointSlices list the delegates (3, then 5), the port follows, deletion follows', async (t) => {
    const ns = await namespaces(t, 'svc', [host]);
    await apps.createNamespacedDeployment({ namespace: ns, body: deployment('web', ns, 3, { virtualNode: NODE }) });
    const hostSvc = await host.core.createNamespacedService({ namespace: ns, body: service('web', { selector: { app: 'web' }, ports: webPorts }) });

    const [copy] = await waitUntil(member, servicesSpec(member, ns), (ss) => named(ss, 'web') !== undefined, 90_000, 'the Service in the member');
    assert.equal(copy.spec!.type, 'ClusterIP');
    assert.ok(copy.spec!.clusterIP && copy.spec!.clusterIP !== 'None', 'a cluster IP of the member\'s own');
    assert.notEqual(copy.spec!.clusterIP, hostSvc.spec!.clusterIP, 'never the host\'s cluster IP');
    assert.match(copy.spec!.clusterIP, /^10\.20\./, 'from the member\'s service range');
    assert.deepEqual(copy.spec!.selector, { app: 'web' });
    assert.deepEqual(copy.spec!.ports?.map((p) => [p.name, p.port, p.targetPort, p.protocol]), [['http', 80, 8080, 'TCP']]);
    assert.equal(copy.metadata!.annotations!['clusterlet.io/proxy-namespace'], ns);
    assert.equal(copy.metadata!.labels!['clusterlet.io/node'], NODE);
    const three = await slicesListDelegates(ns, 'web', 'app=web', 3);
    assert.equal(three.length, 3);

    await apps.patchNamespacedDeploymentScale({ namespace: ns, name: 'web', body: { spec: { replicas: 5 } } }, mergeApps);
    const five = await slicesListDelegates(ns, 'web', 'app=web', 5);
    assert.equal(five.length, 5);

    await host.core.patchNamespacedService({ namespace: ns, name: 'web', body: { spec: { ports: [{ name: 'http', port: 8081, targetPort: 8080 }] } } },
      { contentType: PATCH.merge });
    await waitUntil(member, servicesSpec(member, ns), (ss) => named(ss, 'web')?.spec?.ports?.[0]?.port === 8081, 30_000, 'the port change followed');

    await host.core.deleteNamespacedService({ namespace: ns, name: 'web' });
    await waitUntil(member, servicesSpec(member, ns), (ss) => !named(ss, 'web'), 30_000, 'the Service gone from the member');
  });

  it('a headless Service of a StatefulSet: headless in the member, its EndpointSlices carry hostnames web-0..2', async (t) => {
    const ns = await namespaces(t, 'svc-sts', [host]);
    await host.core.createNamespacedService({ namespace: ns, body: service('web', {
      clusterIP: 'None', selector: { app: 'web-sts' }, ports: [{ name: 'http', port: 80 }] }) });
    const sts: V1StatefulSet = {
      metadata: { name: 'web', namespace: ns },
      spec: {
        serviceName: 'web', replicas: 3, podManagementPolicy: 'Parallel', selector: { matchLabels: { app: 'web-sts' } },
        template: { metadata: { labels: { app: 'web-sts' } }, spec: {
          tolerations: [VIRTUAL_TOLERATION], nodeSelector: { 'kubernetes.io/hostname': NODE },
          containers: [{ name: 'main', image: 'registry.example/app:1' }],
        } },
      },
    };
    await apps.createNamespacedStatefulSet({ namespace: ns, body: sts });
    const [copy] = await waitUntil(member, servicesSpec(member, ns), (ss) => named(ss, 'web') !== undefined, 90_000, 'the Service in the member');
    assert.equal(copy.spec!.clusterIP, 'None', 'headless stays headless');
    await slicesListDelegates(ns, 'web', 'app=web-sts', 3);
    const slices = await waitUntil(member, slicesSpec(member, ns, 'web'),
      (s) => s.flatMap((x) => x.endpoints ?? []).map((e) => e.hostname).sort().join() === 'web-0,web-1,web-2', 30_000, 'hostnames web-0..2');
    const byHost = Object.fromEntries(slices.flatMap((s) => s.endpoints ?? []).map((e) => [e.hostname, e.targetRef?.name]));
    assert.deepEqual(byHost, { 'web-0': 'web-0', 'web-1': 'web-1', 'web-2': 'web-2' }, 'each hostname is its pod\'s');
  });

  it('a Service selecting only host pods is not reflected', async (t) => {
    const ns = await namespaces(t, 'svc-home', [host]);
    await apps.createNamespacedDeployment({ namespace: ns, body: deployment('local', ns, 2) });
    await host.core.createNamespacedService({ namespace: ns, body: service('local', { selector: { app: 'local' }, ports: webPorts }) });
    await waitUntil(host, podsSpec(host, ns, 'app=local'), (ps) => ps.length === 2 && ps.every(isReady), 60_000, 'host pods Ready');
    // Positive control, in the same namespace: an offloaded Deployment's Service, created after, is reflected.
    await apps.createNamespacedDeployment({ namespace: ns, body: deployment('web', ns, 1, { virtualNode: NODE }) });
    await host.core.createNamespacedService({ namespace: ns, body: service('web', { selector: { app: 'web' }, ports: webPorts }) });
    const ss = await waitUntil(member, servicesSpec(member, ns), (s) => named(s, 'web') !== undefined, 90_000, 'the offloaded Service reflected');
    assert.equal(named(ss, 'local'), undefined, 'the host-only Service stays on the host');
  });

  it('a member Service of the same name that clusterlet did not create is left untouched; the host Service shows the conflict', async (t) => {
    const ns = await namespaces(t, 'svc-foreign', [host, member]);
    await member.core.createNamespacedService({ namespace: ns, body: service('web', { selector: { app: 'theirs' }, ports: [{ port: 5432 }] }) });
    await apps.createNamespacedDeployment({ namespace: ns, body: deployment('web', ns, 1, { virtualNode: NODE }) });
    await host.core.createNamespacedService({ namespace: ns, body: service('web', { selector: { app: 'web' }, ports: webPorts }) });
    const evs = await waitUntil(host, eventSpec(host, ns), (es) => es.some((e) => e.reason === 'MemberServiceConflict'), 90_000, 'the conflict event');
    const conflict = evs.find((e) => e.reason === 'MemberServiceConflict')!;
    assert.equal(conflict.type, 'Warning');
    assert.equal(conflict.involvedObject.kind, 'Service');
    assert.equal(conflict.involvedObject.name, 'web');
    assert.match(conflict.message!, new RegExp(`service ${ns}/web exists in member member and was not created by clusterlet`));
    await waitUntil(host, podsSpec(host, ns, 'app=web'), (ps) => ps.length === 1 && isReady(ps[0]), 60_000, 'the pod runs anyway');
    const theirs = await member.core.readNamespacedService({ namespace: ns, name: 'web' });
    assert.deepEqual(theirs.spec!.selector, { app: 'theirs' }, 'untouched');
    assert.deepEqual(theirs.spec!.ports?.map((p) => p.port), [5432]);
    assert.equal(theirs.metadata!.labels?.['clusterlet.io/origin'], undefined);
  });

  it('the member has the Multi-Cluster Services API: an annotated Service is exported next to its copy; the annotation goes, so does the export', async (t) => {
    const ns = await namespaces(t, 'svc-mcs', [host]);
    await apps.createNamespacedDeployment({ namespace: ns, body: deployment('web', ns, 1, { virtualNode: NODE }) });
    await host.core.createNamespacedService({ namespace: ns, body: { metadata: { name: 'web', annotations: { 'clusterlet.io/service-export': 'true' } },
      spec: { selector: { app: 'web' }, ports: webPorts } } });
    const [copy] = await waitUntil(member, servicesSpec(member, ns), (ss) => named(ss, 'web') !== undefined, 90_000, 'the Service in the member');
    const [exp] = await waitUntil(member, exportsSpec(member, ns), (es) => named(es, 'web') !== undefined, 60_000, 'the ServiceExport in the member');
    assert.equal(exp.metadata!.labels!['clusterlet.io/node'], NODE);
    assert.equal(exp.metadata!.annotations!['clusterlet.io/proxy-namespace'], ns);
    assert.deepEqual(exp.metadata!.ownerReferences?.map((o) => [o.kind, o.name, o.uid]), [['Service', 'web', copy.metadata!.uid]], 'owned by the copy');

    await host.core.patchNamespacedService({ namespace: ns, name: 'web', body: { metadata: { annotations: { 'clusterlet.io/service-export': null } } } },
      { contentType: PATCH.merge });
    await waitUntil(member, exportsSpec(member, ns), (es) => !named(es, 'web'), 60_000, 'the ServiceExport gone with the annotation');
    const still = await member.core.readNamespacedService({ namespace: ns, name: 'web' });
    assert.equal(still.metadata!.uid, copy.metadata!.uid, 'the copy stays');
  });
});

// Its own clusterlet, with the switch on: node:test runs a file's describes in order, so the suite above has
// stopped its clusterlet (its after hook) before this one starts.
describe('--reflect-host-endpoints: host-side endpoints of a reflected Service in the member', () => {
  let cl: ClusterletProcess;
  let host: ClusterClient;
  let member: ClusterClient;
  let apps: AppsV1Api;

  before(async () => {
    ({ host, member, cl } = await startSuiteClusterlet(['--reflect-host-endpoints']));
    apps = harness().host.kubeConfig().makeApiClient(AppsV1Api);
  });
  after(async () => { await cl.stop(); });

  /** A Deployment whose pods also carry tier=be, the label the Service selects. */
  const backend = (name: string, ns: string, replicas: number, opts: { virtualNode?: string } = {}) => {
    const d = deployment(name, ns, replicas, opts);
    d.spec!.template.metadata!.labels!.tier = 'be';
    return d;
  };
  const managedBy = (s: V1EndpointSlice) => s.metadata?.labels?.['endpointslice.kubernetes.io/managed-by'];
  const ours = (slices: V1EndpointSlice[]) => slices.filter((s) => managedBy(s) === 'clusterlet.io');
  const sameIPs = (a: string[], b: string[]) => JSON.stringify([...a].sort()) === JSON.stringify([...b].sort());

  it('2 host pods and 1 offloaded: the host pods in a clusterlet-managed slice, the delegate in the member\'s own; a host pod goes, so does its address; the Service goes, so do the copies', async (t) => {
    const ns = await namespaces(t, 'svc-ep', [host]);
    await apps.createNamespacedDeployment({ namespace: ns, body: backend('local', ns, 2) });
    await apps.createNamespacedDeployment({ namespace: ns, body: backend('web', ns, 1, { virtualNode: NODE }) });
    await host.core.createNamespacedService({ namespace: ns, body: service('be', { selector: { tier: 'be' }, ports: webPorts }) });
    const locals = await waitUntil(host, podsSpec(host, ns, 'app=local'), (ps) => ps.length === 2 && ps.every((p) => isReady(p) && p.status?.podIP),
      60_000, 'the 2 host pods Ready with IPs');
    const localIPs = locals.map((p) => p.status!.podIP!);
    const [delegate] = await waitUntil(member, podsSpec(member, ns, 'app=web'), (ps) => ps.length === 1 && ps[0].status?.phase === 'Running'
      && !!ps[0].status.podIP, 90_000, 'the delegate Running with an IP');
    const delegateIP = delegate.status!.podIP!;

    const slices = await waitUntil(member, slicesSpec(member, ns, 'be'), (ss) => sameIPs(readyAddresses(ours(ss)), localIPs)
      && readyAddresses(ss.filter((s) => managedBy(s) !== 'clusterlet.io')).includes(delegateIP),
      90_000, `a clusterlet-managed slice listing the host pods ${localIPs.join(', ')}, the member's own the delegate ${delegateIP}`);
    assert.ok(!readyAddresses(ours(slices)).includes(delegateIP), 'the delegate is not listed twice');
    for (const s of ours(slices)) {
      assert.equal(s.metadata!.labels!['clusterlet.io/node'], NODE);
      assert.equal(s.metadata!.annotations!['clusterlet.io/proxy-namespace'], ns);
    }

    // One host pod goes (scaled down: no replacement takes its place): its address leaves the copy.
    await apps.patchNamespacedDeploymentScale({ namespace: ns, name: 'local', body: { spec: { replicas: 1 } } }, mergeApps);
    const [left] = await waitUntil(host, podsSpec(host, ns, 'app=local'), (ps) => ps.length === 1, 60_000, 'one host pod left');
    const gone = localIPs.filter((ip) => ip !== left.status?.podIP);
    await waitUntil(member, slicesSpec(member, ns, 'be'), (ss) => sameIPs(readyAddresses(ours(ss)), [left.status!.podIP!]),
      60_000, `the copy lists only ${left.status!.podIP} (${gone.join(', ')} went)`);

    await host.core.deleteNamespacedService({ namespace: ns, name: 'be' });
    await waitUntil(member, slicesSpec(member, ns, 'be'), (ss) => ours(ss).length === 0, 60_000, 'the copies gone with the Service');
  });
});
