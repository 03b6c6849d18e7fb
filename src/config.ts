// Flags and the provider config file → a validated Config. Every error names the field (and the file):
// the CLI turns a ConfigError into exit code 2.
import { existsSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import type { V1Taint } from '@kubernetes/client-node';
import { load as loadYaml } from 'js-yaml';
import { PROFILE_NODE_NAME_ANNOTATION } from './forge/keys.ts';

export class ConfigError extends Error {
  readonly field: string;
  readonly file: string | undefined;
  constructor(field: string, message: string, file?: string) {
    super(`${file ? `${file}: ` : ''}${field}: ${message}`);
    this.name = 'ConfigError';
    this.field = field;
    this.file = file;
  }
}

export interface SecretRef { namespace: string; name: string; key: string }

import { DNS_LABEL, DNS_LABEL_RULE, NAME_MAX, type NamespaceMapping } from './forge/namespace.ts';
export type { NamespaceMapping };

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

export const HELP = `clusterlet — a virtual kubelet that makes each member cluster one node of the host cluster.

Usage:
  clusterlet --member-kubeconfig FILE [--member-name NAME] [--nodename NODE] [options]
  clusterlet --provider-config clusterlet.yaml [options]

Host cluster:
  --host-kubeconfig FILE     kubeconfig of the host cluster (alias --kubeconfig); in-cluster config when absent
  --host-name NAME           identity of the host cluster, stamped on member objects as clusterlet.io/origin
                             (default: the host's cluster ID, the UID of its kube-system namespace)
  --host-qps N, --host-burst N
                             client-side rate limit towards the host (default 200 / 400)
  --api-protocol P           http1.1 (default): HTTPS/1.1 to the host's and members' API servers, a keep-alive
                             connection per request under way (24 at most per pool) and one per watch. http2:
                             requests as streams over a few connections, watches on HTTPS/1.1 (less memory and
                             CPU, more latency under load: see docs/configuration.md); a server that refuses HTTP/2
                             gets HTTPS/1.1

One member (flags):
  --member-kubeconfig FILE   kubeconfig of the member cluster
  --member-name NAME         member name (default: member)
  --nodename NODE            virtual node name (default: clusterlet-<member-name>)
  --member-qps N, --member-burst N
                             client-side rate limit towards the member (default 200 / 400)

Several members:
  --provider-config FILE     YAML file listing members (see docs/configuration.md: name, kubeconfig or kubeconfigSecret,
                             nodeName, namespaceMapping, labels, taints, qps, burst, storage)

Storage (persistent volumes in the member, see docs/storage.md):
  --storage-class NAME       the host StorageClass whose claims get their volume in the member (one member by
                             flags; default clusterlet-<member-name>; in the config file: storage.storageClassName)
  --member-storage-class NAME
                             the member's StorageClass of those volumes (default: the member's default class)
  --storage-reclaim-policy P Delete (default): a deleted claim's member claim is deleted too; Retain: it is kept

Members from ClusterProfiles (multicluster.x-k8s.io/v1alpha1, SIG-Multicluster's cluster inventory;
see docs/configuration.md):
  --member-source SOURCE     config (default): the members above only; clusterprofile: also one member per
                             ClusterProfile on the host (the static members, if any, still run)
  --clusterprofile-namespace NS
                             host namespace of the ClusterProfiles (default: $POD_NAMESPACE, else clusterlet)
  --clusterprofile-selector SELECTOR
                             label selector of the ClusterProfiles to offload to (default: all in the namespace)
  --clusterprofile-provider-file FILE
                             the cluster-inventory-api's access provider file (JSON or YAML: providers, each a
                             name and an execConfig); default: the built-in kubeconfig-secretreader only

Export (member → host):
  --export-namespaces A,B    host namespaces that accept member objects labelled clusterlet.io/export=true,
                             besides those annotated clusterlet.io/accept-exports: "true" (default: none;
                             overrides the config file's exportNamespaces)

Services (host → member):
  --reflect-host-endpoints   also copy the host-side endpoints of reflected Services into the member, as
                             EndpointSlices managed by clusterlet (needs a pod network routable between the
                             clusters and the extra RBAC of manifests/*/rbac-host-endpoints.yaml; default off;
                             the config file's reflectHostEndpoints: true does the same)

High availability (several replicas; see docs/high-availability.md):
  --leader-elect[=BOOL]      elect one replica per member on a host Lease clusterlet-<member> (default true;
                             false: this process leads every member, as a single replica does)
  --leader-elect-lease-duration D, --leader-elect-renew-deadline D, --leader-elect-retry-period D
                             durations such as 15s, 500ms, 1m (default 15s / 10s / 2s, as kube-controller-manager)
  --leader-elect-namespace NS
                             namespace of the Leases (default: $POD_NAMESPACE, else clusterlet)
  --leader-elect-identity ID this replica's holder identity (default: $POD_NAME, else the hostname); a process
                             restarted with the same identity takes its Leases back at once

Node and process:
  --node-ip IP               InternalIP of the virtual node(s) (default: $POD_IP, else 127.0.0.1)
  --kubelet-port N           kubelet API port (HTTPS), published as the node's daemon endpoint (default 10250)
  --serving-cert MODE        kubelet API serving certificate: file (--tls-cert-file/--tls-key-file), csr (a
                             kubernetes.io/kubelet-serving CSR on the host, renewed before expiry; self-signed
                             until approved) or self-signed (default: file when the files are given, else csr)
  --tls-cert-file FILE, --tls-key-file FILE
                             serving certificate and key (PEM), reloaded when they change
  --client-ca-file FILE      CA bundle for client certificates (default: the host's client CA, from
                             kube-system/extension-apiserver-authentication)
  --authentication-mode MODE webhook (default): client certificates or TokenReview, then SubjectAccessReview on
                             nodes/proxy|log|stats|metrics|pods, as the kubelet; none: no checks (trusted networks only)
  --health-port N            plain-HTTP port for /healthz, /readyz, /metrics (default 10255; 0 disables)
  --pod-sync-workers N       pods synced concurrently per member (default 10)
  --watch-silence-seconds N  restart a watch that received nothing for this long (default 90)
  --probe-period-seconds N   probe each member's API server (/readyz) this often (default 10)
  --probe-failure-threshold N
                             consecutive failed probes before the member's node turns NotReady and its lease
                             stops (default 3): a shorter outage changes nothing on the host
  --log-level LEVEL          trace|debug|info|warn|error (default: $LOG_LEVEL or info)
  -h, --help                 this text
  --version                  print the version
`;

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
// Node names are label values too (kubernetes.io/hostname, clusterlet.io/node); namespaces are DNS-1123 labels.
const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];
const TAINT_EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];

