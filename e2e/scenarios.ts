// The user-visible story, checked against any host/member pair where clusterlet runs (kind, real clusters,
// or the local clusters of the integration suite): one implementation, called by e2e/e2e.test.ts (kubeconfigs
// from env vars) and test/integration/e2e.test.ts (the local clusters). Only the API and kubectl, as a user
// would; every wait is a bounded watch, never a fixed sleep.
import { it } from 'node:test';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import {
  AppsV1Api, KubeConfig,
  type KubernetesObject, type V1ConfigMap, type V1Deployment, type V1Node, type V1Pod, type V1Secret, type V1ServiceAccount,
} from '@kubernetes/client-node';
import { ClusterClient, PATCH } from '../src/kube/client.ts';
import { loadKubeconfigFile } from '../src/kube/kubeconfig.ts';
import { toKubeError } from '../src/kube/errors.ts';
import type { ListWatchSpec } from '../src/kube/listwatch.ts';
import { parseQuantity } from '../src/forge/quantity.ts';
import { ORIGIN_LABEL, PROXY_NAMESPACE_ANNOTATION, PROXY_UID_LABEL, VIRTUAL_NODE_TAINT_KEY } from '../src/forge/keys.ts';
import { waitUntil } from '../test/support/wait.ts';

const run = promisify(execFile);
const merge = { contentType: PATCH.merge };

export interface E2EOptions {
  hostKubeconfig: string;
  memberKubeconfig: string;
  /** The virtual node of this member in the host (default clusterlet-member). */
  nodeName?: string;
  /** kubectl to run (default: `kubectl` on PATH). */
  kubectl?: string;
  /** Image of the test workload; it must print `logText` and keep running (default busybox). */
  image?: string;
  /**
   * `kubectl logs` on a proxy: 'require' fails when it does not work; 'auto' (default) runs it only when the
   * node's kubelet endpoint answers through the API server, and skips with the reason otherwise.
   */
  logs?: 'require' | 'auto';
  /** Text the workload's log must contain; undefined: only that `kubectl logs` succeeds. */
  logText?: string;
  /** Multiplies every timeout (slow image pulls, busy CI). */
  timeoutScale?: number;
  replicas?: number;
}

export interface E2EContext {
  opts: Required<Omit<E2EOptions, 'logText'>> & { logText?: string };
  host: ClusterClient;
  member: ClusterClient;
  apps: AppsV1Api;
}

/** What a scenario created, for the ones after it. */
export interface Workload {
  namespace: string;
  deployment: string;
  configMap: string;
  replicas: number;
}

/** The marker the default workload prints. */
export const LOG_TEXT = 'clusterlet-e2e: up';

export function e2eContext(opts: E2EOptions): E2EContext {
  const full = {
    hostKubeconfig: opts.hostKubeconfig, memberKubeconfig: opts.memberKubeconfig, logText: opts.logText,
    nodeName: opts.nodeName ?? 'clusterlet-member', kubectl: opts.kubectl ?? 'kubectl', image: opts.image ?? 'busybox:1.36',
    logs: opts.logs ?? 'auto', timeoutScale: opts.timeoutScale ?? 1, replicas: opts.replicas ?? 2,
  };
  if (!(full.timeoutScale > 0)) throw new Error(`timeoutScale must be a positive number, not ${opts.timeoutScale}`);
  const load = (path: string): KubeConfig => { const kc = new KubeConfig(); kc.loadFromFile(path); return kc; };
  const hostKc = load(opts.hostKubeconfig);
  return {
    opts: full,
    host: new ClusterClient(loadKubeconfigFile(opts.hostKubeconfig), { cluster: 'host', qps: 50, burst: 100 }),
    member: new ClusterClient(loadKubeconfigFile(opts.memberKubeconfig), { cluster: 'member', qps: 50, burst: 100 }),
    apps: hostKc.makeApiClient(AppsV1Api),
  };
}

/** `seconds` as ms, scaled by the run's timeoutScale. */
export const ms = (ctx: E2EContext, seconds: number): number => Math.round(seconds * 1000 * ctx.opts.timeoutScale);
const isReady = (o: V1Node | V1Pod | undefined): boolean =>
  !!o?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
const positive = (q: string | undefined): boolean => q !== undefined && parseQuantity(q).nanos > 0n;

// ---- 1. The virtual node -------------------------------------------------------------------------------

