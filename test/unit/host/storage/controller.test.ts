// The volume controller against a fake host API and a VolumeProvider driven by hand: the member's StorageClass kept,
// claims the scheduler placed on the virtual node provisioned (member claim first, then the host volume pre-bound to
// the claim), refusals and conflicts shown on the claim, expansion forwarded and its result brought back, and
// released volumes deleted with their member claim per the reclaim policy.
import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { V1PersistentVolume, V1PersistentVolumeClaim, V1StorageClass } from '@kubernetes/client-node';
import { VolumeController } from '../../../../src/host/storage/controller.ts';
import {
  forgeHostStorageClass, forgeHostVolume, type ReclaimPolicy, type StorageContext, type VolumeState,
} from '../../../../src/forge/volumes.ts';
import { VolumeRejectedError } from '../../../../src/provider/volume.ts';
import { createLogger } from '../../../../src/log.ts';
import { metrics } from '../../../../src/metrics.ts';
import { FakeHostStorage, FakeVolumeProvider } from '../../fakes/storage.ts';
import { eventually } from '../../fakes/wait.ts';

const log = createLogger('silent');
const ctx: StorageContext = { member: 'eu', nodeName: 'clusterlet-eu', className: 'clusterlet-eu', reclaimPolicy: 'Delete' };
const KEY = 'shop/data-0';

const stops: (() => void)[] = [];
afterEach(() => { for (const s of stops.splice(0).reverse()) s(); });

function world(storage: StorageContext = ctx) {
  const host = new FakeHostStorage();
  const provider = new FakeVolumeProvider();
  const controller = new VolumeController(host.api(), provider, storage, log);
  stops.push(() => host.stop(), () => controller.stop());
  const claim = (): V1PersistentVolumeClaim | undefined => host.objects.get('PersistentVolumeClaim', 'shop', 'data-0');
  const volume = (name = `pvc-${claim()?.metadata?.uid}`): V1PersistentVolume | undefined => host.objects.get('PersistentVolume', '', name);
  return { host, provider, controller, claim, volume };
}

/** A claim of the class; `placed`: the scheduler chose the virtual node and the PV controller handed it over. */
function claim(placed = true, over: Partial<V1PersistentVolumeClaim['spec']> = {}, node = ctx.nodeName): V1PersistentVolumeClaim {
  return {
    metadata: { name: 'data-0', namespace: 'shop', annotations: placed ? {
      'volume.kubernetes.io/selected-node': node, 'volume.kubernetes.io/storage-provisioner': 'clusterlet.io/eu' } : {} },
    spec: { storageClassName: 'clusterlet-eu', accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, ...over },
    status: { phase: 'Pending' },
  };
}

const state = (uid: string, over: Partial<VolumeState> = {}): VolumeState => ({
  claimUID: uid, location: 'eu/shop/data-0', phase: 'Bound', waitsForConsumer: false, terminating: false,
  requested: '1Gi', capacity: '1Gi', ...over,
});

/** The PV controller's part: the volume's claim bound to it, both Bound. */
function bind(host: FakeHostStorage, pvName: string): void {
  const c = host.objects.get<V1PersistentVolumeClaim>('PersistentVolumeClaim', 'shop', 'data-0')!;
  host.objects.put('PersistentVolumeClaim', { ...c, spec: { ...c.spec, volumeName: pvName }, status: { phase: 'Bound', capacity: { storage: '1Gi' } } });
  const pv = host.objects.get<V1PersistentVolume>('PersistentVolume', '', pvName)!;
  host.objects.put('PersistentVolume', { ...pv, status: { phase: 'Bound' } });
}

/** A bound claim with its volume, as after provisioning. */
function provisioned(w: ReturnType<typeof world>, storage = ctx): { c: V1PersistentVolumeClaim; pv: V1PersistentVolume } {
  const c = w.host.objects.put('PersistentVolumeClaim', claim());
  w.provider.volumes.set(KEY, state(c.metadata!.uid!));
  const pv = w.host.objects.put('PersistentVolume', forgeHostVolume(c, state(c.metadata!.uid!), storage));
  bind(w.host, pv.metadata!.name!);
  return { c: w.claim()!, pv: w.volume(pv.metadata!.name)! };
}

