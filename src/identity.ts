// Who this host is, as member objects record it (clusterlet.io/origin): the configured --host-name, or else the
// host's cluster ID — the UID of its kube-system namespace, as SIG-Multicluster's ClusterProperty `cluster.clusterset.k8s.io`
// proposes — so that two hosts sharing a member never take each other's objects for their own.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { ClusterClient } from './kube/client.ts';
import { toKubeError } from './kube/errors.ts';
import { backoffDelay } from './util/backoff.ts';
import { NODE_LABEL, ORIGIN_LABEL } from './forge/labels.ts';
import { LEGACY_DEFAULT_HOST, type Owner } from './forge/owner.ts';
import type { Logger } from './log.ts';

/** The host's cluster ID: the UID of its kube-system namespace. Retried (with backoff) until the host answers. */
export async function hostClusterID(host: ClusterClient, log: Logger, stopped: () => boolean = () => false): Promise<string> {
  for (let attempt = 0; ; attempt++) {
    try {
      const ns = await host.core.readNamespace({ name: 'kube-system' });
      const uid = ns.metadata?.uid;
      if (!uid) throw new Error('the kube-system namespace has no UID');
      return uid;
    } catch (err) {
      if (stopped()) throw err;
      const delay = backoffDelay(attempt, 1000, 30_000);
      log.warn({ err: toKubeError(err).message, retryInMs: delay }, 'cannot read the host cluster ID (kube-system namespace UID); retrying');
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}

type Kind = 'Pod' | 'ConfigMap' | 'Secret' | 'ServiceAccount' | 'Namespace';
const KINDS: Kind[] = ['Pod', 'ConfigMap', 'Secret', 'ServiceAccount', 'Namespace'];

/**
 * Objects labelled with the old default origin (`host`, from before hosts had an identity) are relabelled for
 * `owner`, once, so an upgrade keeps its delegates and copies: delegates of `owner.node`, and the copies and
 * namespaces no node owns yet. Each object is replaced at the version read, so of two nodes adopting at once one
 * wins and the other leaves it. Returns how many objects were adopted.
 */
export async function adoptLegacyObjects(member: ClusterClient, owner: Owner, log: Logger): Promise<number> {
  const c = member.core;
  const selector = { labelSelector: `${ORIGIN_LABEL}=${LEGACY_DEFAULT_HOST}`, limit: 500 };
  let adopted = 0;
  for (const kind of KINDS) {
    const items: KubernetesObject[] = kind === 'Pod' ? (await c.listPodForAllNamespaces(selector)).items
      : kind === 'ConfigMap' ? (await c.listConfigMapForAllNamespaces(selector)).items
        : kind === 'Secret' ? (await c.listSecretForAllNamespaces(selector)).items
          : kind === 'ServiceAccount' ? (await c.listServiceAccountForAllNamespaces(selector)).items
            : (await c.listNamespace(selector)).items;
    for (const o of items) {
      const node = o.metadata?.labels?.[NODE_LABEL];
      // Another node's delegate (or copy) stays that node's to adopt.
      if (node !== undefined && node !== owner.node) continue;
      const body = { ...o, apiVersion: 'v1', kind, metadata: { ...o.metadata, labels: { ...o.metadata?.labels, [ORIGIN_LABEL]: owner.host, [NODE_LABEL]: owner.node } } };
      const name = o.metadata!.name!;
      const namespace = o.metadata!.namespace!;
      try {
        if (kind === 'Pod') await c.replaceNamespacedPod({ namespace, name, body: body as never });
        else if (kind === 'ConfigMap') await c.replaceNamespacedConfigMap({ namespace, name, body: body as never });
        else if (kind === 'Secret') await c.replaceNamespacedSecret({ namespace, name, body: body as never });
        else if (kind === 'ServiceAccount') await c.replaceNamespacedServiceAccount({ namespace, name, body: body as never });
        else await c.replaceNamespace({ name, body: body as never });
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
