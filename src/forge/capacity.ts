// Capacity of the virtual node: pure functions over a member cluster's nodes and pods.
// See docs/CONVENTIONS.md, "Capacity".

import type { V1Container, V1ContainerStatus, V1Node, V1Pod, V1Taint } from '@kubernetes/client-node';
import { NANO, add, clampZero, formatQuantity, parseQuantity, quantity } from './quantity.ts';
import type { Quantity } from './quantity.ts';

import { MEMBER_LABEL } from './keys.ts';
import { isAnyDelegate } from './owner.ts';
const UNSCHEDULABLE_TAINT = 'node.kubernetes.io/unschedulable';
/**
 * Labels the virtual node shows when every usable member node has the same value: topology, instance type and GPU
 * model, so that a pod selecting one of them binds to the virtual node exactly when every member node would do.
 */
const SHARED_LABELS = [
  'topology.kubernetes.io/region',
  'topology.kubernetes.io/zone',
  'failure-domain.beta.kubernetes.io/region',
  'failure-domain.beta.kubernetes.io/zone',
  'node.kubernetes.io/instance-type',
  'beta.kubernetes.io/instance-type',
  'nvidia.com/gpu.product',
  'nvidia.com/gpu.family',
  'nvidia.com/gpu.memory',
  'cloud.google.com/gke-accelerator',
  'k8s.amazonaws.com/accelerator',
];

type ResourceList = { [name: string]: string } | undefined;

