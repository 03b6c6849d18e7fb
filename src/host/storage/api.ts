// The host API calls of the volume controllers: the host's claims and clusterlet's volumes (one watch of each, shared
// by every member), and the writes one member's controller makes (its StorageClass, its volumes, its claims' status,
// events), through that member's fenced host client.
import type { V1PersistentVolume, V1PersistentVolumeClaim, V1StorageClass } from '@kubernetes/client-node';
import { PATCH, queryOf, type ClusterClient } from '../../kube/client.ts';
import { Informer, type Cache } from '../../kube/informer.ts';
import { listWatch, type ListPage } from '../../kube/listwatch.ts';
import { ignoreNotFound } from '../../kube/errors.ts';
import { writeOwnEvent, type EventSubject } from '../../kube/events.ts';
import { MEMBER_LABEL } from '../../forge/keys.ts';
import type { Logger } from '../../log.ts';

const VOLUMES = '/api/v1/persistentvolumes';
const CLASSES = '/apis/storage.k8s.io/v1/storageclasses';
const named = (collection: string, name: string): string => `${collection}/${encodeURIComponent(name)}`;

/** Every claim of the host: one watch shared by every member (the volume controllers, and the pod gate). */
export function hostClaims(host: ClusterClient, log: Logger): Informer<V1PersistentVolumeClaim> {
  return new Informer('host-claims', listWatch<V1PersistentVolumeClaim>(host, {
    path: '/api/v1/persistentvolumeclaims', model: 'V1PersistentVolumeClaim', resource: 'persistentvolumeclaims',
    list: (p) => host.core.listPersistentVolumeClaimForAllNamespaces(p),
  }, { log }));
}

/** The host volumes clusterlet provisioned (labelled with their member): one watch shared by every member. */
export function hostVolumes(host: ClusterClient, log: Logger): Informer<V1PersistentVolume> {
  return new Informer('host-volumes', listWatch<V1PersistentVolume>(host, {
    path: VOLUMES, model: 'V1PersistentVolume', resource: 'persistentvolumes', labelSelector: MEMBER_LABEL,
    list: (p) => host.request<ListPage<V1PersistentVolume>>('GET', `${VOLUMES}${queryOf({ ...p })}`),
  }, { log }));
}

/** What one member's volume controller reads and writes on the host. */
export interface HostStorageApi {
  claims: Cache<V1PersistentVolumeClaim>;
  volumes: Cache<V1PersistentVolume>;
  readClass(name: string): Promise<V1StorageClass | undefined>;
  createClass(body: V1StorageClass): Promise<unknown>;
  replaceClass(name: string, body: V1StorageClass): Promise<unknown>;
  deleteClass(name: string, uid: string): Promise<unknown>;
  createVolume(body: V1PersistentVolume): Promise<unknown>;
  /** A merge patch. */
  patchVolume(name: string, body: object): Promise<unknown>;
  /** A JSON patch (e.g. a finalizer removed after a test of its position). */
  jsonPatchVolume(name: string, ops: object[]): Promise<unknown>;
  /** Deletes the volume of that UID only. */
  deleteVolume(name: string, uid: string): Promise<unknown>;
  /** A merge patch of a claim (its annotations). */
  patchClaim(namespace: string, name: string, body: object): Promise<unknown>;
  /** A merge patch of a claim's status. */
  patchClaimStatus(namespace: string, name: string, body: object): Promise<unknown>;
  /** clusterlet's own event about a claim or volume (repeats bump one object). */
  event(about: EventSubject, ev: { type: 'Normal' | 'Warning'; reason: string; message: string }): Promise<void>;
}

/** The host storage API of one member: reads from the shared caches, writes through `writer`, events from `node`. */
export function hostStorageApi(writer: ClusterClient, caches: { claims: Cache<V1PersistentVolumeClaim>; volumes: Cache<V1PersistentVolume> },
  node: string): HostStorageApi {
  const c = writer.core;
  const precondition = (uid: string) => ({ body: { preconditions: { uid } } });
  return {
    ...caches,
    readClass: (name) => ignoreNotFound(() => writer.request<V1StorageClass>('GET', named(CLASSES, name))),
    createClass: (body) => writer.request('POST', CLASSES, { body }),
    replaceClass: (name, body) => writer.request('PUT', named(CLASSES, name), { body }),
    deleteClass: (name, uid) => writer.request('DELETE', named(CLASSES, name), precondition(uid)),
    createVolume: (body) => writer.request('POST', VOLUMES, { body }),
    patchVolume: (name, body) => writer.request('PATCH', named(VOLUMES, name), { body, contentType: PATCH.merge }),
    jsonPatchVolume: (name, ops) => writer.request('PATCH', named(VOLUMES, name), { body: ops, contentType: PATCH.json }),
    deleteVolume: (name, uid) => writer.request('DELETE', named(VOLUMES, name), precondition(uid)),
    patchClaim: (namespace, name, body) => c.patchNamespacedPersistentVolumeClaim({ namespace, name, body }, { contentType: PATCH.merge }),
    patchClaimStatus: (namespace, name, body) =>
      c.patchNamespacedPersistentVolumeClaimStatus({ namespace, name, body }, { contentType: PATCH.merge }),
    event: (about, ev) => writeOwnEvent(writer, about, node, ev),
  };
}