export type ParseResult = { kind: 'help' } | { kind: 'version' } | { kind: 'run'; config: Config };

export const API_PROTOCOLS = ['http1.1', 'http2'] as const;
export type ApiProtocol = typeof API_PROTOCOLS[number];

/** Parses argv (without node and script) and the environment. Throws ConfigError. */
export function parseConfig(argv: string[], env: NodeJS.ProcessEnv = process.env): ParseResult {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      // A bare --leader-elect means true, as in kube-controller-manager; --leader-elect=false turns it off.
      args: argv.map((a) => a === '--leader-elect' ? '--leader-elect=true' : a), strict: true, allowPositionals: false,
      options: {
        'host-kubeconfig': { type: 'string' }, kubeconfig: { type: 'string' },
        'host-name': { type: 'string' }, 'host-qps': { type: 'string' }, 'host-burst': { type: 'string' },
        'api-protocol': { type: 'string' },
        'member-kubeconfig': { type: 'string' }, 'member-name': { type: 'string' }, nodename: { type: 'string' },
        'member-qps': { type: 'string' }, 'member-burst': { type: 'string' },
        'storage-class': { type: 'string' }, 'member-storage-class': { type: 'string' },
        'storage-reclaim-policy': { type: 'string' },
        'provider-config': { type: 'string' }, 'export-namespaces': { type: 'string' },
        'member-source': { type: 'string' }, 'clusterprofile-namespace': { type: 'string' },
        'clusterprofile-selector': { type: 'string' }, 'clusterprofile-provider-file': { type: 'string' },
        'reflect-host-endpoints': { type: 'boolean' },
        'node-ip': { type: 'string' }, 'kubelet-port': { type: 'string' }, 'health-port': { type: 'string' },
        'serving-cert': { type: 'string' }, 'tls-cert-file': { type: 'string' }, 'tls-key-file': { type: 'string' },
        'client-ca-file': { type: 'string' }, 'authentication-mode': { type: 'string' },
        'pod-sync-workers': { type: 'string' }, 'watch-silence-seconds': { type: 'string' },
        'probe-period-seconds': { type: 'string' }, 'probe-failure-threshold': { type: 'string' },
        'leader-elect': { type: 'string' }, 'leader-elect-lease-duration': { type: 'string' },
        'leader-elect-renew-deadline': { type: 'string' }, 'leader-elect-retry-period': { type: 'string' },
        'leader-elect-namespace': { type: 'string' }, 'leader-elect-identity': { type: 'string' },
        'log-level': { type: 'string' }, help: { type: 'boolean', short: 'h' }, version: { type: 'boolean' },
      },
    }));
  } catch (err) {
    const msg = (err as Error).message;
    const flag = /'(-{1,2}[^']+)'/.exec(msg)?.[1] ?? 'flags';
    throw new ConfigError(flag, msg.replace(/\. To specify a positional argument.*$/s, ''));
  }
  if (values.help) return { kind: 'help' };
  if (values.version) return { kind: 'version' };
  const str = (k: string): string | undefined => values[k] as string | undefined;

  const hostKubeconfig = str('host-kubeconfig') ?? str('kubeconfig');
  if (hostKubeconfig !== undefined) requireFile('--host-kubeconfig', hostKubeconfig);

  const providerConfig = str('provider-config');
  const memberKubeconfig = str('member-kubeconfig');
  if (providerConfig && memberKubeconfig) {
    throw new ConfigError('--member-kubeconfig', 'give either --provider-config or --member-kubeconfig, not both');
  }
  const defaults = {
    qps: int('--member-qps', str('member-qps'), 200, 1),
    burst: int('--member-burst', str('member-burst'), 400, 1),
    storage: storageDefaults(str),
  };
  let members: MemberConfig[];
  let fileSettings: FileSettings = {};
  const clusterProfiles = clusterProfileSource(str, env, defaults);
  if (providerConfig) {
    if (str('storage-class') !== undefined) {
      throw new ConfigError('--storage-class', 'names the class of the one member given by flags: with --provider-config, set storage.storageClassName per member');
    }
    ({ members, settings: fileSettings } = loadProviderConfig(providerConfig, defaults, { membersOptional: clusterProfiles !== undefined }));
  } else if (memberKubeconfig) {
    requireFile('--member-kubeconfig', memberKubeconfig);
    const name = str('member-name') ?? 'member';
    if (!DNS_LABEL.test(name)) throw new ConfigError('--member-name', `"${name}" is not a DNS-1123 label`);
    const nodeName = checkNodeName(str('nodename'), name, { name: '--member-name', nodeName: '--nodename' });
    const { storage, ...limits } = defaults;
    const className = str('storage-class') ?? `clusterlet-${name}`;
    checkClassName('--storage-class', className);
    members = [{
      name, kubeconfig: memberKubeconfig, nodeName, namespaceMapping: { template: '{namespace}', overrides: {} },
      labels: {}, taints: [], ...limits, storage: { ...storage, className },
    }];
  } else if (clusterProfiles) {
    members = [];
  } else {
    throw new ConfigError('--member-kubeconfig',
      'no member given: pass --member-kubeconfig, --provider-config or --member-source=clusterprofile (see --help)');
  }

  const logLevel = str('log-level') ?? env.LOG_LEVEL ?? 'info';
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError('--log-level', `"${logLevel}" is not one of ${LOG_LEVELS.join(', ')}`);
  const hostName = str('host-name') ?? fileSettings.hostName;
  if (hostName !== undefined && !DNS_LABEL.test(hostName)) {
    throw new ConfigError(str('host-name') !== undefined ? '--host-name' : 'hostName', `"${hostName}" is not a DNS-1123 label`,
      str('host-name') !== undefined ? undefined : providerConfig);
  }
  const nodeIP = str('node-ip') ?? env.POD_IP ?? '127.0.0.1';
  if (!/^[0-9a-fA-F:.]+$/.test(nodeIP)) throw new ConfigError('--node-ip', `"${nodeIP}" is not an IP address`);
  const kubeletApi = kubeletApiConfig(str);
  const apiProtocol = str('api-protocol') ?? 'http1.1';
  if (!(API_PROTOCOLS as readonly string[]).includes(apiProtocol)) {
    throw new ConfigError('--api-protocol', `"${apiProtocol}" is not one of ${API_PROTOCOLS.join(', ')}`);
  }
  const exportFlag = str('export-namespaces');
  const exportNamespaces = exportFlag === undefined ? fileSettings.exportNamespaces ?? []
    : namespaceList('--export-namespaces', exportFlag.split(',').map((n) => n.trim()).filter((n) => n !== ''));
  return {
    kind: 'run',
    config: {
      hostKubeconfig, hostName, members, nodeIP, logLevel, exportNamespaces, ...kubeletApi,
      reflectHostEndpoints: values['reflect-host-endpoints'] === true || fileSettings.reflectHostEndpoints === true,
      podSyncWorkers: int('--pod-sync-workers', str('pod-sync-workers'), fileSettings.podSyncWorkers ?? 10, 1),
      kubeletPort: int('--kubelet-port', str('kubelet-port'), 10250, 1, 65535),
      healthPort: int('--health-port', str('health-port'), 10255, 0, 65535),
      hostQPS: int('--host-qps', str('host-qps'), 200, 1),
      hostBurst: int('--host-burst', str('host-burst'), 400, 1),
      apiProtocol: apiProtocol as ApiProtocol,
      watchSilenceSeconds: int('--watch-silence-seconds', str('watch-silence-seconds'), 90, 1),
      probePeriodSeconds: int('--probe-period-seconds', str('probe-period-seconds'), 10, 1, 3600),
      probeFailureThreshold: int('--probe-failure-threshold', str('probe-failure-threshold'), 3, 1, 100),
      leaderElection: leaderElectionConfig(str, env),
      clusterProfiles,
    },
  };
}