/** The member's virtual node is Ready, schedulable and shows a non-zero capacity. */
export async function virtualNodeReady(ctx: E2EContext): Promise<V1Node> {
  const { host } = ctx;
  const name = ctx.opts.nodeName;
  const [node] = await waitUntil(host, {
    path: '/api/v1/nodes', model: 'V1Node', resource: 'nodes', fieldSelector: `metadata.name=${name}`,
    list: (p) => host.core.listNode(p),
  }, (ns) => ns.length === 1 && isReady(ns[0]) && positive(ns[0].status?.capacity?.cpu) && positive(ns[0].status?.capacity?.pods)
    // The node lifecycle controller's not-ready/unreachable taints go once it has seen the node Ready.
    && !(ns[0].spec?.taints ?? []).some((t) => t.key.startsWith('node.kubernetes.io/')),
  ms(ctx, 120), `virtual node ${name} Ready and schedulable with capacity`);
  if (!(node.spec?.taints ?? []).some((t) => t.key === VIRTUAL_NODE_TAINT_KEY)) {
    throw new Error(`node ${name} lacks the ${VIRTUAL_NODE_TAINT_KEY} taint: is it a clusterlet node?`);
  }
  return node;
}

// ---- 2. A Deployment offloaded ------------------------------------------------------------------------

/** A namespace with a ConfigMap and a Deployment that tolerates and selects the virtual node. */
export async function createWorkload(ctx: E2EContext): Promise<Workload> {
  const w: Workload = {
    namespace: `clusterlet-e2e-${randomBytes(3).toString('hex')}`, deployment: 'e2e-web', configMap: 'e2e-config',
    replicas: ctx.opts.replicas,
  };
  const { host } = ctx;
  await host.core.createNamespace({ body: { metadata: { name: w.namespace, labels: { 'clusterlet.io/e2e': 'true' } } } });
  await host.core.createNamespacedConfigMap({ namespace: w.namespace, body: {
    metadata: { name: w.configMap }, data: { greeting: 'hello' },
  } });
  const labels = { app: w.deployment };
  const deployment: V1Deployment = {
    metadata: { name: w.deployment, namespace: w.namespace },
    spec: {
      replicas: w.replicas,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          tolerations: [{ key: VIRTUAL_NODE_TAINT_KEY, operator: 'Exists', effect: 'NoSchedule' }],
          nodeSelector: { 'kubernetes.io/hostname': ctx.opts.nodeName },
          terminationGracePeriodSeconds: 5,
          containers: [{
            name: 'main', image: ctx.opts.image,
            command: ['sh', '-c', `echo "${LOG_TEXT} ($(cat /config/greeting))"; trap 'exit 0' TERM; while true; do sleep 1; done`],
            resources: { requests: { cpu: '10m', memory: '16Mi' } },
            volumeMounts: [{ name: 'config', mountPath: '/config' }],
          }],
          volumes: [{ name: 'config', configMap: { name: w.configMap } }],
        },
      },
    },
  };
  await ctx.apps.createNamespacedDeployment({ namespace: w.namespace, body: deployment });
  return w;
}

function podsSpec(c: ClusterClient, namespace: string | undefined, labelSelector: string): ListWatchSpec<V1Pod> {
  return namespace
    ? { path: `/api/v1/namespaces/${namespace}/pods`, model: 'V1Pod', resource: 'pods', labelSelector,
      list: (p) => c.core.listNamespacedPod({ namespace, ...p }) }
    : { path: '/api/v1/pods', model: 'V1Pod', resource: 'pods', labelSelector, list: (p) => c.core.listPodForAllNamespaces(p) };
}

/** Objects clusterlet made in the member for the host namespace, whatever the namespace mapping. */
export const forNamespace = <T extends KubernetesObject>(items: T[], ns: string): T[] =>
  items.filter((o) => o.metadata?.annotations?.[PROXY_NAMESPACE_ANNOTATION] === ns);

