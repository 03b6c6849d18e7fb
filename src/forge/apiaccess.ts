// API access of offloaded pods: which API server and identity a delegate's ServiceAccount token is for, and the
// volumes, env and member Secret that give it one. Pure functions; the tokens are requested from the host and written
// by member/pod/tokens.ts. The modes (the proxy's clusterlet.io/api-access annotation, else the member's default):
//   host    the proxy's host ServiceAccount: tokens from the host's TokenRequest API bound to the proxy, in a member
//           Secret the delegate mounts at the paths the kubelet would have used, with the host's CA and namespace;
//           KUBERNETES_SERVICE_* point at the host API server as the member's pods reach it
//   member  the member's token for a ServiceAccount of the same name (the member's admission mounts it)
//   none    no token at all
import { createHash } from 'node:crypto';
import type {
  V1Container, V1EnvVar, V1EphemeralContainer, V1Pod, V1PodSpec, V1Secret, V1Volume, V1VolumeProjection,
} from '@kubernetes/client-node';
import {
  API_ACCESS_ANNOTATION, HOST_TOKEN_ROLE, PROXY_NAME_ANNOTATION, PROXY_NAMESPACE_ANNOTATION, PROXY_UID_LABEL,
  REFRESH_AT_ANNOTATION, ROLE_OBJECT_LABEL, SERVICE_ACCOUNT_ANNOTATION, TOKENS_ANNOTATION,
} from './keys.ts';
import { nonEmpty } from './objects.ts';

export const API_ACCESS_MODES = ['host', 'member', 'none'] as const;
export type ApiAccessMode = typeof API_ACCESS_MODES[number];

/** Where the member's pods reach the host API server. */
export interface HostEndpoint { host: string; port: number }

/** What a delegate's token is for: forgeDelegatePod applies it (member: today's default, the member's own token). */
export type DelegateApiAccess =
  | { mode: 'member' }
  | { mode: 'none' }
  | { mode: 'host'; secretName: string; endpoint: HostEndpoint };

/** One token a delegate needs: a serviceAccountToken projection of the proxy, by its key in the token Secret. */
export interface TokenNeed { key: string; audience?: string; expirationSeconds: number }

/** The Secret keys of the host's CA bundle and of the proxy's namespace, beside the tokens. */
export const CA_KEY = 'ca.crt';
export const NAMESPACE_KEY = 'namespace';
/** The TokenRequest API's default lifetime, which a projection without expirationSeconds gets. */
export const DEFAULT_TOKEN_SECONDS = 3600;
/**
 * The longest token clusterlet asks the host for (48 h), whatever a projection says: the most the host's
 * TokenRequest policy admits of it (manifests/host/tokenrequest-policy.yaml). Tokens are refreshed after 24 h at the
 * latest (--host-token-max-age), so a longer one would never be used longer.
 */
export const MAX_TOKEN_SECONDS = 48 * 3600;
const KUBE_API_ACCESS_PREFIX = 'kube-api-access-';
const ROOT_CA_CONFIGMAP = 'kube-root-ca.crt';
const SECRET_NAME_MAX = 253;
const SECRET_SUFFIX = '.clusterlet-token';

/**
 * A server URL as KUBERNETES_SERVICE_HOST and _PORT can say it (https, no path: in-cluster clients build
 * `https://host:port` from them), or why it cannot be.
 */
export function parseHostEndpoint(server: string): HostEndpoint | { error: string } {
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    return { error: `"${server}" is not a URL` };
  }
  if (url.protocol !== 'https:') return { error: `"${server}" is not an https URL: in-cluster clients speak https` };
  if (url.pathname !== '/' && url.pathname !== '') {
    return { error: `"${server}" has a path: in-cluster clients reach the API at the root of host:port` };
  }
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return { host, port: url.port === '' ? 443 : Number(url.port) };
}

/** The proxy's mode: its annotation, else `fallback`; an annotation of no mode is an error that names it. */
export function accessModeOf(proxy: V1Pod, fallback: ApiAccessMode): { mode: ApiAccessMode } | { error: string } {
  const value = proxy.metadata?.annotations?.[API_ACCESS_ANNOTATION];
  if (value === undefined) return { mode: fallback };
  if ((API_ACCESS_MODES as readonly string[]).includes(value)) return { mode: value as ApiAccessMode };
  return { error: `annotation ${API_ACCESS_ANNOTATION}: "${value}" is not one of ${API_ACCESS_MODES.join(', ')}: set one of them, `
    + "or remove it for the node's default" };
}

/** The key of a projection's token in the token Secret: by volume and source, so every projection has its own. */
function tokenKey(volume: string, source: number): string {
  return `token-${volume}-${source}`;
}

