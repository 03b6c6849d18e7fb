import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type {
  V1PersistentVolume, V1PersistentVolumeClaim, V1PersistentVolumeClaimCondition, V1Pod, V1StorageClass,
} from '@kubernetes/client-node';
import {
  claimExpansion, claimRejection, claimRequest, claimStatusUpdate, delegateVolumes, forgeHostStorageClass, forgeHostVolume,
  forgeMemberClaim, hostClaimKeyOf, isOwnVolume, memberVolumeState, newMemberResizeFailure, podClaims, resizeRefusedCondition,
  shouldProvision, storageClassMatches, storageClassRecreate, unprovisionable, volumeCapacityUpdate, volumeReady,
  type StorageContext, type VolumeState,
} from '../../../src/forge/volumes.ts';
import { forgeDelegatePod } from '../../../src/forge/pod.ts';

const ctx: StorageContext = { member: 'eu', nodeName: 'clusterlet-eu', className: 'clusterlet-eu', reclaimPolicy: 'Delete' };
const owner = { hostName: 'host-uid', node: 'clusterlet-eu' };

/** A host claim of the member's class, as the API returns it once the scheduler and the PV controller had their say. */
function claim(over: { annotations?: Record<string, string>; spec?: V1PersistentVolumeClaim['spec']; status?: V1PersistentVolumeClaim['status'];
  deleting?: boolean } = {}): V1PersistentVolumeClaim {
  return {
    metadata: { name: 'data-db-0', namespace: 'shop', uid: 'c-uid', annotations: {
      'volume.kubernetes.io/selected-node': 'clusterlet-eu', 'volume.kubernetes.io/storage-provisioner': 'clusterlet.io/eu',
      ...over.annotations }, ...(over.deleting ? { deletionTimestamp: new Date(0) } : {}) },
    spec: { storageClassName: 'clusterlet-eu', accessModes: ['ReadWriteOnce'], volumeMode: 'Filesystem',
      resources: { requests: { storage: '1Gi' } }, ...over.spec },
    status: over.status ?? { phase: 'Pending' },
  };
}

const state = (over: Partial<VolumeState> = {}): VolumeState => ({
  claimUID: 'c-uid', location: 'eu/h-shop/data-db-0', phase: 'Bound', waitsForConsumer: false, terminating: false,
  requested: '1Gi', capacity: '1Gi', ...over,
});

describe('forgeHostStorageClass', () => {
  it('WaitForFirstConsumer, the member\'s provisioner and reclaim policy, topology on the virtual node only, expandable, labelled', () => {
    assert.deepEqual(forgeHostStorageClass({ ...ctx, reclaimPolicy: 'Retain' }), {
      apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass',
      metadata: { name: 'clusterlet-eu', labels: { 'clusterlet.io/member': 'eu' } },
      provisioner: 'clusterlet.io/eu', reclaimPolicy: 'Retain', volumeBindingMode: 'WaitForFirstConsumer', allowVolumeExpansion: true,
      allowedTopologies: [{ matchLabelExpressions: [{ key: 'kubernetes.io/hostname', values: ['clusterlet-eu'] }] }],
    });
  });

  const desired = forgeHostStorageClass(ctx);
  const stored = (over: Partial<V1StorageClass>): V1StorageClass => ({ ...structuredClone(desired), metadata: { ...desired.metadata, uid: 'u' }, ...over });
  const cases: [string, Partial<V1StorageClass>, boolean, boolean][] = [
    ['as forged', {}, false, true],
    ['another reclaim policy: made again', { reclaimPolicy: 'Retain' }, true, false],
    ['another binding mode: made again', { volumeBindingMode: 'Immediate' }, true, false],
    ['another node in its topology: made again', { allowedTopologies: [{ matchLabelExpressions: [{ key: 'kubernetes.io/hostname', values: ['x'] }] }] }, true, false],
    ['parameters someone added: made again', { parameters: { a: 'b' } }, true, false],
    ['expansion turned off: updated', { allowVolumeExpansion: false }, false, false],
    ['the default reclaim policy left out is Delete', { reclaimPolicy: undefined }, false, true],
  ];
  for (const [name, over, recreate, matches] of cases) {
    it(`storageClassRecreate / storageClassMatches: ${name}`, () => {
      assert.equal(storageClassRecreate(desired, stored(over)), recreate);
      assert.equal(storageClassMatches(desired, stored(over)), matches);
    });
  }
});

