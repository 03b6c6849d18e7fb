// Whether a delegate fits on one member node, as the member's scheduler counts it: a usable node that its node
// selector, required node affinity and tolerations admit, with each requested resource's allocatable minus the
// requests of the pods bound there at least what it asks. Pure; the member's nodes and per-node requests come in.
import type { V1Container, V1Node, V1NodeSelectorRequirement, V1Pod, V1Taint, V1Toleration } from '@kubernetes/client-node';
import { nodeIsUsable, podRequests, type RequestsByNode } from './capacity.ts';
import { formatQuantity, parseQuantity, quantity, type QuantityFormat } from './quantity.ts';

/**
 * What a member does with a delegate that fits none of its nodes (config `fit`): `enforce` creates none
 * (NoMemberNodeFits) until one has room; `advisory` creates it all the same, to wait Pending in the member for its
 * autoscaler (WaitingForMemberScaleUp); `off` judges nothing; `auto`, the default, is advisory while the member
 * shows it can add nodes (member/scaling.ts) and enforce otherwise.
 */
export const FIT_MODES = ['auto', 'enforce', 'advisory', 'off'] as const;
export type FitMode = typeof FIT_MODES[number];

/** The reason of a proxy whose delegate waits Pending in the member for a node the member is to add. */
export const WAITING_FOR_SCALE_UP = 'WaitingForMemberScaleUp';

/** A fit, or why none: the pod's requests and the most one admitting node has free of each (canonical quantities). */
export type FitAnswer =
  | { fits: true; node: string }
  | { fits: false; requests: Record<string, string>; largestFree: Record<string, string>; candidates: number };

/**
 * What memberFit reads of a pod, and nothing else: each container's name, restart policy and resources (requests,
 * and limits, which stand for requests that are missing), the pod's own resources and overhead, its node selector,
 * node affinity and tolerations. What is kept of a pod the fit judges again later.
 */
export function fitView(pod: V1Pod): V1Pod {
  const s = pod.spec;
  const containers = (cs: V1Container[] | undefined): V1Container[] | undefined =>
    cs?.map((c) => ({ name: c.name, ...c.restartPolicy ? { restartPolicy: c.restartPolicy } : {},
      ...c.resources ? { resources: { requests: c.resources.requests, limits: c.resources.limits } } : {} }));
  return { spec: {
    containers: containers(s?.containers) ?? [], initContainers: containers(s?.initContainers),
    resources: s?.resources, overhead: s?.overhead, nodeSelector: s?.nodeSelector, tolerations: s?.tolerations,
    affinity: s?.affinity?.nodeAffinity ? { nodeAffinity: s.affinity.nodeAffinity } : undefined,
  } };
}

/**
 * Where `pod` (the delegate as it will be created) fits among `nodes`, `used` being the requests per node of every
 * pod bound there (delegates too). Resources it does not request are not looked at.
 */
export function memberFit(pod: V1Pod, nodes: V1Node[], used: RequestsByNode): FitAnswer {
  const requests = [...podRequests(pod)].filter(([, nanos]) => nanos > 0n);
  const largest = new Map<string, bigint>();
  const formats = new Map<string, QuantityFormat>();
  let candidates = 0;
  for (const node of nodes) {
    if (!nodeIsUsable(node) || !admits(node, pod)) continue;
    candidates++;
    const name = node.metadata?.name ?? '';
    const allocatable = node.status?.allocatable ?? node.status?.capacity ?? {};
    const onNode = used.get(name);
    let fits = true;
    for (const [resource, want] of requests) {
      const text = allocatable[resource];
      const q = text === undefined ? undefined : parseQuantity(text);
      if (q && !formats.has(resource)) formats.set(resource, q.format);
      const free = (q?.nanos ?? 0n) - (onNode?.get(resource) ?? 0n);
      if (free > (largest.get(resource) ?? -1n)) largest.set(resource, free);
      if (free < want) fits = false;
    }
    if (fits) return { fits: true, node: name };
  }
  const show = (resource: string, nanos: bigint): string =>
    formatQuantity(quantity(nanos < 0n ? 0n : nanos, formats.get(resource) ?? (resource === 'memory' ? 'BinarySI' : 'DecimalSI')));
  // The pod count says something only when it is what is short.
  const shown = requests.filter(([r, n]) => r !== 'pods' || (largest.get(r) ?? 0n) < n).sort(([a], [b]) => (a < b ? -1 : 1));
  return {
    fits: false, candidates,
    requests: Object.fromEntries(shown.map(([r, n]) => [r, show(r, n)])),
    largestFree: Object.fromEntries(shown.map(([r]) => [r, show(r, largest.get(r) ?? 0n)])),
  };
}

