// The member's volumes against a fake member API: member claims made in the mapped namespace with the member's class,
// found again, refused, in conflict; expanded, deleted only for the host claim they were made for; the pod gate.
import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { V1PersistentVolumeClaim, V1Pod } from '@kubernetes/client-node';
import { MemberVolumes, type VolumesMember } from '../../../../src/member/storage/volumes.ts';
import { PodRejectedError } from '../../../../src/provider/errors.ts';
import { VolumeRejectedError } from '../../../../src/provider/volume.ts';
import { KubeError } from '../../../../src/kube/errors.ts';
import { createLogger } from '../../../../src/log.ts';
import { forgeMemberClaim, type ClaimRequest } from '../../../../src/forge/volumes.ts';
import { FakeObjects } from '../../fakes/objects.ts';
import { FakeMemberClaims } from '../../fakes/storage.ts';
import { eventually } from '../../fakes/wait.ts';

const log = createLogger('silent');
const owner = { hostName: 'host-uid', node: 'clusterlet-eu' };
const OURS = 'clusterlet.io/origin=host-uid,clusterlet.io/node=clusterlet-eu';

const stops: (() => void)[] = [];
afterEach(() => { for (const s of stops.splice(0).reverse()) s(); });

const req = (over: Partial<ClaimRequest> = {}): ClaimRequest =>
  ({ namespace: 'shop', name: 'data-0', uid: 'c-uid', accessModes: ['ReadWriteOnce'], storage: '1Gi', reclaimPolicy: 'Delete', ...over });

/** A member whose claims are of `memberClass` (null: none named). */
function world(memberClass: string | null = 'fast') {
  const memberClassName = memberClass ?? undefined;
  const m = new FakeMemberClaims();
  m.objects.put('StorageClass', { metadata: { name: 'fast' }, provisioner: 'x', volumeBindingMode: 'Immediate' });
  m.objects.put('StorageClass', { metadata: { name: 'local' }, provisioner: 'y', volumeBindingMode: 'WaitForFirstConsumer' });
  const host = new FakeObjects();
  const hostClaims = host.informer<V1PersistentVolumeClaim>('PersistentVolumeClaim');
  hostClaims.start();
  const member: VolumesMember = { owner, config: { name: 'eu', namespaceMapping: { template: 'h-{namespace}', overrides: {} },
    storage: { className: 'clusterlet-eu', memberClassName, reclaimPolicy: 'Delete' } } };
  const namespaces: [string, string][] = [];
  let nsError: Error | undefined;
  const ensure = async (ns: string, hostNs: string): Promise<void> => {
    if (nsError) throw nsError;
    namespaces.push([ns, hostNs]);
  };
  const volumes = new MemberVolumes(member, m.api(OURS), ensure, hostClaims, log);
  const changes: string[] = [];
  const sub = volumes.volumeChanges$.subscribe((k) => changes.push(k));
  volumes.start();
  stops.push(() => { sub.unsubscribe(); volumes.stop(); hostClaims.stop(); });
  const claim = (ns = 'h-shop', name = 'data-0'): V1PersistentVolumeClaim | undefined => m.objects.get('PersistentVolumeClaim', ns, name);
  return { m, host, volumes, namespaces, changes, claim, failNamespace: (e: Error) => { nsError = e; } };
}

