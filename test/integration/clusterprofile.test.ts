// Members from ClusterProfiles (--member-source=clusterprofile): the harness's host gets the cluster-inventory-api's
// ClusterProfile CRD; clusterlet runs with the static member (`member`) and watches the profiles of namespace
// clusterlet. A profile for a second member cluster, whose access provider is the built-in kubeconfig-secretreader
// (a kubeconfig Secret next to it), brings its virtual node Ready and says Offloading; deleting the profile stops
// that member (its node turns NotReady, its proxy and delegate stay) while the static member goes on; the profile
// made again resumes it.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { V1Lease } from '@kubernetes/client-node';
import { load as loadYaml } from 'js-yaml';
import {
  client, clusterletArgs, clusterletKubeconfig, deleteNamespaceAndWait, harness, namespaces, startClusterlet,
} from '../support/env.ts';
import { condition, isReady, leaseSpec, podSpec, podsSpec, waitNode, waitVirtualNodeSchedulable } from '../support/objects.ts';
import { waitUntil } from '../support/wait.ts';
import { freePort, pollUntil } from '../harness/net.ts';
import type { ClusterClient } from '../../src/kube/client.ts';
import { ignoreNotFound } from '../../src/kube/errors.ts';
import type { ClusterProfile } from '../../src/host/profiles/api.ts';

const NS = 'clusterlet';
const PROFILES = `/apis/multicluster.x-k8s.io/v1alpha1/namespaces/${NS}/clusterprofiles`;
const STATIC_NODE = 'clusterlet-member';

/** The profile of `name`, created, then its access provider written on its status (as a cluster manager does). */
async function createProfile(host: ClusterClient, name: string, server: string, caData: string, secret: string,
  annotations: Record<string, string> = {}): Promise<void> {
  await host.request('POST', PROFILES, { body: {
    apiVersion: 'multicluster.x-k8s.io/v1alpha1', kind: 'ClusterProfile',
    metadata: { name, labels: { 'x-k8s.io/cluster-manager': 'test' }, annotations },
    spec: { displayName: name, clusterManager: { name: 'test' } },
  } });
  await host.request('PATCH', `${PROFILES}/${name}/status`, { contentType: 'application/merge-patch+json', body: { status: {
    accessProviders: [{ name: 'kubeconfig-secretreader', cluster: { server, 'certificate-authority-data': caData,
      extensions: [{ name: 'client.authentication.k8s.io/exec', extension: { name: secret, key: 'value' } }] } }],
  } } });
}

/** Polls the profile until its clusterlet.io/Offloading condition satisfies `pred`. */
async function waitOffloading(host: ClusterClient, name: string, pred: (c: { status: string; reason: string }) => boolean,
  what: string): Promise<{ status: string; reason: string; message: string }> {
  return pollUntil(`profile ${name}: ${what}`, async () => {
    const p = await host.request<ClusterProfile>('GET', `${PROFILES}/${name}`);
    const c = p.status?.conditions?.find((x) => x.type === 'clusterlet.io/Offloading');
    return c && pred(c) ? c : undefined;
  }, 60_000, 500);
}

const renewTime = async (host: ClusterClient, node: string): Promise<number> =>
  new Date((await host.coordination.readNamespacedLease({ name: node, namespace: 'kube-node-lease' })).spec!.renewTime!).getTime();

/** Waits until node `node`'s lease has been renewed `times` times after `since` (a renewTime read before). */
async function waitRenewals(host: ClusterClient, node: string, since: number, times: number): Promise<void> {
  const seen = new Set([since]);
  await waitUntil<V1Lease>(host, leaseSpec(host, 'kube-node-lease', node), (ls) => {
    if (ls[0]?.spec?.renewTime) seen.add(new Date(ls[0].spec.renewTime).getTime());
    return seen.size > times;
  }, 20_000, `${node}'s lease renewed ${times} times`);
}

