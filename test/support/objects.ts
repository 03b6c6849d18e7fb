// Small builders and predicates for test objects.
import type {
  BatchV1Api, CoreV1Event, V1ConfigMap, V1Container, V1Deployment, V1Job, V1Lease, V1Node, V1Pod, V1PodSpec, V1ResourceRequirements, V1Secret,
} from '@kubernetes/client-node';
import type { ClusterClient } from '../../src/kube/client.ts';
import { waitUntil } from './wait.ts';
import type { ListWatchSpec } from '../../src/kube/listwatch.ts';

export const VIRTUAL_TOLERATION = { key: 'virtual-kubelet.io/provider', operator: 'Exists', effect: 'NoSchedule' };

export function isReady(o: V1Node | V1Pod | undefined): boolean {
  return !!o?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
}

interface Condition { type: string; status: string; reason?: string; message?: string; lastTransitionTime?: Date | string }

export function condition(o: { status?: { conditions?: Condition[] } } | undefined, type: string): Condition | undefined {
  return o?.status?.conditions?.find((c) => c.type === type);
}

export function podSpec(name: string, opts: {
  namespace: string; nodeName?: string; tolerate?: boolean; resources?: V1ResourceRequirements;
  annotations?: Record<string, string>; labels?: Record<string, string>; restartPolicy?: string;
  nodeSelector?: Record<string, string>; terminationGracePeriodSeconds?: number;
}): V1Pod {
  return {
    apiVersion: 'v1', kind: 'Pod',
    metadata: { name, namespace: opts.namespace, annotations: opts.annotations, labels: opts.labels },
    spec: {
      nodeName: opts.nodeName,
      nodeSelector: opts.nodeSelector,
      restartPolicy: opts.restartPolicy,
      terminationGracePeriodSeconds: opts.terminationGracePeriodSeconds,
      tolerations: opts.tolerate ? [VIRTUAL_TOLERATION] : undefined,
      containers: [{ name: 'main', image: 'registry.example/app:1', resources: opts.resources }],
    },
  };
}

/** A pod for the virtual node `node` (tolerating and selecting it), one container `main`, with `spec` and `container` over it. */
export function offloadedPod(name: string, namespace: string, spec: Partial<V1PodSpec> = {}, container: Partial<V1Container> = {},
  node = 'clusterlet-member'): V1Pod {
  return { metadata: { name, namespace }, spec: {
    tolerations: [VIRTUAL_TOLERATION], nodeSelector: { 'kubernetes.io/hostname': node },
    containers: [{ name: 'main', image: 'registry.example/app:1', ...container }], ...spec,
  } };
}

/** A pod template's spec: one container; with `virtualNode`, tolerating and selecting that node. */
function templateSpec(opts: { virtualNode?: string; restartPolicy?: string }): V1PodSpec {
  return {
    restartPolicy: opts.restartPolicy,
    containers: [{ name: 'main', image: 'registry.example/app:1' }],
    ...(opts.virtualNode ? {
      tolerations: [VIRTUAL_TOLERATION],
      nodeSelector: { 'kubernetes.io/hostname': opts.virtualNode },
    } : {}),
  };
}

export function deployment(name: string, namespace: string, replicas: number, opts: { virtualNode?: string } = {}): V1Deployment {
  const labels = { app: name };
  return {
    apiVersion: 'apps/v1', kind: 'Deployment',
    metadata: { name, namespace },
    spec: {
      replicas,
      selector: { matchLabels: labels },
      template: { metadata: { labels }, spec: templateSpec(opts) },
    },
  };
}

/** A Job of `completions` pods run `parallelism` at a time, failing at the first pod that fails. */
export function job(name: string, namespace: string, completions: number, parallelism: number,
  opts: { virtualNode?: string } = {}): V1Job {
  return {
    apiVersion: 'batch/v1', kind: 'Job',
    metadata: { name, namespace },
    spec: {
      completions, parallelism, backoffLimit: 0,
      template: { spec: templateSpec({ ...opts, restartPolicy: 'Never' }) },
    },
  };
}

