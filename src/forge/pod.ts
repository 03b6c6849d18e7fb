// Pod forge: pure functions between a proxy pod (host, bound to the virtual node) and its delegate (member).
// Proxy spec in, delegate out; delegate status in, proxy status out. See docs/ARCHITECTURE.md and docs/CONVENTIONS.md.

import { isDeepStrictEqual } from 'node:util';
import type {
  V1Affinity,
  V1Container,
  V1ContainerStatus,
  V1NodeSelector,
  V1NodeSelectorRequirement,
  V1NodeSelectorTerm,
  V1Pod,
  V1PodCondition,
  V1PodReadinessGate,
  V1PodSpec,
  V1PodStatus,
  V1Toleration,
  V1Volume,
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
  VIRTUAL_NODE_TYPE_LABEL,
} from './keys.ts';

export interface DelegateContext {
  /** Name of the host cluster, the value of our origin label. */
  originCluster: string;
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
}

export interface ProxyStatusContext {
  /** Address of the virtual node. */
  hostIP: string;
  /** The proxy as it is now: its conditions owned by host controllers and its readiness gates are kept. */
  proxy?: V1Pod;
}

// Spec fields that bind the pod to the host.
const HOST_ONLY_SPEC_FIELDS = [
  'nodeName', // the member scheduler picks a member node
  'ephemeralContainers', // cannot be set when a pod is created
  'priority', // the member's Priority admission computes it, and rejects a value it did not compute
  'priorityClassName', // the member may not have the class, and creation would fail
  'preemptionPolicy', // comes with the priority class
  'schedulerName', // the host's scheduler does not run in the member: the member's default one schedules
  'overhead', // the member's RuntimeClass admission sets it, and rejects a value that differs
  'readinessGates', // host controllers set their conditions on the proxy; forgeProxyStatus applies them
] as const satisfies readonly (keyof V1PodSpec)[];

const KUBE_API_ACCESS_PREFIX = 'kube-api-access-';
const NOT_READY_TAINT = 'node.kubernetes.io/not-ready';
const UNREACHABLE_TAINT = 'node.kubernetes.io/unreachable';
const DEFAULT_TOLERATION_SECONDS = 300;
// What the kubelet reports for a container that was lost rather than seen to exit.
const LOST_CONTAINER_EXIT_CODE = 137;

// Conditions the member's kubelet and scheduler set on the delegate; they replace the proxy's.
const DELEGATE_CONDITIONS = new Set([
  'PodScheduled',
  'Initialized',
  'ContainersReady',
  'Ready',
  'PodReadyToStartContainers',
  'PodResizePending',
  'PodResizeInProgress',
  'DisruptionTarget',
]);
// Of those, the ones the host also sets on the proxy (binding, eviction): kept while the delegate has none.
const HOST_SHARED_CONDITIONS = new Set(['PodScheduled', 'DisruptionTarget']);

/** The delegate to create in the member for a proxy. */
export function forgeDelegatePod(proxy: V1Pod, ctx: DelegateContext): V1Pod {
  const meta = proxy.metadata ?? {};
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    // Everything else in the metadata (uid, resourceVersion, owners, finalizers, managedFields…) is the host's.
    metadata: {
      name: meta.name,
      namespace: ctx.memberNamespace,
      labels: {
        ...meta.labels,
        [ORIGIN_LABEL]: ctx.originCluster,
        [PROXY_UID_LABEL]: meta.uid ?? '',
        [NODE_LABEL]: ctx.nodeName,
      },
      annotations: {
        ...meta.annotations,
        [PROXY_NAMESPACE_ANNOTATION]: meta.namespace ?? '',
        [PROXY_NAME_ANNOTATION]: meta.name ?? '',
        ...(ctx.restarts && Object.keys(ctx.restarts).length > 0 ? { [RESTARTS_ANNOTATION]: JSON.stringify(ctx.restarts) } : {}),
      },
    },
    spec: forgeDelegateSpec(proxy.spec ?? { containers: [] }, virtualNodeIdentity(ctx)),
  };
}

