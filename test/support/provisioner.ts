// A small storage back end for the harness's member, standing in for a CSI driver's external-provisioner and
// external-resizer (no node of the harness mounts anything). Its StorageClasses: `harness-local` (Immediate binding,
// expandable) and `harness-late` (WaitForFirstConsumer, not expandable: the member's API server refuses to expand its
// claims). Each claim up to POOL_LIMIT gets a volume of its size pre-bound to it, which the member's own PV
// controller binds (a larger one stays Pending); as the external-provisioner, a claim of a WaitForFirstConsumer class
// only once the member's scheduler chose a node for its first pod (the selected-node annotation), its volume pinned
// to that node. A bound claim asking for more gets it (the volume's capacity, then the claim's status, as a resizer
// of a driver without node expansion writes them), up to POOL_LIMIT: beyond, the resize fails as the
// external-resizer's does (a ControllerResizeError condition, ControllerResizeInfeasible). A Released volume is deleted.
import type { Subscription } from 'rxjs';
import type { V1PersistentVolume, V1PersistentVolumeClaim, V1StorageClass } from '@kubernetes/client-node';
import { PATCH, queryOf, type ClusterClient } from '../../src/kube/client.ts';
import { Informer } from '../../src/kube/informer.ts';
import { listWatch, type ListPage, type ListWatchSpec } from '../../src/kube/listwatch.ts';
import { toKubeError } from '../../src/kube/errors.ts';
import { compare, parseQuantity } from '../../src/forge/quantity.ts';

export const MEMBER_CLASS = 'harness-local';
/** Binds on first consumer; not expandable. */
export const LATE_CLASS = 'harness-late';
/** The most one volume can hold: a larger expansion fails in the resizer. */
export const POOL_LIMIT = '64Gi';
const PROVISIONER = 'harness.clusterlet.io/local';
const SELECTED_NODE = 'volume.kubernetes.io/selected-node';
const RESIZE_ERROR = 'ControllerResizeError';

const storageClass = (name: string, volumeBindingMode: string, allowVolumeExpansion: boolean): V1StorageClass => ({
  apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name }, provisioner: PROVISIONER,
  reclaimPolicy: 'Delete', volumeBindingMode, allowVolumeExpansion,
});
const CLASSES = new Map([
  [MEMBER_CLASS, storageClass(MEMBER_CLASS, 'Immediate', true)],
  [LATE_CLASS, storageClass(LATE_CLASS, 'WaitForFirstConsumer', false)],
]);

/** Every PersistentVolume of a cluster (those labelled `labelSelector`), for waits. */
export function volumeSpec(c: ClusterClient, labelSelector?: string): ListWatchSpec<V1PersistentVolume> {
  return { path: '/api/v1/persistentvolumes', model: 'V1PersistentVolume', resource: 'persistentvolumes', labelSelector,
    list: (p) => c.request<ListPage<V1PersistentVolume>>('GET', `/api/v1/persistentvolumes${queryOf({ ...p })}`) };
}

/** The claims of a namespace, for waits. */
export function claimSpec(c: ClusterClient, namespace: string): ListWatchSpec<V1PersistentVolumeClaim> {
  return { path: `/api/v1/namespaces/${namespace}/persistentvolumeclaims`, model: 'V1PersistentVolumeClaim',
    resource: 'persistentvolumeclaims', list: (p) => c.core.listNamespacedPersistentVolumeClaim({ namespace, ...p }) };
}

const storage = (o: { spec?: { resources?: { requests?: Record<string, string> }; capacity?: Record<string, string> } }): string | undefined =>
  o.spec?.resources?.requests?.storage ?? o.spec?.capacity?.storage;
const less = (a: string | undefined, b: string | undefined): boolean =>
  a !== undefined && b !== undefined && compare(parseQuantity(a), parseQuantity(b)) < 0;

