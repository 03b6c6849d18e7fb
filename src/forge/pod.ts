// Pod forge: pure functions from a proxy pod (host, bound to the virtual node) to its delegate (member): the spec
// to create, and the update and in-place resize of a running delegate. The way back (status) is forge/status.ts.
// See docs/ARCHITECTURE.md and docs/CONVENTIONS.md.

import type {
  V1Affinity,
  V1Container,
  V1EphemeralContainer,
  V1NodeSelector,
  V1NodeSelectorRequirement,
  V1NodeSelectorTerm,
  V1ObjectMeta,
  V1Pod,
  V1PodSpec,
  V1Toleration,
} from '@kubernetes/client-node';
import {
  HOSTNAME_LABEL,
  MEMBER_LABEL,
  NODE_LABEL,
  ORIGIN_LABEL,
  PROXY_NAMESPACE_ANNOTATION,
  PROXY_NAME_ANNOTATION,
  PROXY_UID_LABEL,
  RESTARTS_ANNOTATION,
  ROLE_LABEL,
  VIRTUAL_NODE_ROLE,
  VIRTUAL_NODE_TAINT_KEY,
  VIRTUAL_NODE_TYPE,
  VIRTUAL_NODE_TYPE_LABEL, VIRTUAL_NODE_LABEL,
} from './keys.ts';
import { constrainSpec, type GroupConstraint } from './groups.ts';
import { nonEmpty } from './objects.ts';
import { delegateVolumes } from './volumes.ts';
import { applyApiAccess, type DelegateApiAccess } from './apiaccess.ts';

export interface DelegateContext {
  /** Name of the host cluster, the value of our origin label. */
  hostName: string;
  /** Name of the virtual node the proxy is bound to. */
  nodeName: string;
  /** Member namespace the proxy's namespace maps to. */
  memberNamespace: string;
  /** Restarts so far per container, when this delegate replaces a lost one (see restartsAfterLoss). */
  restarts?: Record<string, number>;
  /**
   * The labels configured on the virtual node (`labels` of the member in the provider config). Selector terms
   * on them only chose the virtual node: they are stripped like its built-in identity labels, except the
   * well-known labels member nodes carry themselves (see MEMBER_NODE_LABELS).
   */
  nodeLabels?: Record<string, string>;
  /** Which API server and identity the delegate's token is for (forge/apiaccess.ts); default: the member's. */
  apiAccess?: DelegateApiAccess;
  /**
   * The virtual node the proxy is bound to, when it stands for a group of the member's nodes (a pool or one member
   * node, forge/groups.ts) rather than the whole member (`nodeName`): the delegate is labelled with it and constrained
   * to the group.
   */
  virtualNode?: { name: string; constraint?: GroupConstraint };
}

// Spec fields that bind the pod to the host.
const HOST_ONLY_SPEC_FIELDS = [
  'nodeName', // the member scheduler picks a member node
  'priority', // the member's Priority admission computes it, and rejects a value it did not compute
  'priorityClassName', // the member may not have the class, and creation would fail
  'preemptionPolicy', // comes with the priority class
  'schedulerName', // the host's scheduler does not run in the member: the member's default one schedules
  'overhead', // the member's RuntimeClass admission sets it, and rejects a value that differs
  'readinessGates', // host controllers set their conditions on the proxy; host/pod/status.ts applies them
] as const satisfies readonly (keyof V1PodSpec)[];

const NOT_READY_TAINT = 'node.kubernetes.io/not-ready';
const UNREACHABLE_TAINT = 'node.kubernetes.io/unreachable';
const DEFAULT_TOLERATION_SECONDS = 300;

/** The delegate to create in the member for a proxy. */
export function forgeDelegatePod(proxy: V1Pod, ctx: DelegateContext): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: delegateMetadata(proxy, ctx),
    spec: constrainSpec(withClaims(proxy.metadata?.name, withoutEphemeralContainers(
      forgeDelegateSpec(proxy.spec ?? { containers: [] }, virtualNodeIdentity(ctx), ctx.apiAccess))), ctx.virtualNode?.constraint),
  };
}