function forgeDelegateSpec(proxySpec: V1PodSpec, node: VirtualNodeIdentity): V1PodSpec {
  const spec = structuredClone(proxySpec);
  for (const field of HOST_ONLY_SPEC_FIELDS) delete spec[field];
  setOrDelete(spec, 'tolerations', nonEmpty(spec.tolerations?.filter((t) => !isHostOnlyToleration(t))));
  setOrDelete(spec, 'nodeSelector', stripNodeSelector(spec.nodeSelector, node.labels));
  setOrDelete(spec, 'affinity', stripAffinity(spec.affinity, node));
  stripHostToken(spec);
  return spec;
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
    [HOSTNAME_LABEL, ctx.nodeName],
    [MEMBER_LABEL, undefined],
  ]);
  // Configured labels come last on the node too (forgeNodeLabels): one of them may replace a built-in value.
  for (const [key, value] of Object.entries(ctx.nodeLabels ?? {})) {
    if (!isMemberNodeLabel(key)) labels.set(key, value);
  }
  return { labels, fields: new Map([['metadata.name', ctx.nodeName]]) };
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

// The volume the host's ServiceAccount admission added: a `kube-api-access-*` projected token, or a legacy
// `<sa>-token-*` secret. Its token is the host's; a user's own projected token volumes are kept.
function isHostTokenVolume(volume: V1Volume, serviceAccount: string): boolean {
  if (volume.projected) {
    return volume.name.startsWith(KUBE_API_ACCESS_PREFIX) && (volume.projected.sources ?? []).some((s) => s.serviceAccountToken);
  }
  return volume.secret?.secretName?.startsWith(`${serviceAccount}-token-`) ?? false;
}

function stripHostToken(spec: V1PodSpec): void {
  const serviceAccount = spec.serviceAccountName || spec.serviceAccount || 'default';
  const removed = new Set((spec.volumes ?? []).filter((v) => isHostTokenVolume(v, serviceAccount)).map((v) => v.name));
  // The member's admission mounts the member's token for the SA of the same name only when the host mounted one;
  // with a host volume present, automountServiceAccountToken is left as the user set it.
  if (removed.size === 0) {
    spec.automountServiceAccountToken = false;
    return;
  }
  setOrDelete(spec, 'volumes', nonEmpty(spec.volumes?.filter((v) => !removed.has(v.name))));
  for (const container of [...spec.containers, ...(spec.initContainers ?? [])]) {
    setOrDelete(container, 'volumeMounts', nonEmpty(container.volumeMounts?.filter((m) => !removed.has(m.name))));
  }
}

/**
 * The proxy's status from its delegate's. The proxy is Pending until the delegate is scheduled in the member
 * (or terminal); hostIP is the virtual node's; the member's pod IPs are reported as they are.
 */
export function forgeProxyStatus(delegate: V1Pod, ctx: ProxyStatusContext): V1PodStatus {
  const source = structuredClone(delegate.status ?? {});
  const earlier = delegateRestarts(delegate);
  if (earlier) {
    for (const list of [source.containerStatuses, source.initContainerStatuses]) {
      for (const cs of list ?? []) cs.restartCount = (cs.restartCount ?? 0) + (earlier[cs.name] ?? 0);
    }
  }
  return compact({
    phase: proxyPhase(delegate),
    conditions: nonEmpty(proxyConditions(source.conditions ?? [], ctx.proxy)),
    message: source.message,
    reason: source.reason,
    containerStatuses: source.containerStatuses,
    initContainerStatuses: source.initContainerStatuses,
    ephemeralContainerStatuses: source.ephemeralContainerStatuses,
    hostIP: ctx.hostIP,
    hostIPs: [{ ip: ctx.hostIP }],
    podIP: source.podIP,
    podIPs: source.podIPs,
    startTime: source.startTime,
    qosClass: source.qosClass,
  });
}

/** Restarts of earlier delegates, per container, that a delegate carries (RESTARTS_ANNOTATION). */
function delegateRestarts(delegate: V1Pod): Record<string, number> | undefined {
  const raw = delegate.metadata?.annotations?.[RESTARTS_ANNOTATION];
  if (!raw) return undefined;
  try {
    const parsed = JSON.parse(raw) as unknown;
    if (!parsed || typeof parsed !== 'object') return undefined;
    return Object.fromEntries(Object.entries(parsed).filter(([, v]) => Number.isInteger(v) && (v as number) >= 0)) as Record<string, number>;
  } catch {
    return undefined;
  }
}

/**
 * The restarts to carry over when a lost delegate is created again: what the proxy shows for each container,
 * plus one for the loss itself (the container was killed with its pod).
 */
