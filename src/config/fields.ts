// The field checks the flags and the provider config file share: each error names the field (and the file).
import { existsSync } from 'node:fs';
import { DNS_LABEL, NAME_MAX } from '../forge/namespace.ts';
import type { ApiAccessConfig, NodeGranularity, StorageConfig } from './types.ts';
import { API_ACCESS_MODES, parseHostEndpoint, type ApiAccessMode } from '../forge/apiaccess.ts';
import { FIT_MODES, type FitMode } from '../forge/fit.ts';

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

// Node names are label values too (kubernetes.io/hostname, clusterlet.io/node); namespaces are DNS-1123 labels.
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];
export const TAINT_EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];
const RECLAIM_POLICIES = ['Delete', 'Retain'];

export function reclaimPolicy(field: string, v: unknown, file?: string): StorageConfig['reclaimPolicy'] {
  if (typeof v !== 'string' || !RECLAIM_POLICIES.includes(v)) {
    throw new ConfigError(field, `${JSON.stringify(v)} is not one of ${RECLAIM_POLICIES.join(', ')}`, file);
  }
  return v as StorageConfig['reclaimPolicy'];
}

/** A StorageClass name: a DNS-1123 subdomain. */
export function checkClassName(field: string, v: unknown, file?: string): string {
  if (typeof v !== 'string' || v.length > 253 || !DNS_SUBDOMAIN.test(v)) {
    throw new ConfigError(field, `${JSON.stringify(v)} is not a StorageClass name (a DNS-1123 subdomain: lowercase letters, digits, "-" and ".")`, file);
  }
  return v;
}

const STORAGE_KEYS = ['storageClassName', 'memberStorageClassName', 'reclaimPolicy'];

/** A member's `storage` map of the config file, over the flags' defaults. */
export function storageConfig(f: string, v: unknown, member: string, defaults: Omit<StorageConfig, 'className'>, file: string): StorageConfig {
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

/** An API access mode (forge/apiaccess.ts). */
export function apiAccessMode(field: string, v: unknown, file?: string): ApiAccessMode {
  if (typeof v !== 'string' || !(API_ACCESS_MODES as readonly string[]).includes(v)) {
    throw new ConfigError(field, `${JSON.stringify(v)} is not one of ${API_ACCESS_MODES.join(', ')}`, file);
  }
  return v as ApiAccessMode;
}

/** A member's fit (forge/fit.ts FitMode). */
export function fitMode(field: string, v: unknown, file?: string): FitMode {
  if (typeof v !== 'string' || !(FIT_MODES as readonly string[]).includes(v)) {
    throw new ConfigError(field, `${JSON.stringify(v)} is not one of ${FIT_MODES.join(', ')}`, file);
  }
  return v as FitMode;
}

/** The host API server as member pods reach it: an https URL of host and port, no path. */
export function hostServer(field: string, v: unknown, file?: string): string {
  const parsed = typeof v === 'string' ? parseHostEndpoint(v) : { error: 'must be a URL' };
  if ('error' in parsed) throw new ConfigError(field, parsed.error, file);
  return v as string;
}

/** A member's `apiAccess` and `hostAPI` of the config file, over the flags' defaults. */
export function apiAccessConfig(f: string, mode: unknown, hostAPI: unknown, defaults: ApiAccessConfig, file: string): ApiAccessConfig {
  if (hostAPI !== undefined && !isObj(hostAPI)) throw new ConfigError(`${f}.hostAPI`, 'must be a map (server)', file);
  const h: Raw = isObj(hostAPI) ? hostAPI : {};
  for (const k of Object.keys(h)) if (k !== 'server') throw new ConfigError(`${f}.hostAPI.${k}`, 'unknown field', file);
  const server = h.server === undefined ? defaults.hostServer : hostServer(`${f}.hostAPI.server`, h.server, file);
  return {
    mode: mode === undefined ? defaults.mode : apiAccessMode(`${f}.apiAccess`, mode, file),
    ...(server !== undefined ? { hostServer: server } : {}),
  };
}

// A label key, as Kubernetes checks one (a qualified name): an optional DNS-1123 subdomain prefix and "/", then a name
// of at most 63 characters, letters, digits, "-", "_" and ".", starting and ending with a letter or digit.
const LABEL_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_KEY_RULE = 'an optional DNS subdomain prefix and "/", then at most 63 letters, digits, "-", "_" or ".", '
  + 'starting and ending with a letter or digit';

function isLabelKey(k: string): boolean {
  const parts = k.split('/');
  if (parts.length > 2) return false;
  const [prefix, name] = parts.length === 2 ? parts : [undefined, parts[0]];
  return LABEL_NAME.test(name) && (prefix === undefined || (prefix.length <= 253 && DNS_SUBDOMAIN.test(prefix)));
}

// The pool label of `nodes`: a label key of the member's nodes.
function poolLabel(field: string, label: string, forms: string, file?: string): NodeGranularity {
  if (!isLabelKey(label)) {
    throw new ConfigError(field, `pool ${JSON.stringify(label)} is not a label key (${LABEL_KEY_RULE}); give one of ${forms}`, file);
  }
  return { mode: 'pool', label };
}

const NODES_FORMS = 'cluster, node, { pool: <label key> }';
const NODES_FLAG_FORMS = 'cluster, node, pool=<label key>';

/** A member's `nodes` in the config file (forge/groups.ts): `cluster`, `node` or `{ pool: <label key> }`. */
export function nodeGranularity(field: string, v: unknown, file?: string): NodeGranularity {
  if (v === 'cluster' || v === 'node') return { mode: v };
  if (isObj(v) && Object.keys(v).length === 1 && typeof v.pool === 'string') return poolLabel(field, v.pool, NODES_FORMS, file);
  throw new ConfigError(field, `${JSON.stringify(v)} is not one of ${NODES_FORMS}`, file);
}

/** --nodes: `cluster`, `node` or `pool=<label key>`. */
export function nodesFlag(field: string, raw: string): NodeGranularity {
  if (raw === 'cluster' || raw === 'node') return { mode: raw };
  if (raw.startsWith('pool=')) return poolLabel(field, raw.slice('pool='.length), NODES_FLAG_FORMS);
  throw new ConfigError(field, `"${raw}" is not one of ${NODES_FLAG_FORMS}`);
}

/** A duration flag: 15s, 500ms, 1m, 2h, 1.5s, or a number of seconds; from 100ms to 1h unless `max` says otherwise. */
export function duration(field: string, raw: string | undefined, defMs: number, max: { ms: number; text: string } = { ms: 3_600_000, text: '1h' }): number {
  if (raw === undefined) return defMs;
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(raw.trim());
  const ms = m ? Number(m[1]) * ({ ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] ?? 's'] ?? 1000) : NaN;
  if (!Number.isFinite(ms) || ms < 100 || ms > max.ms) {
    throw new ConfigError(field, `"${raw}" is not a duration from 100ms to ${max.text} (e.g. 15s, 500ms, 1m)`);
  }
  return Math.round(ms);
}