// Everything else in the metadata (uid, resourceVersion, owners, finalizers, managedFields…) is the host's.
function delegateMetadata(proxy: V1Pod, ctx: DelegateContext): V1ObjectMeta {
  const meta = proxy.metadata ?? {};
  return {
    name: meta.name,
    namespace: ctx.memberNamespace,
    labels: {
      ...meta.labels,
      [ORIGIN_LABEL]: ctx.hostName,
      [PROXY_UID_LABEL]: meta.uid ?? '',
      [NODE_LABEL]: ctx.nodeName,
      ...(ctx.virtualNode && ctx.virtualNode.name !== ctx.nodeName ? { [VIRTUAL_NODE_LABEL]: ctx.virtualNode.name } : {}),
    },
    annotations: {
      ...meta.annotations,
      [PROXY_NAMESPACE_ANNOTATION]: meta.namespace ?? '',
      [PROXY_NAME_ANNOTATION]: meta.name ?? '',
      ...(ctx.restarts && Object.keys(ctx.restarts).length > 0 ? { [RESTARTS_ANNOTATION]: JSON.stringify(ctx.restarts) } : {}),
    },
  };
}

// A generic ephemeral volume mounts the claim the host made for it (forge/volumes.ts delegateVolumes).
function withClaims(podName: string | undefined, spec: V1PodSpec): V1PodSpec {
  setOrDelete(spec, 'volumes', delegateVolumes(podName, spec.volumes));
  return spec;
}

// Ephemeral containers cannot be set when a pod is created: they are added to the running delegate through its
// `ephemeralcontainers` subresource (ephemeralContainersToAdd), as `kubectl debug` adds them to the proxy.
function withoutEphemeralContainers(spec: V1PodSpec): V1PodSpec {
  const { ephemeralContainers: _, ...rest } = spec;
  return rest;
}

/**
 * The proxy's ephemeral containers the delegate lacks, as forged for the member (the host's token mounts
 * stripped like the other containers'; the target container has the same name in the delegate), in the proxy's
 * order: for the delegate's `ephemeralcontainers` subresource. Never removals: the API cannot remove one.
 * One the proxy's status already lists ran in an earlier delegate, since lost: the kubelet never restarts an
 * ephemeral container (not even when its pod restarts), so it is not added to this one.
 */
export function ephemeralContainersToAdd(proxy: V1Pod, delegate: V1Pod, ctx: DelegateContext): V1EphemeralContainer[] {
  const spec = proxy.spec;
  const wanted = spec?.ephemeralContainers ?? [];
  if (!spec || wanted.length === 0) return [];
  const present = new Set([
    ...(delegate.spec?.ephemeralContainers ?? []).map((c) => c.name),
    ...(proxy.status?.ephemeralContainerStatuses ?? []).map((s) => s.name),
  ]);
  if (wanted.every((c) => present.has(c.name))) return [];
  const forged = forgeDelegateSpec(spec, virtualNodeIdentity(ctx), ctx.apiAccess).ephemeralContainers ?? [];
  return forged.filter((c) => !present.has(c.name));
}

// A shallow copy: what differs from the proxy's is replaced, never written into, so the rest is shared with the
// proxy (the informer's object), which is never changed here.
function forgeDelegateSpec(proxySpec: V1PodSpec, node: VirtualNodeIdentity, access: DelegateApiAccess = { mode: 'member' }): V1PodSpec {
  const spec = { ...proxySpec };
  for (const field of HOST_ONLY_SPEC_FIELDS) delete spec[field];
  setOrDelete(spec, 'tolerations', delegateTolerations(proxySpec));
  setOrDelete(spec, 'nodeSelector', stripNodeSelector(spec.nodeSelector, node.labels));
  setOrDelete(spec, 'affinity', stripAffinity(spec.affinity, node));
  applyApiAccess(spec, access);
  return spec;
}

function delegateTolerations(proxySpec: V1PodSpec): V1Toleration[] | undefined {
  return nonEmpty(proxySpec.tolerations?.filter((t) => !isHostOnlyToleration(t)));
}

function isHostOnlyToleration(t: V1Toleration): boolean {
  if (t.key === VIRTUAL_NODE_TAINT_KEY) return true;
  // The exact tolerations the host's DefaultTolerationSeconds admission adds: the member's admission adds its own.
  return (
    (t.key === NOT_READY_TAINT || t.key === UNREACHABLE_TAINT) &&
    t.operator === 'Exists' &&
    t.effect === 'NoExecute' &&
    t.tolerationSeconds === DEFAULT_TOLERATION_SECONDS
  );
}

// Well-known labels the member's own nodes carry (set by their kubelets, cloud providers, node feature and
// GPU discovery): the member's scheduler evaluates terms on them against its nodes, even when the same label is
// configured on the virtual node.
const MEMBER_NODE_LABELS = [
  'kubernetes.io/os', 'kubernetes.io/arch', 'beta.kubernetes.io/os', 'beta.kubernetes.io/arch',
  'node.kubernetes.io/instance-type', 'beta.kubernetes.io/instance-type',
];
const MEMBER_NODE_LABEL_PREFIXES = ['topology.kubernetes.io/', 'failure-domain.beta.kubernetes.io/', 'feature.node.kubernetes.io/',
  'nvidia.com/'];

