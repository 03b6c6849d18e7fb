// Persistent volumes of offloaded pods: a claim of the member's host StorageClass gets a claim in the member (of its
// class `harness-local`, whose volumes test/support/provisioner.ts makes and the member's PV controller binds), and a
// host volume standing for it that the host's PV controller binds; the delegate mounts the member claim of the same
// name. Expansion goes to the member and comes back, and one the member refuses or fails shows on the host claim;
// deletion follows the reclaim policy; a pod whose claim cannot exist in the member says so on the proxy. With a
// member class that binds on first consumer (`harness-late`), the host volume does not wait for the member claim to
// be bound (only the delegate, which needs the host claim bound, makes the member bind it).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { AppsV1Api, type CoreV1Event, type V1PersistentVolume, type V1PersistentVolumeClaim, type V1StatefulSet, type V1StorageClass } from '@kubernetes/client-node';
import { client, harness, namespaces, uniqueName, withSuiteClusterlet } from '../support/env.ts';
import { kubectl } from '../support/kubectl.ts';
import { waitUntil } from '../support/wait.ts';
import { VIRTUAL_TOLERATION, condition, eventSpec, isReady, podSpec, podsSpec } from '../support/objects.ts';
import { LATE_CLASS, MEMBER_CLASS, POOL_LIMIT, claimSpec, startMemberProvisioner, volumeSpec } from '../support/provisioner.ts';
import { toKubeError } from '../../src/kube/errors.ts';
import type { ClusterClient } from '../../src/kube/client.ts';

const NODE = 'clusterlet-member';
const CLASS = 'clusterlet-member';
const ARGS = ['--member-storage-class', MEMBER_CLASS];

/** A StatefulSet of `replicas` pods tolerating virtual nodes, each with a claim `data-<pod>` of the member's class. */
function statefulSet(name: string, namespace: string, replicas: number): V1StatefulSet {
  const labels = { app: name };
  return {
    apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name, namespace },
    spec: {
      replicas, serviceName: name, podManagementPolicy: 'Parallel', selector: { matchLabels: labels },
      template: { metadata: { labels }, spec: {
        tolerations: [VIRTUAL_TOLERATION],
        containers: [{ name: 'main', image: 'registry.example/db:1', volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
      } },
      volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: {
        storageClassName: CLASS, accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } },
      } }],
    },
  };
}

const bound = (c: V1PersistentVolumeClaim): boolean => c.status?.phase === 'Bound';
const names = (os: { metadata?: { name?: string } }[]): string[] => os.map((o) => o.metadata!.name!).sort();
const uids = (os: { metadata?: { name?: string; uid?: string } }[]): Record<string, string> =>
  Object.fromEntries(os.map((o) => [o.metadata!.name!, o.metadata!.uid!]));

async function scale(ns: string, name: string, replicas: number): Promise<void> {
  await kubectl(harness().host, 'scale', 'statefulset', name, '-n', ns, `--replicas=${replicas}`);
}

/** Asks for `storage` in host claim `name`, as a user would. */
async function resize(ns: string, name: string, storage: string): Promise<void> {
  await kubectl(harness().host, 'patch', 'pvc', name, '-n', ns, '-p', JSON.stringify({ spec: { resources: { requests: { storage } } } }));
}

/** Waits until claim `name` of `ns` passes `ok`; returns it. */
async function claimUntil(c: ClusterClient, ns: string, name: string, ok: (c: V1PersistentVolumeClaim) => boolean, what: string) {
  const cs = await waitUntil(c, claimSpec(c, ns), (l) => l.some((x) => x.metadata!.name === name && ok(x)), 60_000, what);
  return cs.find((x) => x.metadata!.name === name)!;
}

/** Waits for a Warning `reason` about claim `name` of `ns` on the host; returns it. */
async function warning(host: ClusterClient, ns: string, name: string, reason: string) {
  const is = (e: CoreV1Event): boolean => e.type === 'Warning' && e.reason === reason && e.involvedObject.name === name;
  return (await waitUntil(host, eventSpec(host, ns), (es) => es.some(is), 60_000, `a ${reason} Warning on ${name}`)).find(is)!;
}