/** The projected volumes whose sources include a ServiceAccount token. */
function tokenVolumes(spec: V1PodSpec): V1Volume[] {
  return (spec.volumes ?? []).filter((v) => v.projected?.sources?.some((s) => s.serviceAccountToken) === true);
}

/**
 * The tokens the proxy's projected volumes ask for, one per serviceAccountToken source, in spec order; none for longer
 * than MAX_TOKEN_SECONDS.
 */
export function tokenNeeds(spec: V1PodSpec): TokenNeed[] {
  return tokenVolumes(spec).flatMap((v) => (v.projected?.sources ?? []).flatMap((s, i) => {
    const t = s.serviceAccountToken;
    if (!t) return [];
    return [{ key: tokenKey(v.name, i), ...(t.audience ? { audience: t.audience } : {}),
      expirationSeconds: Math.min(t.expirationSeconds ?? DEFAULT_TOKEN_SECONDS, MAX_TOKEN_SECONDS) }];
  }));
}

/** The proxy's ServiceAccount, as its admission resolved it. */
export function serviceAccountOf(spec: V1PodSpec | undefined): string {
  return spec?.serviceAccountName || spec?.serviceAccount || 'default';
}

/**
 * The token Secret's name in the member: the delegate's (the proxy's) with a suffix no pod mirror makes, cut and
 * made unique by a hash where the pod's name leaves no room for it.
 */
export function tokenSecretName(podName: string): string {
  const whole = `${podName}${SECRET_SUFFIX}`;
  if (whole.length <= SECRET_NAME_MAX) return whole;
  const hash = createHash('sha256').update(podName).digest('hex').slice(0, 10);
  const room = SECRET_NAME_MAX - SECRET_SUFFIX.length - hash.length - 1;
  return `${podName.slice(0, room).replace(/[-.]+$/, '')}-${hash}${SECRET_SUFFIX}`;
}

/** What the token Secret holds besides the tokens, and who it is for. */
export interface TokenSecretInput {
  name: string;
  namespace: string;
  /** The owner's labels (forge/owner.ts ownerLabels). */
  ownerLabels: Record<string, string>;
  proxy: { namespace: string; name: string; uid: string };
  serviceAccount: string;
  needs: TokenNeed[];
  /** Token by need key. */
  tokens: Record<string, string>;
  /** PEM bundle that verifies the host API server ('' when its clients trust the system roots). */
  ca: string;
  refreshAt: Date;
}

/** The member Secret that a host-mode delegate mounts: its tokens, the host's CA and the proxy's namespace. */
export function forgeTokenSecret(s: TokenSecretInput): V1Secret {
  const b64 = (v: string): string => Buffer.from(v, 'utf8').toString('base64');
  const data: Record<string, string> = { [CA_KEY]: b64(s.ca), [NAMESPACE_KEY]: b64(s.proxy.namespace) };
  for (const [key, token] of Object.entries(s.tokens)) data[key] = b64(token);
  return {
    apiVersion: 'v1', kind: 'Secret', type: 'Opaque',
    metadata: {
      name: s.name, namespace: s.namespace,
      labels: { ...s.ownerLabels, [ROLE_OBJECT_LABEL]: HOST_TOKEN_ROLE, [PROXY_UID_LABEL]: s.proxy.uid },
      annotations: {
        [PROXY_NAMESPACE_ANNOTATION]: s.proxy.namespace, [PROXY_NAME_ANNOTATION]: s.proxy.name,
        [SERVICE_ACCOUNT_ANNOTATION]: s.serviceAccount, [TOKENS_ANNOTATION]: JSON.stringify(s.needs),
        [REFRESH_AT_ANNOTATION]: s.refreshAt.toISOString(),
      },
    },
    data,
  };
}

/**
 * The proxy a token Secret says it is for (its proxy-uid label, proxy namespace and name annotations), or undefined when
 * it does not say. Written in the member, which may edit it: a hint of where to look on the host, never the proxy itself.
 */
export function tokenSecretProxy(secret: V1Secret): { namespace: string; name: string; uid: string } | undefined {
  const a = secret.metadata?.annotations ?? {};
  const uid = secret.metadata?.labels?.[PROXY_UID_LABEL];
  const namespace = a[PROXY_NAMESPACE_ANNOTATION];
  const name = a[PROXY_NAME_ANNOTATION];
  return uid && namespace && name ? { namespace, name, uid } : undefined;
}

