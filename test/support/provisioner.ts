// A small storage back end for the harness's member, standing in for a CSI driver's external-provisioner and
// external-resizer (no node of the harness mounts anything): its StorageClass `harness-local` (Immediate binding,
// expandable) gets, for each claim, a volume of the claim's size pre-bound to it, which the member's own PV
// controller binds; a bound claim asking for more gets it (the volume's capacity, then the claim's status, as a
// resizer of a driver without node expansion writes them); a Released volume is deleted.
import type { Subscription } from 'rxjs';
import type { V1PersistentVolume, V1PersistentVolumeClaim, V1StorageClass } from '@kubernetes/client-node';
import { PATCH, queryOf, type ClusterClient } from '../../src/kube/client.ts';
import { Informer } from '../../src/kube/informer.ts';
import { listWatch, type ListPage, type ListWatchSpec } from '../../src/kube/listwatch.ts';
import { toKubeError } from '../../src/kube/errors.ts';
import { compare, parseQuantity } from '../../src/forge/quantity.ts';

export const MEMBER_CLASS = 'harness-local';
const PROVISIONER = 'harness.clusterlet.io/local';

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

/** Creates the member's StorageClass (once per run) and runs its provisioner until stopped. */
export async function startMemberProvisioner(member: ClusterClient): Promise<{ stop(): void }> {
  const cls: V1StorageClass = {
    apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: MEMBER_CLASS }, provisioner: PROVISIONER,
    reclaimPolicy: 'Delete', volumeBindingMode: 'Immediate', allowVolumeExpansion: true,
  };
  await member.request('POST', '/apis/storage.k8s.io/v1/storageclasses', { body: cls }).catch((err: unknown) => {
    if (toKubeError(err).kind !== 'AlreadyExists') throw err;
  });
  const claims = new Informer('harness-claims', listWatch<V1PersistentVolumeClaim>(member, {
    path: '/api/v1/persistentvolumeclaims', model: 'V1PersistentVolumeClaim', resource: 'persistentvolumeclaims',
    list: (p) => member.core.listPersistentVolumeClaimForAllNamespaces(p),
  }));
  const volumes = new Informer('harness-volumes', listWatch<V1PersistentVolume>(member, volumeSpec(member)));
  const ignore = (kind: string) => (err: unknown): void => {
    const k = toKubeError(err);
    if (k.kind !== kind && k.kind !== 'NotFound' && k.kind !== 'Conflict') process.stderr.write(`[provisioner] ${k.message}\n`);
  };
  const onClaim = (c: V1PersistentVolumeClaim): void => {
    if (c.spec?.storageClassName !== MEMBER_CLASS || c.metadata?.deletionTimestamp) return;
    const name = `harness-${c.metadata!.uid}`;
    if (!c.spec.volumeName) {
      if (volumes.get(name)) return;
      const pv: V1PersistentVolume = {
        metadata: { name, annotations: { 'pv.kubernetes.io/provisioned-by': PROVISIONER } },
        spec: {
          capacity: { storage: storage(c)! }, accessModes: c.spec.accessModes, volumeMode: c.spec.volumeMode,
          storageClassName: MEMBER_CLASS, persistentVolumeReclaimPolicy: 'Delete', hostPath: { path: `/tmp/${name}` },
          claimRef: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: c.metadata!.namespace, name: c.metadata!.name, uid: c.metadata!.uid },
        },
      };
      void member.request('POST', '/api/v1/persistentvolumes', { body: pv }).catch(ignore('AlreadyExists'));
      return;
    }
    const want = storage(c);
    if (!less(c.status?.capacity?.storage, want)) return;
    // As an external resizer: the volume first, then the claim's status (no node expansion to wait for).
    void member.request('PATCH', `/api/v1/persistentvolumes/${c.spec.volumeName}`,
      { body: { spec: { capacity: { storage: want } } }, contentType: PATCH.merge })
      .then(() => member.core.patchNamespacedPersistentVolumeClaimStatus({ namespace: c.metadata!.namespace!, name: c.metadata!.name!,
        body: { status: { capacity: { storage: want }, conditions: null, allocatedResources: { storage: want } } } }, { contentType: PATCH.merge }))
      .catch(ignore('Invalid'));
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