/** Waits until `n` proxies of app `app` are Ready on the virtual node and their delegates Running; returns the delegates. */
async function running(host: ClusterClient, member: ClusterClient, ns: string, app: string, n: number) {
  const proxies = await waitUntil(host, podsSpec(host, ns, `app=${app}`),
    (ps) => ps.length === n && ps.every((p) => isReady(p) && p.spec?.nodeName === NODE), 120_000, `${n} proxies Ready on ${NODE}`);
  const delegates = await waitUntil(member, podsSpec(member, ns, `app=${app}`),
    (ps) => ps.length === n && ps.every((p) => p.status?.phase === 'Running'), 60_000, `${n} delegates Running`);
  return { proxies, delegates };
}

describe('storage: persistent volumes in the member', () => {
  let host: ClusterClient;
  let member: ClusterClient;
  let provisioner: { stop(): void } | undefined;
  before(async () => { provisioner = await startMemberProvisioner(client(harness().member)); });
  after(() => provisioner?.stop());

  /** A namespace the tests of a describe share: made in the host before them, deleted from `from` after them. */
  const suiteNamespace = (prefix: string, use: (ns: string) => void, from: () => ClusterClient[] = () => [host]): void => {
    let ns = '';
    before(async () => {
      ns = uniqueName(prefix);
      use(ns);
      await host.core.createNamespace({ body: { metadata: { name: ns } } });
    });
    after(async () => {
      for (const c of from()) await c.core.deleteNamespace({ name: ns }).catch(() => undefined);
    });
  };

  describe('with the Delete reclaim policy (the default)', () => {
    withSuiteClusterlet((c) => ({ host, member } = c), ARGS);
    let ns: string;
    suiteNamespace('sts', (n) => { ns = n; });

    it('the member\'s host StorageClass: its provisioner, WaitForFirstConsumer, the virtual node only, expandable', async () => {
      const [sc] = await waitUntil(host, classSpec(host, CLASS), (cs) => cs.length === 1, 30_000, `storage class ${CLASS}`);
      assert.equal(sc.provisioner, 'clusterlet.io/member');
      assert.equal(sc.volumeBindingMode, 'WaitForFirstConsumer');
      assert.equal(sc.reclaimPolicy, 'Delete');
      assert.equal(sc.allowVolumeExpansion, true);
      assert.deepEqual(sc.allowedTopologies, [{ matchLabelExpressions: [{ key: 'kubernetes.io/hostname', values: [NODE] }] }]);
    });

    it('a StatefulSet of 3 with claims of the class is offloaded: 3 claims bound on both sides, each delegate mounting its own', async () => {
      const apps = harness().host.kubeConfig().makeApiClient(AppsV1Api);
      await apps.createNamespacedStatefulSet({ namespace: ns, body: statefulSet('db', ns, 3) });
      const { delegates } = await running(host, member, ns, 'db', 3);
      const want = ['data-db-0', 'data-db-1', 'data-db-2'];
      const hostClaims = await waitUntil(host, claimSpec(host, ns), (cs) => cs.length === 3 && cs.every(bound), 30_000, '3 host claims Bound');
      const memberClaims = await waitUntil(member, claimSpec(member, ns), (cs) => cs.length === 3 && cs.every(bound), 30_000, '3 member claims Bound');
      assert.deepEqual(names(hostClaims), want);
      assert.deepEqual(names(memberClaims), want);
      const volumes = (await waitUntil(host, volumeSpec(host, 'clusterlet.io/member=member'), (vs) => vs.length >= 3, 30_000, 'host volumes'))
        .filter((v) => v.spec?.claimRef?.namespace === ns);
      for (const c of hostClaims) {
        const pv = volumes.find((v) => v.metadata!.name === c.spec!.volumeName)!;
        assert.ok(pv, `the host volume of ${c.metadata!.name}`);
        assert.equal(pv.metadata!.name, `pvc-${c.metadata!.uid}`);
        assert.equal(pv.spec!.claimRef!.uid, c.metadata!.uid);
        assert.equal(pv.spec!.capacity!.storage, '1Gi', 'the member volume\'s size');
        assert.equal(pv.spec!.persistentVolumeReclaimPolicy, 'Delete');
        assert.equal(pv.metadata!.annotations!['clusterlet.io/member-claim'], `member/${ns}/${c.metadata!.name}`);
        assert.deepEqual(pv.spec!.nodeAffinity!.required!.nodeSelectorTerms[0].matchExpressions,
          [{ key: 'kubernetes.io/hostname', operator: 'In', values: [NODE] }]);
        const mc = memberClaims.find((m) => m.metadata!.name === c.metadata!.name)!;
        assert.equal(mc.spec!.storageClassName, MEMBER_CLASS);
        assert.equal(mc.metadata!.annotations!['clusterlet.io/claim-uid'], c.metadata!.uid);
        assert.equal(mc.metadata!.annotations!['clusterlet.io/reclaim-policy'], 'Delete');
      }
      for (const d of delegates) {
        const claim = d.spec!.volumes!.find((v) => v.name === 'data')?.persistentVolumeClaim?.claimName;
        assert.equal(claim, `data-${d.metadata!.name}`, `${d.metadata!.name} mounts its own member claim`);
      }
    });

    it('scaled to 0 and back to 3, the pods mount the same claims again', async () => {
      const memberBefore = uids(await member.core.listNamespacedPersistentVolumeClaim({ namespace: ns }).then((l) => l.items));
      const hostBefore = uids(await host.core.listNamespacedPersistentVolumeClaim({ namespace: ns }).then((l) => l.items));
      await scale(ns, 'db', 0);
      await waitUntil(member, podsSpec(member, ns, 'app=db'), (ps) => ps.length === 0, 90_000, 'no delegate');
      await waitUntil(host, podsSpec(host, ns, 'app=db'), (ps) => ps.length === 0, 60_000, 'no proxy');
      await scale(ns, 'db', 3);
      const { delegates } = await running(host, member, ns, 'db', 3);
      assert.deepEqual(uids(await member.core.listNamespacedPersistentVolumeClaim({ namespace: ns }).then((l) => l.items)), memberBefore,
        'the same member claims: the data would survive');
      assert.deepEqual(uids(await host.core.listNamespacedPersistentVolumeClaim({ namespace: ns }).then((l) => l.items)), hostBefore);
      for (const d of delegates) {
        assert.equal(d.spec!.volumes!.find((v) => v.name === 'data')?.persistentVolumeClaim?.claimName, `data-${d.metadata!.name}`);
      }
    });

    it('a claim expanded on the host grows its member claim; the host volume and claim show the new size', async () => {
      await resize(ns, 'data-db-0', '2Gi');
      const mc = await claimUntil(member, ns, 'data-db-0', (c) => c.status?.capacity?.storage === '2Gi', 'the member claim grown to 2Gi');
      assert.equal(mc.spec!.resources!.requests!.storage, '2Gi');
      const hc = await claimUntil(host, ns, 'data-db-0', (c) => c.status?.capacity?.storage === '2Gi', 'the host claim shows 2Gi');
      const pv = await readVolume(host, hc.spec!.volumeName!);
      assert.equal(pv?.spec?.capacity?.storage, '2Gi');
      const events = await waitUntil(host, eventSpec(host, ns), (es) => es.some((e) => e.reason === 'VolumeResizeSuccessful'), 30_000, 'VolumeResizeSuccessful');
      assert.equal(events.find((e) => e.reason === 'VolumeResizeSuccessful')!.involvedObject.name, 'data-db-0');
    });

    it('an expansion the member\'s resizer fails shows on the host claim (its condition, a Warning); asking for less recovers', async () => {
      await resize(ns, 'data-db-0', '100Gi');
      const failed = await claimUntil(host, ns, 'data-db-0', (c) => condition(c, 'ControllerResizeError')?.status === 'True',
        'ControllerResizeError on the host claim');
      const why = `100Gi is more than the ${POOL_LIMIT} the harness pool holds`;
      assert.match(condition(failed, 'ControllerResizeError')!.message ?? '', new RegExp(why));
      assert.deepEqual(failed.status!.allocatedResourceStatuses, { storage: 'ControllerResizeInfeasible' });
      assert.equal(failed.status!.capacity!.storage, '2Gi');
      const e = await warning(host, ns, 'data-db-0', 'VolumeResizeFailed');
      assert.match(e.message ?? '', new RegExp(`member member could not expand claim member/${ns}/data-db-0: .*${why}`));

      // Less than asked, more than it has: the member claim asks for that, the resizer makes it, the condition goes.
      await resize(ns, 'data-db-0', '3Gi');
      const hc = await claimUntil(host, ns, 'data-db-0', (c) => c.status?.capacity?.storage === '3Gi', 'the host claim at 3Gi');
      assert.equal(condition(hc, 'ControllerResizeError'), undefined);
      const mc = await member.core.readNamespacedPersistentVolumeClaim({ namespace: ns, name: 'data-db-0' });
      assert.equal(mc.spec!.resources!.requests!.storage, '3Gi');
      assert.equal(mc.status!.capacity!.storage, '3Gi');
    });

    it('deleted claims take their member claims and host volumes with them (Delete)', async () => {
      const volumes = (await host.core.listNamespacedPersistentVolumeClaim({ namespace: ns })).items.map((c) => c.spec!.volumeName!);
      await scale(ns, 'db', 0);
      await waitUntil(host, podsSpec(host, ns, 'app=db'), (ps) => ps.length === 0, 90_000, 'no proxy');
      await kubectl(harness().host, 'delete', 'pvc', '--all', '-n', ns, '--wait=false');
      await waitUntil(member, claimSpec(member, ns), (cs) => cs.length === 0, 90_000, 'the member claims deleted');
      await waitUntil(host, volumeSpec(host, 'clusterlet.io/member=member'),
        (vs) => !vs.some((v) => volumes.includes(v.metadata!.name!)), 60_000, 'the host volumes deleted');
    });

    it('a generic ephemeral volume of the class: the delegate mounts its claim\'s member claim, which goes with the pod', async (t) => {
      const ens = await namespaces(t, 'ephemeral', [host]);
      const pod = podSpec('scratchy', { namespace: ens, tolerate: true });
      pod.spec!.volumes = [{ name: 'scratch', ephemeral: { volumeClaimTemplate: { spec: {
        storageClassName: CLASS, accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } } } }];
      await host.core.createNamespacedPod({ namespace: ens, body: pod });
      await waitUntil(host, podsSpec(host, ens), (ps) => isReady(ps[0]) && ps[0].spec?.nodeName === NODE, 60_000, 'the proxy Ready on the virtual node');
      const [d] = await waitUntil(member, podsSpec(member, ens), (ps) => ps[0]?.status?.phase === 'Running', 30_000, 'the delegate Running');
      assert.deepEqual(d.spec!.volumes!.find((v) => v.name === 'scratch'), { name: 'scratch', persistentVolumeClaim: { claimName: 'scratchy-scratch' } });
      const [mc] = await waitUntil(member, claimSpec(member, ens), (cs) => cs.length === 1 && bound(cs[0]), 30_000, 'its member claim Bound');
      assert.equal(mc.metadata!.name, 'scratchy-scratch');
      await host.core.deleteNamespacedPod({ namespace: ens, name: 'scratchy' });
      await waitUntil(member, claimSpec(member, ens), (cs) => cs.length === 0, 90_000, 'the member claim gone with the pod');
    });

    it('a claim deleted while the member never bound its member claim: the member claim goes with it (Delete)', async (t) => {
      const ons = await namespaces(t, 'orphan', [host]);
      // Placed on the virtual node by hand (as the scheduler would for a pod), more than the member's pool holds.
      await host.core.createNamespacedPersistentVolumeClaim({ namespace: ons, body: { metadata: { name: 'huge',
        annotations: { 'volume.kubernetes.io/selected-node': NODE } },
        spec: { storageClassName: CLASS, accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '100Gi' } } } } });
      const [mc] = await waitUntil(member, claimSpec(member, ons), (cs) => cs.length === 1, 60_000, 'the member claim made');
      t.after(() => member.core.deleteNamespace({ name: ons }).catch(() => undefined));
      assert.notEqual(mc.status?.phase, 'Bound');
      await host.core.deleteNamespacedPersistentVolumeClaim({ namespace: ons, name: 'huge' });
      await waitUntil(member, claimSpec(member, ons), (cs) => cs.length === 0, 60_000, 'the member claim deleted');
    });

    it('a pod whose claim is of another class shows VolumeNotInMember on the proxy and gets no delegate', async (t) => {
      const other = await namespaces(t, 'other-class', [host]);
      await host.core.createNamespacedPersistentVolumeClaim({ namespace: other, body: { metadata: { name: 'elsewhere' },
        spec: { storageClassName: 'host-nfs', accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } } });
      // Bound by hand, as no scheduler would place it here.
      const pod = podSpec('app', { namespace: other, nodeName: NODE, tolerate: true });
      pod.spec!.volumes = [{ name: 'v', persistentVolumeClaim: { claimName: 'elsewhere' } }];
      await host.core.createNamespacedPod({ namespace: other, body: pod });
      const [p] = await waitUntil(host, podsSpec(host, other), (ps) => condition(ps[0], 'clusterlet.io/Offloaded')?.status === 'False',
        60_000, 'Offloaded=False on the proxy');
      const c = condition(p, 'clusterlet.io/Offloaded')!;
      assert.equal(c.reason, 'VolumeNotInMember');
      assert.match(c.message ?? '', /storage class "host-nfs": member member holds only claims of storage class "clusterlet-member"/);
      await waitUntil(host, eventSpec(host, other), (es) => es.some((e) => e.reason === 'VolumeNotInMember' && e.type === 'Warning'),
        30_000, 'a VolumeNotInMember Warning');
      assert.equal((await member.core.listNamespacedPod({ namespace: other }).catch(() => ({ items: [] }))).items.length, 0, 'no delegate');
    });

    it('a member claim clusterlet did not create is left untouched: MemberVolumeConflict on the host claim', async (t) => {
      const cns = await namespaces(t, 'conflict', [host, member]);
      await member.core.createNamespacedPersistentVolumeClaim({ namespace: cns, body: { metadata: { name: 'data', labels: { mine: 'yes' } },
        spec: { storageClassName: MEMBER_CLASS, accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } } });
      await host.core.createNamespacedPersistentVolumeClaim({ namespace: cns, body: { metadata: { name: 'data' },
        spec: { storageClassName: CLASS, accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } } });
      const pod = podSpec('app', { namespace: cns, tolerate: true });
      pod.spec!.volumes = [{ name: 'v', persistentVolumeClaim: { claimName: 'data' } }];
      await host.core.createNamespacedPod({ namespace: cns, body: pod });
      const events = await waitUntil(host, eventSpec(host, cns), (es) => es.some((e) => e.reason === 'MemberVolumeConflict'), 60_000,
        'MemberVolumeConflict on the host claim');
      const e = events.find((x) => x.reason === 'MemberVolumeConflict')!;
      assert.equal(e.type, 'Warning');
      assert.equal(e.involvedObject.kind, 'PersistentVolumeClaim');
      const mine = await member.core.readNamespacedPersistentVolumeClaim({ namespace: cns, name: 'data' });
      assert.deepEqual(mine.metadata!.labels, { mine: 'yes' }, 'the member claim untouched');
      const [hc] = (await host.core.listNamespacedPersistentVolumeClaim({ namespace: cns })).items;
      assert.equal(hc.status?.phase, 'Pending', 'no host volume');
    });
  });

  describe('with a member class that binds on first consumer and cannot be expanded', () => {
    withSuiteClusterlet((c) => ({ host, member } = c), ['--member-storage-class', LATE_CLASS]);
    let ns: string;
    suiteNamespace('late', (n) => { ns = n; }, () => [host, member]);

    it('the host volume does not wait for the member claim: the member binds it once its scheduler placed the delegate', async () => {
      const apps = harness().host.kubeConfig().makeApiClient(AppsV1Api);
      await apps.createNamespacedStatefulSet({ namespace: ns, body: statefulSet('late', ns, 1) });
      const { delegates: [d] } = await running(host, member, ns, 'late', 1);
      const [hc] = await waitUntil(host, claimSpec(host, ns), (cs) => cs.length === 1 && bound(cs[0]), 30_000, 'the host claim Bound');
      const [mc] = await waitUntil(member, claimSpec(member, ns), (cs) => cs.length === 1 && bound(cs[0]), 30_000, 'the member claim Bound');
      assert.equal(mc.spec!.storageClassName, LATE_CLASS);
      assert.equal(mc.metadata!.annotations!['volume.kubernetes.io/selected-node'], d.spec!.nodeName, 'placed with its delegate');
      const memberPV = await readVolume(member, mc.spec!.volumeName!);
      assert.deepEqual(memberPV!.spec!.nodeAffinity!.required!.nodeSelectorTerms[0].matchExpressions![0].values, [d.spec!.nodeName]);
      assert.equal((await readVolume(host, hc.spec!.volumeName!))!.spec!.capacity!.storage, '1Gi');
      // The member claim waited for its consumer: its PV controller said so before the delegate came.
      await waitUntil(member, eventSpec(member, ns), (es) => es.some((e) => e.reason === 'WaitForFirstConsumer'
        && e.involvedObject.name === 'data-late-0'), 30_000, 'WaitForFirstConsumer on the member claim');
    });

    it('an expansion the member refuses (its class cannot expand) shows on the host claim: ControllerResizeError and a Warning', async () => {
      await resize(ns, 'data-late-0', '2Gi');
      const hc = await claimUntil(host, ns, 'data-late-0', (c) => condition(c, 'ControllerResizeError')?.status === 'True',
        'ControllerResizeError on the host claim');
      const c = condition(hc, 'ControllerResizeError')!;
      assert.equal(c.reason, 'VolumeResizeFailed');
      const refused = new RegExp(`member member refused to expand claim ${ns}/data-late-0 to 2Gi: .*must support resize`);
      assert.match(c.message ?? '', refused);
      assert.match((await warning(host, ns, 'data-late-0', 'VolumeResizeFailed')).message ?? '', refused);
      const mc = await member.core.readNamespacedPersistentVolumeClaim({ namespace: ns, name: 'data-late-0' });
      assert.equal(mc.spec!.resources!.requests!.storage, '1Gi', 'the member claim as it was');
      assert.equal(hc.status!.capacity!.storage, '1Gi');
    });
  });

  describe('with the Retain reclaim policy', () => {
    withSuiteClusterlet((c) => ({ host, member } = c), [...ARGS, '--storage-reclaim-policy', 'Retain']);

    it('a deleted claim keeps its member claim, and its host volume stays Released', async (t) => {
      const [sc] = await waitUntil(host, classSpec(host, CLASS), (cs) => cs[0]?.reclaimPolicy === 'Retain', 30_000,
        'the class made again with Retain');
      assert.equal(sc.provisioner, 'clusterlet.io/member');
      const ns = await namespaces(t, 'retain', [host]);
      const apps = harness().host.kubeConfig().makeApiClient(AppsV1Api);
      await apps.createNamespacedStatefulSet({ namespace: ns, body: statefulSet('kept', ns, 1) });
      await running(host, member, ns, 'kept', 1);
      const [hc] = await waitUntil(host, claimSpec(host, ns), (cs) => cs.length === 1 && bound(cs[0]), 30_000, 'the host claim Bound');
      const [mc] = await waitUntil(member, claimSpec(member, ns), (cs) => cs.length === 1 && bound(cs[0]), 30_000, 'the member claim Bound');
      await scale(ns, 'kept', 0);
      await waitUntil(host, podsSpec(host, ns, 'app=kept'), (ps) => ps.length === 0, 90_000, 'no proxy');
      await host.core.deleteNamespacedPersistentVolumeClaim({ namespace: ns, name: hc.metadata!.name! });
      const pvName = hc.spec!.volumeName!;
      await waitUntil(host, volumeSpec(host, 'clusterlet.io/member=member'),
        (vs) => vs.some((v) => v.metadata!.name === pvName && v.status?.phase === 'Released'), 60_000, 'the host volume Released');
      t.after(async () => {
        await host.request('DELETE', `/api/v1/persistentvolumes/${pvName}`).catch(() => undefined);
        await member.core.deleteNamespace({ name: ns }).catch(() => undefined);
      });
      // Given time to act wrongly: the member claim is not deleted.
      await assert.rejects(waitUntil(member, claimSpec(member, ns), (cs) => cs.length === 0 || cs.some((c) => c.metadata?.deletionTimestamp),
        5_000, 'the member claim deleted'), /timed out/);
      const still = await member.core.readNamespacedPersistentVolumeClaim({ namespace: ns, name: mc.metadata!.name! });
      assert.equal(still.metadata!.uid, mc.metadata!.uid, 'the member claim kept');
      assert.equal(still.metadata!.deletionTimestamp, undefined);
      assert.equal((await readVolume(host, pvName))?.spec?.persistentVolumeReclaimPolicy, 'Retain');
    });
  });
});

function classSpec(c: ClusterClient, name: string) {
  return { path: '/apis/storage.k8s.io/v1/storageclasses', model: 'V1StorageClass', resource: 'storageclasses',
    fieldSelector: `metadata.name=${name}`,
    list: (p: { fieldSelector?: string; limit: number }) => c.request<{ items: V1StorageClass[] }>('GET',
      `/apis/storage.k8s.io/v1/storageclasses?fieldSelector=${encodeURIComponent(p.fieldSelector ?? '')}&limit=${p.limit}`) };
}

async function readVolume(c: ClusterClient, name: string): Promise<V1PersistentVolume | undefined> {
  return c.request<V1PersistentVolume>('GET', `/api/v1/persistentvolumes/${name}`).catch((err: unknown) => {
    if (toKubeError(err).kind === 'NotFound') return undefined;
    throw err;
  });
}