describe('VolumeController: the storage class', () => {
  it('creates the member\'s class when missing', async () => {
    const w = world();
    w.controller.start();
    await eventually('the class', () => w.host.objects.get('StorageClass', '', 'clusterlet-eu') !== undefined);
    const sc = w.host.objects.get<V1StorageClass>('StorageClass', '', 'clusterlet-eu')!;
    assert.equal(sc.provisioner, 'clusterlet.io/eu');
    assert.equal(sc.volumeBindingMode, 'WaitForFirstConsumer');
  });

  it('makes its class again when a field that cannot change differs (another reclaim policy), and updates the others', async () => {
    const w = world({ ...ctx, reclaimPolicy: 'Retain' });
    const old = w.host.objects.put('StorageClass', forgeHostStorageClass(ctx));
    w.controller.start();
    await eventually('made again', () => w.host.objects.get<V1StorageClass>('StorageClass', '', 'clusterlet-eu')?.reclaimPolicy === 'Retain');
    assert.notEqual(w.host.objects.get<V1StorageClass>('StorageClass', '', 'clusterlet-eu')!.metadata!.uid, old.metadata!.uid);
    assert.deepEqual(w.host.objects.writes(undefined, 'StorageClass').map((c) => c.verb), ['delete', 'create']);

    const w2 = world();
    w2.host.objects.put('StorageClass', { ...forgeHostStorageClass(ctx), allowVolumeExpansion: false });
    w2.controller.start();
    await eventually('updated', () => w2.host.objects.get<V1StorageClass>('StorageClass', '', 'clusterlet-eu')?.allowVolumeExpansion === true);
    assert.deepEqual(w2.host.objects.writes(undefined, 'StorageClass').map((c) => c.verb), ['replace']);
  });

  it('leaves a class of that name it did not create alone', async () => {
    const w = world();
    w.host.objects.put('StorageClass', { metadata: { name: 'clusterlet-eu' }, provisioner: 'ebs.csi.aws.com' });
    w.controller.start();
    await w.controller.idle();
    assert.deepEqual(w.host.objects.writes(undefined, 'StorageClass'), []);
  });
});

