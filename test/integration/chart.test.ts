// charts/clusterlet installed with `helm install` onto the harness's host, the member's kubeconfig in a Secret, as
// docs/install.md says. The chart's pods cannot run clusterlet here (KWOK nodes run no containers), so this file shows what
// can be shown for real: the API server accepts every object of the release (RBAC, Deployment, PodDisruptionBudget,
// the Secret the Deployment mounts), and clusterlet started on this machine as one of the release's pods would run
// (the Deployment's args and env, the ConfigMap and Secret files at the paths the pod mounts them, the chart's
// ServiceAccount token as its credentials) brings the member's virtual node Ready, offloads a pod and serves every
// metric the Grafana dashboard queries. A permission missing from the chart's RBAC fails it.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { KubernetesObject, V1ConfigMap, V1Deployment, V1EnvVar, V1FlowSchema, V1Pod, V1Secret } from '@kubernetes/client-node';
import {
  client, deleteNamespaceAndWait, harness, namespaces, startClusterlet, stopAndForgetNode, uniqueName, type ClusterletProcess,
} from '../support/env.ts';
import { identityKubeconfig, rbacDenials, waitAuthorized } from '../support/identity.ts';
import { kubectl } from '../support/kubectl.ts';
import { runOffloadedPod, podsSpec, waitVirtualNodeSchedulable } from '../support/objects.ts';
import { waitUntil } from '../support/wait.ts';
import { CHART, kustomizeBuild, parseObjects, permissions, ROOT } from '../support/manifests.ts';
import { dashboardProblems, dashboardQueries, exposedSeries, registryLabels } from '../support/dashboard.ts';
import { freePort } from '../harness/net.ts';
import type { ClusterClient } from '../../src/kube/client.ts';

const run = promisify(execFile);
const RELEASE = 'chart-it';
const MEMBER = 'chart';
const NODE = `clusterlet-${MEMBER}`;
const SECRET = 'chart-member-kubeconfig';

/** helm as hack/build-helm.sh builds it (at once when cached), as `make binaries` does before the suite. */
async function ensureHelm(): Promise<string> {
  const { stdout } = await run('bash', [join(ROOT, 'hack/build-helm.sh')], { maxBuffer: 16 << 20 });
  return stdout.trim().split('\n').pop()!;
}

