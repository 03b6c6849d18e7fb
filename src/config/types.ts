// What clusterlet's configuration is, once parsed and checked (config.ts parses the flags, config/file.ts the
// provider config file).
import type { V1Taint } from '@kubernetes/client-node';
import type { NamespaceMapping } from '../forge/namespace.ts';
import type { ApiAccessMode } from '../forge/apiaccess.ts';
import type { NodeGranularity } from '../forge/groups.ts';
import type { FitMode } from '../forge/fit.ts';

export type { FitMode, NamespaceMapping, NodeGranularity };

export interface SecretRef { namespace: string; name: string; key: string }

export interface MemberConfig {
  name: string;
  kubeconfig?: string;
  kubeconfigSecret?: SecretRef;
  nodeName: string;
  namespaceMapping: NamespaceMapping;
  labels: Record<string, string>;
  taints: V1Taint[];
  qps: number;
  burst: number;
  /** This node's kubelet API port, when not --kubelet-port (lets direct scrapers tell the nodes apart). */
  kubeletPort?: number;
  /** The host ClusterProfile this member comes from (its credentials come through the profile's access providers). */
  clusterProfile?: { namespace: string; name: string };
  /** The member's volumes: its host StorageClass and what its claims become in the member. */
  storage: StorageConfig;
  /** Which API server its delegates' tokens are for (docs/api-access.md); undefined: host mode, endpoint by default. */
  apiAccess?: ApiAccessConfig;
  /** One virtual node for the member, one per member node pool, or one per member node (forge/groups.ts); undefined: cluster. */
  nodes?: NodeGranularity;
  /**
   * What becomes of a delegate that fits none of the member's nodes now (forge/fit.ts FitMode); undefined: auto
   * (it waits in the member where the member shows it adds nodes, else it is not created).
   */
  fit?: FitMode;
}

/** Offloaded pods' API access on a member (forge/apiaccess.ts). */
export interface ApiAccessConfig {
  /** The mode of pods without a clusterlet.io/api-access annotation. */
  mode: ApiAccessMode;
  /**
   * The host API server as the member's pods reach it (https://host:port); undefined: the host kubeconfig's server
   * (none when clusterlet runs in the host cluster).
   */
  hostServer?: string;
}

/** Persistent volumes in a member, provisioned through a host StorageClass of its own (src/host/storage/). */
export interface StorageConfig {
  /** The host StorageClass whose claims get their volume in the member (default clusterlet-<member>). */
  className: string;
  /** The member's StorageClass of the claims made there; undefined: the member's default class. */
  memberClassName?: string;
  /** What a deleted host claim does to its member claim: deleted with it, or kept. */
  reclaimPolicy: 'Delete' | 'Retain';
}

export interface Config {
  /** Undefined: in-cluster configuration. */
  hostKubeconfig?: string;
  /**
   * Value of clusterlet.io/origin on everything created in members. Undefined: the host's cluster ID (the UID of its
   * kube-system namespace), resolved at start.
   */
  hostName?: string;
  members: MemberConfig[];
  podSyncWorkers: number;
  logLevel: string;
  /** InternalIP of the virtual nodes (flag, else POD_IP, else 127.0.0.1). */
  nodeIP: string;
  kubeletPort: number;
  /** Where the kubelet API's serving certificate comes from (see ServingCertMode). */
  servingCert: 'file' | 'csr' | 'self-signed';
  tlsCertFile?: string;
  tlsKeyFile?: string;
  /** CA bundle for client certificates; undefined: the host's extension-apiserver-authentication ConfigMap. */
  clientCAFile?: string;
  /** webhook: client certificates or TokenReview, then SubjectAccessReview; none: no checks at all. */
  authenticationMode: 'webhook' | 'none';
  healthPort: number;
  hostQPS: number;
  hostBurst: number;
  /** How clusterlet talks to the API servers, host's and members': HTTPS/1.1 (default) or HTTP/2 (--api-protocol). */
  apiProtocol: ApiProtocol;
  /** How long a watch may stay silent before it is restarted. */
  watchSilenceSeconds: number;
  /** How often each member's API server is probed (/readyz). */
  probePeriodSeconds: number;
  /** Consecutive failed probes before a member's node turns NotReady and its lease stops. */
  probeFailureThreshold: number;
  /**
   * Host namespaces that accept member exports without their clusterlet.io/accept-exports annotation
   * (--export-namespaces, else the file's exportNamespaces). Empty: only annotated namespaces.
   */
  exportNamespaces: string[];
  /** Copy the host's EndpointSlices of reflected Services into the member (--reflect-host-endpoints, else the file's). */
  reflectHostEndpoints: boolean;
  /** Which replica leads each member (src/host/ha/); undefined with --leader-elect=false: this one leads every member. */
  leaderElection?: LeaderElectionConfig;
  /** Members discovered from ClusterProfiles on the host (--member-source=clusterprofile), besides `members`. */
  clusterProfiles?: ClusterProfileSource;
  /** Delegates' host tokens are refreshed at 80 % of their lifetime, or after this long at the latest (--host-token-max-age). */
  hostTokenMaxAgeMs: number;
}

