// The virtual node, forged from what its provider reports. Pure functions: node state in, node parts out.
import type { V1Node, V1NodeCondition, V1NodeStatus, V1NodeSystemInfo, V1Taint } from '@kubernetes/client-node';
import {
  CORDONED_TAINT_KEY, GROUP_ANNOTATION, HOSTNAME_LABEL, MANAGED_LABELS_ANNOTATION, RETIRING_TAINT_KEY, MANAGED_TAINTS_ANNOTATION, MEMBER_LABEL, ROLE_LABEL, VIRTUAL_NODE_ROLE, VIRTUAL_NODE_TAINT_EFFECT, VIRTUAL_NODE_TAINT_KEY,
  VIRTUAL_NODE_TAINT_VALUE, VIRTUAL_NODE_TYPE, VIRTUAL_NODE_TYPE_LABEL,
} from './keys.ts';
import { VERSION } from '../version.ts';
import { byCodeUnits } from '../util/order.ts';
import { describeGroup, groupId, type NodeGroup } from './groups.ts';

/**
 * What the virtual node should show right now: the member cluster behind it, as its node provider reports it.
 * Plain data, so forging depends on no provider (provider/node.ts carries it across the seam).
 */
export interface NodeState {
  /** The member API answered the last probe. */
  reachable: boolean;
  /** Why it did not (the error), when it did not. */
  unreachableReason?: string;
  /** Whether the member's nodes have been listed at least once. */
  synced: boolean;
  readyNodes: number;
  /** For a virtual node of a group of the member's nodes (forge/groups.ts): how many member nodes the group has, Ready or not. */
  groupNodes?: number;
  capacity: Record<string, string>;
  allocatable: Record<string, string>;
  topologyLabels: Record<string, string>;
  /** The NoSchedule/NoExecute taints every usable member node carries (forge/capacity.ts sharedTaints). */
  taints?: V1Taint[];
  operatingSystem: string;
  architecture: string;
  /** The member API server's version (shown as the container runtime version). */
  backendVersion?: string;
}

/** The virtual node's own settings: what forging needs besides the state. */
export interface NodeContext {
  nodeName: string;
  /** The member cluster's name (the clusterlet.io/member label, condition messages, osImage). */
  memberName: string;
  /** Configured extra labels and taints. */
  labels: Record<string, string>;
  taints: V1Taint[];
  nodeIP: string;
  kubeletPort: number;
  /** Whether the member's pods can have host API access (forge/apiaccess.ts): shown as a node condition when set. */
  hostAPI?: { available: boolean; message: string };
  /**
   * The group of member nodes the node stands for (forge/groups.ts), recorded on it (GROUP_ANNOTATION); undefined is
   * the whole member, not recorded.
   */
  group?: NodeGroup;
}

/**
 * On a virtual node of a pool or member node whose Ready member nodes are all cordoned (being drained, say): no new pod
 * goes there, and the pods there stay (a cordoned node is not a lost one).
 */
export const CORDONED_TAINT: V1Taint = { key: CORDONED_TAINT_KEY, effect: 'NoSchedule' };

/**
 * On a virtual node of an earlier granularity, kept while pods are bound to it: no new pod is placed there. The value
 * is a label value (a taint's rule).
 */
export const RETIRING_TAINT: V1Taint = { key: RETIRING_TAINT_KEY, value: 'granularity-changed', effect: 'NoSchedule' };

/** The node condition saying whether pods offloaded through the node can reach the host API as themselves. */
export const HOST_API_CONDITION = 'clusterlet.io/HostAPIAccess';

export const KUBELET_VERSION = `v${VERSION}-clusterlet`;

/**
 * The node's declared features (KEP-5328 `status.declaredFeatures`, beta and on by default from 1.36), sorted as the
 * API server requires. ExtendWebSocketsToKubelet: the kubelet API serves exec, attach and port-forward over
 * WebSocket, so a 1.36+ API server passes its clients' WebSockets through to it instead of translating them to
 * SPDY (pkg/registry/core/pod/rest/subresources.go, checkNodeSupportsWebsockets on the NodeFeatures that
 * pkg/kubelet/client's NodeConnectionInfoGetter reads from the node).
 */
