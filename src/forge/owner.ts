// Who owns a member object: every object clusterlet creates in a member carries the host's identity
// (`clusterlet.io/origin`) and the virtual node that created it (`clusterlet.io/node`). A process touches only
// what its own (host, node) pair owns; delegates of other hosts or other nodes are other people's workloads.
import type { V1ObjectMeta, V1Pod } from '@kubernetes/client-node';
import { NODE_LABEL, ORIGIN_LABEL, PROXY_NAME_ANNOTATION, PROXY_NAMESPACE_ANNOTATION, PROXY_UID_LABEL, VIRTUAL_NODE_LABEL } from './keys.ts';

/** The owner of member objects: the host cluster's identity and the virtual node. */
export interface Owner { hostName: string; node: string }

/** The origin value clusterlet used when no host name was configured, before hosts had an identity. */
export const LEGACY_DEFAULT_HOST = 'host';

/** The labels that mark a member object as the owner's. */
export function ownerLabels(owner: Owner): Record<string, string> {
  return { [ORIGIN_LABEL]: owner.hostName, [NODE_LABEL]: owner.node };
}

/** Created by this host (any of its virtual nodes). */
export function fromHost(meta: V1ObjectMeta | undefined, host: string): boolean {
  return meta?.labels?.[ORIGIN_LABEL] === host;
}

/** Created by this host for this virtual node. */
export function ownedBy(meta: V1ObjectMeta | undefined, owner: Owner): boolean {
  return meta?.labels?.[ORIGIN_LABEL] === owner.hostName && meta.labels[NODE_LABEL] === owner.node;
}

/** The proxy a delegate stands for. */
export interface HostRef { namespace: string; name: string; uid: string }

/** A delegate of the owner's host: the proxy it stands for, and whether the owner's own virtual node created it. */
export interface DelegateOf { ref: HostRef; ownNode: boolean }

/**
 * Whether a member pod is a delegate of the owner's host (any of its virtual nodes) and which proxy it stands for;
 * undefined for anything else (the member's own pods, other hosts' delegates). The one answer to "is this ours".
 */
export function delegateOf(pod: V1Pod | undefined, owner: Owner): DelegateOf | undefined {
  const meta = pod?.metadata;
  if (!fromHost(meta, owner.hostName) || meta?.labels?.[NODE_LABEL] === undefined) return undefined;
  const namespace = meta.annotations?.[PROXY_NAMESPACE_ANNOTATION];
  const name = meta.annotations?.[PROXY_NAME_ANNOTATION];
  const uid = meta.labels[PROXY_UID_LABEL];
  return namespace && name && uid ? { ref: { namespace, name, uid }, ownNode: meta.labels[NODE_LABEL] === owner.node } : undefined;
}

/** Which proxy a member pod is the delegate of, when the owner's virtual node created it; undefined otherwise. */
export function hostRefOf(pod: V1Pod, owner: Owner): HostRef | undefined {
  const d = delegateOf(pod, owner);
  return d?.ownNode ? d.ref : undefined;
}

/** A pod that is a delegate of some clusterlet (any host, any node). */
export function isAnyDelegate(pod: V1Pod): boolean {
  return pod.metadata?.labels?.[ORIGIN_LABEL] !== undefined && pod.metadata.labels[PROXY_UID_LABEL] !== undefined;
}

/**
 * The virtual node whose proxy a delegate stands for: its VIRTUAL_NODE_LABEL (a pool's or a member node's virtual
 * node), else the member's own node that created it.
 */
export function virtualNodeOf(pod: V1Pod | undefined): string | undefined {
  const labels = pod?.metadata?.labels;
  return labels?.[VIRTUAL_NODE_LABEL] ?? labels?.[NODE_LABEL];
}
