// Who this host is, as member objects record it (clusterlet.io/origin): the configured --host-name, or else the
// host's cluster ID — the UID of its kube-system namespace, as SIG-Multicluster's ClusterProperty `cluster.clusterset.k8s.io`
// proposes — so that two hosts sharing a member never take each other's objects for their own.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { ClusterClient } from './kube/client.ts';
import { toKubeError } from './kube/errors.ts';
import { retryWithBackoff } from './util/backoff.ts';
import { NODE_LABEL, ORIGIN_LABEL } from './forge/labels.ts';
import { LEGACY_DEFAULT_HOST, type Owner } from './forge/owner.ts';
import type { Logger } from './log.ts';

/** The host's cluster ID: the UID of its kube-system namespace. Retried (with backoff) until the host answers. */
export function hostClusterID(host: ClusterClient, log: Logger, stopped: () => boolean = () => false): Promise<string> {
  return retryWithBackoff(async () => {
    const uid = (await host.core.readNamespace({ name: 'kube-system' })).metadata?.uid;
    if (!uid) throw new Error('the kube-system namespace has no UID');
    return uid;
  }, 'cannot read the host cluster ID (kube-system namespace UID)', log, stopped);
}

/** Per kind of object clusterlet creates in a member: list (cluster-wide) and replace. */
function kinds(c: ClusterClient['core']): { kind: string; list(p: { labelSelector: string }): Promise<{ items: KubernetesObject[] }>;
  replace(o: KubernetesObject): Promise<unknown> }[] {
  const at = (o: KubernetesObject) => ({ namespace: o.metadata!.namespace!, name: o.metadata!.name!, body: o as never });
  return [
    { kind: 'Pod', list: (p) => c.listPodForAllNamespaces(p), replace: (o) => c.replaceNamespacedPod(at(o)) },
    { kind: 'ConfigMap', list: (p) => c.listConfigMapForAllNamespaces(p), replace: (o) => c.replaceNamespacedConfigMap(at(o)) },
    { kind: 'Secret', list: (p) => c.listSecretForAllNamespaces(p), replace: (o) => c.replaceNamespacedSecret(at(o)) },
    { kind: 'ServiceAccount', list: (p) => c.listServiceAccountForAllNamespaces(p), replace: (o) => c.replaceNamespacedServiceAccount(at(o)) },
    { kind: 'Namespace', list: (p) => c.listNamespace(p), replace: (o) => c.replaceNamespace({ name: o.metadata!.name!, body: o as never }) },
  ];
}

/**
 * Objects labelled with the old default origin (`host`, from before hosts had an identity) are relabelled for
 * `owner`, once, so an upgrade keeps its delegates and copies: delegates of `owner.node`, and the copies and
 * namespaces no node owns yet. Each object is replaced at the version read, so of two nodes adopting at once one
 * wins and the other leaves it. Returns how many objects were adopted.
 */
export async function adoptLegacyObjects(member: ClusterClient, owner: Owner, log: Logger): Promise<number> {
  // No page limit: every such object is adopted in one pass.
  const selector = { labelSelector: `${ORIGIN_LABEL}=${LEGACY_DEFAULT_HOST}` };
  let adopted = 0;
  for (const { kind, list, replace } of kinds(member.core)) {
    for (const o of (await list(selector)).items) {
      const node = o.metadata?.labels?.[NODE_LABEL];
      // Another node's delegate (or copy) stays that node's to adopt.
      if (node !== undefined && node !== owner.node) continue;
      try {
        await replace({ ...o, apiVersion: 'v1', kind,
          metadata: { ...o.metadata, labels: { ...o.metadata?.labels, [ORIGIN_LABEL]: owner.host, [NODE_LABEL]: owner.node } } });
        adopted++;
      } catch (err) {
        const k = toKubeError(err);
        // Changed or gone meanwhile (another node adopted it first): leave it.
        if (k.kind !== 'Conflict' && k.kind !== 'NotFound') throw k;
      }
    }
  }
  if (adopted > 0) log.info({ adopted, host: owner.host }, `adopted member objects labelled with the old default origin "${LEGACY_DEFAULT_HOST}"`);
  return adopted;
}