describe('shouldProvision', () => {
  const cases: [string, V1PersistentVolumeClaim, boolean][] = [
    ['handed to the member\'s provisioner, selected on the virtual node', claim(), true],
    ['by the beta annotation', claim({ annotations: { 'volume.kubernetes.io/storage-provisioner': undefined as unknown as string,
      'volume.beta.kubernetes.io/storage-provisioner': 'clusterlet.io/eu' } }), true],
    ['not handed over yet by the PV controller', claim({ annotations: { 'volume.kubernetes.io/storage-provisioner': undefined as unknown as string } }), false],
    ['another member\'s provisioner', claim({ annotations: { 'volume.kubernetes.io/storage-provisioner': 'clusterlet.io/us' } }), false],
    ['another node selected', claim({ annotations: { 'volume.kubernetes.io/selected-node': 'host-1' } }), false],
    ['no node selected yet (or the scheduler is asked to choose again)', claim({ annotations: { 'volume.kubernetes.io/selected-node': undefined as unknown as string } }), false],
    ['another class', claim({ spec: { storageClassName: 'standard' } }), false],
    ['bound already', claim({ spec: { storageClassName: 'clusterlet-eu', volumeName: 'pvc-x', resources: { requests: { storage: '1Gi' } } } }), false],
    ['being deleted', claim({ deleting: true }), false],
    ['no storage requested', claim({ spec: { storageClassName: 'clusterlet-eu', resources: {} } }), false],
  ];
  for (const [name, c, want] of cases) {
    it(name, () => {
      for (const a of Object.keys(c.metadata!.annotations!)) if (c.metadata!.annotations![a] === undefined) delete c.metadata!.annotations![a];
      assert.equal(shouldProvision(c, ctx), want);
    });
  }
});

describe('unprovisionable', () => {
  it('a claim filled from a snapshot or another claim of the host: its member volume would start empty', () => {
    assert.equal(unprovisionable(claim(), 'eu'), undefined);
    const snap = claim({ spec: { ...claim().spec, dataSourceRef: { apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: 'nightly' } } });
    assert.equal(unprovisionable(snap, 'eu'), 'a claim with a data source (VolumeSnapshot "nightly") cannot get a volume in member eu: it would start empty');
    assert.match(unprovisionable(claim({ spec: { ...claim().spec, dataSource: { kind: 'PersistentVolumeClaim', name: 'db' } } }), 'eu')!,
      /PersistentVolumeClaim "db"/);
  });
});

describe('forgeMemberClaim', () => {
  it('same name, the mapped namespace, the member class, modes and size; owned, with the host namespace, claim UID and reclaim policy', () => {
    assert.deepEqual(forgeMemberClaim(claimRequest(claim(), 'Retain'), { owner, memberNamespace: 'h-shop', memberClassName: 'fast' }), {
      apiVersion: 'v1', kind: 'PersistentVolumeClaim',
      metadata: { name: 'data-db-0', namespace: 'h-shop', labels: { 'clusterlet.io/origin': 'host-uid', 'clusterlet.io/node': 'clusterlet-eu' },
        annotations: { 'clusterlet.io/proxy-namespace': 'shop', 'clusterlet.io/claim-uid': 'c-uid', 'clusterlet.io/reclaim-policy': 'Retain' } },
      spec: { accessModes: ['ReadWriteOnce'], volumeMode: 'Filesystem', storageClassName: 'fast', resources: { requests: { storage: '1Gi' } } },
    });
  });

  it('no member class configured: none named, so the member\'s default class applies; no volume mode: none', () => {
    const m = forgeMemberClaim(claimRequest(claim({ spec: { accessModes: ['ReadWriteOnce'], volumeMode: undefined,
      resources: { requests: { storage: '5Gi' } } } }), 'Delete'),
      { owner, memberNamespace: 'shop' });
    assert.equal('storageClassName' in m.spec!, false);
    assert.equal('volumeMode' in m.spec!, false);
    assert.equal(m.spec!.resources!.requests!.storage, '5Gi');
    assert.equal(hostClaimKeyOf(m), 'shop/data-db-0');
  });
});