/** The Deployment is Ready on the host; each proxy runs on the virtual node, through a delegate in the member. */
export async function deploymentOffloaded(ctx: E2EContext, w: Workload): Promise<{ proxies: V1Pod[]; delegates: V1Pod[] }> {
  const { host, member, apps } = ctx;
  await waitUntil(host, {
    path: `/apis/apps/v1/namespaces/${w.namespace}/deployments`, model: 'V1Deployment', resource: 'deployments',
    list: (p) => apps.listNamespacedDeployment({ namespace: w.namespace, ...p }),
  }, (ds) => ds[0]?.status?.readyReplicas === w.replicas && ds[0]?.status?.updatedReplicas === w.replicas,
  ms(ctx, 240), `Deployment ${w.namespace}/${w.deployment} ${w.replicas}/${w.replicas} Ready`);
  const proxies = await waitUntil(host, podsSpec(host, w.namespace, `app=${w.deployment}`),
    (ps) => ps.length === w.replicas && ps.every((p) => isReady(p) && p.status?.phase === 'Running'),
    ms(ctx, 60), 'proxies Running and Ready');
  for (const p of proxies) {
    if (p.spec?.nodeName !== ctx.opts.nodeName) throw new Error(`proxy ${p.metadata?.name} is on ${p.spec?.nodeName}, not ${ctx.opts.nodeName}`);
  }
  const delegates = forNamespace(await waitUntil(member, podsSpec(member, undefined, `app=${w.deployment},${ORIGIN_LABEL}`),
    (ps) => {
      const mine = forNamespace(ps, w.namespace);
      return mine.length === w.replicas && mine.every((d) => d.status?.phase === 'Running');
    }, ms(ctx, 60), `${w.replicas} delegates Running in the member`), w.namespace);
  for (const p of proxies) {
    const d = delegates.find((x) => x.metadata?.name === p.metadata?.name);
    if (!d) throw new Error(`no delegate named ${p.metadata?.name} in the member`);
    if (d.metadata?.labels?.[PROXY_UID_LABEL] !== p.metadata?.uid) throw new Error(`delegate ${d.metadata?.name} is not this proxy's`);
  }
  return { proxies, delegates };
}

// ---- 3. A ConfigMap update reaches the delegate ------------------------------------------------------

function memberCopies<T extends KubernetesObject>(c: ClusterClient, resource: 'configmaps' | 'secrets' | 'serviceaccounts'): ListWatchSpec<T> {
  const model = { configmaps: 'V1ConfigMap', secrets: 'V1Secret', serviceaccounts: 'V1ServiceAccount' }[resource];
  const list = {
    configmaps: (p: Parameters<typeof c.core.listConfigMapForAllNamespaces>[0]) => c.core.listConfigMapForAllNamespaces(p),
    secrets: (p: Parameters<typeof c.core.listSecretForAllNamespaces>[0]) => c.core.listSecretForAllNamespaces(p),
    serviceaccounts: (p: Parameters<typeof c.core.listServiceAccountForAllNamespaces>[0]) => c.core.listServiceAccountForAllNamespaces(p),
  }[resource];
  return { path: `/api/v1/${resource}`, model, resource, labelSelector: ORIGIN_LABEL, list: list as ListWatchSpec<T>['list'] };
}

/** The ConfigMap the pods mount is mirrored into the member, and an update on the host reaches the copy. */
export async function configMapUpdateReachesMember(ctx: E2EContext, w: Workload): Promise<void> {
  const { host, member } = ctx;
  const copyOf = (cms: V1ConfigMap[]): V1ConfigMap | undefined =>
    forNamespace(cms, w.namespace).find((c) => c.metadata?.name === w.configMap);
  await waitUntil(member, memberCopies<V1ConfigMap>(member, 'configmaps'), (cms) => copyOf(cms)?.data?.greeting === 'hello',
    ms(ctx, 30), `ConfigMap ${w.configMap} mirrored to the member`);
  const value = `updated-${randomBytes(3).toString('hex')}`;
  await host.core.patchNamespacedConfigMap({ namespace: w.namespace, name: w.configMap, body: { data: { greeting: value } } }, merge);
  await waitUntil(member, memberCopies<V1ConfigMap>(member, 'configmaps'), (cms) => copyOf(cms)?.data?.greeting === value,
    ms(ctx, 30), `the update of ${w.configMap} in the member copy`);
}

// ---- 4. kubectl logs ---------------------------------------------------------------------------------

export type LogsResult = { ran: true; output: string } | { ran: false; reason: string };

/** The API server's own errors when it cannot reach a node's kubelet endpoint (nothing answered there). */
const KUBELET_UNREACHABLE = /dial tcp|connection refused|no route to host|i\/o timeout|error trying to reach|no preferred addresses|context deadline exceeded/i;

/**
 * `kubectl logs` on a proxy shows its delegate's log. With `logs: 'auto'`, a failure because the node's
 * kubelet endpoint does not answer (the API server cannot connect to it) is a skip with the reason, not a
 * failure; any answer from the endpoint must be the log.
 */
