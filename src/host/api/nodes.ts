// Which virtual node a kubelet API request is about, and which host pod. One server serves every virtual node
// of the process: a pod is found in the proxies informer of the node it is bound to (no watch of its own); what
// stands behind it is the node's runtime's business.
import type { V1Pod } from '@kubernetes/client-node';
import type { Informer } from '../../kube/informer.ts';
import type { PodRuntime } from '../../provider/runtime.ts';
import { ApiError } from './errors.ts';

/** A virtual node as the kubelet API sees it. */
export interface VirtualNode {
  name: string;
  /** Its kubelet API port (the daemon endpoint it publishes). */
  port: number;
  /** Host pods bound to this node (the pod controller's informer). */
  proxies: Informer<V1Pod>;
  /** The host pods whose delegate the back end runs (the pod controller's `running`). */
  running(): V1Pod[];
  /** Runs the node's pods: logs, exec, attach, port-forward and usage. */
  runtime: PodRuntime;
}

/** The nodes this process serves right now (members still being set up are absent). */
export interface NodeDirectory {
  nodes(): VirtualNode[];
}

/** A host pod on one of our nodes. */
export interface ResolvedPod {
  node: VirtualNode;
  proxy: V1Pod;
  namespace: string;
  name: string;
  uid: string;
}

/**
 * The node named in `X-Forwarded-Uri` when the request came through the API server's node proxy
 * (`/api/v1/nodes/<node>/proxy/...`, also `<scheme>:<node>:<port>`). Never trusted for more than it
 * narrows: authorisation is checked against the node that serves the request.
 */
export function forwardedNode(header: string | string[] | undefined): string | undefined {
  const v = Array.isArray(header) ? header[0] : header;
  const m = v ? /^\/api\/v1\/nodes\/([^/]+)\/proxy(?:\/|$)/.exec(v) : null;
  if (!m) return undefined;
  const id = decodeURIComponent(m[1]);
  const parts = id.split(':');
  // name | name:port | scheme:name:port
  return parts.length === 3 ? parts[1] : parts[0];
}

/**
 * The node a node-level request (/pods, /stats/summary, /metrics/resource) is about: the one the API
 * server's node proxy names, else the only node on the port the request came in on.
 */
export function nodeFor<N extends Pick<VirtualNode, 'name' | 'port'>>(dir: { nodes(): N[] }, hint: string | undefined,
  localPort?: number): N {
  const all = dir.nodes();
  if (hint) {
    const n = all.find((x) => x.name === hint);
    if (!n) throw new ApiError('NotFound', `node ${hint} is not served here`);
    return n;
  }
  const nodes = localPort === undefined ? all : all.filter((n) => n.port === localPort);
  if (nodes.length === 1) return nodes[0];
  if (nodes.length === 0) throw new ApiError('Unavailable', 'no virtual node on this port is ready yet');
  throw new ApiError('BadRequest', `this port serves ${nodes.length} virtual nodes (${nodes.map((n) => n.name).join(', ')}): `
    + 'ask through the API server (/api/v1/nodes/<node>/proxy/...), or give each member its own kubeletPort');
}

/**
 * The pod `namespace/name` on one of our nodes (restricted to `hint` when given). `uid` (from
 * /exec/{ns}/{pod}/{uid}/{container} and friends) must match the host pod when given.
 */
export function resolvePod(dir: NodeDirectory, namespace: string, name: string, opts: { hint?: string; uid?: string } = {}): ResolvedPod {
  const key = `${namespace}/${name}`;
  for (const node of dir.nodes()) {
    if (opts.hint && node.name !== opts.hint) continue;
    const proxy = node.proxies.get(key);
    if (!proxy) continue;
    const uid = proxy.metadata?.uid ?? '';
    if (opts.uid && opts.uid !== uid) throw new ApiError('NotFound', `pod ${key} with UID ${opts.uid} not found`);
    return { node, proxy, namespace, name, uid };
  }
  throw new ApiError('NotFound', `pod ${key} is not on ${opts.hint ?? 'a virtual node served here'}`);
}

/** The container must be in the host pod's spec (containers, init or ephemeral), as the kubelet checks. */
export function requireContainer(pod: V1Pod, container: string): void {
  const s = pod.spec;
  const all = [...(s?.containers ?? []), ...(s?.initContainers ?? []), ...(s?.ephemeralContainers ?? [])];
  if (!all.some((c) => c.name === container)) {
    throw new ApiError('NotFound', `container ${container} is not valid for pod ${pod.metadata?.name}`);
  }
}