/** What a token Secret says of itself (its annotations), or undefined for one that is not a complete token Secret. */
export function tokenSecretState(secret: V1Secret): {
  proxy: { namespace: string; name: string; uid: string }; serviceAccount: string; needs: TokenNeed[]; refreshAt: Date;
} | undefined {
  const a = secret.metadata?.annotations ?? {};
  const uid = secret.metadata?.labels?.[PROXY_UID_LABEL];
  const namespace = a[PROXY_NAMESPACE_ANNOTATION];
  const name = a[PROXY_NAME_ANNOTATION];
  const serviceAccount = a[SERVICE_ACCOUNT_ANNOTATION];
  const refreshAt = new Date(a[REFRESH_AT_ANNOTATION] ?? '');
  let needs: unknown;
  try {
    needs = JSON.parse(a[TOKENS_ANNOTATION] ?? '');
  } catch {
    return undefined;
  }
  if (!uid || !namespace || !name || !serviceAccount || Number.isNaN(refreshAt.getTime()) || !Array.isArray(needs)) return undefined;
  const valid = needs.every((n: unknown) => typeof n === 'object' && n !== null && typeof (n as TokenNeed).key === 'string'
    && typeof (n as TokenNeed).expirationSeconds === 'number');
  return valid ? { proxy: { namespace, name, uid }, serviceAccount, needs: needs as TokenNeed[], refreshAt } : undefined;
}

/**
 * When a token is refreshed, as the kubelet does (pkg/kubelet/token): at 80 % of its lifetime, or after 24 hours,
 * whichever comes first.
 */
export function refreshTime(issuedAt: Date, expiresAt: Date, maxAgeMs = 24 * 3600_000): Date {
  const life = expiresAt.getTime() - issuedAt.getTime();
  return new Date(issuedAt.getTime() + Math.min(life * 0.8, maxAgeMs));
}

/**
 * The env the kubelet sets for the `kubernetes` Service, pointing at the host API server. The KUBERNETES_PORT_443_*
 * names are the kubelet's for the member's Service (port 443): they point at the host too, whatever its port.
 */
export function hostServiceEnv(e: HostEndpoint): V1EnvVar[] {
  const addr = e.host.includes(':') ? `[${e.host}]` : e.host;
  const port = String(e.port);
  const url = `tcp://${addr}:${port}`;
  return [
    ['KUBERNETES_SERVICE_HOST', e.host], ['KUBERNETES_SERVICE_PORT', port], ['KUBERNETES_SERVICE_PORT_HTTPS', port],
    ['KUBERNETES_PORT', url], ['KUBERNETES_PORT_443_TCP', url], ['KUBERNETES_PORT_443_TCP_PROTO', 'tcp'],
    ['KUBERNETES_PORT_443_TCP_PORT', port], ['KUBERNETES_PORT_443_TCP_ADDR', e.host],
  ].map(([name, value]) => ({ name, value }));
}

/**
 * Applies the mode to a forged spec, a shallow copy of the proxy's whose containers are replaced, never written into.
 * Every mode sets automountServiceAccountToken false where it removes or replaces the host's token volume, so the
 * member's admission adds none of its own (member mode leaves it as the user set it, for the member to mount its own).
 */
export function applyApiAccess(spec: V1PodSpec, access: DelegateApiAccess): void {
  switch (access.mode) {
    case 'member': stripHostToken(spec); return;
    case 'none': stripAllTokens(spec); return;
    case 'host': hostTokens(spec, access.secretName, access.endpoint); return;
  }
}

// The volume the host's ServiceAccount admission added: a `kube-api-access-*` projected token, or a legacy
// `<sa>-token-*` secret. Its token is the host's; a user's own projected token volumes are kept.
function isHostTokenVolume(volume: V1Volume, serviceAccount: string): boolean {
  if (volume.projected) {
    return volume.name.startsWith(KUBE_API_ACCESS_PREFIX) && (volume.projected.sources ?? []).some((s) => s.serviceAccountToken);
  }
  return volume.secret?.secretName?.startsWith(`${serviceAccount}-token-`) ?? false;
}

function stripHostToken(spec: V1PodSpec): void {
  const serviceAccount = serviceAccountOf(spec);
  const removed = new Set((spec.volumes ?? []).filter((v) => isHostTokenVolume(v, serviceAccount)).map((v) => v.name));
  // The member's admission mounts the member's token for the SA of the same name only when the host mounted one;
  // with a host volume present, automountServiceAccountToken is left as the user set it.
  if (removed.size === 0) {
    spec.automountServiceAccountToken = false;
    return;
  }
  withoutVolumes(spec, removed);
}