export const DECLARED_FEATURES: readonly string[] = ['ExtendWebSocketsToKubelet'];

export function virtualNodeTaint(): V1Taint {
  return { key: VIRTUAL_NODE_TAINT_KEY, value: VIRTUAL_NODE_TAINT_VALUE, effect: VIRTUAL_NODE_TAINT_EFFECT };
}

/** Our labels on the node: the virtual-kubelet ones, OS/arch, shared topology labels, configured extras. */
export function forgeNodeLabels(ctx: NodeContext, state: NodeState): Record<string, string> {
  return {
    [VIRTUAL_NODE_TYPE_LABEL]: VIRTUAL_NODE_TYPE,
    [ROLE_LABEL]: VIRTUAL_NODE_ROLE,
    'kubernetes.io/os': state.operatingSystem,
    'kubernetes.io/arch': state.architecture,
    [HOSTNAME_LABEL]: ctx.nodeName,
    'node.kubernetes.io/exclude-from-external-load-balancers': 'true',
    [MEMBER_LABEL]: ctx.memberName,
    ...state.topologyLabels,
    ...ctx.labels,
  };
}

/** Our taints: the virtual-node taint, the configured ones, and those every member node carries (the configured win). */
export function forgeNodeTaints(ctx: NodeContext, state?: Pick<NodeState, 'taints'>): V1Taint[] {
  const own = [virtualNodeTaint(), ...ctx.taints];
  const ids = new Set(own.map(taintId));
  return [...own, ...(state?.taints ?? []).filter((t) => !ids.has(taintId(t)))];
}

const taintId = (t: V1Taint): string => `${t.key}:${t.effect}`;

/** The MANAGED_TAINTS_ANNOTATION value that records the member taints copied onto the node: key:effect, sorted. */
export function managedTaintsValue(state: Pick<NodeState, 'taints'>): string {
  return (state.taints ?? []).map(taintId).sort().join(',');
}

/** The member taints a node's MANAGED_TAINTS_ANNOTATION records as copied by clusterlet (key:effect). */
export function managedTaintIds(node: V1Node): Set<string> {
  return new Set((node.metadata?.annotations?.[MANAGED_TAINTS_ANNOTATION] ?? '').split(',').filter(Boolean));
}

/**
 * The node's taints with ours in place, those clusterlet copied earlier and no longer wants (`previouslyOurs`, by
 * key:effect) gone, and everyone else's kept (the node-lifecycle controller's not-ready/unreachable taints in
 * particular). Undefined when nothing needs to change.
 */
export function mergeTaints(current: V1Taint[] | undefined, ours: V1Taint[], previouslyOurs: ReadonlySet<string> = new Set()):
  V1Taint[] | undefined {
  const cur = current ?? [];
  const wanted = new Set(ours.map(taintId));
  const stale = cur.filter((c) => previouslyOurs.has(taintId(c)) && !wanted.has(taintId(c)));
  const missing = ours.filter((o) => !cur.some((c) => taintId(c) === taintId(o) && (c.value ?? '') === (o.value ?? '')));
  if (missing.length === 0 && stale.length === 0) return undefined;
  const replaced = new Set([...missing.map(taintId), ...stale.map(taintId)]);
  return [...cur.filter((c) => !replaced.has(taintId(c))), ...missing];
}

function condition(type: string, ok: boolean, reason: string, message: string): V1NodeCondition {
  return { type, status: ok ? 'True' : 'False', reason, message };
}

