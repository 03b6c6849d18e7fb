// Flags and the provider config file → a validated Config. Every error names the field (and the file):
// the CLI turns a ConfigError into exit code 2.
// The field checks, the types, the help text, the provider config file and the ClusterProfile source live in config/.
import { hostname } from 'node:os';
import { parseArgs, type ParseArgsOptionsConfig } from 'node:util';
import { DNS_LABEL } from './forge/namespace.ts';
import { ConfigError, LOG_LEVELS, apiAccessMode, fitMode, checkClassName, hostServer, checkNodeName, duration, int, namespaceList, nodesFlag,
  reclaimPolicy, requireFile } from './config/fields.ts';
import { type FileSettings, loadProviderConfig } from './config/file.ts';
import { clusterProfileSource } from './config/profiles.ts';
import { API_PROTOCOLS, type ApiProtocol, type Config, type LeaderElectionConfig, type MemberConfig, type ParseResult,
  type StorageConfig } from './config/types.ts';

export * from './config/types.ts';
export { HELP } from './config/help.ts';
export { ConfigError } from './config/fields.ts';
export { loadProviderConfig } from './config/file.ts';
export { loadAccessProviders, profileMemberConfig } from './config/profiles.ts';

/** Every flag clusterlet accepts (parseArgs options); docs/configuration.md's flags tables and --help name each. */
export const FLAGS = {
  'host-kubeconfig': { type: 'string' }, kubeconfig: { type: 'string' },
  'host-name': { type: 'string' }, 'host-qps': { type: 'string' }, 'host-burst': { type: 'string' },
  'api-protocol': { type: 'string' },
  'member-kubeconfig': { type: 'string' }, 'member-name': { type: 'string' }, nodename: { type: 'string' }, nodes: { type: 'string' }, fit: { type: 'string' },
  'member-qps': { type: 'string' }, 'member-burst': { type: 'string' },
  'storage-class': { type: 'string' }, 'member-storage-class': { type: 'string' },
  'storage-reclaim-policy': { type: 'string' }, 'api-access': { type: 'string' }, 'host-api-server': { type: 'string' },
  'host-token-max-age': { type: 'string' },
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
} as const satisfies ParseArgsOptionsConfig;

/** Parses argv (without node and script) and the environment. Throws ConfigError. */
export function parseConfig(argv: string[], env: NodeJS.ProcessEnv = process.env): ParseResult {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      // A bare --leader-elect means true, as in kube-controller-manager; --leader-elect=false turns it off.
      args: argv.map((a) => a === '--leader-elect' ? '--leader-elect=true' : a), strict: true, allowPositionals: false,
      options: FLAGS,
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
  const nodesRaw = str('nodes');
  const defaults = {
    qps: int('--member-qps', str('member-qps'), 200, 1),
    burst: int('--member-burst', str('member-burst'), 400, 1),
    storage: storageDefaults(str),
    apiAccess: {
      mode: apiAccessMode('--api-access', str('api-access') ?? 'host'),
      ...(str('host-api-server') !== undefined ? { hostServer: hostServer('--host-api-server', str('host-api-server')) } : {}),
    },
    // Unset: each member's `fit`, else auto (left undefined).
    ...(str('fit') !== undefined ? { fit: fitMode('--fit', str('fit')) } : {}),
    // Unset: each member's `nodes`, else cluster (left undefined).
    ...(nodesRaw !== undefined ? { nodes: nodesFlag('--nodes', nodesRaw) } : {}),
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
    const { storage, apiAccess, nodes, fit, ...limits } = defaults;
    const className = str('storage-class') ?? `clusterlet-${name}`;
    checkClassName('--storage-class', className);
    members = [{
      name, kubeconfig: memberKubeconfig, nodeName, namespaceMapping: { template: '{namespace}', overrides: {} },
      labels: {}, taints: [], ...limits, storage: { ...storage, className }, apiAccess, ...(nodes !== undefined ? { nodes } : {}),
      ...(fit !== undefined ? { fit } : {}),
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
      hostTokenMaxAgeMs: duration('--host-token-max-age', str('host-token-max-age'), 24 * 3_600_000, { ms: 24 * 3_600_000, text: '24h' }),
    },
  };
}

/** What every member's storage is unless the config file says otherwise: --member-storage-class, --storage-reclaim-policy. */
function storageDefaults(str: (k: string) => string | undefined): Omit<StorageConfig, 'className'> {
  const memberClassName = str('member-storage-class');
  if (memberClassName !== undefined) checkClassName('--member-storage-class', memberClassName);
  return { memberClassName, reclaimPolicy: reclaimPolicy('--storage-reclaim-policy', str('storage-reclaim-policy') ?? 'Delete') };
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