describe('Helm chart on the local host', () => {
  let helm: string;
  let host: ClusterClient;
  let namespace: string;
  let healthPort: number;
  let installed: KubernetesObject[];
  let cl: ClusterletProcess | undefined;
  const helmRun = (...args: string[]) => run(helm, ['--kubeconfig', harness().host.kubeconfig, ...args], { maxBuffer: 16 << 20 });

  before(async () => {
    helm = await ensureHelm();
    host = client(harness().host);
    namespace = uniqueName('chart');
    await host.core.createNamespace({ body: { metadata: { name: namespace, labels: { 'clusterlet.io/test': 'true' } } } });
    // docs/install.md: the member's kubeconfig (as mint-kubeconfig.sh makes it) in a Secret of the release namespace.
    await host.core.createNamespacedSecret({ namespace, body: { metadata: { name: SECRET },
      stringData: { kubeconfig: readFileSync(identityKubeconfig(harness().member, 'member'), 'utf8') } } });
    // The ports the pod would listen on, free on this machine, where this file runs it.
    const kubeletPort = await freePort();
    healthPort = await freePort();
    await helmRun('install', RELEASE, CHART, '--namespace', namespace,
      '--set', `members[0].name=${MEMBER}`, '--set', `members[0].secret.name=${SECRET}`,
      '--set', `kubeletPort=${kubeletPort}`, '--set', `healthPort=${healthPort}`, '--set', 'dashboard.enabled=true');
    installed = parseObjects((await helmRun('get', 'manifest', RELEASE, '--namespace', namespace)).stdout);
  });
  after(async () => {
    if (cl) await stopAndForgetNode(cl, host, NODE);
    await helmRun('uninstall', RELEASE, '--namespace', namespace).catch(() => undefined);
    await deleteNamespaceAndWait(host, namespace);
  });

  /** An object of the release as the API server stored it. */
  async function stored<T extends KubernetesObject>(kind: string, name: string, ns?: string): Promise<T> {
    const args = ['get', kind, name, '-o', 'json', ...(ns ? ['-n', ns] : [])];
    return JSON.parse(await kubectl(harness().host, ...args)) as T;
  }

  it('the API server holds every object of the release: RBAC with the base\'s rules, Deployment, budget, dashboard', async () => {
    const kinds = installed.map((o) => o.kind).sort();
    assert.deepEqual(kinds, ['ClusterRole', 'ClusterRoleBinding', 'ConfigMap', 'ConfigMap', 'Deployment', 'FlowSchema', 'FlowSchema',
      'FlowSchema', 'PodDisruptionBudget', 'Role', 'Role', 'Role', 'RoleBinding', 'RoleBinding', 'RoleBinding', 'Service', 'ServiceAccount',
      'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']);
    const live = await Promise.all(installed.map((o) => stored(o.kind!, o.metadata!.name!, o.metadata!.namespace)));
    for (const o of live) assert.equal(o.metadata?.labels?.['app.kubernetes.io/instance'], RELEASE, `${o.kind} ${o.metadata?.name}`);
    // The same rules as manifests/host, in the release namespace instead of `clusterlet`.
    const base = permissions(kustomizeBuild(harness().bin.kubectl, 'manifests/host'));
    const inRelease = Object.fromEntries(Object.entries(base).map(([k, v]) => [k.replace(/^clusterlet:/, `${namespace}:`), v]));
    assert.deepEqual(permissions(live), Object.fromEntries(Object.entries(inRelease).sort(([a], [b]) => a.localeCompare(b))));
    const d = live.find((o) => o.kind === 'Deployment') as V1Deployment;
    assert.equal(d.spec!.replicas, 2);
    const mounted = d.spec!.template.spec!.volumes!.flatMap((v) => v.projected?.sources?.map((s) => s.secret?.name) ?? []);
    assert.deepEqual(mounted, [SECRET]);
    // The API server took the FlowSchemas, for the release's ServiceAccount.
    for (const f of live.filter((o) => o.kind === 'FlowSchema') as V1FlowSchema[]) {
      assert.deepEqual(f.spec!.rules?.flatMap((r) => r.subjects.map((x) => x.serviceAccount?.namespace)), [namespace], f.metadata!.name);
    }
    const dash = live.find((o) => o.kind === 'ConfigMap' && o.metadata!.name!.endsWith('-dashboard')) as V1ConfigMap;
    assert.equal(dash.metadata!.labels?.grafana_dashboard, '1');
  });

  it('clusterlet run as the release\'s pod would run it, with its ServiceAccount\'s token, brings the virtual node Ready and offloads a pod', async (t) => {
    const d = await stored<V1Deployment>('deployment', installed.find((o) => o.kind === 'Deployment')!.metadata!.name!, namespace);
    const pod = d.spec!.template.spec!;
    const c = pod.containers[0];
    // The pod's volumes, as the kubelet would mount them, under a directory of this run.
    const root = join(harness().dir, `chart-${namespace}`);
    const at = (path: string) => join(root, path);
    for (const m of c.volumeMounts ?? []) {
      const v = pod.volumes!.find((x) => x.name === m.name)!;
      mkdirSync(at(m.mountPath), { recursive: true });
      if (v.configMap) {
        const cm = await host.core.readNamespacedConfigMap({ namespace, name: v.configMap.name! });
        for (const [k, text] of Object.entries(cm.data ?? {})) writeFileSync(join(at(m.mountPath), k), text.replaceAll('/etc/', `${root}/etc/`));
      }
      for (const s of v.projected?.sources ?? []) {
        const secret: V1Secret = await host.core.readNamespacedSecret({ namespace, name: s.secret!.name! });
        for (const i of s.secret!.items ?? []) writeFileSync(join(at(m.mountPath), i.path), Buffer.from(secret.data![i.key], 'base64'));
      }
    }
    // Its identity: the chart's ServiceAccount, through a token as the pod would have it mounted.
    const sa = pod.serviceAccountName!;
    const token = (await kubectl(harness().host, 'create', 'token', sa, '-n', namespace, '--duration', '1h')).trim();
    const hostKubeconfig = join(root, 'host.kubeconfig');
    await harness().host.writeKubeconfig(hostKubeconfig, `system:serviceaccount:${namespace}:${sa}`, { token });
    const rbac = installed.filter((o) => o.kind === 'Role' || o.kind === 'ClusterRole');
    await waitAuthorized(harness().host, rbac, { namespace, name: sa });
    // Its env: the downward API's values of one of the release's pods (the ReplicaSet made them; KWOK runs no container).
    const [replica] = await waitUntil(host, podsSpec(host, namespace), (ps) => ps.length > 0, 30_000, 'a pod of the release');
    const env = envOf(c.env ?? [], replica, harness().nodeAddress);
    const args = (c.args ?? []).map((a) => a.replaceAll('/etc/', `${root}/etc/`));
    cl = startClusterlet([...args, '--host-kubeconfig', hostKubeconfig], env);

    await waitVirtualNodeSchedulable(host, NODE);
    const lease = await host.coordination.readNamespacedLease({ namespace, name: `clusterlet-${MEMBER}` });
    assert.equal(lease.spec?.holderIdentity, replica.metadata!.name, 'the replica leads its member on a Lease in the release namespace');
    const member = client(harness().member);
    const ns = await namespaces(t, 'chart-pod', [host, member]);
    await runOffloadedPod(host, member, ns, 'p', {}, NODE);

    const metrics = await (await fetch(`http://127.0.0.1:${healthPort}/metrics`)).text();
    assert.deepEqual(dashboardProblems(dashboardQueries(), exposedSeries(metrics, registryLabels)), [],
      'every metric the dashboard queries is served');
    assert.deepEqual(rbacDenials(cl.logs()).map((x) => x.line), [], 'the chart\'s RBAC refused nothing');
  });
});

/** The container's env as the kubelet would set it for `pod`: values as given, downward-API fields from the pod. */
function envOf(env: V1EnvVar[], pod: V1Pod, podIP: string): NodeJS.ProcessEnv {
  const fields: Record<string, string | undefined> = {
    'metadata.name': pod.metadata!.name, 'metadata.namespace': pod.metadata!.namespace, 'metadata.uid': pod.metadata!.uid,
    'status.podIP': podIP,
  };
  return Object.fromEntries(env.map((e) => {
    const path = e.valueFrom?.fieldRef?.fieldPath;
    if (e.valueFrom && !path) throw new Error(`env ${e.name}: only fieldRef is known here`);
    return [e.name, path ? fields[path] : e.value];
  }));
}