describe('VolumeController: provisioning', () => {
  it('a claim placed on the virtual node: the member claim, then once the member bound it, the host volume pre-bound to the claim', async () => {
    const w = world();
    const before = (await metrics.volumesProvisioned.get()).values.find((v) => v.labels.member === 'eu')?.value ?? 0;
    const c = w.host.objects.put('PersistentVolumeClaim', claim());
    const uid = c.metadata!.uid!;
    w.provider.outcomes.set(KEY, { volume: state(uid, { phase: 'Pending', capacity: undefined }), created: true });
    w.controller.start();
    await eventually('provisioned in the member', () => w.provider.provisions.length === 1);
    assert.deepEqual(w.provider.provisions[0], { namespace: 'shop', name: 'data-0', uid, accessModes: ['ReadWriteOnce'], storage: '1Gi', reclaimPolicy: 'Delete' });
    await eventually('the Provisioning event', () => w.host.reasons().includes('Provisioning'));
    assert.equal(w.volume(), undefined, 'no host volume while the member claim is Pending');

    w.provider.set(KEY, state(uid, { capacity: '2Gi' }));
    await eventually('the host volume', () => w.volume() !== undefined);
    const pv = w.volume()!;
    assert.equal(pv.metadata!.name, `pvc-${uid}`);
    assert.deepEqual(pv.spec!.claimRef, { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: 'shop', name: 'data-0', uid });
    assert.equal(pv.spec!.capacity!.storage, '2Gi', 'the member volume\'s size');
    await eventually('ProvisioningSucceeded', () => w.host.reasons('Normal').includes('ProvisioningSucceeded'));
    assert.equal((await metrics.volumesProvisioned.get()).values.find((v) => v.labels.member === 'eu')?.value, before + 1);

    // The volume exists: nothing is provisioned again while the PV controller binds it.
    w.provider.set(KEY, state(uid, { capacity: '2Gi' }));
    await w.controller.idle();
    assert.equal(w.host.objects.writes('create', 'PersistentVolume').length, 1);
  });

  it('a member class that binds on first use: the host volume at once, of the size asked', async () => {
    const w = world();
    const c = w.host.objects.put('PersistentVolumeClaim', claim());
    w.provider.outcomes.set(KEY, { volume: state(c.metadata!.uid!, { phase: 'Pending', waitsForConsumer: true, capacity: undefined }), created: true });
    w.controller.start();
    await eventually('the host volume', () => w.volume() !== undefined);
    assert.equal(w.volume()!.spec!.capacity!.storage, '1Gi');
  });

  const ignored: [string, V1PersistentVolumeClaim][] = [
    ['not placed yet', claim(false)],
    ['placed on another node', claim(true, {}, 'host-1')],
    ['of another class', claim(true, { storageClassName: 'standard' })],
  ];
  for (const [name, c] of ignored) {
    it(`leaves a claim ${name} alone`, async () => {
      const w = world();
      w.host.objects.put('PersistentVolumeClaim', c);
      w.controller.start();
      await w.controller.idle();
      assert.deepEqual(w.provider.provisions, []);
      assert.deepEqual(w.host.objects.writes('create', 'PersistentVolume'), []);
    });
  }

  it('a member that refuses the claim: ProvisioningFailed on it, and the scheduler asked to choose again', async () => {
    const w = world();
    w.host.objects.put('PersistentVolumeClaim', claim());
    w.provider.outcomes.set(KEY, new VolumeRejectedError('ProvisioningFailed', 'member eu refused claim shop/data-0: exceeded quota', { reschedule: true }));
    w.controller.start();
    await eventually('the selected node removed', () => w.claim()!.metadata!.annotations!['volume.kubernetes.io/selected-node'] === undefined);
    const e = w.host.events.find((x) => x.reason === 'ProvisioningFailed')!;
    assert.equal(e.type, 'Warning');
    assert.equal(e.message, 'member eu refused claim shop/data-0: exceeded quota');
    assert.deepEqual(e.about, { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: 'shop', name: 'data-0', uid: w.claim()!.metadata!.uid });
    assert.equal(w.volume(), undefined);
  });

  it('a claim with a data source: ProvisioningFailed, nothing asked of the member', async () => {
    const w = world();
    w.host.objects.put('PersistentVolumeClaim', claim(true, { dataSource: { kind: 'PersistentVolumeClaim', name: 'db' } }));
    w.controller.start();
    await eventually('refused', () => w.host.reasons('Warning').includes('ProvisioningFailed'));
    assert.deepEqual(w.provider.provisions, []);
    assert.equal(w.claim()!.metadata!.annotations!['volume.kubernetes.io/selected-node'], 'clusterlet-eu');
  });

  it('a member claim clusterlet did not create: MemberVolumeConflict on the claim, no volume, the node kept', async () => {
    const w = world();
    w.host.objects.put('PersistentVolumeClaim', claim());
    w.provider.outcomes.set(KEY, new VolumeRejectedError('MemberVolumeConflict', 'member eu already has a claim shop/data-0 …'));
    w.controller.start();
    await eventually('the conflict shown', () => w.host.reasons('Warning').includes('MemberVolumeConflict'));
    assert.equal(w.claim()!.metadata!.annotations!['volume.kubernetes.io/selected-node'], 'clusterlet-eu');
    assert.equal(w.volume(), undefined);
  });

  it('the member claim of an earlier claim of that name: waited for while its volume goes (Delete), a conflict when kept (Retain)', async () => {
    const w = world();
    const c = w.host.objects.put('PersistentVolumeClaim', claim());
    const earlier = { metadata: { name: 'data-0', namespace: 'shop', uid: 'old' }, spec: claim().spec };
    w.host.objects.put('PersistentVolume', forgeHostVolume(earlier, state('old'), ctx));
    w.provider.volumes.set(KEY, state('old'));
    w.controller.start();
    await eventually('looked at', () => w.provider.provisions.length === 1);
    await w.controller.idle();
    assert.deepEqual(w.host.reasons('Warning'), [], 'it is going: no conflict');
    assert.equal(w.volume(), undefined);

    // Kept: never taken over.
    w.host.objects.put('PersistentVolume', { ...w.host.objects.get<V1PersistentVolume>('PersistentVolume', '', 'pvc-old')!,
      spec: { ...forgeHostVolume(earlier, state('old'), ctx).spec, persistentVolumeReclaimPolicy: 'Retain' }, status: { phase: 'Released' } });
    w.provider.set(KEY, state('old'));
    await eventually('the conflict shown', () => w.host.reasons('Warning').includes('MemberVolumeConflict'));
    assert.match(w.host.events.at(-1)!.message, /earlier claim of that name \(UID old\), kept by the Retain reclaim policy/);
    // Deleted in the member: this claim gets its own.
    w.provider.outcomes.set(KEY, { volume: state(c.metadata!.uid!), created: true });
    w.provider.volumeChanges$.next(KEY);
    await eventually('the host volume', () => w.volume() !== undefined);
  });
});