/** The node's Ready condition is True. */
export function isNodeReady(node: V1Node): boolean {
  return node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

/** A virtual kubelet's node (type=virtual-kubelet), or one of clusterlet's (its clusterlet.io/member label). */
export function isVirtualNode(node: V1Node): boolean {
  const labels = node.metadata?.labels ?? {};
  return labels['type'] === 'virtual-kubelet' || labels[MEMBER_LABEL] !== undefined;
}

/**
 * Ready, schedulable, not cordoned and not a virtual node: any virtual kubelet's (type=virtual-kubelet), or one of
 * clusterlet's (its clusterlet.io/member label, whatever labels a user added). Other clusterlet.io/ labels on a real
 * node are a user's or a tool's, and leave it usable.
 */
export function nodeIsUsable(node: V1Node): boolean {
  const ready = isNodeReady(node);
  const virtual = isVirtualNode(node);
  const cordoned = (node.spec?.taints ?? []).some(
    (t) => t.key === UNSCHEDULABLE_TAINT && (t.effect === 'NoSchedule' || t.effect === 'NoExecute'),
  );
  return ready && !node.spec?.unschedulable && !virtual && !cordoned;
}

/**
 * The pod's effective requests in nano units, as the scheduler computes them: the larger of (app containers
 * + sidecars) and each init container (+ the sidecars started before it), per resource; pod-level requests
 * replace that for the resources they name; then overhead is added. `pods` is always 1. A container resized in
 * place counts as its status says (see `resizedRequests`).
 */
export function podRequests(pod: V1Pod): Map<string, bigint> {
  const spec = pod.spec;
  const resize = resizeStatus(pod);
  const requests = new Map<string, bigint>();
  for (const c of spec?.containers ?? []) addTo(requests, resizedRequests(c, resize));

  const initMax = new Map<string, bigint>();
  const sidecars = new Map<string, bigint>();
  for (const c of spec?.initContainers ?? []) {
    if (c.restartPolicy === 'Always') {
      const own = resizedRequests(c, resize);
      addTo(requests, own);
      addTo(sidecars, own);
    } else {
      const running = new Map(sidecars);
      addTo(running, containerRequests(c));
      maxInto(initMax, running);
    }
  }
  maxInto(requests, initMax);

  for (const [name, nanos] of parseList(spec?.resources?.requests)) requests.set(name, nanos);
  addTo(requests, parseList(spec?.overhead));
  requests.set('pods', NANO);
  return requests;
}

/**
 * Whether the pod uses capacity of the member: not terminal, bound to a node (to one of `usableNodes` when
 * given), and not one of our delegates.
 */
export function podCounts(
  pod: V1Pod,
  isOurs: (p: V1Pod) => boolean = isAnyDelegate,
  usableNodes?: ReadonlySet<string>,
): boolean {
  return countedOn(pod, isOurs, usableNodes) !== undefined;
}

/** The node whose capacity the pod uses, when it counts (see `podCounts`); else undefined. */
export function countedOn(
  pod: V1Pod,
  isOurs: (p: V1Pod) => boolean = isAnyDelegate,
  usableNodes?: ReadonlySet<string>,
): string | undefined {
  const phase = pod.status?.phase;
  if (phase === 'Succeeded' || phase === 'Failed') return undefined;
  const nodeName = pod.spec?.nodeName;
  if (!nodeName || (usableNodes && !usableNodes.has(nodeName))) return undefined;
  return isOurs(pod) ? undefined : nodeName;
}

export interface AggregateCapacity {
  capacity: Record<string, string>;
  allocatable: Record<string, string>;
  nodeCount: number;
}

/** Requests summed per node name (nano units), of the pods that count. */
export type RequestsByNode = ReadonlyMap<string, ReadonlyMap<string, bigint>>;

/** The requests of the pods that count (see `podCounts`, without the node filter), summed per node. */
export function requestsByNode(pods: V1Pod[], isOurs: (p: V1Pod) => boolean = isAnyDelegate): Map<string, Map<string, bigint>> {
  const usage = new Map<string, Map<string, bigint>>();
  for (const pod of pods) {
    const node = countedOn(pod, isOurs);
    if (node !== undefined) addRequests(usage, node, podRequests(pod), 1n);
  }
  return usage;
}

/**
 * Adds (sign 1n) or takes away (-1n) one pod's requests from its node's sums; a resource that comes to zero,
 * and a node with nothing left, are dropped.
 */
export function addRequests(usage: Map<string, Map<string, bigint>>, node: string, requests: ReadonlyMap<string, bigint>,
  sign: 1n | -1n): void {
  let sums = usage.get(node);
  if (!sums) usage.set(node, (sums = new Map()));
  for (const [name, nanos] of requests) {
    const v = (sums.get(name) ?? 0n) + sign * nanos;
    if (v === 0n) sums.delete(name);
    else sums.set(name, v);
  }
  if (sums.size === 0) usage.delete(node);
}

/**
 * Capacity: the sum over usable nodes of every resource. Allocatable: the usable nodes' allocatable minus the
 * requests of the pods that count on them, clamped at zero. Values are canonical quantity strings.
 */
export function aggregateCapacity(
  nodes: V1Node[],
  pods: V1Pod[],
  opts: { isDelegate?(p: V1Pod): boolean } = {},
): AggregateCapacity {
  return aggregateCapacityFromRequests(nodes, requestsByNode(pods, opts.isDelegate ?? isAnyDelegate));
}

/** `aggregateCapacity`, given the requests per node already summed (as `PodRequests` keeps them). */
export function aggregateCapacityFromRequests(nodes: V1Node[], usage: RequestsByNode): AggregateCapacity {
  const usable = nodes.filter(nodeIsUsable);
  const capacity = new Map<string, Quantity>();
  const allocatable = new Map<string, Quantity>();
  for (const node of usable) {
    sumInto(capacity, node.status?.capacity);
    sumInto(allocatable, node.status?.allocatable ?? node.status?.capacity);
  }
  for (const node of usable) {
    for (const [name, nanos] of usage.get(node.metadata?.name ?? '') ?? []) {
      const q = allocatable.get(name);
      if (q) allocatable.set(name, quantity(q.nanos - nanos, q.format));
    }
  }
  return { capacity: toRecord(capacity), allocatable: toRecord(allocatable), nodeCount: usable.length };
}

/** The shared labels (SHARED_LABELS) whose value is the same on every usable node; empty when there is none. */
export function sharedNodeLabels(nodes: V1Node[], opts: SharedOptions = {}): Record<string, string> {
  const usable = sharedAmong(nodes, opts);
  const shared: Record<string, string> = {};
  if (usable.length === 0) return shared;
  for (const key of SHARED_LABELS) {
    const values = new Set(usable.map((n) => n.metadata?.labels?.[key]));
    const [value] = values;
    if (values.size === 1 && value !== undefined) shared[key] = value;
  }
  return shared;
}

/**
 * `all`: the labels and taints of a group of member nodes (a pool's, a member node's: forge/groups.ts) are those of
 * all its nodes, Ready or not: they describe the group, and do not come and go with its nodes' readiness. Without,
 * those of the usable nodes (the whole member's node).
 */
export interface SharedOptions { all?: boolean }

function sharedAmong(nodes: V1Node[], opts: SharedOptions): V1Node[] {
  return nodes.filter(opts.all ? (n) => !isVirtualNode(n) : nodeIsUsable);
}

/** Taint keys the host's own controllers and virtual kubelets own: never copied from member nodes. */
const OWN_TAINT_PREFIXES = ['node.kubernetes.io/', 'node.cloudprovider.kubernetes.io/', 'virtual-kubelet.io/'];

/**
 * The NoSchedule and NoExecute taints every usable node carries (same key, value and effect), so that a pod that
 * tolerates none of the member's dedicated nodes does not bind to the virtual node; the node-lifecycle and cloud
 * provider taints are the host's own business and never copied. Sorted by key, effect.
 */
export function sharedTaints(nodes: V1Node[], opts: SharedOptions = {}): V1Taint[] {
  const usable = sharedAmong(nodes, opts);
  const [first, ...rest] = usable;
  if (!first) return [];
  const id = (t: V1Taint): string => `${t.key}=${t.value ?? ''}:${t.effect}`;
  const candidates = (first.spec?.taints ?? []).filter((t) => (t.effect === 'NoSchedule' || t.effect === 'NoExecute')
    && !OWN_TAINT_PREFIXES.some((p) => t.key.startsWith(p)));
  const shared = candidates.filter((t) => rest.every((n) => (n.spec?.taints ?? []).some((o) => id(o) === id(t))));
  return shared.map((t) => ({ key: t.key, ...(t.value ? { value: t.value } : {}), effect: t.effect }))
    .sort((a, b) => (a.key === b.key ? (a.effect < b.effect ? -1 : 1) : a.key < b.key ? -1 : 1));
}

export interface NodeSystemInfo {
  operatingSystem: string;
  architecture: string;
}

/** The most common OS and architecture of the usable nodes (ties: alphabetical); linux/amd64 by default. */
export function nodeSystemInfo(nodes: V1Node[]): NodeSystemInfo {
  const usable = nodes.filter(nodeIsUsable);
  const os = usable.map((n) => n.status?.nodeInfo?.operatingSystem || n.metadata?.labels?.['kubernetes.io/os']);
  const arch = usable.map((n) => n.status?.nodeInfo?.architecture || n.metadata?.labels?.['kubernetes.io/arch']);
  return { operatingSystem: mostCommon(os) ?? 'linux', architecture: mostCommon(arch) ?? 'amd64' };
}

/** What a pod's status says of its containers' resources, as far as its requests go (see `resizeStatus`). */
export interface ResizeStatus {
  containers: Record<string, { actual?: Record<string, string>; allocated?: Record<string, string> }>;
  infeasible: boolean;
}

/**
 * What a pod's status says of its containers' resources while they are resized in place: per container the
 * requests its kubelet actuated and allocated (`resources`, `allocatedResources`), and whether the pending resize
 * is infeasible (PodResizePending, reason Infeasible). Plain data: two versions compare as JSON.
 */
export function resizeStatus(pod: V1Pod): ResizeStatus {
  const containers: ResizeStatus['containers'] = {};
  const statuses: V1ContainerStatus[] = [...pod.status?.containerStatuses ?? [], ...pod.status?.initContainerStatuses ?? []];
  for (const cs of statuses) {
    if (cs.resources) containers[cs.name] = { actual: cs.resources.requests, allocated: cs.allocatedResources };
  }
  const pending = pod.status?.conditions?.find((c) => c.type === 'PodResizePending');
  return { containers, infeasible: pending?.reason === 'Infeasible' };
}

/**
 * A container's requests as the scheduler counts them during an in-place resize (component-helpers'
 * determineEffectiveRequests): the largest of what its spec asks, what its kubelet actuated and what it allocated;
 * once the resize is infeasible, the spec's new values do not count. A container without status resources counts
 * its spec.
 */
function resizedRequests(c: V1Container, resize: ResizeStatus): Map<string, bigint> {
  const status = resize.containers[c.name];
  if (!status) return containerRequests(c);
  const requests = resize.infeasible ? new Map<string, bigint>() : containerRequests(c);
  maxInto(requests, parseList(status.actual));
  maxInto(requests, parseList(status.allocated));
  return requests;
}

// Requests, falling back per resource to limits (what API defaulting does).
function containerRequests(c: V1Container): Map<string, bigint> {
  const result = parseList(c.resources?.limits);
  for (const [name, nanos] of parseList(c.resources?.requests)) result.set(name, nanos);
  return result;
}

function parseList(list: ResourceList): Map<string, bigint> {
  return new Map(Object.entries(list ?? {}).map(([name, text]) => [name, parseQuantity(text).nanos]));
}

function addTo(target: Map<string, bigint>, source: Map<string, bigint>): void {
  for (const [name, nanos] of source) target.set(name, (target.get(name) ?? 0n) + nanos);
}

function maxInto(target: Map<string, bigint>, source: Map<string, bigint>): void {
  for (const [name, nanos] of source) {
    const current = target.get(name);
    if (current === undefined || nanos > current) target.set(name, nanos);
  }
}

function sumInto(target: Map<string, Quantity>, list: ResourceList): void {
  for (const [name, text] of Object.entries(list ?? {})) {
    const q = parseQuantity(text);
    const current = target.get(name);
    target.set(name, current ? add(current, q) : q);
  }
}

function toRecord(map: Map<string, Quantity>): Record<string, string> {
  const entries = [...map].sort(([a], [b]) => (a < b ? -1 : 1));
  return Object.fromEntries(entries.map(([name, q]) => [name, formatQuantity(clampZero(q))]));
}

function mostCommon(values: (string | undefined)[]): string | undefined {
  const counts = new Map<string, number>();
  for (const v of values) if (v) counts.set(v, (counts.get(v) ?? 0) + 1);
  const ranked = [...counts].sort(([a, m], [b, n]) => n - m || (a < b ? -1 : 1));
  return ranked[0]?.[0];
}