/** What every member's storage is unless the config file says otherwise: --member-storage-class, --storage-reclaim-policy. */
function storageDefaults(str: (k: string) => string | undefined): Omit<StorageConfig, 'className'> {
  const memberClassName = str('member-storage-class');
  if (memberClassName !== undefined) checkClassName('--member-storage-class', memberClassName);
  return { memberClassName, reclaimPolicy: reclaimPolicy('--storage-reclaim-policy', str('storage-reclaim-policy') ?? 'Delete') };
}

const RECLAIM_POLICIES = ['Delete', 'Retain'];

function reclaimPolicy(field: string, v: unknown, file?: string): StorageConfig['reclaimPolicy'] {
  if (typeof v !== 'string' || !RECLAIM_POLICIES.includes(v)) {
    throw new ConfigError(field, `${JSON.stringify(v)} is not one of ${RECLAIM_POLICIES.join(', ')}`, file);
  }
  return v as StorageConfig['reclaimPolicy'];
}

/** A StorageClass name: a DNS-1123 subdomain. */
function checkClassName(field: string, v: unknown, file?: string): string {
  if (typeof v !== 'string' || v.length > 253 || !DNS_SUBDOMAIN.test(v)) {
    throw new ConfigError(field, `${JSON.stringify(v)} is not a StorageClass name (a DNS-1123 subdomain: lowercase letters, digits, "-" and ".")`, file);
  }
  return v;
}