describe('memberVolumeState and volumeReady', () => {
  const member = (status: V1PersistentVolumeClaim['status']): V1PersistentVolumeClaim => ({
    ...forgeMemberClaim(claimRequest(claim(), 'Delete'), { owner, memberNamespace: 'h-shop' }), status,
  });
  const cases: [string, V1PersistentVolumeClaim, boolean, Partial<VolumeState>, boolean][] = [
    ['bound: its capacity', member({ phase: 'Bound', capacity: { storage: '2Gi' }, accessModes: ['ReadWriteOnce'] }), false,
      { phase: 'Bound', capacity: '2Gi', accessModes: ['ReadWriteOnce'] }, true],
    ['pending', member({ phase: 'Pending' }), false, { phase: 'Pending' }, false],
    ['pending in a class that binds on first use: ready, or no pod could ever be placed', member({ phase: 'Pending' }), true,
      { phase: 'Pending', waitsForConsumer: true }, true],
    ['no status yet', member(undefined), false, { phase: 'Pending' }, false],
    ['lost', member({ phase: 'Lost' }), false, { phase: 'Lost' }, false],
  ];
  for (const [name, c, waits, want, ready] of cases) {
    it(name, () => {
      const s = memberVolumeState(c, { member: 'eu', waitsForConsumer: waits });
      assert.deepEqual(s, { claimUID: 'c-uid', location: 'eu/h-shop/data-db-0', waitsForConsumer: waits, reclaimPolicy: 'Delete', terminating: false,
        requested: '1Gi', ...want });
      assert.equal(volumeReady(s), ready);
    });
  }

  it('the reclaim policy a member claim was made under; none recorded (or not one of the two): undefined', () => {
    const c = member({ phase: 'Pending' });
    assert.equal(memberVolumeState(forgeMemberClaim(claimRequest(claim(), 'Retain'), { owner, memberNamespace: 'h-shop' }),
      { member: 'eu', waitsForConsumer: false }).reclaimPolicy, 'Retain');
    for (const policy of [undefined, 'Recycle']) {
      const { 'clusterlet.io/reclaim-policy': _, ...others } = c.metadata!.annotations!;
      const annotations = policy ? { ...others, 'clusterlet.io/reclaim-policy': policy } : others;
      assert.equal(memberVolumeState({ ...c, metadata: { ...c.metadata, annotations } }, { member: 'eu', waitsForConsumer: false }).reclaimPolicy,
        undefined);
    }
  });

  it('a terminating member claim is never ready', () => {
    const c = member({ phase: 'Bound', capacity: { storage: '1Gi' } });
    c.metadata!.deletionTimestamp = new Date(0);
    const s = memberVolumeState(c, { member: 'eu', waitsForConsumer: false });
    assert.equal(s.terminating, true);
    assert.equal(volumeReady(s), false);
  });
});

describe('storage of a member shown per pool or per node (isOwnNode)', () => {
  const own = new Set(['clusterlet-eu-gpu', 'clusterlet-eu-cpu']);
  const zones: Record<string, string> = { 'clusterlet-eu-gpu': 'eu-1a' };
  const grouped: StorageContext = { ...ctx, isOwnNode: (n) => own.has(n), zoneOf: (n) => zones[n] };
  const selected = (node: string) => claim({ annotations: { 'volume.kubernetes.io/selected-node': node } });

  it('the class allows every node of the member (its clusterlet.io/member label)', () => {
    assert.deepEqual(forgeHostStorageClass(grouped).allowedTopologies,
      [{ matchLabelExpressions: [{ key: 'clusterlet.io/member', values: ['eu'] }] }]);
  });

  it('provisions for a claim whichever of the member\'s nodes the scheduler selected, and no other node\'s', () => {
    for (const [node, want] of [['clusterlet-eu-gpu', true], ['clusterlet-eu-cpu', true], ['clusterlet-eu', true], ['another-node', false]] as const) {
      assert.equal(shouldProvision(selected(node), grouped), want, node);
    }
    assert.equal(shouldProvision(selected('clusterlet-eu-gpu'), ctx), false, 'one node per member: that node only');
  });

  it('pins the volume to the member\'s nodes, in the zone of the node selected when it has one, not to that node', () => {
    const terms = (node: string) => forgeHostVolume(selected(node), state({ capacity: '1Gi' }), grouped).spec?.nodeAffinity?.required?.nodeSelectorTerms;
    assert.deepEqual(terms('clusterlet-eu-gpu'), [{ matchExpressions: [
      { key: 'clusterlet.io/member', operator: 'In', values: ['eu'] }, { key: 'topology.kubernetes.io/zone', operator: 'In', values: ['eu-1a'] }] }]);
    assert.deepEqual(terms('clusterlet-eu-cpu'), [{ matchExpressions: [{ key: 'clusterlet.io/member', operator: 'In', values: ['eu'] }] }]);
  });
});

