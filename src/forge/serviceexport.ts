// Member Service copy → its ServiceExport (Multi-Cluster Services API, KEP-1645): a host Service annotated
// clusterlet.io/service-export=true is exported in the member, so a mesh that implements MCS there carries it
// further. The annotation reaches the copy with the user's other annotations, so the copy alone says what to do.
// Pure functions.
import type { KubernetesObject } from '@kubernetes/client-node';
import { PROXY_NAMESPACE_ANNOTATION, SERVICE_EXPORT_ANNOTATION } from './keys.ts';
import { ownerLabels, type Owner } from './owner.ts';

export const MCS_GROUP_VERSION = 'multicluster.x-k8s.io/v1alpha1';

/** A ServiceExport: its name and namespace are the Service's; the spec is empty. */
export interface ServiceExport extends KubernetesObject {
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
}

/** Whether a Service (the host's, or its copy) asks to be exported. */
export function wantsExport(svc: KubernetesObject): boolean {
  return svc.metadata?.annotations?.[SERVICE_EXPORT_ANNOTATION] === 'true';
}

/**
 * The ServiceExport of a member Service copy owned by `owner`, or undefined when the copy asks for none. Owned by
 * the copy (an ownerReference), so the member's garbage collector removes it with the copy.
 */
export function forgeServiceExport(copy: KubernetesObject, owner: Owner): ServiceExport | undefined {
  const meta = copy.metadata;
  if (!wantsExport(copy) || !meta?.name || !meta.namespace || !meta.uid) return undefined;
  return {
    apiVersion: MCS_GROUP_VERSION,
    kind: 'ServiceExport',
    metadata: {
      name: meta.name,
      namespace: meta.namespace,
      labels: ownerLabels(owner),
      annotations: { [PROXY_NAMESPACE_ANNOTATION]: meta.annotations?.[PROXY_NAMESPACE_ANNOTATION] ?? '' },
      ownerReferences: [{ apiVersion: 'v1', kind: 'Service', name: meta.name, uid: meta.uid }],
    },
    spec: {},
  };
}

/** Whether an existing ServiceExport already is `desired`: same owner labels, annotation and owning copy. */
export function serviceExportMatches(desired: ServiceExport, actual: ServiceExport): boolean {
  const d = desired.metadata, a = actual.metadata;
  const same = (x: Record<string, string> | undefined, y: Record<string, string> | undefined) =>
    Object.entries(x ?? {}).every(([k, v]) => y?.[k] === v);
  const owners = (m: typeof d) => JSON.stringify((m?.ownerReferences ?? []).map((o) => [o.kind, o.name, o.uid]));
  return same(d?.labels, a?.labels) && same(d?.annotations, a?.annotations) && owners(d) === owners(a);
}