const STORAGE_KEYS = ['storageClassName', 'memberStorageClassName', 'reclaimPolicy'];

/** A member's `storage` map of the config file, over the flags' defaults. */
function storageConfig(f: string, v: unknown, member: string, defaults: Omit<StorageConfig, 'className'>, file: string): StorageConfig {
  if (v !== undefined && !isObj(v)) throw new ConfigError(f, 'must be a map (storageClassName, memberStorageClassName, reclaimPolicy)', file);
  const s: Raw = isObj(v) ? v : {};
  for (const k of Object.keys(s)) if (!STORAGE_KEYS.includes(k)) throw new ConfigError(`${f}.${k}`, 'unknown field', file);
  return {
    className: checkClassName(`${f}.storageClassName`, s.storageClassName ?? `clusterlet-${member}`, file),
    memberClassName: s.memberStorageClassName === undefined ? defaults.memberClassName
      : checkClassName(`${f}.memberStorageClassName`, s.memberStorageClassName, file),
    reclaimPolicy: s.reclaimPolicy === undefined ? defaults.reclaimPolicy : reclaimPolicy(`${f}.reclaimPolicy`, s.reclaimPolicy, file),
  };
}

function clusterProfileSource(str: (k: string) => string | undefined, env: NodeJS.ProcessEnv,
  defaults: Pick<ClusterProfileSource, 'qps' | 'burst' | 'storage'>): ClusterProfileSource | undefined {
  const source = str('member-source') ?? 'config';
  if (source !== 'config' && source !== 'clusterprofile') {
    throw new ConfigError('--member-source', `"${source}" is not one of config, clusterprofile`);
  }
  if (source === 'config') {
    const stray = ['clusterprofile-namespace', 'clusterprofile-selector', 'clusterprofile-provider-file'].find((k) => str(k) !== undefined);
    if (stray) throw new ConfigError(`--${stray}`, 'only used with --member-source=clusterprofile');
    return undefined;
  }
  const namespace = str('clusterprofile-namespace') ?? env.POD_NAMESPACE ?? 'clusterlet';
  if (!DNS_LABEL.test(namespace)) throw new ConfigError('--clusterprofile-namespace', `"${namespace}" is not a DNS-1123 label`);
  const selector = (str('clusterprofile-selector') ?? '').trim();
  // The API server judges the selector in full; what is caught here is what can never be one.
  if (/[\s]/.test(selector.replace(/\s*(,|!=|==|=|\bin\b|\bnotin\b|\(|\))\s*/g, '$1'))) {
    throw new ConfigError('--clusterprofile-selector', `"${selector}" is not a label selector (e.g. env=prod,tier!=gpu)`);
  }
  const file = str('clusterprofile-provider-file');
  const providers = file === undefined ? [builtinProvider()] : loadAccessProviders(file);
  return { namespace, selector, providers, ...defaults };
}

const builtinProvider = (): AccessProviderConfig =>
  ({ name: KUBECONFIG_SECRET_PROVIDER, profileSourcedCLIArgsPolicy: 'Ignore', profileSourcedEnvVarsPolicy: 'Ignore' });

const CLI_ARGS_POLICIES = ['Append', 'Ignore'];
const ENV_POLICIES = ['AppendIfNotExists', 'Replace', 'Ignore'];