export function restartsAfterLoss(proxy: V1Pod): Record<string, number> {
  const out: Record<string, number> = {};
  for (const c of proxy.spec?.containers ?? []) {
    const cs = proxy.status?.containerStatuses?.find((s) => s.name === c.name);
    out[c.name] = (cs?.restartCount ?? 0) + 1;
  }
  return out;
}

/**
 * Reasons of a DisruptionTarget condition after which the member deletes the pod (pod GC of a lost node, taint
 * eviction, the Eviction API, preemption). A delegate Failed for one of these is on its way out, not finished.
 */
const DELETION_DISRUPTIONS = new Set(['DeletionByPodGC', 'DeletionByTaintManager', 'EvictionByEvictionAPI', 'PreemptionByScheduler']);

/** Why the member is removing the delegate (a DisruptionTarget reason that ends in deletion), if it is. */
export function deletionDisruption(delegate: V1Pod): string | undefined {
  const c = delegate.status?.conditions?.find((x) => x.type === 'DisruptionTarget' && x.status === 'True');
  return c?.reason && DELETION_DISRUPTIONS.has(c.reason) ? c.reason : undefined;
}

function proxyPhase(delegate: V1Pod): string {
  if (isTerminal(delegate)) return delegate.status?.phase ?? 'Pending';
  return isScheduled(delegate) ? (delegate.status?.phase ?? 'Pending') : 'Pending';
}

function proxyConditions(delegateConditions: V1PodCondition[], proxy: V1Pod | undefined): V1PodCondition[] {
  // observedGeneration counts the delegate's generations, not the proxy's.
  const fromDelegate = delegateConditions
    .filter((c) => DELEGATE_CONDITIONS.has(c.type))
    .map(({ observedGeneration: _, ...c }) => c);
  const types = new Set(fromDelegate.map((c) => c.type));
  const fromHost = structuredClone(proxy?.status?.conditions ?? []).filter(
    (c) => !types.has(c.type) && (!DELEGATE_CONDITIONS.has(c.type) || HOST_SHARED_CONDITIONS.has(c.type)),
  );
  return applyReadinessGates([...fromDelegate, ...fromHost], proxy?.spec?.readinessGates ?? []);
}

// What the kubelet does: a pod is Ready only when its containers are and every readiness gate is True.
function applyReadinessGates(conditions: V1PodCondition[], gates: V1PodReadinessGate[]): V1PodCondition[] {
  const unmet = gates
    .map((g) => g.conditionType)
    .filter((type) => conditions.find((c) => c.type === type)?.status !== 'True');
  if (unmet.length === 0) return conditions;
  const message = `the status of pod readiness gates ${unmet.map((t) => `"${t}"`).join(', ')} is not "True"`;
  return conditions.map((c) =>
    c.type === 'Ready' && c.status === 'True' ? { ...c, status: 'False', reason: 'ReadinessGatesNotReady', message } : c,
  );
}

/**
 * The proxy's status when its delegate was deleted or evicted in the member and will not be recreated
 * (restartPolicy Never): Failed, with every container that had not finished terminated for `reason`.
 */
export function forgeProxyStatusForLostDelegate(proxy: V1Pod, reason: string, message: string, now: Date = new Date()): V1PodStatus {
  const current = structuredClone(proxy.status ?? {});
  const at = wholeSeconds(now);
  const terminate = (containers: V1Container[] | undefined, statuses: V1ContainerStatus[] | undefined) =>
    nonEmpty((containers ?? []).map((c) => terminatedStatus(c, statuses?.find((s) => s.name === c.name), reason, message, at)));
  return compact({
    ...current,
    phase: 'Failed',
    reason,
    message,
    conditions: notReady(current.conditions ?? [], at),
    initContainerStatuses: terminate(proxy.spec?.initContainers, current.initContainerStatuses),
    containerStatuses: terminate(proxy.spec?.containers, current.containerStatuses),
  });
}