function isMemberNodeLabel(key: string): boolean {
  return MEMBER_NODE_LABELS.includes(key) || MEMBER_NODE_LABEL_PREFIXES.some((p) => key.startsWith(p));
}

// The virtual node's identity labels and fields; `undefined` stands for a value not known here (any value).
interface VirtualNodeIdentity {
  labels: Map<string, string | undefined>;
  fields: Map<string, string | undefined>;
}

function virtualNodeIdentity(ctx: DelegateContext): VirtualNodeIdentity {
  const labels = new Map<string, string | undefined>([
    [VIRTUAL_NODE_TYPE_LABEL, VIRTUAL_NODE_TYPE],
    [ROLE_LABEL, VIRTUAL_NODE_ROLE],
    [HOSTNAME_LABEL, ctx.virtualNode?.name ?? ctx.nodeName],
    [MEMBER_LABEL, undefined],
  ]);
  // Configured labels come last on the node too (forgeNodeLabels): one of them may replace a built-in value.
  for (const [key, value] of Object.entries(ctx.nodeLabels ?? {})) {
    if (!isMemberNodeLabel(key)) labels.set(key, value);
  }
  return { labels, fields: new Map([['metadata.name', ctx.virtualNode?.name ?? ctx.nodeName]]) };
}

function stripNodeSelector(selector: Record<string, string> | undefined, identity: Map<string, string | undefined>):
  Record<string, string> | undefined {
  if (!selector) return undefined;
  const kept = Object.entries(selector).filter(([key, value]) => {
    if (!identity.has(key)) return true;
    const own = identity.get(key);
    return own !== undefined && own !== value;
  });
  return kept.length > 0 ? Object.fromEntries(kept) : undefined;
}

// A requirement on an identity key that the virtual node satisfies: it selected the virtual node, and in the
// member it means nothing or excludes every node.
function targetsVirtualNode(req: V1NodeSelectorRequirement, identity: Map<string, string | undefined>): boolean {
  if (!identity.has(req.key)) return false;
  const own = identity.get(req.key);
  const values = req.values ?? [];
  switch (req.operator) {
    case 'In':
      return own === undefined || values.includes(own);
    case 'NotIn':
      return own === undefined || !values.includes(own);
    case 'Exists':
      return true;
    default:
      return false;
  }
}

// The term without its virtual-node requirements; `undefined` when nothing else was left in it.
function stripTerm(term: V1NodeSelectorTerm, node: VirtualNodeIdentity): V1NodeSelectorTerm | undefined {
  const expressions = term.matchExpressions ?? [];
  const matchFields = term.matchFields ?? [];
  const keptExpressions = expressions.filter((r) => !targetsVirtualNode(r, node.labels));
  const keptFields = matchFields.filter((r) => !targetsVirtualNode(r, node.fields));
  const removed = expressions.length + matchFields.length - keptExpressions.length - keptFields.length;
  if (removed > 0 && keptExpressions.length + keptFields.length === 0) return undefined;
  const result: V1NodeSelectorTerm = {};
  if (keptExpressions.length > 0) result.matchExpressions = keptExpressions;
  if (keptFields.length > 0) result.matchFields = keptFields;
  return result;
}

function stripRequired(selector: V1NodeSelector | undefined, node: VirtualNodeIdentity): V1NodeSelector | undefined {
  if (!selector) return undefined;
  const terms = selector.nodeSelectorTerms.map((t) => stripTerm(t, node));
  // Terms are ORed: one that only selected the virtual node admits every member node, so nothing is required.
  if (terms.some((t) => t === undefined)) return undefined;
  return { nodeSelectorTerms: terms.filter((t) => t !== undefined) };
}

function stripAffinity(affinity: V1Affinity | undefined, node: VirtualNodeIdentity): V1Affinity | undefined {
  if (!affinity) return undefined;
  const result: V1Affinity = { ...affinity };
  const nodeAffinity = { ...affinity.nodeAffinity };
  const required = stripRequired(nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution, node);
  setOrDelete(nodeAffinity, 'requiredDuringSchedulingIgnoredDuringExecution', required);
  const preferred = (nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution ?? []).flatMap((p) => {
    const preference = stripTerm(p.preference, node);
    return preference ? [{ ...p, preference }] : [];
  });
  setOrDelete(nodeAffinity, 'preferredDuringSchedulingIgnoredDuringExecution', nonEmpty(preferred));
  setOrDelete(result, 'nodeAffinity', Object.keys(nodeAffinity).length > 0 ? nodeAffinity : undefined);
  return Object.keys(result).length > 0 ? result : undefined;
}