/**
 * The cluster-inventory-api's provider file (pkg/access Config: `{"providers": [{name, execConfig,
 * profileSourcedCLIArgsPolicy, profileSourcedEnvVarsPolicy}]}`), JSON or YAML. The exec config itself is checked
 * where it is used, with the kubeconfig's rules (src/kube/kubeconfig.ts). An entry without execConfig can only be
 * the built-in kubeconfig-secretreader.
 */
export function loadAccessProviders(file: string): AccessProviderConfig[] {
  requireFile('--clusterprofile-provider-file', file);
  let doc: unknown;
  try {
    doc = loadYaml(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ConfigError('(yaml)', `not valid JSON or YAML: ${(err as Error).message.split('\n')[0]}`, file);
  }
  if (!isObj(doc) || !Array.isArray(doc.providers) || doc.providers.length === 0) {
    throw new ConfigError('providers', 'must be a non-empty list', file);
  }
  const names = new Set<string>();
  return doc.providers.map((p: unknown, i: number): AccessProviderConfig => {
    const f = `providers[${i}]`;
    if (!isObj(p) || typeof p.name !== 'string' || p.name === '') throw new ConfigError(`${f}.name`, 'must be a non-empty string', file);
    if (names.has(p.name)) throw new ConfigError(`${f}.name`, `duplicate provider "${p.name}"`, file);
    names.add(p.name);
    const exec = p.execConfig ?? undefined;
    if (exec !== undefined && (!isObj(exec) || typeof exec.command !== 'string')) {
      throw new ConfigError(`${f}.execConfig`, 'must be a map with a command (client-go ExecConfig)', file);
    }
    if (exec === undefined && p.name !== KUBECONFIG_SECRET_PROVIDER) {
      throw new ConfigError(`${f}.execConfig`, `missing: only "${KUBECONFIG_SECRET_PROVIDER}" is built in`, file);
    }
    const args = p.profileSourcedCLIArgsPolicy ?? 'Ignore';
    if (!CLI_ARGS_POLICIES.includes(args as string)) {
      throw new ConfigError(`${f}.profileSourcedCLIArgsPolicy`, `must be one of ${CLI_ARGS_POLICIES.join(', ')}`, file);
    }
    const envs = p.profileSourcedEnvVarsPolicy ?? 'Ignore';
    if (!ENV_POLICIES.includes(envs as string)) {
      throw new ConfigError(`${f}.profileSourcedEnvVarsPolicy`, `must be one of ${ENV_POLICIES.join(', ')}`, file);
    }
    return { name: p.name, execConfig: exec as Record<string, unknown> | undefined,
      profileSourcedCLIArgsPolicy: args as AccessProviderConfig['profileSourcedCLIArgsPolicy'],
      profileSourcedEnvVarsPolicy: envs as AccessProviderConfig['profileSourcedEnvVarsPolicy'] };
  });
}

/**
 * The member a ClusterProfile stands for: named after the profile, its node `clusterlet-<name>` or the profile's
 * clusterlet.io/node-name annotation, namespaces mapped one to one. Throws a ConfigError naming the field.
 */
export function profileMemberConfig(profile: { namespace: string; name: string; annotations: Record<string, string> },
  source: Pick<ClusterProfileSource, 'qps' | 'burst' | 'storage'>): MemberConfig {
  const { name } = profile;
  if (!DNS_LABEL.test(name) || name.length > NAME_MAX) {
    throw new ConfigError('metadata.name', `"${name}" is not a DNS-1123 label (${DNS_LABEL_RULE}, at most ${NAME_MAX}): `
      + 'it names the member');
  }
  const given = profile.annotations[PROFILE_NODE_NAME_ANNOTATION];
  const nodeName = checkNodeName(given, name,
    { name: 'metadata.name', nodeName: `metadata.annotations[${PROFILE_NODE_NAME_ANNOTATION}]` });
  return {
    name, nodeName, clusterProfile: { namespace: profile.namespace, name }, namespaceMapping: { template: '{namespace}', overrides: {} },
    labels: {}, taints: [], qps: source.qps, burst: source.burst, storage: { className: `clusterlet-${name}`, ...source.storage },
  };
}

function leaderElectionConfig(str: (k: string) => string | undefined, env: NodeJS.ProcessEnv): LeaderElectionConfig | undefined {
  const on = str('leader-elect') ?? 'true';
  if (on !== 'true' && on !== 'false') throw new ConfigError('--leader-elect', `"${on}" is not true or false`);
  if (on === 'false') return undefined;
  const leaseDurationMs = duration('--leader-elect-lease-duration', str('leader-elect-lease-duration'), 15_000);
  const renewDeadlineMs = duration('--leader-elect-renew-deadline', str('leader-elect-renew-deadline'), 10_000);
  const retryPeriodMs = duration('--leader-elect-retry-period', str('leader-elect-retry-period'), 2_000);
  // As client-go requires: a leader gives up before anyone may take its lease, and retries before it gives up.
  if (renewDeadlineMs >= leaseDurationMs) {
    throw new ConfigError('--leader-elect-renew-deadline', 'must be shorter than --leader-elect-lease-duration');
  }
  if (retryPeriodMs >= renewDeadlineMs) {
    throw new ConfigError('--leader-elect-retry-period', 'must be shorter than --leader-elect-renew-deadline');
  }
  const namespace = str('leader-elect-namespace') ?? env.POD_NAMESPACE ?? 'clusterlet';
  if (!DNS_LABEL.test(namespace)) throw new ConfigError('--leader-elect-namespace', `"${namespace}" is not a DNS-1123 label`);
  const identity = str('leader-elect-identity') ?? env.POD_NAME ?? hostname();
  if (identity === '' || identity.length > 128) {
    throw new ConfigError('--leader-elect-identity', `"${identity}" must have 1 to 128 characters`);
  }
  const pod = env.POD_NAME && env.POD_UID ? { name: env.POD_NAME, uid: env.POD_UID } : undefined;
  return { namespace, identity, leaseDurationMs, renewDeadlineMs, retryPeriodMs, pod };
}

/** A duration flag: 15s, 500ms, 1m, 1.5s, or a number of seconds. */
function duration(field: string, raw: string | undefined, defMs: number): number {
  if (raw === undefined) return defMs;
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(raw.trim());
  const ms = m ? Number(m[1]) * ({ ms: 1, s: 1000, m: 60_000 }[m[2] ?? 's'] ?? 1000) : NaN;
  if (!Number.isFinite(ms) || ms < 100 || ms > 3_600_000) {
    throw new ConfigError(field, `"${raw}" is not a duration from 100ms to 1h (e.g. 15s, 500ms, 1m)`);
  }
  return Math.round(ms);
}

function kubeletApiConfig(str: (k: string) => string | undefined):
  Pick<Config, 'servingCert' | 'tlsCertFile' | 'tlsKeyFile' | 'clientCAFile' | 'authenticationMode'> {
  const tlsCertFile = str('tls-cert-file');
  const tlsKeyFile = str('tls-key-file');
  if ((tlsCertFile === undefined) !== (tlsKeyFile === undefined)) {
    throw new ConfigError(tlsCertFile === undefined ? '--tls-cert-file' : '--tls-key-file', 'give both --tls-cert-file and --tls-key-file');
  }
  if (tlsCertFile !== undefined) requireFile('--tls-cert-file', tlsCertFile);
  if (tlsKeyFile !== undefined) requireFile('--tls-key-file', tlsKeyFile);
  const servingCert = str('serving-cert') ?? (tlsCertFile ? 'file' : 'csr');
  if (servingCert !== 'file' && servingCert !== 'csr' && servingCert !== 'self-signed') {
    throw new ConfigError('--serving-cert', `"${servingCert}" is not one of file, csr, self-signed`);
  }
  if (servingCert === 'file' && !tlsCertFile) throw new ConfigError('--serving-cert', 'file needs --tls-cert-file and --tls-key-file');
  if (servingCert !== 'file' && tlsCertFile) throw new ConfigError('--tls-cert-file', `not used with --serving-cert=${servingCert}`);
  const clientCAFile = str('client-ca-file');
  if (clientCAFile !== undefined) requireFile('--client-ca-file', clientCAFile);
  const authenticationMode = str('authentication-mode') ?? 'webhook';
  if (authenticationMode !== 'webhook' && authenticationMode !== 'none') {
    throw new ConfigError('--authentication-mode', `"${authenticationMode}" is not one of webhook, none`);
  }
  return { servingCert, tlsCertFile, tlsKeyFile, clientCAFile, authenticationMode };
}

// The node name given, or the default `clusterlet-<member>`; an error names the field that produced it.
function checkNodeName(given: string | undefined, member: string, fields: { name: string; nodeName: string }, file?: string): string {
  const nodeName = given ?? `clusterlet-${member}`;
  let problem: string | undefined;
  if (nodeName.length > NAME_MAX) problem = `${nodeName.length} characters: a node name is at most ${NAME_MAX} (it is a label value)`;
  else if (!DNS_SUBDOMAIN.test(nodeName)) problem = 'not a DNS-1123 subdomain (lowercase letters, digits, "-" and ".")';
  if (problem === undefined) return nodeName;
  if (given !== undefined) throw new ConfigError(fields.nodeName, `node name "${nodeName}": ${problem}`, file);
  throw new ConfigError(fields.name, `the default node name "${nodeName}": ${problem}; shorten the name or set ${fields.nodeName}`, file);
}

function requireFile(field: string, path: string, file?: string): void {
  if (!existsSync(path)) throw new ConfigError(field, `file "${path}" does not exist`, file);
}

function int(field: string, raw: string | number | undefined, def: number, min: number, max = Number.MAX_SAFE_INTEGER,
  file?: string): number {
  if (raw === undefined) return def;
  const n = typeof raw === 'number' ? raw : Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new ConfigError(field, `"${raw}" must be an integer from ${min} to ${max}`, file);
  }
  return n;
}