describe('forgeHostVolume', () => {
  it('named after the claim, pre-bound to it, the member\'s size, pinned to the virtual node, the member claim recorded, finalized', () => {
    assert.deepEqual(forgeHostVolume(claim(), state({ capacity: '2Gi' }), ctx), {
      apiVersion: 'v1', kind: 'PersistentVolume',
      metadata: {
        name: 'pvc-c-uid', labels: { 'clusterlet.io/member': 'eu' },
        annotations: { 'pv.kubernetes.io/provisioned-by': 'clusterlet.io/eu', 'clusterlet.io/member-claim': 'eu/h-shop/data-db-0' },
        finalizers: ['clusterlet.io/member-claim'],
      },
      spec: {
        capacity: { storage: '2Gi' }, accessModes: ['ReadWriteOnce'], volumeMode: 'Filesystem', storageClassName: 'clusterlet-eu',
        persistentVolumeReclaimPolicy: 'Delete',
        claimRef: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: 'shop', name: 'data-db-0', uid: 'c-uid' },
        nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['clusterlet-eu'] }] }] } },
        csi: { driver: 'clusterlet.io', volumeHandle: 'eu/h-shop/data-db-0', volumeAttributes: { member: 'eu' } },
      },
    });
  });

  it('Retain: no finalizer (nothing to delete); a member volume not bound yet: the size asked', () => {
    const pv = forgeHostVolume(claim(), state({ phase: 'Pending', waitsForConsumer: true, capacity: undefined, requested: '3Gi' }),
      { ...ctx, reclaimPolicy: 'Retain' });
    assert.equal(pv.metadata!.finalizers, undefined);
    assert.equal(pv.spec!.persistentVolumeReclaimPolicy, 'Retain');
    assert.equal(pv.spec!.capacity!.storage, '3Gi');
    assert.equal(isOwnVolume(pv, ctx), true);
    assert.equal(isOwnVolume(pv, { member: 'us' }), false);
    assert.equal(isOwnVolume({ metadata: { name: 'pvc-x' } }, ctx), false);
  });
});