// The node name given, or the default `clusterlet-<member>`; an error names the field that produced it.
export function checkNodeName(given: string | undefined, member: string, fields: { name: string; nodeName: string }, file?: string): string {
  const nodeName = given ?? `clusterlet-${member}`;
  let problem: string | undefined;
  if (nodeName.length > NAME_MAX) problem = `${nodeName.length} characters: a node name is at most ${NAME_MAX} (it is a label value)`;
  else if (!DNS_SUBDOMAIN.test(nodeName)) problem = 'not a DNS-1123 subdomain (lowercase letters, digits, "-" and ".")';
  if (problem === undefined) return nodeName;
  if (given !== undefined) throw new ConfigError(fields.nodeName, `node name "${nodeName}": ${problem}`, file);
  throw new ConfigError(fields.name, `the default node name "${nodeName}": ${problem}; shorten the name or set ${fields.nodeName}`, file);
}

export function requireFile(field: string, path: string, file?: string): void {
  if (!existsSync(path)) throw new ConfigError(field, `file "${path}" does not exist`, file);
}

export function int(field: string, raw: string | number | undefined, def: number, min: number, max = Number.MAX_SAFE_INTEGER,
  file?: string): number {
  if (raw === undefined) return def;
  const n = typeof raw === 'number' ? raw : Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new ConfigError(field, `"${raw}" must be an integer from ${min} to ${max}`, file);
  }
  return n;
}

/** Namespace names, each a DNS-1123 label; duplicates dropped. */
export function namespaceList(field: string, v: unknown, file?: string): string[] {
  if (!Array.isArray(v)) throw new ConfigError(field, 'must be a list of namespace names', file);
  v.forEach((n: unknown, i: number) => {
    if (typeof n !== 'string' || !DNS_LABEL.test(n)) {
      throw new ConfigError(file ? `${field}[${i}]` : field, `${JSON.stringify(n)} is not a DNS-1123 label`, file);
    }
  });
  return [...new Set(v as string[])];
}

export type Raw = Record<string, unknown>;
export const isObj = (v: unknown): v is Raw => typeof v === 'object' && v !== null && !Array.isArray(v);

export function stringMap(field: string, v: unknown, file: string): Record<string, string> {
  if (v === undefined) return {};
  if (!isObj(v)) throw new ConfigError(field, 'must be a map of strings', file);
  for (const [k, val] of Object.entries(v)) {
    if (typeof val !== 'string') throw new ConfigError(`${field}.${k}`, 'must be a string', file);
  }
  return v as Record<string, string>;
}