export function forgeNodeConditions(ctx: NodeContext, state: NodeState): V1NodeCondition[] {
  const name = ctx.memberName;
  const group = ctx.group && ctx.group.kind !== 'cluster' ? ctx.group : undefined;
  let ready: V1NodeCondition;
  if (group && state.reachable && state.synced && state.groupNodes === 0) {
    ready = condition('Ready', false, 'MemberGroupGone', `${describeGroup(name, group)} has no node any more: no pod is `
      + 'placed here; the pods bound here stay until they end, and the node goes with the last of them');
  } else if (group && state.reachable && state.synced) {
    const n = state.readyNodes;
    ready = n === 0
      ? condition('Ready', false, 'MemberHasNoReadyNode', `${describeGroup(name, group)} has no Ready node`)
      : condition('Ready', true, 'MemberReady', `${describeGroup(name, group)} answers and has ${n} Ready node${n === 1 ? '' : 's'}${
        (state.taints ?? []).some((t) => t.key === CORDONED_TAINT.key) ? ', all cordoned: no new pod is placed here' : ''}`);
  } else if (!state.reachable) {
    ready = condition('Ready', false, 'MemberUnreachable',
      `member cluster ${name} does not answer: ${state.unreachableReason ?? 'unknown error'}`);
  } else if (!state.synced) {
    ready = condition('Ready', false, 'MemberNotSynced', `member cluster ${name} answers; listing its nodes`);
  } else if (state.readyNodes === 0) {
    ready = condition('Ready', false, 'MemberHasNoReadyNode', `member cluster ${name} has no Ready, schedulable node`);
  } else {
    ready = condition('Ready', true, 'MemberReady',
      `member cluster ${name} answers and has ${state.readyNodes} Ready, schedulable node${state.readyNodes === 1 ? '' : 's'}`);
  }
  return [
    ready,
    condition('MemoryPressure', false, 'MemberHasSufficientMemory', 'pressure is handled by the member\'s own kubelets'),
    condition('DiskPressure', false, 'MemberHasNoDiskPressure', 'pressure is handled by the member\'s own kubelets'),
    condition('PIDPressure', false, 'MemberHasSufficientPID', 'pressure is handled by the member\'s own kubelets'),
    condition('NetworkUnavailable', false, 'MemberNetworkReady', 'pods get their network from the member cluster'),
    ...(ctx.hostAPI ? [condition(HOST_API_CONDITION, ctx.hostAPI.available,
      ctx.hostAPI.available ? 'HostAPIReachable' : 'NoHostAPIServer', ctx.hostAPI.message)] : []),
  ];
}

/** A node status as forgeNodeStatus makes it: with the node's system info. */
export type DesiredNodeStatus = V1NodeStatus & { nodeInfo: V1NodeSystemInfo };

/**
 * The node status without timestamps. Capacity and allocatable keep their last known values while the
 * member does not answer, so a blip does not make the scheduler see an empty node; and, until the member's
 * caches are synced, the values `known` on the node (a restart's: those a previous process wrote), so a restart
 * does not either (nor the API server's resize admission, which reads the node's allocatable).
 */
export function forgeNodeStatus(ctx: NodeContext, state: NodeState, known?: V1NodeStatus): DesiredNodeStatus {
  const keep = !state.synced && known?.capacity !== undefined;
  const capacity = { ...(keep ? known.capacity : state.capacity) };
  const allocatable = { ...(keep ? known.allocatable ?? known.capacity : state.allocatable) };
  capacity.pods ??= '0';
  allocatable.pods ??= '0';
  return {
    capacity, allocatable,
    conditions: forgeNodeConditions(ctx, state),
    addresses: [
      { type: 'InternalIP', address: ctx.nodeIP },
      { type: 'Hostname', address: ctx.nodeName },
    ],
    daemonEndpoints: { kubeletEndpoint: { Port: ctx.kubeletPort } },
    declaredFeatures: [...DECLARED_FEATURES],
    nodeInfo: {
      architecture: state.architecture,
      operatingSystem: state.operatingSystem,
      kubeletVersion: KUBELET_VERSION,
      kubeProxyVersion: '',
      containerRuntimeVersion: `clusterlet://${state.backendVersion ?? 'unknown'}`,
      kernelVersion: '',
      osImage: `member cluster ${ctx.memberName}`,
      bootID: '', machineID: '', systemUUID: '',
    },
  };
}

