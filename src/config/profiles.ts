// ClusterProfile members (--member-source=clusterprofile): where they come from, the access providers' file, and the
// member config a profile gives.
import { readFileSync } from 'node:fs';
import { load as loadYaml } from 'js-yaml';
import { PROFILE_NODE_NAME_ANNOTATION } from '../forge/keys.ts';
import { DNS_LABEL, DNS_LABEL_RULE, NAME_MAX } from '../forge/namespace.ts';
import { ConfigError, checkNodeName, isObj, requireFile } from './fields.ts';
import { type AccessProviderConfig, type ClusterProfileSource, KUBECONFIG_SECRET_PROVIDER, type MemberConfig } from './types.ts';

export function clusterProfileSource(str: (k: string) => string | undefined, env: NodeJS.ProcessEnv,
  defaults: Pick<ClusterProfileSource, 'qps' | 'burst' | 'storage' | 'apiAccess' | 'nodes' | 'fit'>): ClusterProfileSource | undefined {
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
 * clusterlet.io/node-name annotation, namespaces mapped one to one, its virtual nodes as --nodes says. Throws a ConfigError
 * naming the field.
 */
export function profileMemberConfig(profile: { namespace: string; name: string; annotations: Record<string, string> },
  source: Pick<ClusterProfileSource, 'qps' | 'burst' | 'storage' | 'apiAccess' | 'nodes' | 'fit'>): MemberConfig {
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
    apiAccess: source.apiAccess, ...(source.nodes !== undefined ? { nodes: source.nodes } : {}),
    ...(source.fit !== undefined ? { fit: source.fit } : {}),
  };
}