describe('ClusterProfile members', () => {
  it('a profile with a kubeconfig Secret brings a Ready node that says Offloading; deleting it stops only that member', async (t) => {
    const h = harness();
    await h.installClusterProfileCRD();
    const host = client(h.host);
    const member = client(h.member);
    const cluster = h.extraMembers.find((m) => m.name === 'member2') ?? await h.addMember('member2', '10.30');
    const second = client(cluster);
    const [name, node, secret] = ['member2', 'clusterlet-member2', 'member2-kubeconfig'];
    // The Secret holds clusterlet's member identity in that cluster; the profile names the server and its CA.
    const kubeconfig = readFileSync(await clusterletKubeconfig(cluster), 'utf8');
    const caData = (loadYaml(kubeconfig) as { clusters: { cluster: { 'certificate-authority-data': string } }[] })
      .clusters[0].cluster['certificate-authority-data'];
    await host.core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: secret }, stringData: { value: kubeconfig } } });
    t.after(async () => {
      await ignoreNotFound(() => host.request('DELETE', `${PROFILES}/${name}`));
      await ignoreNotFound(() => host.core.deleteNamespacedSecret({ namespace: NS, name: secret }));
      for (const n of [node, STATIC_NODE]) await ignoreNotFound(() => host.core.deleteNode({ name: n }));
    });

    const healthPort = await freePort();
    const cl = startClusterlet(clusterletArgs(h.member, ['--member-source=clusterprofile', '--clusterprofile-namespace', NS,
      '--health-port', String(healthPort)]));
    const series = async (member: string): Promise<string[]> => (await (await fetch(`http://127.0.0.1:${healthPort}/metrics`)).text())
      .split('\n').filter((l) => l.includes(`member="${member}"`) || l.includes(`cluster="${member}"`));
    t.after(async () => { await cl.kill(); });
    await waitVirtualNodeSchedulable(host, STATIC_NODE);
    await createProfile(host, name, cluster.server, caData, secret);
    await waitVirtualNodeSchedulable(host, node);
    const on = await waitOffloading(host, name, (c) => c.status === 'True', 'Offloading');
    assert.equal(on.reason, 'Offloading');
    assert.match(on.message, /clusterlet-member2/);

    const ns = await namespaces(t, 'profiles', [host, member, second]);
    const offload = (pod: string, target: string) => host.core.createNamespacedPod({ namespace: ns, body: podSpec(pod, {
      namespace: ns, tolerate: true, nodeSelector: { 'kubernetes.io/hostname': target }, labels: { app: pod } }) });
    const running = async (pod: string, where: ClusterClient): Promise<void> => {
      await waitUntil(where, podsSpec(where, ns, `app=${pod}`), (ps) => ps[0]?.status?.phase === 'Running', 60_000, `delegate ${pod} Running`);
      await waitUntil(host, podsSpec(host, ns, `app=${pod}`), (ps) => isReady(ps[0]), 60_000, `proxy ${pod} Ready`);
    };
    await offload('on-profile', node);
    await offload('on-static', STATIC_NODE);
    await running('on-profile', second);
    await running('on-static', member);
    assert.ok((await series(name)).some((l) => l.startsWith(`clusterlet_member_ready{member="${name}"} 1`)), 'member2 shown ready');

    // The profile goes: its member stops (Lease released, node lease no longer renewed), nothing is deleted.
    await host.request('DELETE', `${PROFILES}/${name}`);
    await pollUntil('member2 removed', async () => cl.logs().includes('"member removed"') || undefined, 30_000, 200);
    await waitUntil<V1Lease>(host, leaseSpec(host, NS, `clusterlet-${name}`), (ls) => ls.length === 1 && !ls[0].spec?.holderIdentity,
      15_000, `Lease clusterlet-${name} written free`);
    const [frozen, staticBefore] = [await renewTime(host, node), await renewTime(host, STATIC_NODE)];
    // The static member is untouched: its lease is still renewed, once a probe period (2 s). Three renewals span two
    // full periods at least, on each of which the removed member's lease would have been renewed were it running.
    await waitRenewals(host, STATIC_NODE, staticBefore, 3);
    assert.equal(await renewTime(host, node), frozen, `${node}'s lease is no longer renewed`);
    // Its metric series went with it (a dashboard would show it ready and leading), the static member's stay.
    assert.deepEqual(await series(name), []);
    assert.ok((await series(h.member.name)).some((l) => l.startsWith(`clusterlet_member_ready{member="${h.member.name}"} 1`)));
    // Ready, and it takes new pods.
    await offload('after', STATIC_NODE);
    await running('after', member);
    const down = await waitNode(host, node, (n) => condition(n, 'Ready')?.status === 'Unknown', 'NotReady (lease expired)', 90_000);
    assert.equal(condition(down, 'Ready')?.reason, 'NodeStatusUnknown');
    assert.ok(isReady(await waitNode(host, STATIC_NODE, () => true, 'present')), 'the static member stays Ready');
    // The removed member's proxy stays bound to its node, its delegate runs on in the member cluster.
    const [proxy] = (await host.core.listNamespacedPod({ namespace: ns, labelSelector: 'app=on-profile' })).items;
    assert.equal(proxy?.spec?.nodeName, node);
    const [delegate] = (await second.core.listNamespacedPod({ namespace: ns, labelSelector: 'app=on-profile' })).items;
    assert.equal(delegate?.status?.phase, 'Running');

    // The profile made again: the member resumes on the same node, which turns Ready.
    await createProfile(host, name, cluster.server, caData, secret);
    await waitVirtualNodeSchedulable(host, node);
    await waitOffloading(host, name, (c) => c.status === 'True', 'Offloading again');
    // A profile naming a host node clusterlet did not register (a kubelet's): refused, and that node left alone.
    const kubeletNode = 'host-local-1';
    t.after(async () => { await ignoreNotFound(() => host.request('DELETE', `${PROFILES}/squatter`)); });
    const before = await host.core.readNode({ name: kubeletNode });
    await createProfile(host, 'squatter', cluster.server, caData, secret, { 'clusterlet.io/node-name': kubeletNode });
    const refused = await waitOffloading(host, 'squatter', (c) => c.reason === 'SetupFailed', 'SetupFailed');
    assert.match(refused.message, /host node "host-local-1" exists and is not a clusterlet virtual node/);
    const after = await host.core.readNode({ name: kubeletNode });
    assert.deepEqual(after.metadata?.labels, before.metadata?.labels, 'its labels untouched');
    assert.deepEqual(after.spec?.taints, before.spec?.taints, 'its taints untouched');
    await host.request('DELETE', `${PROFILES}/squatter`);

    // Cleaned up while clusterlet runs both members (a proxy on a node nobody serves would never finish deleting).
    for (const [c, what] of [[host, 'host'], [member, 'member'], [second, 'member2']] as const) {
      await deleteNamespaceAndWait(c, ns, 90_000).catch((err: unknown) => { throw new Error(`${what}: ${(err as Error).message}`); });
    }
    assert.equal(await cl.stop(), 0);
  });
});