interface FileSettings { hostName?: string; podSyncWorkers?: number; exportNamespaces?: string[]; reflectHostEndpoints?: boolean }

/** Namespace names, each a DNS-1123 label; duplicates dropped. */
function namespaceList(field: string, v: unknown, file?: string): string[] {
  if (!Array.isArray(v)) throw new ConfigError(field, 'must be a list of namespace names', file);
  v.forEach((n: unknown, i: number) => {
    if (typeof n !== 'string' || !DNS_LABEL.test(n)) {
      throw new ConfigError(file ? `${field}[${i}]` : field, `${JSON.stringify(n)} is not a DNS-1123 label`, file);
    }
  });
  return [...new Set(v as string[])];
}

type Raw = Record<string, unknown>;
const isObj = (v: unknown): v is Raw => typeof v === 'object' && v !== null && !Array.isArray(v);

function stringMap(field: string, v: unknown, file: string): Record<string, string> {
  if (v === undefined) return {};
  if (!isObj(v)) throw new ConfigError(field, 'must be a map of strings', file);
  for (const [k, val] of Object.entries(v)) {
    if (typeof val !== 'string') throw new ConfigError(`${field}.${k}`, 'must be a string', file);
  }
  return v as Record<string, string>;
}

const MEMBER_KEYS = ['name', 'kubeconfig', 'kubeconfigSecret', 'nodeName', 'namespaceMapping', 'labels', 'taints', 'qps', 'burst',
  'kubeletPort', 'storage'];

