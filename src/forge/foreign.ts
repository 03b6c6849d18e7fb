// What clusterlet keeps of a member pod that is not a delegate of its host: the member's own workloads, and other
// hosts' delegates. Of those it reads only what the node's capacity needs (forge/capacity.ts: bound node, phase, the
// requests of its containers and what its status says of a resize) and whether the pod is anybody's delegate
// (forge/owner.ts). A member's own pods can outnumber the delegates many times over, and a full pod is kilobytes of
// env, volumes, probes and status the store would keep for nothing.
import type { V1Container, V1ContainerStatus, V1ObjectMeta, V1Pod, V1PodCondition, V1PodSpec } from '@kubernetes/client-node';
import { NODE_LABEL, ORIGIN_LABEL, PROXY_NAME_ANNOTATION, PROXY_NAMESPACE_ANNOTATION, PROXY_UID_LABEL } from './keys.ts';
import { delegateOf, type Owner } from './owner.ts';

const KEPT_LABELS = [ORIGIN_LABEL, NODE_LABEL, PROXY_UID_LABEL] as const;
const KEPT_ANNOTATIONS = [PROXY_NAMESPACE_ANNOTATION, PROXY_NAME_ANNOTATION] as const;

/**
 * A member pod as the owner's member informer keeps it: whole when it is a delegate of the owner's host (any of its
 * nodes: the pod controller, the mirror and the Services read its spec and status), else only what the capacity and
 * the "is this a delegate" answers read, the same answers as from the whole pod.
 */
export function memberPodShape(pod: V1Pod, owner: Owner, specShape: (spec: V1PodSpec) => V1PodSpec = foreignSpecShape): V1Pod {
  return delegateOf(pod, owner) ? pod : foreignPodShape(pod, specShape);
}

/** The fields of a pod that is not this host's delegate that clusterlet reads (its spec's: `specShape`'s). */
export function foreignPodShape(pod: V1Pod, specShape: (spec: V1PodSpec) => V1PodSpec = foreignSpecShape): V1Pod {
  const m = pod.metadata ?? {};
  const metadata: V1ObjectMeta = { name: m.name, namespace: m.namespace, uid: m.uid, resourceVersion: m.resourceVersion };
  if (m.generation !== undefined) metadata.generation = m.generation;
  if (m.creationTimestamp !== undefined) metadata.creationTimestamp = m.creationTimestamp;
  if (m.deletionTimestamp !== undefined) metadata.deletionTimestamp = m.deletionTimestamp;
  const labels = pick(m.labels, KEPT_LABELS);
  if (labels) metadata.labels = labels;
  const annotations = pick(m.annotations, KEPT_ANNOTATIONS);
  if (annotations) metadata.annotations = annotations;

  const s = pod.spec;
  const out: V1Pod = { metadata };
  if (pod.apiVersion) out.apiVersion = pod.apiVersion;
  if (pod.kind) out.kind = pod.kind;
  if (s) out.spec = specShape(s);
  const st = pod.status;
  if (st) {
    out.status = {};
    if (st.phase !== undefined) out.status.phase = st.phase;
    const resizing = st.conditions?.filter((c) => c.type === 'PodResizePending');
    if (resizing?.length) out.status.conditions = resizing.map((c): V1PodCondition => ({ type: c.type, status: c.status, reason: c.reason }));
    const cs = resourceStatuses(st.containerStatuses);
    if (cs) out.status.containerStatuses = cs;
    const ics = resourceStatuses(st.initContainerStatuses);
    if (ics) out.status.initContainerStatuses = ics;
  }
  return out;
}

/** The fields of a foreign pod's spec that clusterlet reads. */
export function foreignSpecShape(s: V1PodSpec): V1PodSpec {
  const spec: V1PodSpec = { containers: s.containers.map(containerShape) };
  if (s.nodeName !== undefined) spec.nodeName = s.nodeName;
  if (s.initContainers) spec.initContainers = s.initContainers.map(containerShape);
  if (s.resources) spec.resources = s.resources;
  if (s.overhead) spec.overhead = s.overhead;
  return spec;
}

function pick(map: Record<string, string> | undefined, keys: readonly string[]): Record<string, string> | undefined {
  if (!map) return undefined;
  let out: Record<string, string> | undefined;
  for (const k of keys) if (map[k] !== undefined) (out ??= {})[k] = map[k];
  return out;
}

function containerShape(c: V1Container): V1Container {
  const out: V1Container = { name: c.name };
  if (c.resources) out.resources = c.resources;
  if (c.restartPolicy !== undefined) out.restartPolicy = c.restartPolicy;
  return out;
}

/** The container statuses that say something of resources (forge/capacity.ts resizeStatus reads only those). */
function resourceStatuses(statuses: V1ContainerStatus[] | undefined): V1ContainerStatus[] | undefined {
  const kept = statuses?.filter((cs) => cs.resources).map((cs): V1ContainerStatus => {
    const out = { name: cs.name, resources: cs.resources } as V1ContainerStatus;
    if (cs.allocatedResources) out.allocatedResources = cs.allocatedResources;
    return out;
  });
  return kept?.length ? kept : undefined;
}
