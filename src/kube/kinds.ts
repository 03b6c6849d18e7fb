// The kinds reflection reads and writes, one table entry each (how a kind is listed, watched, read and written),
// and what is built on it for either cluster: a kind's list-watch stream (`watchKind`), a reflector's target
// (`target`: its store of labelled objects and its writes), and a cluster's namespaces. Neither host nor member:
// the host's caches and the member's reflectors use the same calls.
// A new kind is one entry of KINDS (and its object type in KindObjects).
import type { Observable } from 'rxjs';
import type {
  KubernetesObject, V1ConfigMap, V1EndpointSlice, V1Namespace, V1Secret, V1Service, V1ServiceAccount,
} from '@kubernetes/client-node';
import { queryOf, type ClusterClient } from './client.ts';
import { Informer } from './informer.ts';
import { listWatch, type ListPage, type ListParams, type ListWatchEvent } from './listwatch.ts';
import { ignoreNotFound } from './errors.ts';
import type { ServiceExport } from '../forge/serviceexport.ts';
import type { Logger } from '../log.ts';

interface KindObjects {
  ConfigMap: V1ConfigMap; Secret: V1Secret; ServiceAccount: V1ServiceAccount; Service: V1Service; EndpointSlice: V1EndpointSlice;
  ServiceExport: ServiceExport;
}
export type Kind = keyof KindObjects;
export type ObjectOf<K extends Kind> = KindObjects[K];

/** How one kind is listed, watched, read and written. */
interface KindApi<T> {
  /** The collection across namespaces, for the watch. */
  path: string;
  model: string;
  /** For logs and metrics. */
  resource: string;
  list(c: ClusterClient, p: ListParams): Promise<ListPage<T>>;
  read(c: ClusterClient, namespace: string, name: string): Promise<T>;
  create(c: ClusterClient, namespace: string, body: T): Promise<unknown>;
  replace(c: ClusterClient, namespace: string, name: string, body: T): Promise<unknown>;
  /** Deletes the object of that UID only: a newer object of that name is not this one. */
  remove(c: ClusterClient, namespace: string, name: string, uid: string): Promise<unknown>;
}

const precondition = (uid: string) => ({ preconditions: { uid } });

/**
 * A namespaced kind's calls, by path: `prefix` is its group version's (`/api/v1`, `/apis/discovery.k8s.io/v1`), so
 * one builder serves the core kinds and those the typed client has no group for (the typed methods send these
 * same requests).
 */
function byPath<T>(prefix: string, plural: string, model: string): KindApi<T> {
  const all = `${prefix}/${plural}`;
  const collection = (namespace: string) => `${prefix}/namespaces/${encodeURIComponent(namespace)}/${plural}`;
  const item = (namespace: string, name: string) => `${collection(namespace)}/${encodeURIComponent(name)}`;
  return {
    path: all, model, resource: plural,
    list: (c, p) => c.request('GET', `${all}${queryOf({ ...p })}`),
    read: (c, namespace, name) => c.request('GET', item(namespace, name)),
    create: (c, namespace, body) => c.request('POST', collection(namespace), { body }),
    replace: (c, namespace, name, body) => c.request('PUT', item(namespace, name), { body }),
    remove: (c, namespace, name, uid) => c.request('DELETE', item(namespace, name), { body: precondition(uid) }),
  };
}

export const KINDS: { [K in Kind]: KindApi<KindObjects[K]> } = {
  ConfigMap: byPath('/api/v1', 'configmaps', 'V1ConfigMap'),
  Secret: byPath('/api/v1', 'secrets', 'V1Secret'),
  ServiceAccount: byPath('/api/v1', 'serviceaccounts', 'V1ServiceAccount'),
  Service: byPath('/api/v1', 'services', 'V1Service'),
  EndpointSlice: byPath('/apis/discovery.k8s.io/v1', 'endpointslices', 'V1EndpointSlice'),
  // A CRD, where a member has the Multi-Cluster Services API.
  ServiceExport: byPath('/apis/multicluster.x-k8s.io/v1alpha1', 'serviceexports', 'ServiceExport'),
};

export interface Selectors { labelSelector?: string; fieldSelector?: string }

/** Every object of a kind in the cluster (matching the selectors), as a list-watch stream. */
export function watchKind<K extends Kind>(client: ClusterClient, kind: K, selectors: Selectors, log: Logger):
  Observable<ListWatchEvent<ObjectOf<K>>> {
  const api: KindApi<ObjectOf<K>> = KINDS[kind];
  return listWatch<ObjectOf<K>>(client, {
    path: api.path, model: api.model, resource: api.resource, ...selectors, list: (p) => api.list(client, p),
  }, { log });
}

/** One kind in one cluster, as a reflector writes it. */
export interface Target<T extends KubernetesObject> {
  /** The objects the reflector may have written (those carrying its label): what it reconciles against. */
  store: Informer<T>;
  /** The object of that name, whoever wrote it (the store does not see others'); undefined if there is none. */
  read(namespace: string, name: string): Promise<T | undefined>;
  create(namespace: string, body: T): Promise<unknown>;
  replace(namespace: string, name: string, body: T): Promise<unknown>;
  /** Deletes the object of that UID only. */
  remove(namespace: string, name: string, uid: string): Promise<unknown>;
}

/** A kind of `client`'s, the store holding the objects labelled `labelSelector`. */
export function target<K extends Kind>(client: ClusterClient, kind: K, labelSelector: string, log: Logger): Target<ObjectOf<K>> {
  const api: KindApi<ObjectOf<K>> = KINDS[kind];
  return {
    store: new Informer(`${client.name}-${api.resource}`, watchKind(client, kind, { labelSelector }, log)),
    read: (namespace, name) => ignoreNotFound(() => api.read(client, namespace, name)),
    create: (namespace, body) => api.create(client, namespace, body),
    replace: (namespace, name, body) => api.replace(client, namespace, name, body),
    remove: (namespace, name, uid) => api.remove(client, namespace, name, uid),
  };
}

/** A cluster's namespaces (those matching `labelSelector`). */
export function namespaceInformer(client: ClusterClient, name: string, labelSelector: string | undefined, log: Logger): Informer<V1Namespace> {
  return new Informer(name, listWatch<V1Namespace>(client, {
    path: '/api/v1/namespaces', model: 'V1Namespace', resource: 'namespaces', labelSelector, list: (p) => client.core.listNamespace(p),
  }, { log }));
}
