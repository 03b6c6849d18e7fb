// Adoption of member objects labelled by an earlier version with the old default origin (`host`), from before
// hosts had an identity (host/identity.ts).
import type { KubernetesObject } from '@kubernetes/client-node';
import type { ClusterClient } from '../kube/client.ts';
import { toKubeError } from '../kube/errors.ts';
import { NODE_LABEL, ORIGIN_LABEL } from '../forge/keys.ts';
import { LEGACY_DEFAULT_HOST, type Owner } from '../forge/owner.ts';
import { nameOf, namespacedName } from '../forge/meta.ts';
import type { Logger } from '../log.ts';

/** Per kind of object clusterlet creates in a member: list (cluster-wide) and replace. */
function kinds(c: ClusterClient['core']): { kind: string; list(p: { labelSelector: string }): Promise<{ items: KubernetesObject[] }>;
  replace(o: KubernetesObject): Promise<unknown> }[] {
  const at = (o: KubernetesObject) => ({ ...namespacedName(o), body: o as never });
  return [
    { kind: 'Pod', list: (p) => c.listPodForAllNamespaces(p), replace: (o) => c.replaceNamespacedPod(at(o)) },
    { kind: 'ConfigMap', list: (p) => c.listConfigMapForAllNamespaces(p), replace: (o) => c.replaceNamespacedConfigMap(at(o)) },
    { kind: 'Secret', list: (p) => c.listSecretForAllNamespaces(p), replace: (o) => c.replaceNamespacedSecret(at(o)) },
    { kind: 'ServiceAccount', list: (p) => c.listServiceAccountForAllNamespaces(p), replace: (o) => c.replaceNamespacedServiceAccount(at(o)) },
    { kind: 'Namespace', list: (p) => c.listNamespace(p), replace: (o) => c.replaceNamespace({ name: nameOf(o), body: o as never }) },
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
          metadata: { ...o.metadata, labels: { ...o.metadata?.labels, [ORIGIN_LABEL]: owner.hostName, [NODE_LABEL]: owner.node } } });
        adopted++;
      } catch (err) {
        const k = toKubeError(err);
        // Changed or gone meanwhile (another node adopted it first): leave it.
        if (k.kind !== 'Conflict' && k.kind !== 'NotFound') throw k;
      }
    }
  }
  if (adopted > 0) log.info({ adopted, host: owner.hostName }, `adopted member objects labelled with the old default origin "${LEGACY_DEFAULT_HOST}"`);
  return adopted;
}