/** Creates the member's StorageClasses (once per run) and runs their provisioner and resizer until stopped. */
export async function startMemberProvisioner(member: ClusterClient): Promise<{ stop(): void }> {
  for (const cls of CLASSES.values()) {
    await member.request('POST', '/apis/storage.k8s.io/v1/storageclasses', { body: cls }).catch((err: unknown) => {
      if (toKubeError(err).kind !== 'AlreadyExists') throw err;
    });
  }
  const claims = new Informer('harness-claims', listWatch<V1PersistentVolumeClaim>(member, {
    path: '/api/v1/persistentvolumeclaims', model: 'V1PersistentVolumeClaim', resource: 'persistentvolumeclaims',
    list: (p) => member.core.listPersistentVolumeClaimForAllNamespaces(p),
  }));
  const volumes = new Informer('harness-volumes', listWatch<V1PersistentVolume>(member, volumeSpec(member)));
  const ignore = (kind: string) => (err: unknown): void => {
    const k = toKubeError(err);
    if (k.kind !== kind && k.kind !== 'NotFound' && k.kind !== 'Conflict') process.stderr.write(`[provisioner] ${k.message}\n`);
  };
  const patchStatus = (c: V1PersistentVolumeClaim, status: object): Promise<unknown> => member.core.patchNamespacedPersistentVolumeClaimStatus(
    { namespace: c.metadata!.namespace!, name: c.metadata!.name!, body: { status } }, { contentType: PATCH.merge });
  const provision = (c: V1PersistentVolumeClaim, cls: V1StorageClass): void => {
    const name = `harness-${c.metadata!.uid}`;
    const node = c.metadata?.annotations?.[SELECTED_NODE];
    // More than the pool holds: never provisioned (the claim stays Pending, as with a driver out of room).
    if (volumes.get(name) || (cls.volumeBindingMode === 'WaitForFirstConsumer' && !node) || less(POOL_LIMIT, storage(c))) return;
    const pv: V1PersistentVolume = {
      metadata: { name, annotations: { 'pv.kubernetes.io/provisioned-by': PROVISIONER } },
      spec: {
        capacity: { storage: storage(c)! }, accessModes: c.spec!.accessModes, volumeMode: c.spec!.volumeMode,
        storageClassName: cls.metadata!.name, persistentVolumeReclaimPolicy: 'Delete', hostPath: { path: `/tmp/${name}` },
        claimRef: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: c.metadata!.namespace, name: c.metadata!.name, uid: c.metadata!.uid },
        ...(node ? { nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [
          { key: 'kubernetes.io/hostname', operator: 'In', values: [node] }] }] } } } : {}),
      },
    };
    void member.request('POST', '/api/v1/persistentvolumes', { body: pv }).catch(ignore('AlreadyExists'));
  };
  const resize = (c: V1PersistentVolumeClaim): void => {
    const want = storage(c);
    if (!less(c.status?.capacity?.storage, want)) return;
    if (less(POOL_LIMIT, want)) {
      const message = `resize volume "${c.spec!.volumeName}" failed: ${want} is more than the ${POOL_LIMIT} the harness pool holds`;
      if (c.status?.conditions?.some((x) => x.type === RESIZE_ERROR && x.message === message)) return;
      void patchStatus(c, { conditions: [{ type: RESIZE_ERROR, status: 'True', message, lastTransitionTime: new Date().toISOString() }],
        allocatedResourceStatuses: { storage: 'ControllerResizeInfeasible' } }).catch(ignore('Invalid'));
      return;
    }
    // As an external resizer: the volume first, then the claim's status (no node expansion to wait for).
    void member.request('PATCH', `/api/v1/persistentvolumes/${c.spec!.volumeName}`,
      { body: { spec: { capacity: { storage: want } } }, contentType: PATCH.merge })
      .then(() => patchStatus(c, { capacity: { storage: want }, conditions: null, allocatedResources: { storage: want },
        allocatedResourceStatuses: null }))
      .catch(ignore('Invalid'));
  };
  const onClaim = (c: V1PersistentVolumeClaim): void => {
    const cls = CLASSES.get(c.spec?.storageClassName ?? '');
    if (!cls || c.metadata?.deletionTimestamp) return;
    if (!c.spec!.volumeName) provision(c, cls);
    else resize(c);
  };
  const onVolume = (pv: V1PersistentVolume): void => {
    if (pv.metadata?.annotations?.['pv.kubernetes.io/provisioned-by'] !== PROVISIONER || pv.status?.phase !== 'Released') return;
    void member.request('DELETE', `/api/v1/persistentvolumes/${pv.metadata.name}`).catch(ignore('NotFound'));
  };
  const subs: Subscription[] = [
    claims.events$.subscribe((ev) => { if (ev.type !== 'DELETED') onClaim(ev.object); }),
    volumes.events$.subscribe((ev) => { if (ev.type !== 'DELETED') onVolume(ev.object); }),
  ];
  volumes.start();
  await volumes.waitSynced();
  claims.start();
  await claims.waitSynced();
  return {
    stop() {
      for (const s of subs) s.unsubscribe();
      claims.stop();
      volumes.stop();
    },
  };
}