export async function logsWork(ctx: E2EContext, w: Workload, proxies: V1Pod[]): Promise<LogsResult> {
  const pod = proxies[0].metadata!.name!;
  let stdout: string;
  try {
    ({ stdout } = await run(ctx.opts.kubectl, ['--kubeconfig', ctx.opts.hostKubeconfig, 'logs', '-n', w.namespace, pod,
      '--tail=100', `--request-timeout=${Math.round(30 * ctx.opts.timeoutScale)}s`], { maxBuffer: 8 << 20 }));
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    const why = e.stderr?.trim() || e.message;
    if (ctx.opts.logs === 'auto' && KUBELET_UNREACHABLE.test(why)) {
      return { ran: false, reason: `the kubelet endpoint of ${ctx.opts.nodeName} does not answer (${why.split('\n')[0].slice(0, 300)}); `
        + 'set E2E_EXPECT_LOGS=1 to require kubectl logs' };
    }
    throw new Error(`kubectl logs -n ${w.namespace} ${pod} failed: ${why}`);
  }
  if (ctx.opts.logText !== undefined && !stdout.includes(ctx.opts.logText)) {
    throw new Error(`kubectl logs -n ${w.namespace} ${pod} does not show "${ctx.opts.logText}":\n${stdout.slice(-2000)}`);
  }
  return { ran: true, output: stdout };
}

// ---- 5. Deleting the namespace leaves nothing behind --------------------------------------------------

/** Deletes the host namespace; waits until it is gone and no delegate or copy of its objects is left in the member. */
export async function deletionLeavesNothing(ctx: E2EContext, w: Workload): Promise<void> {
  const { host, member } = ctx;
  await host.core.deleteNamespace({ name: w.namespace });
  await waitUntil(host, {
    path: '/api/v1/namespaces', model: 'V1Namespace', resource: 'namespaces', fieldSelector: `metadata.name=${w.namespace}`,
    list: (p) => host.core.listNamespace(p),
  }, (ns) => ns.length === 0, ms(ctx, 120), `host namespace ${w.namespace} deleted`);
  await waitUntil(member, podsSpec(member, undefined, ORIGIN_LABEL), (ps) => forNamespace(ps, w.namespace).length === 0,
    ms(ctx, 60), 'no delegate left in the member');
  await waitUntil(member, memberCopies<V1ConfigMap>(member, 'configmaps'), (cs) => forNamespace(cs, w.namespace).length === 0,
    ms(ctx, 60), 'no mirrored ConfigMap left in the member');
  await waitUntil(member, memberCopies<V1Secret>(member, 'secrets'), (cs) => forNamespace(cs, w.namespace).length === 0,
    ms(ctx, 60), 'no mirrored Secret left in the member');
  // A "default" ServiceAccount clusterlet created before the member's controller did stays: the member
  // recreates its own anyway, so clusterlet leaves that one alone (src/member/reflection/mirror.ts).
  await waitUntil(member, memberCopies<V1ServiceAccount>(member, 'serviceaccounts'),
    (cs) => forNamespace(cs, w.namespace).filter((s) => s.metadata?.name !== 'default').length === 0,
    ms(ctx, 60), 'no mirrored ServiceAccount left in the member');
}

/** Best-effort cleanup after a failed run: the host namespace goes (and clusterlet takes the delegates with it). */
export async function cleanup(ctx: E2EContext, w: Workload | undefined): Promise<void> {
  if (!w) return;
  await ctx.host.core.deleteNamespace({ name: w.namespace }).catch((err: unknown) => {
    if (toKubeError(err).kind !== 'NotFound') throw err;
  });
}

/**
 * Registers the story as tests of the enclosing describe block, in order, for a context that `context()`
 * returns once the block's `before` has run. Call the returned function from the block's `after`: it
 * removes the workload if a test failed before the deletion scenario.
 */
export function registerStory(context: () => E2EContext, opts: { describeNode?: boolean } = {}): () => Promise<void> {
  let w: Workload | undefined;
  let proxies: V1Pod[] = [];
  let deleted = false;
  const workload = (): Workload => {
    if (!w) throw new Error('no workload: the Deployment scenario did not complete');
    return w;
  };
  it('the virtual node is Ready with the member\'s capacity', async (t) => {
    const node = await virtualNodeReady(context());
    if (opts.describeNode) {
      t.diagnostic(`${node.metadata!.name}: cpu ${node.status!.capacity!.cpu}, memory ${node.status!.capacity!.memory}, pods ${node.status!.capacity!.pods}`);
    }
  });
  it('a Deployment tolerating the virtual node is offloaded and Ready', async () => {
    w = await createWorkload(context());
    ({ proxies } = await deploymentOffloaded(context(), w));
  });
  it('a ConfigMap update reaches the delegate\'s copy in the member', async () => {
    await configMapUpdateReachesMember(context(), workload());
  });
  it('kubectl logs on a proxy shows the delegate\'s log', async (t) => {
    const r = await logsWork(context(), workload(), proxies);
    if (!r.ran) t.skip(r.reason);
  });
  it('deleting the namespace leaves no delegate and no mirrored object behind', async () => {
    await deletionLeavesNothing(context(), workload());
    deleted = true;
  });
  return async () => { if (!deleted) await cleanup(context(), w); };
}