export function nodeSpec(c: ClusterClient, name?: string): ListWatchSpec<V1Node> {
  return { path: '/api/v1/nodes', model: 'V1Node', resource: 'nodes',
    fieldSelector: name ? `metadata.name=${name}` : undefined, list: (p) => c.core.listNode(p) };
}

export function podsSpec(c: ClusterClient, namespace: string, labelSelector?: string): ListWatchSpec<V1Pod> {
  return { path: `/api/v1/namespaces/${namespace}/pods`, model: 'V1Pod', resource: 'pods', labelSelector,
    list: (p) => c.core.listNamespacedPod({ namespace, ...p }) };
}

/** The Jobs of a namespace, through the batch API of the cluster's admin. */
export function jobsSpec(batch: BatchV1Api, namespace: string): ListWatchSpec<V1Job> {
  return { path: `/apis/batch/v1/namespaces/${namespace}/jobs`, model: 'V1Job', resource: 'jobs',
    list: (p) => batch.listNamespacedJob({ namespace, ...p }) };
}

/** The Leases of a namespace, or the one named `name`. */
export function leaseSpec(c: ClusterClient, namespace: string, name?: string): ListWatchSpec<V1Lease> {
  return { path: `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`, model: 'V1Lease', resource: 'leases',
    fieldSelector: name ? `metadata.name=${name}` : undefined, list: (p) => c.coordination.listNamespacedLease({ namespace, ...p }) };
}

/** Waits until node `name` satisfies `pred`, and returns it. */
export async function waitNode(host: ClusterClient, name: string, pred: (n: V1Node) => boolean, what: string, timeoutMs = 60_000): Promise<V1Node> {
  const [n] = await waitUntil(host, nodeSpec(host, name), (ns) => ns.length === 1 && pred(ns[0]), timeoutMs, `${name}: ${what}`);
  return n;
}

/** Waits until the virtual node is Ready and carries no not-ready/unreachable taint, so pods can land on it. */
export async function waitVirtualNodeSchedulable(host: ClusterClient, name = 'clusterlet-member'): Promise<void> {
  await waitUntil(host, nodeSpec(host, name), (ns) => ns.length === 1 && isReady(ns[0])
    && !(ns[0].spec?.taints ?? []).some((t) => t.key.startsWith('node.kubernetes.io/')), 90_000, `${name} Ready and untainted`);
}

export function cmSpec(c: ClusterClient, ns: string): ListWatchSpec<V1ConfigMap> {
  return { path: `/api/v1/namespaces/${ns}/configmaps`, model: 'V1ConfigMap', resource: 'configmaps',
    list: (p) => c.core.listNamespacedConfigMap({ namespace: ns, ...p }) };
}

export function secretSpec(c: ClusterClient, ns: string): ListWatchSpec<V1Secret> {
  return { path: `/api/v1/namespaces/${ns}/secrets`, model: 'V1Secret', resource: 'secrets',
    list: (p) => c.core.listNamespacedSecret({ namespace: ns, ...p }) };
}

export function eventSpec(c: ClusterClient, ns: string): ListWatchSpec<CoreV1Event> {
  return { path: `/api/v1/namespaces/${ns}/events`, model: 'CoreV1Event', resource: 'events',
    list: (p) => c.core.listNamespacedEvent({ namespace: ns, ...p }) };
}

/**
 * Creates pod `name` in `namespace`, offloaded to virtual node `node` (tolerating and selecting it; `opts` add to
 * its podSpec), and waits until it runs on the host and its delegate runs in the member.
 */
export async function runOffloadedPod(host: ClusterClient, member: ClusterClient, namespace: string, name: string,
  opts: Partial<Parameters<typeof podSpec>[1]> = {}, node = 'clusterlet-member'): Promise<void> {
  await host.core.createNamespacedPod({ namespace,
    body: podSpec(name, { namespace, tolerate: true, nodeSelector: { 'kubernetes.io/hostname': node }, ...opts }) });
  await waitUntil(host, podsSpec(host, namespace), (ps) => ps[0]?.status?.phase === 'Running', 60_000, `${name} Running`);
  await waitUntil(member, podsSpec(member, namespace), (ps) => ps[0]?.status?.phase === 'Running', 30_000, `delegate ${name} Running`);
}