describe('VolumeController: member claims of claims gone before their volume was made', () => {
  // The class's policy now, the one the member claim was made under (undefined: not recorded), whether it goes.
  const orphans: [ReclaimPolicy, ReclaimPolicy | undefined, boolean][] = [
    ['Delete', 'Delete', true], ['Retain', 'Retain', false], ['Delete', undefined, true], ['Retain', undefined, false],
    ['Delete', 'Retain', false], ['Retain', 'Delete', true],
  ];
  for (const [now, madeUnder, goes] of orphans) {
    it(`a claim deleted while its member claim is Pending, policy ${now}, made under ${madeUnder ?? 'an unrecorded one'}: ${goes ? 'deleted' : 'kept'}`, async () => {
      const w = world({ ...ctx, reclaimPolicy: now });
      const c = w.host.objects.put('PersistentVolumeClaim', claim());
      const v = state(c.metadata!.uid!, { phase: 'Pending', capacity: undefined, ...(madeUnder ? { reclaimPolicy: madeUnder } : {}) });
      w.provider.outcomes.set(KEY, { volume: v, created: true });
      w.controller.start();
      await eventually('provisioned in the member', () => w.provider.provisions.length === 1);
      w.host.objects.drop('PersistentVolumeClaim', 'shop', 'data-0');
      if (goes) await eventually('the member claim deleted', () => w.provider.deletions.length === 1);
      else await w.controller.idle();
      assert.deepEqual(w.provider.deletions, goes ? [{ key: KEY, uid: c.metadata!.uid }] : []);
    });
  }

  it('a claim gone whose host volume exists: left to the volume (released by the PV controller)', async () => {
    const w = world();
    provisioned(w);
    w.controller.start();
    await w.controller.idle();
    w.host.objects.drop('PersistentVolumeClaim', 'shop', 'data-0');
    await w.controller.idle();
    assert.deepEqual(w.provider.deletions, []);
  });

  it('a new claim of that name, the earlier one\'s member claim without a host volume: deleted (Delete), then the new claim\'s made', async () => {
    const w = world();
    const c = w.host.objects.put('PersistentVolumeClaim', claim());
    w.provider.volumes.set(KEY, state('old', { phase: 'Pending', capacity: undefined }));
    w.controller.start();
    await eventually('the earlier member claim deleted', () => w.provider.deletions.length === 1);
    assert.deepEqual(w.provider.deletions, [{ key: KEY, uid: 'old' }]);
    assert.deepEqual(w.host.reasons('Warning'), [], 'no conflict');
    w.provider.outcomes.set(KEY, { volume: state(c.metadata!.uid!), created: true });
    w.provider.set(KEY, undefined);
    await eventually('the host volume', () => w.volume() !== undefined);
  });
});