/**
 * The one-line reason a proxy shows when its delegate fits no member node, and what a user can do; `scope` names the
 * member nodes looked at ("member m", "member m (pool x=y)": forge/groups.ts describeGroup).
 */
export function noFitMessage(scope: string, a: Extract<FitAnswer, { fits: false }>): string {
  return `${noFitWhere(scope, a)}. It is offloaded once one has room: lower its requests, add member nodes, or, where the `
    + `member adds nodes for Pending pods, set its fit to advisory (the delegate then waits in the member)`;
}

/**
 * The one-line reason a proxy shows when its delegate fits no member node now and was created all the same, to wait
 * Pending for the member to add a node; `growth` says what shows that the member can (member/scaling.ts), if known.
 */
export function scaleUpMessage(scope: string, a: Extract<FitAnswer, { fits: false }>, growth: string | undefined): string {
  return `${noFitWhere(scope, a)}. The delegate waits Pending in the member for it to add a node`
    + `${growth ? ` (${growth})` : ''}; it runs once one has room`;
}

function noFitWhere(scope: string, a: Extract<FitAnswer, { fits: false }>): string {
  const list = (r: Record<string, string>): string => Object.entries(r).map(([k, v]) => `${k} ${v}`).join(', ');
  return a.candidates === 0
    ? `no Ready member node of ${scope} admits it (its node selector, required node affinity or tolerations)`
    : `no Ready member node of ${scope} has room for its requests (${list(a.requests)}); the most one of the `
      + `${a.candidates} it may run on has free is ${list(a.largestFree)}`;
}

/** Whether the node's labels and taints let the pod on, as the scheduler's NodeAffinity and TaintToleration judge. */
function admits(node: V1Node, pod: V1Pod): boolean {
  const labels = node.metadata?.labels ?? {};
  const spec = pod.spec;
  for (const [k, v] of Object.entries(spec?.nodeSelector ?? {})) if (labels[k] !== v) return false;
  // As the scheduler's nodeaffinity: the terms are ORed, a term's requirements ANDed, and a term without any
  // requirement matches no node (component-helpers' nodeSelectorTerm: an empty term selects nothing).
  const terms = spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  if (terms && !terms.some((t) => ((t.matchExpressions?.length ?? 0) + (t.matchFields?.length ?? 0)) > 0
    && (t.matchExpressions ?? []).every((r) => matches(r, labels))
    && (t.matchFields ?? []).every((r) => matches(r, { 'metadata.name': node.metadata?.name ?? '' })))) return false;
  const tolerations = spec?.tolerations ?? [];
  return (node.spec?.taints ?? []).every((t) => (t.effect !== 'NoSchedule' && t.effect !== 'NoExecute')
    || tolerations.some((tol) => tolerates(tol, t)));
}

function matches(r: V1NodeSelectorRequirement, labels: Record<string, string>): boolean {
  const v = labels[r.key];
  const values = r.values ?? [];
  switch (r.operator) {
    case 'In': return v !== undefined && values.includes(v);
    case 'NotIn': return v === undefined || !values.includes(v);
    case 'Exists': return v !== undefined;
    case 'DoesNotExist': return v === undefined;
    case 'Gt': return v !== undefined && Number(v) > Number(values[0]);
    case 'Lt': return v !== undefined && Number(v) < Number(values[0]);
    default: return true;
  }
}

function tolerates(tol: V1Toleration, taint: V1Taint): boolean {
  if (tol.effect && tol.effect !== taint.effect) return false;
  if (tol.operator === 'Exists') return !tol.key || tol.key === taint.key;
  return tol.key === taint.key && (tol.value ?? '') === (taint.value ?? '');
}
