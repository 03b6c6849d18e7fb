// The field checks the flags and the provider config file share: each error names the field (and the file).
import { existsSync } from 'node:fs';
import { DNS_LABEL, NAME_MAX } from '../forge/namespace.ts';
import type { StorageConfig } from './types.ts';

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

/** A duration flag: 15s, 500ms, 1m, 1.5s, or a number of seconds. */
export function duration(field: string, raw: string | undefined, defMs: number): number {
  if (raw === undefined) return defMs;
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(raw.trim());
  const ms = m ? Number(m[1]) * ({ ms: 1, s: 1000, m: 60_000 }[m[2] ?? 's'] ?? 1000) : NaN;
  if (!Number.isFinite(ms) || ms < 100 || ms > 3_600_000) {
    throw new ConfigError(field, `"${raw}" is not a duration from 100ms to 1h (e.g. 15s, 500ms, 1m)`);
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