/**
 * The actual delegate with the fields the API lets change on a pod brought to what the proxy asks for, or
 * `undefined` when they already match. Only those fields are compared, so values the member defaults or adds
 * (imagePullPolicy, its own tolerations, annotations of its webhooks) never count as a difference. Labels and
 * annotations removed from the proxy are not detected here.
 */
export function delegateUpdate(proxy: V1Pod, delegate: V1Pod, ctx: DelegateContext): V1Pod | undefined {
  if (!delegate.spec) return undefined;
  // What the delegate should have of the fields compared, straight from the proxy (forging keeps images, the deadline
  // and the tolerations but the host's): compared first, copied only when something differs, as this runs on every
  // lifecycle sync of a running pod.
  const want = proxy.spec ?? { containers: [] };
  const meta = delegateMetadata(proxy, ctx);
  const spec = delegate.spec;
  const labels = merged(delegate.metadata?.labels, meta.labels);
  const annotations = merged(delegate.metadata?.annotations, meta.annotations);
  const containers = withImages(spec.containers, want.containers);
  const initContainers = withImages(spec.initContainers, want.initContainers);
  const deadline = want.activeDeadlineSeconds;
  const deadlineChanged = deadline !== undefined && deadline !== spec.activeDeadlineSeconds;
  const tolerations = withTolerations(spec.tolerations, delegateTolerations(want));
  if (!labels && !annotations && !containers && !initContainers && !deadlineChanged && !tolerations) return undefined;
  const next = structuredClone({ ...delegate, spec });
  next.metadata ??= {};
  if (labels) next.metadata.labels = labels;
  if (annotations) next.metadata.annotations = annotations;
  if (containers) next.spec.containers = containers;
  if (initContainers) next.spec.initContainers = initContainers;
  // The API only lets the deadline be set or lowered; the proxy is under the same rule, so copying it is allowed.
  if (deadlineChanged) next.spec.activeDeadlineSeconds = deadline;
  if (tolerations) next.spec.tolerations = tolerations;
  return next;
}

/** `actual` with what `desired` sets that it lacks or has otherwise; undefined when nothing is missing. */
function merged(actual: Record<string, string> | undefined, desired: Record<string, string> | undefined): Record<string, string> | undefined {
  const have = actual ?? {};
  const missing = Object.entries(desired ?? {}).filter(([key, value]) => have[key] !== value);
  return missing.length === 0 ? undefined : { ...have, ...Object.fromEntries(missing) };
}

/** The containers with the images `desired` names for them; undefined when every image is the same. */
function withImages<C extends V1Container>(actual: C[] | undefined, desired: V1Container[] | undefined): C[] | undefined {
  const image = (c: C): string | undefined => desired?.find((d) => d.name === c.name)?.image;
  if (!actual?.some((c) => image(c) !== undefined && image(c) !== c.image)) return undefined;
  return actual.map((c) => {
    const want = image(c);
    return want !== undefined && want !== c.image ? { ...c, image: want } : c;
  });
}

/** The tolerations with those `desired` has and they lack added; undefined when none is missing. */
function withTolerations(actual: V1Toleration[] | undefined, desired: V1Toleration[] | undefined): V1Toleration[] | undefined {
  const have = actual ?? [];
  const missing = (desired ?? []).filter((d) => !have.some((a) => tolerationEqual(a, d)));
  return missing.length === 0 ? undefined : [...have, ...missing];
}

function tolerationEqual(a: V1Toleration, b: V1Toleration): boolean {
  return (
    (a.key ?? '') === (b.key ?? '') &&
    (a.operator || 'Equal') === (b.operator || 'Equal') &&
    (a.value ?? '') === (b.value ?? '') &&
    (a.effect ?? '') === (b.effect ?? '') &&
    a.tolerationSeconds === b.tolerationSeconds
  );
}

export function isDaemonSetPod(pod: V1Pod): boolean {
  return (pod.metadata?.ownerReferences ?? []).some((r) => r.kind === 'DaemonSet' && r.controller === true);
}

export function isTerminal(pod: V1Pod): boolean {
  const phase = pod.status?.phase;
  return phase === 'Succeeded' || phase === 'Failed';
}

/** Bound to a node of its cluster. */
export function isScheduled(pod: V1Pod): boolean {
  return Boolean(pod.spec?.nodeName);
}

// Sets `field`, or removes it when there is no value, so that forged objects carry no `undefined` keys.
function setOrDelete<T extends object, K extends keyof T>(target: T, field: K, value: T[K] | undefined): void {
  if (value === undefined) delete target[field];
  else target[field] = value;
}