/** Stamps heartbeat times; a condition whose status did not change keeps its transition time. */
export function stampConditions(desired: V1NodeCondition[], current: V1NodeCondition[] | undefined, now: Date):
  V1NodeCondition[] {
  return desired.map((c) => {
    const prev = current?.find((p) => p.type === c.type);
    const since = prev && prev.status === c.status && prev.lastTransitionTime ? new Date(prev.lastTransitionTime) : now;
    return { ...c, lastHeartbeatTime: now, lastTransitionTime: since };
  });
}

const sortedEntries = (m: Record<string, string> | undefined): string =>
  JSON.stringify(Object.entries(m ?? {}).sort(([a], [b]) => byCodeUnits(a, b)));

/** Whether `current` already shows `desired` (timestamps ignored, order of conditions ignored). */
export function nodeStatusMatches(desired: DesiredNodeStatus, current: V1NodeStatus | undefined): boolean {
  if (!current) return false;
  if (sortedEntries(desired.capacity) !== sortedEntries(current.capacity)) return false;
  if (sortedEntries(desired.allocatable) !== sortedEntries(current.allocatable)) return false;
  for (const d of desired.conditions ?? []) {
    const c = current.conditions?.find((x) => x.type === d.type);
    if (!c || c.status !== d.status || c.reason !== d.reason || c.message !== d.message) return false;
  }
  const addr = (s: V1NodeStatus): string => JSON.stringify((s.addresses ?? []).map((a) => `${a.type}=${a.address}`).sort());
  if (addr(desired) !== addr(current)) return false;
  if (desired.daemonEndpoints?.kubeletEndpoint?.Port !== current.daemonEndpoints?.kubeletEndpoint?.Port) return false;
  // An API server without NodeDeclaredFeatures drops the field: its absence is no difference to write again.
  if (current.declaredFeatures && current.declaredFeatures.join() !== desired.declaredFeatures?.join()) return false;
  const ni = desired.nodeInfo;
  const ci = current.nodeInfo;
  return !!ci && ni.kubeletVersion === ci.kubeletVersion && ni.architecture === ci.architecture
    && ni.operatingSystem === ci.operatingSystem && ni.containerRuntimeVersion === ci.containerRuntimeVersion
    && ni.osImage === ci.osImage;
}

/** Labels to set (and ours to remove, as null) so the node carries `desired`; undefined if nothing to do. */
export function labelPatch(desired: Record<string, string>, current: Record<string, string> | undefined,
  previouslyOurs: Set<string>): Record<string, string | null> | undefined {
  const patch: Record<string, string | null> = {};
  for (const [k, v] of Object.entries(desired)) if (current?.[k] !== v) patch[k] = v;
  for (const k of previouslyOurs) if (!Object.hasOwn(desired, k) && current && Object.hasOwn(current, k)) patch[k] = null;
  return Object.keys(patch).length ? patch : undefined;
}

/** The MANAGED_LABELS_ANNOTATION value that records `labels` as ours: their keys, sorted. */
export function managedLabelsValue(labels: Record<string, string>): string {
  return Object.keys(labels).sort().join(',');
}

/** The label keys a node's MANAGED_LABELS_ANNOTATION records as ours (set by clusterlet, to remove when no longer wanted). */
export function managedLabelKeys(node: V1Node): Set<string> {
  return new Set((node.metadata?.annotations?.[MANAGED_LABELS_ANNOTATION] ?? '').split(',').filter(Boolean));
}

/** A new node object as registered on the host, its labels recorded as ours. */
export function forgeNewNode(ctx: NodeContext, state: NodeState, now: Date): V1Node {
  const status = forgeNodeStatus(ctx, state);
  status.conditions = stampConditions(status.conditions ?? [], undefined, now);
  const labels = forgeNodeLabels(ctx, state);
  return {
    apiVersion: 'v1', kind: 'Node',
    metadata: { name: ctx.nodeName, labels, annotations: {
      [MANAGED_LABELS_ANNOTATION]: managedLabelsValue(labels), [MANAGED_TAINTS_ANNOTATION]: managedTaintsValue(state),
      ...(ctx.group ? { [GROUP_ANNOTATION]: groupId(ctx.group) } : {}),
    } },
    spec: { taints: forgeNodeTaints(ctx, state) },
    status,
  };
}