describe('expansion and status back', () => {
  const pv = (storage: string): V1PersistentVolume => ({ metadata: { name: 'pvc-c-uid' }, spec: { capacity: { storage } } });
  const grown = claim({ spec: { storageClassName: 'clusterlet-eu', volumeName: 'pvc-c-uid', resources: { requests: { storage: '2Gi' } } },
    status: { phase: 'Bound', capacity: { storage: '1Gi' } } });

  const expansions: [string, V1PersistentVolumeClaim, VolumeState, string | undefined][] = [
    ['the host claim asks for more: the member is asked', grown, state(), '2Gi'],
    ['the member asked already', grown, state({ requested: '2Gi' }), undefined],
    ['the same size in other units: nothing', grown, state({ requested: '2048Mi' }), undefined],
    ['less than the member has: never shrunk', claim({ spec: { resources: { requests: { storage: '500Mi' } } } }), state(), undefined],
    ['the member claim not bound: it cannot be expanded yet', grown, state({ phase: 'Pending' }), undefined],
    ['the member claim going', grown, state({ terminating: true }), undefined],
    ['less than the member asks but more than it has: the user recovering from an expansion the member could not make', grown,
      state({ requested: '100Gi', capacity: '1Gi' }), '2Gi'],
    ['less than the member asks, no more than it has: nothing', grown, state({ requested: '100Gi', capacity: '2Gi' }), undefined],
  ];
  for (const [name, c, v, want] of expansions) it(`claimExpansion: ${name}`, () => assert.equal(claimExpansion(c, v), want));

  const capacities: [string, V1PersistentVolume, VolumeState, string | undefined][] = [
    ['the member volume grew: the host volume too', pv('1Gi'), state({ capacity: '2Gi' }), '2Gi'],
    ['the same', pv('1Gi'), state(), undefined],
    ['smaller in the member: never shrunk', pv('2Gi'), state(), undefined],
    ['not bound', pv('1Gi'), state({ phase: 'Lost', capacity: '2Gi' }), undefined],
  ];
  for (const [name, p, v, want] of capacities) it(`volumeCapacityUpdate: ${name}`, () => assert.equal(volumeCapacityUpdate(p, v), want));

  it('claimStatusUpdate: the member\'s capacity, resize conditions and allocation; nothing when they are the host claim\'s already', () => {
    const resizing = state({ conditions: [{ type: 'Resizing', status: 'True' }], allocatedResourceStatuses: { storage: 'ControllerResizeInProgress' } });
    assert.deepEqual(claimStatusUpdate(grown, resizing), {
      capacity: { storage: '1Gi' }, conditions: [{ type: 'Resizing', status: 'True' }], allocatedResources: null,
      allocatedResourceStatuses: { storage: 'ControllerResizeInProgress' },
    });
    const done = state({ capacity: '2Gi', allocatedResources: { storage: '2Gi' } });
    assert.deepEqual(claimStatusUpdate({ ...grown, status: { ...grown.status, conditions: [{ type: 'Resizing', status: 'True' }] } }, done), {
      capacity: { storage: '2Gi' }, conditions: null, allocatedResources: { storage: '2Gi' }, allocatedResourceStatuses: null,
    });
    const shown = { ...grown, status: { phase: 'Bound', capacity: { storage: '2048Mi' }, allocatedResources: { storage: '2Gi' } } };
    assert.equal(claimStatusUpdate(shown, done), undefined, 'the same capacity in other units');
    assert.equal(claimStatusUpdate(grown, state({ phase: 'Pending', capacity: undefined })), undefined, 'nothing to say before the member binds');
  });

  const failed = { type: 'ControllerResizeError', status: 'True', message: 'resize volume "v" failed: the pool holds 64Gi' };
  const showing = (conditions: V1PersistentVolumeClaimCondition[]): V1PersistentVolumeClaim => ({ ...grown, status: { ...grown.status, conditions } });

  it('claimStatusUpdate with a refusal: clusterlet\'s condition in place of the member\'s of its type; nothing once shown', () => {
    const now = new Date(1000);
    const refused = resizeRefusedCondition(grown, 'member eu refused to expand claim h-shop/data-db-0 to 2Gi: forbidden', now);
    assert.deepEqual(refused, { type: 'ControllerResizeError', status: 'True', reason: 'VolumeResizeFailed',
      message: 'member eu refused to expand claim h-shop/data-db-0 to 2Gi: forbidden', lastTransitionTime: now });
    const v = state({ conditions: [{ type: 'Resizing', status: 'True' }, failed] });
    assert.deepEqual(claimStatusUpdate(grown, v, refused)!.conditions, [{ type: 'Resizing', status: 'True' }, refused]);
    const shown = showing([{ type: 'Resizing', status: 'True' }, { ...refused, lastTransitionTime: new Date(0) }]);
    assert.equal(claimStatusUpdate(shown, v, refused), undefined);
    assert.deepEqual(resizeRefusedCondition(shown, refused.message!, now).lastTransitionTime, new Date(0), 'its time kept while it says the same');
    assert.deepEqual(resizeRefusedCondition(shown, 'another reason', now).lastTransitionTime, now);
    assert.deepEqual(claimStatusUpdate(shown, v)!.conditions, [{ type: 'Resizing', status: 'True' }, failed], 'no refusal: the member\'s again');
  });

  it('newMemberResizeFailure: the member resizer\'s failure condition, until the host claim shows it', () => {
    assert.deepEqual(newMemberResizeFailure(grown, state({ conditions: [failed] })), failed);
    const node = { type: 'NodeResizeError', status: 'True', message: 'no room' };
    assert.deepEqual(newMemberResizeFailure(grown, state({ conditions: [node] })), node);
    assert.equal(newMemberResizeFailure(showing([failed]), state({ conditions: [failed] })), undefined, 'shown already');
    assert.deepEqual(newMemberResizeFailure(showing([{ ...failed, message: 'older' }]), state({ conditions: [failed] })), failed, 'another reason');
    assert.equal(newMemberResizeFailure(grown, state({ conditions: [{ type: 'Resizing', status: 'True' }] })), undefined);
    assert.equal(newMemberResizeFailure(grown, state({ conditions: [{ ...failed, status: 'False' }] })), undefined);
  });
});

