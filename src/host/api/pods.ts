// GET /pods and /runningpods/, as virtual-kubelet serves them (node/api/server.go, pods.go): /pods lists every host
// pod bound to the node (its GetPodsFromKubernetes, our proxies informer: what a kubelet reports); /runningpods/ the
// pods the back end runs (its provider's GetPods), reported as their host pods, with the host's name, namespace and
// UID, never the delegate's. A pod without a delegate (a mandatory ConfigMap missing) is in /pods only, as in
// virtual-kubelet; /runningpods/ also leaves out pods that have finished.
import type { ServerResponse } from 'node:http';
import type { V1Pod } from '@kubernetes/client-node';
import type { VirtualNode } from './nodes.ts';
import { byCodeUnits } from '../../util/order.ts';

/** What a pod list reads of a node: its host pods, and those its back end runs. */
export interface PodListSource {
  proxies: Pick<VirtualNode['proxies'], 'list'>;
  running: VirtualNode['running'];
}

export function podList(node: PodListSource, running: boolean): { apiVersion: string; kind: string; metadata: object; items: V1Pod[] } {
  const pods = (running ? node.running() : node.proxies.list())
    .filter((p) => !running || (p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed'))
    .sort((a, b) => byCodeUnits(`${a.metadata?.namespace}/${a.metadata?.name}`, `${b.metadata?.namespace}/${b.metadata?.name}`));
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