function terminatedStatus(
  container: V1Container,
  current: V1ContainerStatus | undefined,
  reason: string,
  message: string,
  at: Date,
): V1ContainerStatus {
  if (current?.state?.terminated) return current;
  return compact({
    name: container.name,
    image: current?.image ?? container.image ?? '',
    imageID: current?.imageID ?? '',
    containerID: current?.containerID,
    ready: false,
    started: false,
    restartCount: current?.restartCount ?? 0,
    lastState: current?.lastState,
    state: {
      terminated: compact({
        exitCode: LOST_CONTAINER_EXIT_CODE,
        reason,
        message,
        containerID: current?.containerID,
        startedAt: current?.state?.running?.startedAt,
        finishedAt: at,
      }),
    },
  });
}

// A terminal pod is not ready; the kubelet gives the reason PodCompleted whether it succeeded or failed.
function notReady(conditions: V1PodCondition[], at: Date): V1PodCondition[] {
  const down = (type: string): V1PodCondition => {
    const current = conditions.find((c) => c.type === type);
    return current?.status === 'False' ? current : { type, status: 'False', reason: 'PodCompleted', lastTransitionTime: at };
  };
  const others = conditions.filter((c) => c.type !== 'Ready' && c.type !== 'ContainersReady');
  return [...others, down('ContainersReady'), down('Ready')];
}

/**
 * The actual delegate with the fields the API lets change on a pod brought to what the proxy asks for, or
 * `undefined` when they already match. Only those fields are compared, so values the member defaults or adds
 * (imagePullPolicy, its own tolerations, annotations of its webhooks) never count as a difference. Labels and
 * annotations removed from the proxy are not detected here.
 */
export function delegateUpdate(proxy: V1Pod, delegate: V1Pod, ctx: DelegateContext): V1Pod | undefined {
  const desired = forgeDelegatePod(proxy, ctx);
  const next = structuredClone(delegate);
  if (!next.spec || !desired.spec) return undefined;
  next.metadata ??= {};
  const changes = [
    mergeInto(next.metadata, 'labels', desired.metadata?.labels),
    mergeInto(next.metadata, 'annotations', desired.metadata?.annotations),
    updateImages(next.spec.containers, desired.spec.containers),
    updateImages(next.spec.initContainers, desired.spec.initContainers),
    updateDeadline(next.spec, desired.spec.activeDeadlineSeconds),
    addTolerations(next.spec, desired.spec.tolerations),
  ];
  return changes.includes(true) ? next : undefined;
}

function mergeInto<K extends 'labels' | 'annotations'>(
  meta: { [P in K]?: Record<string, string> },
  field: K,
  desired: Record<string, string> | undefined,
): boolean {
  const actual = meta[field] ?? {};
  const missing = Object.entries(desired ?? {}).filter(([key, value]) => actual[key] !== value);
  if (missing.length === 0) return false;
  meta[field] = { ...actual, ...Object.fromEntries(missing) };
  return true;
}

function updateImages(actual: V1Container[] | undefined, desired: V1Container[] | undefined): boolean {
  let changed = false;
  for (const container of actual ?? []) {
    const image = desired?.find((d) => d.name === container.name)?.image;
    if (image !== undefined && image !== container.image) {
      container.image = image;
      changed = true;
    }
  }
  return changed;
}

// The API only lets the deadline be set or lowered; the proxy is under the same rule, so copying it is allowed.
function updateDeadline(spec: V1PodSpec, desired: number | undefined): boolean {
  if (desired === undefined || desired === spec.activeDeadlineSeconds) return false;
  spec.activeDeadlineSeconds = desired;
  return true;
}