describe('pods and their claims', () => {
  const pod: V1Pod = {
    metadata: { name: 'db-0', namespace: 'shop', uid: 'p-uid' },
    spec: {
      containers: [{ name: 'main', image: 'db:1', volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
      volumes: [
        { name: 'data', persistentVolumeClaim: { claimName: 'data-db-0' } },
        { name: 'scratch', ephemeral: { volumeClaimTemplate: { spec: { storageClassName: 'clusterlet-eu', accessModes: ['ReadWriteOnce'],
          resources: { requests: { storage: '1Gi' } } } } } },
        { name: 'cfg', configMap: { name: 'cfg' } },
      ],
    },
  };

  it('podClaims: claims by name, and the `<pod>-<volume>` claim of a generic ephemeral volume', () => {
    assert.deepEqual(podClaims(pod), [{ volume: 'data', claimName: 'data-db-0' }, { volume: 'scratch', claimName: 'db-0-scratch' }]);
  });

  it('the delegate mounts the member claims of the same names, in its own namespace: an ephemeral volume mounts its claim', () => {
    const d = forgeDelegatePod(pod, { hostName: 'host-uid', nodeName: 'clusterlet-eu', memberNamespace: 'h-shop' });
    assert.equal(d.metadata!.namespace, 'h-shop');
    assert.deepEqual(d.spec!.volumes, [
      { name: 'data', persistentVolumeClaim: { claimName: 'data-db-0' } },
      { name: 'scratch', persistentVolumeClaim: { claimName: 'db-0-scratch' } },
      { name: 'cfg', configMap: { name: 'cfg' } },
    ]);
    assert.equal(delegateVolumes('x', undefined), undefined);
  });

  const hostClaim = (name: string, cls: string, uid = `${name}-uid`): V1PersistentVolumeClaim =>
    ({ metadata: { name, namespace: 'shop', uid }, spec: { storageClassName: cls } });
  const lookups = (claims: V1PersistentVolumeClaim[], volumes: Record<string, VolumeState>) => ({
    hostClaim: (n: string) => claims.find((c) => c.metadata!.name === n), memberVolume: (n: string) => volumes[n],
  });
  const ok = { 'data-db-0': state({ claimUID: 'data-db-0-uid' }), 'db-0-scratch': state({ claimUID: 'db-0-scratch-uid' }) };
  const both = [hostClaim('data-db-0', 'clusterlet-eu'), hostClaim('db-0-scratch', 'clusterlet-eu')];
  const cases: [string, ReturnType<typeof lookups>, string | undefined, boolean?][] = [
    ['every claim has its member claim: none', lookups(both, ok), undefined],
    ['a claim of another class: it can never be in the member', lookups([hostClaim('data-db-0', 'nfs'), both[1]], ok), 'VolumeNotInMember', false],
    ['a claim of no class', lookups([hostClaim('data-db-0', ''), both[1]], ok), 'VolumeNotInMember', false],
    ['a claim that does not exist', lookups([both[1]], ok), 'PersistentVolumeClaimNotFound', true],
    ['the member claim not made yet', lookups(both, { 'db-0-scratch': ok['db-0-scratch'] }), 'MemberVolumeNotReady', true],
    ['the member claim of an earlier claim of that name', lookups(both, { ...ok, 'data-db-0': state({ claimUID: 'old' }) }), 'MemberVolumeNotReady', true],
    ['the member claim going', lookups(both, { ...ok, 'data-db-0': state({ claimUID: 'data-db-0-uid', terminating: true }) }), 'MemberVolumeNotReady', true],
  ];
  for (const [name, l, reason, retry] of cases) {
    it(`claimRejection: ${name}`, () => {
      const r = claimRejection(pod, l, ctx);
      assert.equal(r?.reason, reason);
      if (reason) assert.equal(r!.retry, retry);
    });
  }

  it('claimRejection: the message names the claim, its class, the member and the class it holds', () => {
    const r = claimRejection(pod, lookups([hostClaim('data-db-0', 'nfs'), both[1]], ok), ctx)!;
    assert.equal(r.message, 'persistentvolumeclaim "data-db-0" is of storage class "nfs": member eu holds only claims of storage class '
      + '"clusterlet-eu", so the pod cannot run there: give it a claim of that class, or keep it off the virtual node');
  });
});
