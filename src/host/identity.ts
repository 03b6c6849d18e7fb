// Who this host is, as member objects record it (clusterlet.io/origin): the configured --host-name, or else the
// host's cluster ID — the UID of its kube-system namespace, as SIG-Multicluster's ClusterProperty `cluster.clusterset.k8s.io`
// proposes — so that two hosts sharing a member never take each other's objects for their own.
import type { ClusterClient } from '../kube/client.ts';
import { retryWithBackoff } from '../util/backoff.ts';
import type { Logger } from '../log.ts';

/** The host's cluster ID: the UID of its kube-system namespace. Retried (with backoff) until the host answers. */
export function hostClusterID(host: ClusterClient, log: Logger, stopped: () => boolean = () => false): Promise<string> {
  return retryWithBackoff(async () => {
    const uid = (await host.core.readNamespace({ name: 'kube-system' })).metadata?.uid;
    if (!uid) throw new Error('the kube-system namespace has no UID');
    return uid;
  }, 'cannot read the host cluster ID (kube-system namespace UID)', log, stopped);
}