function addTolerations(spec: V1PodSpec, desired: V1Toleration[] | undefined): boolean {
  const actual = spec.tolerations ?? [];
  const missing = (desired ?? []).filter((d) => !actual.some((a) => tolerationEqual(a, d)));
  if (missing.length === 0) return false;
  spec.tolerations = [...actual, ...missing];
  return true;
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

/**
 * Whether writing `b` over `a` would change nothing that matters: conditions compare by type and container
 * statuses by name whatever their order, timestamps by the second whether Date or string, and null, undefined
 * and empty arrays are all "absent".
 */
/**
 * Whether a Pending delegate's status (forged for its proxy) tells the user more than the Pending proxy already shows: container
 * statuses (ContainerCreating, ErrImagePull…), a condition that is not True (Unschedulable…), or a reason or
 * message. A delegate merely waiting for the member's scheduler or kubelet has nothing to add: writing it would
 * cost the host API server a write per pod for the host IP alone. Anything not Pending always says something.
 */
export function pendingStatusInformative(desired: V1PodStatus, proxy: V1PodStatus | undefined): boolean {
  if ((desired.phase ?? 'Pending') !== 'Pending' || (proxy?.phase ?? 'Pending') !== 'Pending') return true;
  return !!(desired.containerStatuses?.length || desired.initContainerStatuses?.length || desired.reason || desired.message
    || desired.conditions?.some((c) => DELEGATE_CONDITIONS.has(c.type) && c.status !== 'True'));
}

/** Status fields that come from the delegate: cleared on the proxy when the delegate no longer has them. */
const MIRRORED_STATUS_FIELDS = [
  'message', 'reason', 'podIP', 'podIPs', 'startTime', 'containerStatuses', 'initContainerStatuses',
  'ephemeralContainerStatuses',
] as const satisfies readonly (keyof V1PodStatus)[];

/**
 * The strategic merge patch that turns the proxy's status `current` into `desired`. A strategic merge patch
 * merges some lists by key and leaves out fields alone, so on its own it would keep what the delegate no longer
 * says: `podIPs` and `hostIPs` are replaced (merged, a new delegate's IP would sit next to the old one, which
 * the API refuses: "may specify no more than one IP for each IP family"); conditions `current` has and
 * `desired` does not are deleted, except the types in `own` (written by someone else, left alone); fields the
 * delegate no longer reports are cleared.
 */
export function proxyStatusPatch(desired: V1PodStatus, current: V1PodStatus | undefined, own: ReadonlySet<string> = new Set()): Record<string, unknown> {
  const patch: Record<string, unknown> = { ...desired };
  for (const key of MIRRORED_STATUS_FIELDS) {
    if (desired[key] === undefined && current?.[key] !== undefined) patch[key] = null;
  }
  for (const key of ['podIPs', 'hostIPs'] as const) {
    const ips = desired[key];
    if (ips) patch[key] = [{ $patch: 'replace' }, ...ips];
  }
  const kept = (desired.conditions ?? []).filter((c) => !own.has(c.type));
  const types = new Set(kept.map((c) => c.type));
  const gone = (current?.conditions ?? []).filter((c) => !types.has(c.type) && !own.has(c.type))
    .map((c) => ({ type: c.type, $patch: 'delete' }));
  if (kept.length + gone.length > 0) patch.conditions = [...kept, ...gone];
  else delete patch.conditions;
  return patch;
}

export function statusEqual(a: V1PodStatus | undefined, b: V1PodStatus | undefined): boolean {
  return isDeepStrictEqual(normalize(a ?? {}), normalize(b ?? {}));
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const SORT_KEYS: Record<string, string> = {
  conditions: 'type',
  containerStatuses: 'name',
  initContainerStatuses: 'name',
  ephemeralContainerStatuses: 'name',
};

function normalize(value: unknown, field = ''): unknown {
  if (value === null || value === undefined) return undefined;
  if (value instanceof Date) return Math.floor(value.getTime() / 1000);
  if (typeof value === 'string' && RFC3339.test(value)) return Math.floor(Date.parse(value) / 1000);
  if (Array.isArray(value)) {
    if (value.length === 0) return undefined;
    const items = value.map((v) => normalize(v));
    const key = SORT_KEYS[field];
    return key ? items.sort((x, y) => compareBy(x, y, key)) : items;
  }
  if (typeof value === 'object') {
    const entries = Object.entries(value)
      .map(([k, v]) => [k, normalize(v, k)] as const)
      .filter(([, v]) => v !== undefined);
    return Object.fromEntries(entries);
  }
  return value;
}

function compareBy(x: unknown, y: unknown, key: string): number {
  const a = String((x as Record<string, unknown>)[key]);
  const b = String((y as Record<string, unknown>)[key]);
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A pod a DaemonSet controls: clusterlet does not run those on the virtual node. */
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

function wholeSeconds(date: Date): Date {
  return new Date(Math.floor(date.getTime() / 1000) * 1000);
}

function nonEmpty<T>(items: T[] | undefined): T[] | undefined {
  return items && items.length > 0 ? items : undefined;
}

// Sets `field`, or removes it when there is no value, so that forged objects carry no `undefined` keys.
function setOrDelete<T extends object, K extends keyof T>(target: T, field: K, value: T[K] | undefined): void {
  if (value === undefined) delete target[field];
  else target[field] = value;
}

function compact<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
