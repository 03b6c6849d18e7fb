// The proxy's status policy, decided here and only here: the delegate's status (forge/status.ts, from the provider)
// merged with what the host owns on the proxy (its own conditions, PodScheduled and DisruptionTarget while the
// delegate has none, readiness gates), whether it is worth a write, and the patch that writes it.
import type { V1Container, V1ContainerStatus, V1Pod, V1PodCondition, V1PodReadinessGate, V1PodStatus } from '@kubernetes/client-node';
import { OFFLOADED_CONDITION } from '../../forge/keys.ts';
import { isTerminal } from '../../forge/pod.ts';
import { compact, nonEmpty, wholeSeconds } from '../../forge/objects.ts';
import { DELEGATE_CONDITIONS, HOST_SHARED_CONDITIONS, LOST_CONTAINER_EXIT_CODE, restartingStatus, waitingSinceLoss } from '../../forge/status.ts';
import type { ProviderPod } from '../../provider/pod.ts';
import { byCodeUnits } from '../../util/order.ts';

/** Conditions the status mirror neither writes nor deletes: the pod controller's own. */
export const OWN_CONDITIONS: ReadonlySet<string> = new Set([OFFLOADED_CONDITION]);

/**
 * The status the proxy should show: the delegate's, with the conditions the host owns on the proxy kept, and its
 * ephemeral containers' statuses (ephemeralStatuses).
 */
export function desiredProxyStatus(proxy: V1Pod, fromDelegate: V1PodStatus, now: Date = new Date()): V1PodStatus {
  return compact({
    ...fromDelegate,
    // When the pod started, once: a delegate that replaces a lost one starts later, but the pod does not start again.
    startTime: proxy.status?.startTime ?? fromDelegate.startTime,
    conditions: nonEmpty(proxyConditions(fromDelegate.conditions ?? [], proxy)),
    ephemeralContainerStatuses: nonEmpty(ephemeralStatuses(proxy, fromDelegate.ephemeralContainerStatuses ?? [], now)),
  });
}

// What a kubelet shows of an ephemeral container that ran in a delegate since lost (its successor never runs it again).
const LOST_EPHEMERAL_REASON = 'DelegateLost';
const LOST_EPHEMERAL_MESSAGE = 'ran in an earlier delegate, which was lost; ephemeral containers are not restarted';

/**
 * The proxy's ephemeral container statuses: the delegate's for the proxy's ephemeral containers (one someone added
 * to the delegate in the member is not the proxy's: the proxy has no container of that name), and, for one the
 * proxy has a status of and the delegate none, that status, terminated: it ran in an earlier delegate, and a
 * kubelet keeps an ephemeral container's status once it ran. The API also forbids a terminated one to run again.
 */
function ephemeralStatuses(proxy: V1Pod, fromDelegate: V1ContainerStatus[], now: Date): V1ContainerStatus[] {
  const at = wholeSeconds(now);
  return (proxy.spec?.ephemeralContainers ?? []).flatMap((c) => {
    const reported = fromDelegate.find((s) => s.name === c.name);
    if (reported) return [reported];
    const earlier = proxy.status?.ephemeralContainerStatuses?.find((s) => s.name === c.name);
    return earlier ? [terminatedStatus(c, earlier, LOST_EPHEMERAL_REASON, LOST_EPHEMERAL_MESSAGE, at)] : [];
  });
}

/**
 * The status patch to write onto `proxy` given its delegate (`running`, as the provider sees it) and the delegate's
 * status in host coordinates; undefined when nothing should be written.
 */
export function proxyStatusUpdate(proxy: V1Pod, running: ProviderPod, fromDelegate: V1PodStatus | undefined): Record<string, unknown> | undefined {
  // A delegate the member is removing (its node was lost, it was evicted) is not finished: if it will be created
  // again, its Failed phase is not the proxy's. Only restartPolicy Never makes the loss the pod's end.
  if (running.phase === 'Failed' && (running.terminating || running.disruption)
    && (proxy.spec?.restartPolicy ?? 'Always') !== 'Never') return undefined;
  if (!fromDelegate) return undefined;
  const desired = desiredProxyStatus(proxy, fromDelegate);
  // A finished pod never goes back (the API would refuse it anyway).
  if (isTerminal(proxy) && desired.phase !== proxy.status?.phase) return undefined;
  if (statusEqual(desired, proxy.status) || !pendingStatusInformative(desired, proxy.status)) return undefined;
  // The Offloaded condition is the lifecycle's to write: never send a (possibly stale) copy of it.
  return proxyStatusPatch(desired, proxy.status, OWN_CONDITIONS);
}