/**
 * Reads the provider config file: `hostName`, `podSyncWorkers`, `exportNamespaces`, `reflectHostEndpoints` and
 * `members` (which may be empty with `membersOptional`: the members come from ClusterProfiles).
 */
export function loadProviderConfig(file: string,
  { storage: storageDefault = { reclaimPolicy: 'Delete' }, ...defaults }: { qps: number; burst: number; storage?: Omit<StorageConfig, 'className'> },
  opts: { membersOptional?: boolean } = {}):
  { members: MemberConfig[]; settings: FileSettings } {
  requireFile('--provider-config', file);
  let doc: unknown;
  try {
    doc = loadYaml(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ConfigError('(yaml)', `not valid YAML: ${(err as Error).message.split('\n')[0]}`, file);
  }
  if (!isObj(doc)) throw new ConfigError('(root)', 'must be a map with a "members" list', file);
  for (const k of Object.keys(doc)) {
    if (!['hostName', 'podSyncWorkers', 'exportNamespaces', 'reflectHostEndpoints', 'members'].includes(k)) throw new ConfigError(k, 'unknown field', file);
  }
  if (doc.hostName !== undefined && typeof doc.hostName !== 'string') throw new ConfigError('hostName', 'must be a string', file);
  if (doc.reflectHostEndpoints !== undefined && typeof doc.reflectHostEndpoints !== 'boolean') {
    throw new ConfigError('reflectHostEndpoints', 'must be true or false', file);
  }
  const settings: FileSettings = {
    hostName: doc.hostName as string | undefined,
    podSyncWorkers: doc.podSyncWorkers === undefined ? undefined
      : int('podSyncWorkers', doc.podSyncWorkers as number, 10, 1, 1000, file),
    exportNamespaces: doc.exportNamespaces === undefined ? undefined : namespaceList('exportNamespaces', doc.exportNamespaces, file),
    reflectHostEndpoints: doc.reflectHostEndpoints as boolean | undefined,
  };
  const members = doc.members ?? (opts.membersOptional ? [] : undefined);
  if (!Array.isArray(members) || (members.length === 0 && !opts.membersOptional)) {
    throw new ConfigError('members', opts.membersOptional ? 'must be a list' : 'must be a non-empty list', file);
  }
  const names = new Set<string>();
  const nodes = new Set<string>();
  const classes = new Set<string>();
  return { members: members.map((m: unknown, i: number): MemberConfig => {
    const f = `members[${i}]`;
    if (!isObj(m)) throw new ConfigError(f, 'must be a map', file);
    for (const k of Object.keys(m)) if (!MEMBER_KEYS.includes(k)) throw new ConfigError(`${f}.${k}`, 'unknown field', file);
    const name = m.name;
    if (typeof name !== 'string' || !DNS_LABEL.test(name)) throw new ConfigError(`${f}.name`, 'must be a DNS-1123 label', file);
    if (names.has(name)) throw new ConfigError(`${f}.name`, `duplicate member "${name}"`, file);
    names.add(name);
    const hasFile = m.kubeconfig !== undefined;
    const hasSecret = m.kubeconfigSecret !== undefined;
    if (hasFile === hasSecret) throw new ConfigError(`${f}.kubeconfig`, 'give exactly one of kubeconfig or kubeconfigSecret', file);
    let kubeconfigSecret: SecretRef | undefined;
    if (hasFile) {
      if (typeof m.kubeconfig !== 'string') throw new ConfigError(`${f}.kubeconfig`, 'must be a file path', file);
      requireFile(`${f}.kubeconfig`, m.kubeconfig, file);
    } else {
      const s = m.kubeconfigSecret;
      if (!isObj(s) || typeof s.namespace !== 'string' || typeof s.name !== 'string') {
        throw new ConfigError(`${f}.kubeconfigSecret`, 'needs namespace and name (key defaults to "kubeconfig")', file);
      }
      kubeconfigSecret = { namespace: s.namespace, name: s.name, key: typeof s.key === 'string' ? s.key : 'kubeconfig' };
    }
    if (m.nodeName !== undefined && typeof m.nodeName !== 'string') throw new ConfigError(`${f}.nodeName`, 'must be a string', file);
    const nodeName = checkNodeName(m.nodeName, name, { name: `${f}.name`, nodeName: `${f}.nodeName` }, file);
    if (nodes.has(nodeName)) throw new ConfigError(`${f}.nodeName`, `duplicate node name "${nodeName}"`, file);
    nodes.add(nodeName);
    const nm = m.namespaceMapping;
    if (nm !== undefined && !isObj(nm)) throw new ConfigError(`${f}.namespaceMapping`, 'must be a map', file);
    const namespaceMapping = checkNamespaceMapping(`${f}.namespaceMapping`, nm, file);
    const taints = m.taints ?? [];
    if (!Array.isArray(taints)) throw new ConfigError(`${f}.taints`, 'must be a list', file);
    taints.forEach((t: unknown, j: number) => {
      if (!isObj(t) || typeof t.key !== 'string' || !TAINT_EFFECTS.includes(t.effect as string)) {
        throw new ConfigError(`${f}.taints[${j}]`, `needs a key and an effect (${TAINT_EFFECTS.join(', ')})`, file);
      }
    });
    const storage = storageConfig(`${f}.storage`, m.storage, name, storageDefault, file);
    if (classes.has(storage.className)) {
      throw new ConfigError(`${f}.storage.storageClassName`, `duplicate storage class "${storage.className}": each member has its own`, file);
    }
    classes.add(storage.className);
    return {
      name, kubeconfig: hasFile ? m.kubeconfig as string : undefined, kubeconfigSecret, nodeName, storage,
      namespaceMapping,
      labels: stringMap(`${f}.labels`, m.labels, file),
      taints: taints as V1Taint[],
      qps: int(`${f}.qps`, m.qps as number | undefined, defaults.qps, 1, 100_000, file),
      burst: int(`${f}.burst`, m.burst as number | undefined, defaults.burst, 1, 100_000, file),
      ...(m.kubeletPort !== undefined ? { kubeletPort: int(`${f}.kubeletPort`, m.kubeletPort as number, 0, 1, 65535, file) } : {}),
    };
  }), settings };
}

// What can be told from the mapping alone: a template whose fixed part makes every name invalid, overrides
// that are not namespace names or that send two host namespaces to one member namespace.
function checkNamespaceMapping(field: string, nm: Raw | undefined, file: string): NamespaceMapping {
  const template = nm?.template ?? '{namespace}';
  if (typeof template !== 'string' || !template.includes('{namespace}')) {
    throw new ConfigError(`${field}.template`, 'must contain "{namespace}"', file);
  }
  const parts = template.split('{namespace}');
  const fixed = parts.join('');
  let problem: string | undefined;
  if (!/^[a-z0-9-]*$/.test(fixed)) problem = `has characters a namespace name cannot hold (${DNS_LABEL_RULE})`;
  else if (template.startsWith('-') || template.endsWith('-')) problem = `makes names that start or end with "-" (${DNS_LABEL_RULE})`;
  else if (fixed.length + parts.length - 1 > NAME_MAX) {
    problem = `makes names of at least ${fixed.length + parts.length - 1} characters: a namespace name is at most ${NAME_MAX}`;
  }
  if (problem !== undefined) throw new ConfigError(`${field}.template`, `"${template}" ${problem}`, file);
  const overrides = stringMap(`${field}.overrides`, nm?.overrides, file);
  const owners = new Map<string, string>();
  for (const [host, member] of Object.entries(overrides)) {
    if (!DNS_LABEL.test(member)) {
      throw new ConfigError(`${field}.overrides.${host}`, `"${member}" is not a namespace name: a DNS-1123 label (${DNS_LABEL_RULE}, at most ${NAME_MAX})`, file);
    }
    const other = owners.get(member);
    if (other !== undefined) {
      throw new ConfigError(`${field}.overrides.${host}`, `maps to "${member}" as "${other}" does: two host namespaces cannot share one member namespace`, file);
    }
    owners.set(member, host);
  }
  return { template, overrides };
}