// No token of any kind: the host's volume goes, and so do the token sources of the user's own projections (a
// projection left with nothing else goes with its mounts).
function stripAllTokens(spec: V1PodSpec): void {
  const serviceAccount = serviceAccountOf(spec);
  const removed = new Set<string>();
  const volumes: V1Volume[] = [];
  for (const v of spec.volumes ?? []) {
    if (isHostTokenVolume(v, serviceAccount)) { removed.add(v.name); continue; }
    const sources = v.projected?.sources;
    if (!v.projected || !sources?.some((s) => s.serviceAccountToken)) { volumes.push(v); continue; }
    const kept = sources.filter((s) => !s.serviceAccountToken);
    if (kept.length === 0) removed.add(v.name);
    else volumes.push({ ...v, projected: { ...v.projected, sources: kept } });
  }
  if (volumes.length > 0) spec.volumes = volumes;
  else delete spec.volumes;
  withoutVolumes(spec, removed);
  spec.automountServiceAccountToken = false;
}

// The host's tokens: every projection with a token source reads its tokens, the host's CA and the proxy's namespace
// from the token Secret instead; a legacy token secret goes (the host's token Secrets are never copied).
function hostTokens(spec: V1PodSpec, secretName: string, endpoint: HostEndpoint): void {
  const serviceAccount = serviceAccountOf(spec);
  const legacy = new Set((spec.volumes ?? []).filter((v) => !v.projected && isHostTokenVolume(v, serviceAccount)).map((v) => v.name));
  const projections = tokenVolumes(spec);
  spec.automountServiceAccountToken = false;
  if (projections.length === 0) {
    withoutVolumes(spec, legacy);
    return;
  }
  spec.volumes = (spec.volumes ?? []).map((v) => (projections.includes(v) ? hostProjection(v, secretName) : v));
  withoutVolumes(spec, legacy);
  const env = hostServiceEnv(endpoint);
  const withEnv = <C extends V1Container | V1EphemeralContainer>(c: C): C => {
    const own = new Set((c.env ?? []).map((e) => e.name));
    return { ...c, env: [...env.filter((e) => !own.has(e.name)), ...c.env ?? []] };
  };
  mapContainers(spec, withEnv);
}

// One projected volume with the token Secret in place of its token sources, of the host's root CA ConfigMap and of
// the namespace from the downward API (which would say the member's namespace).
function hostProjection(v: V1Volume, secretName: string): V1Volume {
  const fromSecret = (items: { key: string; path: string; mode?: number }[]): V1VolumeProjection =>
    ({ secret: { name: secretName, items } });
  const sources = (v.projected?.sources ?? []).flatMap((s, i): V1VolumeProjection[] => {
    if (s.serviceAccountToken) return [fromSecret([{ key: tokenKey(v.name, i), path: s.serviceAccountToken.path }])];
    if (s.configMap?.name === ROOT_CA_CONFIGMAP) {
      const items = s.configMap.items ?? [{ key: CA_KEY, path: CA_KEY }];
      return [fromSecret(items.filter((it) => it.key === CA_KEY).map((it) => ({ ...it, key: CA_KEY })))];
    }
    const items = s.downwardAPI?.items;
    if (items?.some((it) => it.fieldRef?.fieldPath === 'metadata.namespace')) {
      const namespace = items.filter((it) => it.fieldRef?.fieldPath === 'metadata.namespace');
      const rest = items.filter((it) => it.fieldRef?.fieldPath !== 'metadata.namespace');
      return [
        fromSecret(namespace.map((it) => ({ key: NAMESPACE_KEY, path: it.path, ...(it.mode !== undefined ? { mode: it.mode } : {}) }))),
        ...(rest.length > 0 ? [{ downwardAPI: { items: rest } }] : []),
      ];
    }
    return [s];
  });
  return { ...v, projected: { ...v.projected, sources } };
}

// The spec without the named volumes and every container's mounts of them.
function withoutVolumes(spec: V1PodSpec, removed: Set<string>): void {
  if (removed.size === 0) return;
  const volumes = nonEmpty(spec.volumes?.filter((v) => !removed.has(v.name)));
  if (volumes) spec.volumes = volumes;
  else delete spec.volumes;
  const strip = <C extends V1Container | V1EphemeralContainer>(container: C): C => {
    const copy = { ...container };
    const mounts = nonEmpty(container.volumeMounts?.filter((m) => !removed.has(m.name)));
    if (mounts) copy.volumeMounts = mounts;
    else delete copy.volumeMounts;
    return copy;
  };
  mapContainers(spec, strip);
}

/** Replaces every container of the spec (init, app, ephemeral) with `fn`'s copy of it. */
function mapContainers(spec: V1PodSpec, fn: <C extends V1Container | V1EphemeralContainer>(c: C) => C): void {
  spec.containers = spec.containers.map(fn);
  if (spec.initContainers) spec.initContainers = spec.initContainers.map(fn);
  if (spec.ephemeralContainers) spec.ephemeralContainers = spec.ephemeralContainers.map(fn);
}