function proxyConditions(fromDelegate: V1PodCondition[], proxy: V1Pod | undefined): V1PodCondition[] {
  const types = new Set(fromDelegate.map((c) => c.type));
  // The proxy's own condition objects, shared: the desired status is only read (compared, serialized).
  const fromHost = (proxy?.status?.conditions ?? []).filter(
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
    // Those that ran (one never started has no status); Liqo's forge terminates them the same way on a pod's end.
    ephemeralContainerStatuses: nonEmpty((current.ephemeralContainerStatuses ?? []).map((s) =>
      terminatedStatus(s, s, reason, message, at))),
  });
}

/**
 * The proxy's status once its delegate is lost and is to be made again (restartPolicy Always or OnFailure), from then
 * until the new delegate reports, however long its creation fails: what a kubelet shows of a pod restarting its
 * containers (Running, Ready and ContainersReady False, each container waiting with `restarts`, last killed with the
 * lost delegate), as forge/status.ts shows a new delegate not started yet. Undefined when the proxy shows that already.
 */
export function proxyStatusWhileRestarting(proxy: V1Pod, restarts: Record<string, number>, now: Date = new Date()): Record<string, unknown> | undefined {
  const current = proxy.status ?? {};
  const statuses = current.containerStatuses ?? [];
  if (current.phase === 'Running' && statuses.length > 0 && statuses.every(waitingSinceLoss) && !isReadyStatus(current)) return undefined;
  const at = wholeSeconds(now);
  const down = ['ContainersReady', 'Ready'].map((type): V1PodCondition => ({ type, status: 'False', reason: 'ContainersNotReady', lastTransitionTime: at }));
  const kept = (current.conditions ?? []).filter((c) => DELEGATE_CONDITIONS.has(c.type) && c.type !== 'Ready' && c.type !== 'ContainersReady');
  const fromDelegate: V1PodStatus = {
    ...current, phase: 'Running', reason: undefined, message: undefined, conditions: [...kept, ...down],
    containerStatuses: (proxy.spec?.containers ?? []).map((c) => restartingStatus(c.name, c.image, restarts[c.name] ?? 0, at)),
  };
  return proxyStatusPatch(desiredProxyStatus(proxy, compact(fromDelegate), now), proxy.status, OWN_CONDITIONS);
}

const isReadyStatus = (s: V1PodStatus): boolean => s.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

function terminatedStatus(
  container: Pick<V1Container, 'name' | 'image'>,
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

/**
 * Whether writing `b` over `a` would change nothing that matters: conditions compare by type and container
 * statuses by name whatever their order, timestamps by the second whether Date or string, and null, undefined
 * and empty arrays are all "absent". It runs on every proxy change and every status sync: it compares in place,
 * building nothing.
 */
export function statusEqual(a: V1PodStatus | undefined, b: V1PodStatus | undefined): boolean {
  return same(a ?? {}, b ?? {}, '');
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const SORT_KEYS: Record<string, string> = {
  conditions: 'type',
  containerStatuses: 'name',
  initContainerStatuses: 'name',
  ephemeralContainerStatuses: 'name',
};

const absent = (v: unknown): boolean => v === null || v === undefined || (Array.isArray(v) && v.length === 0);

/** A timestamp's whole seconds (a Date, or a string in RFC 3339), else undefined. */
function seconds(v: unknown): number | undefined {
  if (v instanceof Date) return Math.floor(v.getTime() / 1000);
  if (typeof v === 'string' && RFC3339.test(v)) return Math.floor(Date.parse(v) / 1000);
  return undefined;
}

/** `a` and `b` (the value of `field`) alike, as statusEqual tells. */
function same(a: unknown, b: unknown, field: string): boolean {
  if (a === b) return true;
  if (absent(a) || absent(b)) return absent(a) && absent(b);
  const ta = seconds(a), tb = seconds(b);
  if (ta !== undefined || tb !== undefined) return ta === tb;
  if (typeof a !== 'object' || typeof b !== 'object') return Object.is(a, b);
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b)) return false;
    return sameItems(a, b) || (SORT_KEYS[field] !== undefined && sameItems(sortedBy(a, SORT_KEYS[field]), sortedBy(b, SORT_KEYS[field])));
  }
  const x = a as Record<string, unknown>, y = b as Record<string, unknown>;
  for (const k in x) if (!same(x[k], y[k], k)) return false;
  for (const k in y) if (!Object.hasOwn(x, k) && !absent(y[k])) return false;
  return true;
}

function sameItems(a: unknown[], b: unknown[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (!same(a[i], b[i], '')) return false;
  return true;
}

function sortedBy(items: unknown[], key: string): unknown[] {
  return [...items].sort((x, y) => compareBy(x, y, key));
}

function compareBy(x: unknown, y: unknown, key: string): number {
  return byCodeUnits(String((x as Record<string, unknown> | null)?.[key]), String((y as Record<string, unknown> | null)?.[key]));
}