describe('VolumeController: a bound claim follows its member claim', () => {
  it('an expanded claim asks the member; the member\'s new size comes back to the volume and the claim, with its conditions', async () => {
    const w = world();
    const { c, pv } = provisioned(w);
    const uid = c.metadata!.uid!;
    w.controller.start();
    await w.controller.idle();
    assert.deepEqual(w.provider.expansions, []);
    w.host.objects.put('PersistentVolumeClaim', { ...c, spec: { ...c.spec, resources: { requests: { storage: '2Gi' } } } });
    await eventually('the member asked for 2Gi', () => w.provider.expansions.length === 1);
    assert.deepEqual(w.provider.expansions, [{ key: KEY, storage: '2Gi' }]);
    await eventually('Resizing', () => w.host.reasons('Normal').includes('Resizing'));

    w.provider.set(KEY, state(uid, { requested: '2Gi', conditions: [{ type: 'Resizing', status: 'True' }] }));
    await eventually('the condition shown', () => w.claim()!.status!.conditions?.[0]?.type === 'Resizing');
    w.provider.set(KEY, state(uid, { requested: '2Gi', capacity: '2Gi', allocatedResources: { storage: '2Gi' } }));
    await eventually('the new size on the claim', () => w.claim()!.status!.capacity!.storage === '2Gi');
    assert.equal(w.volume(pv.metadata!.name)!.spec!.capacity!.storage, '2Gi');
    assert.equal(w.claim()!.status!.conditions, undefined, 'the condition gone with the member\'s');
    assert.deepEqual(w.claim()!.status!.allocatedResources, { storage: '2Gi' });
    assert.equal(w.claim()!.status!.phase, 'Bound', 'the phase stays the PV controller\'s');
    await eventually('VolumeResizeSuccessful', () => w.host.reasons('Normal').includes('VolumeResizeSuccessful'));
    assert.ok(w.host.claimPatches.every((p) => p.status), 'only the claim\'s status written');
  });

  it('an expansion the member refuses: a ControllerResizeError condition and VolumeResizeFailed on the claim, gone once it is made', async () => {
    const w = world();
    const { c } = provisioned(w);
    const refusal = 'member eu refused to expand claim shop/data-0 to 5Gi: only dynamically provisioned pvc can be resized';
    let refuse = true;
    const expand = w.provider.expandVolume.bind(w.provider);
    w.provider.expandVolume = async (ns, name, storage) => {
      if (refuse) throw new VolumeRejectedError('VolumeResizeFailed', refusal);
      return expand(ns, name, storage);
    };
    w.controller.start();
    w.host.objects.put('PersistentVolumeClaim', { ...c, spec: { ...c.spec, resources: { requests: { storage: '5Gi' } } } });
    await eventually('the condition', () => w.claim()!.status?.conditions?.some((x) => x.type === 'ControllerResizeError') === true);
    const cond = w.claim()!.status!.conditions!.find((x) => x.type === 'ControllerResizeError')!;
    assert.equal(cond.status, 'True');
    assert.equal(cond.reason, 'VolumeResizeFailed');
    assert.equal(cond.message, refusal);
    const e = w.host.events.find((x) => x.reason === 'VolumeResizeFailed')!;
    assert.equal(e.type, 'Warning');
    assert.equal(e.message, refusal);
    assert.equal(w.provider.expansions.length, 0);
    assert.equal(w.claim()!.status!.capacity!.storage, '1Gi');
    assert.deepEqual(w.host.reasons('Normal'), [], 'no Resizing');

    // The member accepts it now (its class made expandable); the claim is looked at again: the condition goes.
    refuse = false;
    w.host.objects.put('PersistentVolumeClaim', { ...w.claim()!, spec: { ...c.spec, resources: { requests: { storage: '6Gi' } } } });
    await eventually('the condition gone', () => w.claim()!.status?.conditions === undefined);
    // Asked again until the member claim shows it (the fake's never does): always for 6Gi.
    assert.deepEqual([...new Set(w.provider.expansions.map((x) => x.storage))], ['6Gi']);
  });

  it('an expansion the member\'s resizer fails: its condition on the claim and one VolumeResizeFailed with its reason', async () => {
    const w = world();
    const { c } = provisioned(w);
    const uid = c.metadata!.uid!;
    w.controller.start();
    w.host.objects.put('PersistentVolumeClaim', { ...c, spec: { ...c.spec, resources: { requests: { storage: '100Gi' } } } });
    await eventually('asked', () => w.provider.expansions.length === 1);
    const failed = { type: 'ControllerResizeError', status: 'True', message: 'resize volume "v" failed: the pool holds 64Gi' };
    const v = state(uid, { requested: '100Gi', conditions: [failed], allocatedResourceStatuses: { storage: 'ControllerResizeInfeasible' } });
    w.provider.set(KEY, v);
    await eventually('the member\'s condition', () => w.claim()!.status?.conditions?.[0]?.message === failed.message);
    assert.deepEqual(w.claim()!.status!.allocatedResourceStatuses, { storage: 'ControllerResizeInfeasible' });
    const warnings = (): string[] => w.host.events.filter((e) => e.reason === 'VolumeResizeFailed').map((e) => e.message);
    assert.deepEqual(warnings(), ['member eu could not expand claim eu/shop/data-0: resize volume "v" failed: the pool holds 64Gi']);
    w.provider.set(KEY, v);
    await w.controller.idle();
    assert.equal(warnings().length, 1, 'said once');

    // The user asks for less again (more than the volume has): the member is asked for that.
    w.host.objects.put('PersistentVolumeClaim', { ...w.claim()!, spec: { ...c.spec, resources: { requests: { storage: '3Gi' } } } });
    await eventually('the member asked for 3Gi', () => w.provider.expansions.at(-1)?.storage === '3Gi');
  });

  it('a member claim gone: MemberVolumeLost on the claim', async () => {
    const w = world();
    provisioned(w);
    w.controller.start();
    await w.controller.idle();
    w.provider.set(KEY, undefined);
    await eventually('MemberVolumeLost', () => w.host.reasons('Warning').includes('MemberVolumeLost'));
  });
});

