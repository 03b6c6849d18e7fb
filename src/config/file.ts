// The provider config file (--provider-config): members, their mappings, labels, taints and storage, and the
// settings it may set for the whole process. Every error names the field and the file.
import { readFileSync } from 'node:fs';
import { load as loadYaml } from 'js-yaml';
import type { V1Taint } from '@kubernetes/client-node';
import { DNS_LABEL, DNS_LABEL_RULE, NAME_MAX, type NamespaceMapping } from '../forge/namespace.ts';
import { ConfigError, type Raw, TAINT_EFFECTS, apiAccessConfig, checkNodeName, fitMode, int, isObj, namespaceList, nodeGranularity, requireFile,
  storageConfig, stringMap } from './fields.ts';
import { nodeNameClash } from '../forge/groups.ts';
import type { ApiAccessConfig, FitMode, MemberConfig, NodeGranularity, SecretRef, StorageConfig } from './types.ts';

export interface FileSettings { hostName?: string; podSyncWorkers?: number; exportNamespaces?: string[]; reflectHostEndpoints?: boolean }

const MEMBER_KEYS = ['name', 'kubeconfig', 'kubeconfigSecret', 'nodeName', 'namespaceMapping', 'labels', 'taints', 'qps', 'burst',
  'kubeletPort', 'storage', 'apiAccess', 'hostAPI', 'nodes', 'fit'];

/**
 * Reads the provider config file: `hostName`, `podSyncWorkers`, `exportNamespaces`, `reflectHostEndpoints` and
 * `members` (which may be empty with `membersOptional`: the members come from ClusterProfiles).
 */
export function loadProviderConfig(file: string,
  { storage: storageDefault = { reclaimPolicy: 'Delete' }, apiAccess: apiAccessDefault = { mode: 'host' }, nodes: nodesDefault,
    fit: fitDefault, ...defaults }:
  { qps: number; burst: number; storage?: Omit<StorageConfig, 'className'>; apiAccess?: ApiAccessConfig; nodes?: NodeGranularity;
    fit?: FitMode },
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
  const configs = members.map((m: unknown, i: number): MemberConfig => {
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
    const granularity = m.nodes === undefined ? nodesDefault : nodeGranularity(`${f}.nodes`, m.nodes, file);
    return {
      name, kubeconfig: hasFile ? m.kubeconfig as string : undefined, kubeconfigSecret, nodeName, storage,
      namespaceMapping, apiAccess: apiAccessConfig(f, m.apiAccess, m.hostAPI, apiAccessDefault, file),
      labels: stringMap(`${f}.labels`, m.labels, file),
      taints: taints as V1Taint[],
      qps: int(`${f}.qps`, m.qps as number | undefined, defaults.qps, 1, 100_000, file),
      burst: int(`${f}.burst`, m.burst as number | undefined, defaults.burst, 1, 100_000, file),
      ...(m.kubeletPort !== undefined ? { kubeletPort: int(`${f}.kubeletPort`, m.kubeletPort as number, 0, 1, 65535, file) } : {}),
      ...(granularity !== undefined ? { nodes: granularity } : {}),
      ...(m.fit !== undefined ? { fit: fitMode(`${f}.fit`, m.fit, file) } : fitDefault !== undefined ? { fit: fitDefault } : {}),
    };
  });
  // Two members never share a virtual node: names one of them can reach at run time (a pool's, a member node's) count.
  configs.forEach((b, j) => configs.slice(0, j).forEach((a) => {
    const clash = nodeNameClash(a, b);
    if (clash !== undefined) throw new ConfigError(`members[${j}].nodeName`, clash, file);
  }));
  return { members: configs, settings };
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