describe('MemberVolumes.provisionVolume', () => {
  it('makes the member claim in the mapped namespace (made first), of the member class; found again once made', async () => {
    const w = world();
    await w.volumes.waitSynced();
    const made = await w.volumes.provisionVolume(req());
    assert.equal(made.created, true);
    assert.deepEqual(w.namespaces, [['h-shop', 'shop']]);
    const c = w.claim()!;
    assert.equal(c.spec!.storageClassName, 'fast');
    assert.deepEqual(c.metadata!.labels, { 'clusterlet.io/origin': 'host-uid', 'clusterlet.io/node': 'clusterlet-eu' });
    assert.deepEqual(made.volume, { claimUID: 'c-uid', location: 'eu/h-shop/data-0', phase: 'Pending', waitsForConsumer: false,
      reclaimPolicy: 'Delete', terminating: false, requested: '1Gi' });
    await eventually('the change heard, by host key', () => w.changes.includes('shop/data-0'));

    // The member binds it.
    w.m.objects.put('PersistentVolumeClaim', { ...c, status: { phase: 'Bound', capacity: { storage: '2Gi' } } });
    await eventually('bound', () => w.volumes.getVolume('shop', 'data-0')?.phase === 'Bound');
    const again = await w.volumes.provisionVolume(req());
    assert.equal(again.created, false);
    assert.equal(again.volume.capacity, '2Gi');
    assert.equal(w.m.objects.writes('create').length, 1);
  });

  it('a member class that binds on first use is said to; no member class named: the member\'s default', async () => {
    const w = world('local');
    await w.volumes.waitSynced();
    assert.equal((await w.volumes.provisionVolume(req())).volume.waitsForConsumer, true);
    const d = world(null);
    await d.volumes.waitSynced();
    await d.volumes.provisionVolume(req());
    assert.equal(d.claim()!.spec!.storageClassName, undefined);
  });

  it('a member claim made before a restart, Pending in a class that binds on first use: said to (the host volume need not wait)', async () => {
    const w = world('local');
    w.m.objects.put('PersistentVolumeClaim', { ...forgeMemberClaim(req(), { owner, memberNamespace: 'h-shop', memberClassName: 'local' }),
      status: { phase: 'Pending' } });
    await w.volumes.waitSynced();
    const found = await w.volumes.provisionVolume(req());
    assert.equal(found.created, false);
    assert.equal(found.volume.waitsForConsumer, true);
    assert.equal(found.volume.phase, 'Pending');
    assert.deepEqual(w.m.objects.writes(), []);
  });

  it('a member class the member lacks: ProvisioningFailed, nothing made', async () => {
    const w = world('missing');
    await w.volumes.waitSynced();
    const err = await w.volumes.provisionVolume(req()).then(() => undefined, (e: unknown) => e);
    assert.ok(err instanceof VolumeRejectedError);
    assert.equal(err.reason, 'ProvisioningFailed');
    assert.match(err.message, /member eu has no storage class "missing"/);
    assert.deepEqual(w.m.objects.writes(), []);
    assert.deepEqual(w.namespaces, []);
  });

  it('a member claim of that name clusterlet did not create: MemberVolumeConflict, left untouched', async () => {
    const w = world();
    w.m.objects.put('PersistentVolumeClaim', { metadata: { name: 'data-0', namespace: 'h-shop', labels: { mine: 'yes' } }, spec: {} });
    await w.volumes.waitSynced();
    const err = await w.volumes.provisionVolume(req()).then(() => undefined, (e: unknown) => e);
    assert.ok(err instanceof VolumeRejectedError);
    assert.equal(err.reason, 'MemberVolumeConflict');
    assert.equal(err.reschedule, false);
    assert.deepEqual(w.claim()!.metadata!.labels, { mine: 'yes' });
    assert.deepEqual(w.m.objects.writes(), []);
  });

  it('a claim the member refuses (quota, admission): ProvisioningFailed, and another node may be chosen', async () => {
    const w = world();
    await w.volumes.waitSynced();
    w.m.failures.set('create', new KubeError('Forbidden', 403, 'Forbidden', 'exceeded quota: storage'));
    const err = await w.volumes.provisionVolume(req()).then(() => undefined, (e: unknown) => e);
    assert.ok(err instanceof VolumeRejectedError);
    assert.equal(err.reason, 'ProvisioningFailed');
    assert.equal(err.reschedule, true);
    assert.match(err.message, /member eu refused claim h-shop\/data-0: exceeded quota: storage/);
  });

  it('a namespace that cannot hold it: the pod provider\'s reason', async () => {
    const w = world();
    await w.volumes.waitSynced();
    w.failNamespace(new PodRejectedError('MemberNamespaceConflict', 'holds another host namespace', { retry: false }));
    const err = await w.volumes.provisionVolume(req()).then(() => undefined, (e: unknown) => e);
    assert.ok(err instanceof VolumeRejectedError);
    assert.equal(err.reason, 'MemberNamespaceConflict');
    assert.deepEqual(w.m.objects.writes(), []);
  });
});

