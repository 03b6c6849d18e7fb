// Resizes in place: the patch of a delegate's `resize` subresource that brings its containers' cpu and memory to
// what the proxy asks for (member/pod/resize.ts sends it). Pure.
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { compact, nonEmpty } from './objects.ts';
import { isQuantity, parseQuantity } from './quantity.ts';

/** The resources a running pod's `resize` subresource changes (the API refuses any other change of them). */
const RESIZABLE_RESOURCES = ['cpu', 'memory'];

/** The body of a strategic merge patch of a pod's `resize` subresource: containers merge by name. */
export interface ResizePatch {
  spec: { containers?: V1Container[]; initContainers?: V1Container[] };
}

/**
 * The patch of the delegate's `resize` subresource that brings its containers' cpu and memory requests and limits
 * to the proxy's (a resize on the host changes only those), or `undefined` when they already match. Only values the
 * proxy sets count, compared as quantities: one the member added (a LimitRange default) is no difference, and a
 * resize could not remove it anyway.
 */
export function delegateResize(proxy: V1Pod, delegate: V1Pod): ResizePatch | undefined {
  const containers = resizedContainers(proxy.spec?.containers, delegate.spec?.containers);
  const initContainers = resizedContainers(proxy.spec?.initContainers, delegate.spec?.initContainers);
  if (!containers && !initContainers) return undefined;
  return { spec: compact({ containers, initContainers }) };
}

function resizedContainers(desired: V1Container[] | undefined, actual: V1Container[] | undefined): V1Container[] | undefined {
  return nonEmpty((desired ?? []).flatMap((want) => {
    const have = actual?.find((c) => c.name === want.name);
    const requests = resizable(want.resources?.requests);
    const limits = resizable(want.resources?.limits);
    if (!have || (within(requests, have.resources?.requests) && within(limits, have.resources?.limits))) return [];
    return [{ name: want.name, resources: compact({ requests, limits }) }];
  }));
}

function resizable(list: Record<string, string> | undefined): Record<string, string> | undefined {
  const kept = Object.entries(list ?? {}).filter(([name]) => RESIZABLE_RESOURCES.includes(name));
  return kept.length > 0 ? Object.fromEntries(kept) : undefined;
}

/** Whether every value of `want` is in `have`, the same quantity ("0.5" is "500m"). */
function within(want: Record<string, string> | undefined, have: Record<string, string> | undefined): boolean {
  return Object.entries(want ?? {}).every(([name, value]) => sameQuantity(value, have?.[name]));
}

function sameQuantity(a: string, b: string | undefined): boolean {
  if (b === undefined) return false;
  return isQuantity(a) && isQuantity(b) ? parseQuantity(a).nanos === parseQuantity(b).nanos : a === b;
}
