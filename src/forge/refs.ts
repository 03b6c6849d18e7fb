// What a pod spec refers to, and the mirrored copies of those objects. Pure functions.
import type { V1ConfigMap, V1Container, V1ObjectMeta, V1PodSpec, V1Secret, V1ServiceAccount } from '@kubernetes/client-node';
import { EXPORTED_FROM_ANNOTATION, EXPORT_LABEL, MEMBER_LABEL, NODE_LABEL, ORIGIN_LABEL, PROXY_NAMESPACE_ANNOTATION } from './keys.ts';
import { byCodeUnits } from '../util/order.ts';

export type RefKind = 'ConfigMap' | 'Secret' | 'ServiceAccount';

export interface ObjectRef {
  kind: RefKind;
  name: string;
  /** The pod runs without it (optional: true, or imagePullSecrets, which the kubelet tolerates missing). */
  optional: boolean;
}

/** Objects the host provides for every namespace, which members provide themselves: never mirrored. */
export const NEVER_MIRRORED: Record<RefKind, ReadonlySet<string>> = {
  ConfigMap: new Set(['kube-root-ca.crt']),
  Secret: new Set(),
  ServiceAccount: new Set(),
};

/** Every ConfigMap, Secret and ServiceAccount a pod spec refers to, deduplicated (mandatory wins). */
export function podReferences(spec: V1PodSpec | undefined): ObjectRef[] {
  if (!spec) return [];
  const refs = new Map<string, ObjectRef>();
  const add = (kind: RefKind, name: string | undefined, optional: boolean | undefined): void => {
    if (!name || NEVER_MIRRORED[kind].has(name)) return;
    const key = `${kind}/${name}`;
    const prev = refs.get(key);
    refs.set(key, { kind, name, optional: (prev?.optional ?? true) && optional === true });
  };
  for (const v of spec.volumes ?? []) {
    if (v.configMap) add('ConfigMap', v.configMap.name, v.configMap.optional);
    if (v.secret) add('Secret', v.secret.secretName, v.secret.optional);
    for (const s of v.projected?.sources ?? []) {
      if (s.configMap) add('ConfigMap', s.configMap.name, s.configMap.optional);
      if (s.secret) add('Secret', s.secret.name, s.secret.optional);
    }
  }
  const containers: V1Container[] = [...(spec.initContainers ?? []), ...(spec.containers ?? [])];
  for (const c of containers) {
    for (const e of c.env ?? []) {
      if (e.valueFrom?.configMapKeyRef) add('ConfigMap', e.valueFrom.configMapKeyRef.name, e.valueFrom.configMapKeyRef.optional);
      if (e.valueFrom?.secretKeyRef) add('Secret', e.valueFrom.secretKeyRef.name, e.valueFrom.secretKeyRef.optional);
    }
    for (const e of c.envFrom ?? []) {
      if (e.configMapRef) add('ConfigMap', e.configMapRef.name, e.configMapRef.optional);
      if (e.secretRef) add('Secret', e.secretRef.name, e.secretRef.optional);
    }
  }
  for (const s of spec.imagePullSecrets ?? []) add('Secret', s.name, true);
  add('ServiceAccount', spec.serviceAccountName || 'default', false);
  return [...refs.values()];
}

export interface MirrorContext {
  hostName: string;
  /** The virtual node that owns the copy (clusterlet.io/node). */
  nodeName: string;
  memberNamespace: string;
  hostNamespace: string;
}

/** The metadata of a host object's copy in the member: its labels and annotations, owned, naming its host namespace. */
export function mirroredMeta(host: V1ObjectMeta | undefined, ctx: MirrorContext): V1ObjectMeta {
  return {
    name: host?.name,
    namespace: ctx.memberNamespace,
    labels: { ...host?.labels, [ORIGIN_LABEL]: ctx.hostName, [NODE_LABEL]: ctx.nodeName },
    annotations: { ...withoutKubectlAnnotations(host?.annotations), [PROXY_NAMESPACE_ANNOTATION]: ctx.hostNamespace },
  };
}

/** `kubectl apply`'s last-applied annotation would carry the host's data a second time: leave it behind. */
function withoutKubectlAnnotations(a: Record<string, string> | undefined): Record<string, string> {
  const { 'kubectl.kubernetes.io/last-applied-configuration': _drop, ...rest } = a ?? {};
  return rest;
}

/** Secrets that are host credentials: never copied, whatever refers to them. */
export function isHostCredential(secret: V1Secret): boolean {
  return secret.type === 'kubernetes.io/service-account-token' || secret.type === 'bootstrap.kubernetes.io/token';
}

export function forgeMirroredConfigMap(host: V1ConfigMap, ctx: MirrorContext): V1ConfigMap {
  return {
    apiVersion: 'v1', kind: 'ConfigMap', metadata: mirroredMeta(host.metadata, ctx),
    data: host.data, binaryData: host.binaryData, immutable: host.immutable,
  };
}

export function forgeMirroredSecret(host: V1Secret, ctx: MirrorContext): V1Secret {
  return {
    apiVersion: 'v1', kind: 'Secret', metadata: mirroredMeta(host.metadata, ctx),
    type: host.type, data: host.data, immutable: host.immutable,
  };
}

/** A ServiceAccount of the pod's name in the member: only its existence matters (the member mints tokens). */
export function forgeServiceAccount(name: string, ctx: MirrorContext): V1ServiceAccount {
  return { apiVersion: 'v1', kind: 'ServiceAccount', metadata: mirroredMeta({ name }, ctx) };
}

/** JSON with object keys sorted: equal for equal content whatever the key order. */
export const sortedJSON = (v: unknown): string => JSON.stringify(v, (_k, val: unknown) =>
  val && typeof val === 'object' && !Array.isArray(val)
    ? Object.fromEntries(Object.entries(val as Record<string, unknown>).sort(([a], [b]) => byCodeUnits(a, b)))
    : val);

/** Whether an existing copy already carries the desired content (data, type, labels, annotations). */
export function mirrorMatches(desired: V1ConfigMap | V1Secret, actual: V1ConfigMap | V1Secret): boolean {
  const pick = (o: V1ConfigMap | V1Secret) => ({
    data: o.data ?? {}, binaryData: (o as V1ConfigMap).binaryData ?? {}, type: (o as V1Secret).type ?? '',
    labels: o.metadata?.labels ?? {}, annotations: o.metadata?.annotations ?? {}, immutable: o.immutable ?? false,
  });
  const d = pick(desired);
  const a = pick(actual);
  // The API server defaults a Secret's type to Opaque.
  if (d.type === '' && a.type === 'Opaque') a.type = '';
  return sortedJSON(d) === sortedJSON(a);
}

export interface ExportContext { member: string; hostNamespace: string; memberNamespace: string }

/** A member ConfigMap/Secret labelled for export, as its copy in the host namespace. */
export function forgeExported<T extends V1ConfigMap | V1Secret>(obj: T, ctx: ExportContext): T {
  const { [EXPORT_LABEL]: _e, ...labels } = obj.metadata?.labels ?? {};
  const copy = {
    ...obj,
    metadata: {
      name: obj.metadata?.name, namespace: ctx.hostNamespace,
      labels: { ...labels, [MEMBER_LABEL]: ctx.member },
      annotations: { ...withoutKubectlAnnotations(obj.metadata?.annotations), [EXPORTED_FROM_ANNOTATION]: `${ctx.member}/${ctx.memberNamespace}` },
    },
  };
  return copy as T;
}

