// GET /pods and /runningpods/: the pods bound to this node, as a v1 PodList, from the pod controller's
// informer of host pods (the host's view, which is what a kubelet reports). /runningpods/ leaves out
// pods that have finished.
import type { ServerResponse } from 'node:http';
import type { V1Pod } from '@kubernetes/client-node';
import type { VirtualNode } from './nodes.ts';

export function podList(node: VirtualNode, running: boolean): { apiVersion: string; kind: string; metadata: object; items: V1Pod[] } {
  const pods = node.proxies.list()
    .filter((p) => !running || (p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed'))
    .sort((a, b) => `${a.metadata?.namespace}/${a.metadata?.name}`.localeCompare(`${b.metadata?.namespace}/${b.metadata?.name}`));
  return { apiVersion: 'v1', kind: 'PodList', metadata: {}, items: pods.map((p) => ({ apiVersion: 'v1', kind: 'Pod', ...p })) };
}

/** Timestamps as Kubernetes writes them (RFC 3339, whole seconds: a pod's are all metav1.Time). */
function kubeTime(this: unknown, key: string, value: unknown): unknown {
  const raw = (this as Record<string, unknown>)[key];
  return raw instanceof Date ? raw.toISOString().replace(/\.\d+Z$/, 'Z') : value;
}

export function sendJSON(res: ServerResponse, body: unknown): void {
  const text = JSON.stringify(body, kubeTime);
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}
