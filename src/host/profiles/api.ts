// The host's ClusterProfiles (multicluster.x-k8s.io/v1alpha1, SIG-Multicluster's cluster-inventory-api, KEP-4322)
// as clusterlet reads and writes them: the fields it uses, one watch of one namespace (a label selector), and the
// merge patch of status.conditions. The reconciler (reconciler.ts) takes the ProfileApi, so its tests feed it by hand.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { ClusterProfileSource } from '../../config.ts';
import { queryOf, type ClusterClient } from '../../kube/client.ts';
import { Informer } from '../../kube/informer.ts';
import { listWatch } from '../../kube/listwatch.ts';
import type { Logger } from '../../log.ts';
import type { SecretReader } from '../credentials.ts';

export const CLUSTER_PROFILE_API = '/apis/multicluster.x-k8s.io/v1alpha1';

/** metav1.Condition. */
export interface Condition {
  type: string; status: 'True' | 'False' | 'Unknown'; reason: string; message: string;
  lastTransitionTime: string; observedGeneration?: number;
}

/** One entry of status.accessProviders (or the deprecated status.credentialProviders). */
export interface ProfileAccessProvider { name: string; cluster?: Record<string, unknown> }

export interface ClusterProfile extends KubernetesObject {
  spec?: { displayName?: string; clusterManager?: { name: string } };
  status?: {
    conditions?: Condition[];
    accessProviders?: ProfileAccessProvider[];
    credentialProviders?: ProfileAccessProvider[];
  };
}

/** The host's ClusterProfiles, as the reconciler uses them. */
export interface ProfileApi {
  informer: Informer<ClusterProfile>;
  /**
   * Merge-patches the status.conditions of profile `name` (in the watched namespace), with `resourceVersion`, the
   * version they were judged on, as precondition (a conflict is retried on the next pass).
   */
  patchConditions(name: string, resourceVersion: string, conditions: Condition[]): Promise<void>;
  /** Host access for the built-in kubeconfig Secret reader. */
  host: SecretReader;
}

export function hostProfileApi(host: ClusterClient, source: ClusterProfileSource, log: Logger, silenceMs: number): ProfileApi {
  const path = `${CLUSTER_PROFILE_API}/namespaces/${source.namespace}/clusterprofiles`;
  const informer = new Informer<ClusterProfile>('clusterprofiles', listWatch<ClusterProfile>(host, {
    path, model: 'ClusterProfile', resource: 'clusterprofiles', labelSelector: source.selector || undefined,
    list: (p) => host.request('GET', `${path}${queryOf({ ...p })}`),
  }, { log, silenceMs }));
  return {
    informer, host,
    async patchConditions(name, resourceVersion, conditions) {
      await host.request('PATCH', `${path}/${name}/status`, {
        contentType: 'application/merge-patch+json',
        body: { metadata: { resourceVersion }, status: { conditions } },
      });
    },
  };
}