describe('MemberVolumes: expansion and deletion', () => {
  async function bound() {
    const w = world();
    await w.volumes.waitSynced();
    await w.volumes.provisionVolume(req());
    await eventually('cached', () => w.volumes.getVolume('shop', 'data-0') !== undefined);
    return w;
  }

  it('expands the member claim of the host claim, UID in the body', async () => {
    const w = await bound();
    await w.volumes.expandVolume('shop', 'data-0', '2Gi');
    assert.deepEqual(w.m.patches, [{ key: 'h-shop/data-0',
      body: { metadata: { uid: w.claim()!.metadata!.uid }, spec: { resources: { requests: { storage: '2Gi' } } } } }]);
    assert.equal(w.claim()!.spec!.resources!.requests!.storage, '2Gi');
  });

  it('an expansion the member refuses: VolumeResizeFailed', async () => {
    const w = await bound();
    w.m.failures.set('patch', new KubeError('Forbidden', 403, 'Forbidden', 'only dynamically provisioned pvc can be resized'));
    const err = await w.volumes.expandVolume('shop', 'data-0', '2Gi').then(() => undefined, (e: unknown) => e);
    assert.ok(err instanceof VolumeRejectedError);
    assert.equal(err.reason, 'VolumeResizeFailed');
  });

  it('deletes the member claim only for the host claim it was made for', async () => {
    const w = await bound();
    await w.volumes.deleteVolume('shop', 'data-0', 'a-later-claim');
    assert.ok(w.claim(), 'made for another claim of that name: kept');
    await w.volumes.deleteVolume('shop', 'data-0', 'c-uid');
    assert.equal(w.claim(), undefined);
    await eventually('forgotten', () => w.volumes.getVolume('shop', 'data-0') === undefined);
    await w.volumes.deleteVolume('shop', 'data-0', 'c-uid');
  });
});

describe('MemberVolumes.podRejection', () => {
  const pod = (claimName: string): V1Pod => ({ metadata: { name: 'app', namespace: 'shop' },
    spec: { containers: [], volumes: [{ name: 'v', persistentVolumeClaim: { claimName } }] } });

  it('a pod without claims passes at once; one whose claim is of another class is rejected for good', async () => {
    const w = world();
    await w.volumes.waitSynced();
    assert.equal(await w.volumes.podRejection({ metadata: { name: 'x', namespace: 'shop' }, spec: { containers: [] } }), undefined);
    w.host.put('PersistentVolumeClaim', { metadata: { name: 'nfs', namespace: 'shop' }, spec: { storageClassName: 'nfs' } });
    const r = await w.volumes.podRejection(pod('nfs'));
    assert.ok(r instanceof PodRejectedError);
    assert.equal(r.reason, 'VolumeNotInMember');
    assert.equal(r.retry, false);
  });

  it('a claim of the class passes once its member claim is made for it', async () => {
    const w = world();
    await w.volumes.waitSynced();
    const hc = w.host.put<V1PersistentVolumeClaim>('PersistentVolumeClaim', { metadata: { name: 'data-0', namespace: 'shop' }, spec: { storageClassName: 'clusterlet-eu' } });
    assert.equal((await w.volumes.podRejection(pod('data-0')))?.reason, 'MemberVolumeNotReady');
    await w.volumes.provisionVolume(req({ uid: 'an-earlier-claim' }));
    await eventually('made', () => w.volumes.getVolume('shop', 'data-0') !== undefined);
    assert.equal((await w.volumes.podRejection(pod('data-0')))?.reason, 'MemberVolumeNotReady', 'made for an earlier claim of that name');
    await w.volumes.deleteVolume('shop', 'data-0', 'an-earlier-claim');
    await eventually('gone', () => w.volumes.getVolume('shop', 'data-0') === undefined);
    await w.volumes.provisionVolume(req({ uid: hc.metadata!.uid }));
    await eventually('made for it', () => w.volumes.getVolume('shop', 'data-0')?.claimUID === hc.metadata!.uid);
    assert.equal(await w.volumes.podRejection(pod('data-0')), undefined);
  });

  it('no verdict before the member claims are listed: it waits a while, then the pod is tried again', async () => {
    const m = new FakeMemberClaims();
    const host = new FakeObjects().informer<V1PersistentVolumeClaim>('PersistentVolumeClaim');
    const volumes = new MemberVolumes({ owner, config: { name: 'eu', namespaceMapping: { template: '{namespace}', overrides: {} },
      storage: { className: 'clusterlet-eu', reclaimPolicy: 'Delete' } } }, m.api(OURS), async () => undefined, host, log, { listWaitMs: 20 });
    await assert.rejects(volumes.podRejection(pod('data-0')), /not listed yet/);
  });
});