describe('VolumeController: released volumes', () => {
  it('Delete: the member claim, then the volume, then the finalizer', async () => {
    const w = world();
    const { c, pv } = provisioned(w);
    w.controller.start();
    await w.controller.idle();
    w.host.objects.drop('PersistentVolumeClaim', 'shop', 'data-0');
    w.host.objects.put('PersistentVolume', { ...w.volume(pv.metadata!.name)!, status: { phase: 'Released' } });
    await eventually('the volume gone', () => w.volume(pv.metadata!.name) === undefined);
    assert.deepEqual(w.provider.deletions, [{ key: KEY, uid: c.metadata!.uid }]);
  });

  it('deleted by hand, then released: the member claim first, then the finalizer, and the volume goes', async () => {
    const w = world();
    const { c, pv } = provisioned(w);
    w.controller.start();
    const name = pv.metadata!.name!;
    w.host.objects.put('PersistentVolume', { ...w.volume(name)!, metadata: { ...w.volume(name)!.metadata, deletionTimestamp: new Date() } });
    await w.controller.idle();
    assert.ok(w.volume(name), 'held by its finalizer while bound');
    w.host.objects.drop('PersistentVolumeClaim', 'shop', 'data-0');
    w.host.objects.put('PersistentVolume', { ...w.volume(name)!, status: { phase: 'Released' } });
    await eventually('the volume gone', () => w.volume(name) === undefined);
    assert.deepEqual(w.provider.deletions, [{ key: KEY, uid: c.metadata!.uid }]);
    assert.deepEqual(w.host.objects.writes('delete', 'PersistentVolume'), [], 'deleted already: not asked again');
  });

  it('Retain: both kept', async () => {
    const retain = { ...ctx, reclaimPolicy: 'Retain' as const };
    const w = world(retain);
    const { pv } = provisioned(w, retain);
    w.controller.start();
    await w.controller.idle();
    w.host.objects.drop('PersistentVolumeClaim', 'shop', 'data-0');
    w.host.objects.put('PersistentVolume', { ...w.volume(pv.metadata!.name)!, status: { phase: 'Released' } });
    await w.controller.idle();
    assert.deepEqual(w.provider.deletions, []);
    assert.equal(w.volume(pv.metadata!.name)!.status!.phase, 'Released');
    assert.deepEqual(w.host.objects.writes(undefined, 'PersistentVolume'), []);
  });

  it('a volume still bound is never deleted, even once someone asked to', async () => {
    const w = world();
    const { pv } = provisioned(w);
    w.host.objects.put('PersistentVolume', { ...w.volume(pv.metadata!.name)!, metadata: { ...pv.metadata, deletionTimestamp: new Date() } });
    w.controller.start();
    await w.controller.idle();
    assert.deepEqual(w.provider.deletions, []);
    assert.deepEqual(w.volume(pv.metadata!.name)!.metadata!.finalizers, ['clusterlet.io/member-claim']);
  });

  it('a member claim that cannot be deleted: VolumeFailedDelete on the volume, tried again', async () => {
    const w = world();
    const { pv } = provisioned(w);
    let fail = true;
    const deleteVolume = w.provider.deleteVolume.bind(w.provider);
    w.provider.deleteVolume = async (ns, name, uid) => {
      if (fail) { fail = false; throw new Error('member unreachable'); }
      return deleteVolume(ns, name, uid);
    };
    w.controller.start();
    w.host.objects.drop('PersistentVolumeClaim', 'shop', 'data-0');
    w.host.objects.put('PersistentVolume', { ...w.volume(pv.metadata!.name)!, status: { phase: 'Released' } });
    await eventually('VolumeFailedDelete', () => w.host.reasons('Warning').includes('VolumeFailedDelete'));
    assert.equal(w.host.events.find((e) => e.reason === 'VolumeFailedDelete')!.about.kind, 'PersistentVolume');
    await eventually('deleted on the retry', () => w.volume(pv.metadata!.name) === undefined, 5000);
  });
});
