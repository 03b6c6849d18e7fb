// Status forge: a delegate's status in host coordinates (the virtual node's address, restarts of lost predecessors
// carried, only the conditions the member's kubelet and scheduler own). Merging it with the proxy's own status, and
// deciding what to write, is the host's (host/pod/status.ts). See docs/ARCHITECTURE.md.
import type { V1ContainerStateTerminated, V1ContainerStatus, V1Pod, V1PodCondition, V1PodStatus } from '@kubernetes/client-node';
import { RESTARTS_ANNOTATION } from './keys.ts';
import { isScheduled, isTerminal } from './pod.ts';
import { compact, nonEmpty } from './objects.ts';

// Conditions the member's kubelet and scheduler set on the delegate; they replace the proxy's.
export const DELEGATE_CONDITIONS = new Set([
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
export const HOST_SHARED_CONDITIONS = new Set(['PodScheduled', 'DisruptionTarget']);

/**
 * The delegate's status as the proxy should show it, before the host's own conditions are merged in: Pending until
 * the delegate is scheduled in the member (or terminal); hostIP is the virtual node's; the member's pod IPs as they are.
 */
export function forgeHostStatus(delegate: V1Pod, hostIP: string): V1PodStatus {
  // The result shares what it does not change with the delegate (the informer's object): it is built anew on
  // every status sync, and nobody writes into it.
  const source = delegate.status ?? {};
  const earlier = delegateRestarts(delegate);
  const lost = lostAt(delegate);
  // A delegate that replaces a lost one and has not started its containers: the pod is restarting them, as a kubelet
  // shows it, not a new pod (Running, its containers waiting with their restarts, not Ready).
  const restarting = earlier !== undefined && !isTerminal(delegate) && !source.containerStatuses?.length;
  const conditions = delegateConditions(source.conditions ?? []);
  return compact({
    phase: restarting ? 'Running' : proxyPhase(delegate),
    conditions: restarting ? restartingConditions(conditions, lost) : nonEmpty(conditions),
    message: source.message,
    reason: source.reason,
    containerStatuses: restarting
      ? delegate.spec?.containers.map((c) => restartingStatus(c.name, c.image, earlier[c.name] ?? 0, lost))
      : withRestarts(source.containerStatuses, earlier, lost),
    initContainerStatuses: withRestarts(source.initContainerStatuses, earlier, lost),
    ephemeralContainerStatuses: source.ephemeralContainerStatuses,
    hostIP,
    hostIPs: [{ ip: hostIP }],
    podIP: source.podIP,
    podIPs: source.podIPs,
    startTime: source.startTime,
    qosClass: source.qosClass,
  });
}

const RESIZE_PENDING = 'PodResizePending';

/** A resize of the proxy that the member refused (its API server, e.g. more than the delegate's node has). */
export interface RefusedResize {
  message: string;
  /** When it was refused: the condition's lastTransitionTime. */
  at: Date;
}

/**
 * `status` with the refused resize shown as the kubelet shows one it cannot do: PodResizePending, reason
 * Infeasible, in place of whatever PodResizePending the delegate has (about an earlier resize). With it the host's
 * scheduler counts the resources the pod has, not the ones it asked for.
 */
export function withResizeInfeasible(status: V1PodStatus, refused: RefusedResize): V1PodStatus {
  const others = (status.conditions ?? []).filter((c) => c.type !== RESIZE_PENDING);
  return { ...status, conditions: [...others, {
    type: RESIZE_PENDING, status: 'True', reason: 'Infeasible', message: refused.message, lastTransitionTime: refused.at,
  }] };
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
 * Container statuses with the restarts of earlier delegates added, and, for a container that has not restarted in
 * this delegate, its last state: killed with the lost one (copies: the delegate's are left as they are).
 */
function withRestarts(statuses: V1ContainerStatus[] | undefined, earlier: Record<string, number> | undefined,
  lost: Date | undefined): V1ContainerStatus[] | undefined {
  if (!earlier || !statuses) return statuses;
  return statuses.map((cs) => {
    const before = earlier[cs.name] ?? 0;
    const out = { ...cs, restartCount: (cs.restartCount ?? 0) + before };
    if (before > 0 && !cs.lastState?.terminated) out.lastState = { terminated: lostTermination(lost) };
    return out;
  });
}

// What a kubelet reports for a container that was killed rather than seen to exit (SIGKILL).
export const LOST_CONTAINER_EXIT_CODE = 137;
const LOST_REASON = 'DelegateLost';
const LOST_MESSAGE = 'killed with its delegate, which the member lost (its node gone, or the pod deleted or evicted there)';

/** When the lost delegate was replaced: the replacement's creation, a time that does not move between syncs. */
function lostAt(delegate: V1Pod): Date | undefined {
  const t = delegate.metadata?.creationTimestamp;
  return t === undefined ? undefined : new Date(t);
}

function lostTermination(at: Date | undefined): V1ContainerStateTerminated {
  return compact({ exitCode: LOST_CONTAINER_EXIT_CODE, reason: LOST_REASON, message: LOST_MESSAGE, finishedAt: at });
}

/** A container of a replacement delegate not started yet: waiting, with its restarts, last killed with the lost one. */
export function restartingStatus(name: string, image: string | undefined, restarts: number, lost: Date | undefined): V1ContainerStatus {
  return {
    name, image: image ?? '', imageID: '', ready: false, started: false, restartCount: restarts,
    state: { waiting: { reason: 'ContainerCreating' } },
    lastState: { terminated: lostTermination(lost) },
  };
}

/** The replacement's conditions, with Ready and ContainersReady False (ContainersNotReady) until it reports its own. */
function restartingConditions(conditions: V1PodCondition[], lost: Date | undefined): V1PodCondition[] {
  const has = new Set(conditions.map((c) => c.type));
  const down = ['ContainersReady', 'Ready'].filter((t) => !has.has(t))
    .map((type) => compact<V1PodCondition>({ type, status: 'False', reason: 'ContainersNotReady', lastTransitionTime: lost }));
  return [...conditions, ...down];
}

/**
 * The restarts to carry over when a lost delegate is created again: what the proxy shows for each container,
 * plus one for the loss itself (the container was killed with its pod), unless the proxy shows it waiting since a
 * loss already (counted then: it has not run since).
 */
export function restartsAfterLoss(proxy: V1Pod): Record<string, number> {
  const out: Record<string, number> = {};
  for (const c of proxy.spec?.containers ?? []) {
    const cs = proxy.status?.containerStatuses?.find((s) => s.name === c.name);
    out[c.name] = (cs?.restartCount ?? 0) + (cs && waitingSinceLoss(cs) ? 0 : 1);
  }
  return out;
}

/** Whether a container status is waiting, last killed with a lost delegate (restartingStatus). */
export function waitingSinceLoss(cs: V1ContainerStatus): boolean {
  return cs.state?.waiting !== undefined && cs.lastState?.terminated?.reason === LOST_REASON;
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

/** The conditions the member owns, without observedGeneration (it counts the delegate's generations, not the proxy's). */
function delegateConditions(conditions: V1PodStatus['conditions'] & object): V1PodStatus['conditions'] & object {
  return conditions.filter((c) => DELEGATE_CONDITIONS.has(c.type)).map(({ observedGeneration: _, ...c }) => c);
}