/** Where ClusterProfile members come from and how their credentials are obtained (see docs/configuration.md, "ClusterProfile members"). */
export interface ClusterProfileSource {
  /** The host namespace watched for ClusterProfiles. */
  namespace: string;
  /** Label selector of the ClusterProfiles to offload to ('' = all in the namespace). */
  selector: string;
  /**
   * The consumer's access providers, in preference order (the cluster-inventory-api's provider file,
   * --clusterprofile-provider-file): a profile's first access provider named here is used.
   */
  providers: AccessProviderConfig[];
  /** qps and burst of each profile member's client (--member-qps, --member-burst). */
  qps: number;
  burst: number;
  /** Each profile member's storage but its class (clusterlet-<name>): --member-storage-class, --storage-reclaim-policy. */
  storage: Omit<StorageConfig, 'className'>;
  /** Each profile member's API access: --api-access, --host-api-server. */
  apiAccess: ApiAccessConfig;
  /** Each profile member's virtual nodes: --nodes; undefined: cluster. */
  nodes?: NodeGranularity;
  /** Each profile member's fit: --fit; undefined: auto. */
  fit?: FitMode;
}

/**
 * One entry of the provider file. With `execConfig`, the credentials come from that exec plugin (client-go's
 * ExecConfig, as the cluster-inventory-api's pkg/access runs it); without, clusterlet reads them itself: only the
 * built-in `kubeconfig-secretreader` (a kubeconfig Secret named in the profile), which is also the default.
 */
export interface AccessProviderConfig {
  name: string;
  execConfig?: Record<string, unknown>;
  /** Whether the profile's exec/additional-args extension is appended to args (KEP-5339): Append | Ignore. */
  profileSourcedCLIArgsPolicy: 'Append' | 'Ignore';
  /** How the profile's exec/additional-envs extension joins env: AppendIfNotExists | Replace | Ignore. */
  profileSourcedEnvVarsPolicy: 'AppendIfNotExists' | 'Replace' | 'Ignore';
}

/** The access provider clusterlet serves itself: the cluster-inventory-api's kubeconfig Secret reader convention. */
export const KUBECONFIG_SECRET_PROVIDER = 'kubeconfig-secretreader';

/** Leader election per member on host Leases, timed as kube-controller-manager's (--leader-elect-*). */
export interface LeaderElectionConfig {
  /** Where the Leases live: --leader-elect-namespace, else $POD_NAMESPACE, else clusterlet. */
  namespace: string;
  /** This replica's holder identity: --leader-elect-identity, else $POD_NAME, else the hostname. */
  identity: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  /** This replica's Pod ($POD_NAME, $POD_UID), owner of its presence Lease so that it goes with the Pod. */
  pod?: { name: string; uid: string };
}


export type ParseResult = { kind: 'help' } | { kind: 'version' } | { kind: 'run'; config: Config };

export const API_PROTOCOLS = ['http1.1', 'http2'] as const;
export type ApiProtocol = typeof API_PROTOCOLS[number];

