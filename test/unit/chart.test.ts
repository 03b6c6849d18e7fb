// charts/clusterlet is manifests/host in Helm's form: `helm lint` passes, and `helm template` renders the same RBAC
// rules as the kustomize base (pinned there to what the code uses), the same Deployment (probes, security context,
// POD_* env, resources, two replicas rolling without a gap, spread, PodDisruptionBudget) and a clusterlet.yaml whose
// member kubeconfigs are mounted. Values it cannot use are refused with their path. Needs the helm that
// hack/build-helm.sh builds (or $HELM), and kubectl for the base.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  loadAllYaml, loadYaml, type KubernetesObject, type V1ConfigMap, type V1Container, type V1Deployment,
  type V1PodDisruptionBudget, type V1Service,
} from '@kubernetes/client-node';
import {
  assertConfigMounted, assertFlowSchemas, assertLeastPrivilegeShape, assertTokenRequestPolicy, CHART, findHelm, findKubectl, helmTemplate, kustomizeBuild, one,
  permissions, ROOT, selects,
} from '../support/manifests.ts';
import { DASHBOARD } from '../support/dashboard.ts';
import { loadAccessProviders, loadProviderConfig } from '../../src/config.ts';

const helm = findHelm();
const kubectl = findKubectl();
const skip = helm && kubectl ? false
  : 'helm or kubectl not found (built by `make binaries` into ~/.cache/clusterlet, or set HELM and KUBECTL): the chart is not checked';

const render = (set: string[] = [], opts: { release?: string; namespace?: string; values?: string[] } = {}): KubernetesObject[] =>
  helmTemplate(helm!, { ...opts, set });

/** helm template's exit code and stderr for values it must refuse. */
function refused(args: string[]): string {
  const r = spawnSync(helm!, ['template', 'clusterlet', CHART, '--namespace', 'clusterlet', ...args], { encoding: 'utf8' });
  assert.notEqual(r.status, 0, `refused: ${args.join(' ')}`);
  return r.stderr;
}

/** A directory for one test, removed when it ends (`using`). */
function tempDir(): { path: string; [Symbol.dispose](): void } {
  const path = mkdtempSync(join(tmpdir(), 'clusterlet-chart-'));
  return { path, [Symbol.dispose]: () => rmSync(path, { recursive: true, force: true }) };
}

/** A values file written for one test. */
function valuesFile(yaml: string): { path: string; [Symbol.dispose](): void } {
  const dir = tempDir();
  const path = join(dir.path, 'values.yaml');
  writeFileSync(path, yaml);
  return { path, [Symbol.dispose]: () => dir[Symbol.dispose]() };
}

/** Typed objects of the client's models as plain data, to compare with literals. */
const plain = (v: unknown): unknown => JSON.parse(JSON.stringify(v));

const providerConfig = (objs: KubernetesObject[], name = 'clusterlet-config'): Record<string, unknown> =>
  loadYaml(one<V1ConfigMap>(objs, 'ConfigMap', name).data!['clusterlet.yaml']) as Record<string, unknown>;

describe('charts/clusterlet', { skip }, () => {
  const base = kubectl ? kustomizeBuild(kubectl, 'manifests/host') : [];
  const objs = helm ? render() : [];

  it('helm lint passes', () => {
    const r = spawnSync(helm!, ['lint', '--strict', CHART], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
  });

  it('renders what manifests/host holds, named alike for a release named clusterlet (the namespace is the release\'s)', () => {
    // kustomize's generated ConfigMap has a content hash in its name, where the chart has a checksum annotation.
    const names = (o: KubernetesObject[]) => o.filter((x) => x.kind !== 'Namespace')
      .map((x) => `${x.kind}/${x.metadata!.namespace ?? ''}/${x.metadata!.name!.replace(/^(clusterlet-config)-[a-z0-9]{10}$/, '$1')}`).sort();
    assert.deepEqual(names(objs), names(base));
  });

  it('RBAC: the same rules as the kustomize base, with its least-privilege shape', () => {
    assertLeastPrivilegeShape(objs);
    assert.deepEqual(permissions(objs), permissions(base));
  });

  it('the Deployment: the base\'s probes, ports, resources, POD_* env, security context, replicas, rollout and spread', () => {
    const d = one<V1Deployment>(objs, 'Deployment');
    const b = one<V1Deployment>(base, 'Deployment');
    const pod = d.spec!.template.spec!;
    const bpod = b.spec!.template.spec!;
    const c = pod.containers[0];
    const bc = bpod.containers[0];
    const same = (x: V1Container) => ({
      image: x.image, imagePullPolicy: x.imagePullPolicy, ports: x.ports, livenessProbe: x.livenessProbe,
      readinessProbe: x.readinessProbe, resources: x.resources, securityContext: x.securityContext, env: x.env,
      volumeMounts: x.volumeMounts,
    });
    assert.deepEqual(same(c), same(bc));
    for (const a of bc.args ?? []) assert.ok(c.args?.includes(a), `${a} in ${c.args?.join(' ')}`);
    assert.deepEqual(
      [d.spec!.replicas, d.spec!.strategy, pod.securityContext, pod.terminationGracePeriodSeconds, pod.nodeSelector, pod.hostNetwork],
      [b.spec!.replicas, b.spec!.strategy, bpod.securityContext, bpod.terminationGracePeriodSeconds, bpod.nodeSelector, bpod.hostNetwork]);
    assert.equal(pod.serviceAccountName, one(objs, 'ServiceAccount').metadata!.name);
    const terms = pod.affinity?.podAntiAffinity?.preferredDuringSchedulingIgnoredDuringExecution ?? [];
    assert.equal(pod.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution, undefined);
    assert.deepEqual(terms.map((t) => [t.weight, t.podAffinityTerm.topologyKey]), [[100, 'kubernetes.io/hostname']]);
    assert.ok(selects(terms[0].podAffinityTerm.labelSelector?.matchLabels, d), 'away from its own replicas');
    assert.ok(selects(d.spec!.selector.matchLabels, d));
  });

  it('clusterlet.yaml: the member kubeconfig Secret mounted where the config names it; the pods roll when it changes', () => {
    const cfg = assertConfigMounted(objs);
    assert.deepEqual(cfg, { members: [{ name: 'member', kubeconfig: '/etc/clusterlet-members/member.kubeconfig' }] });
    const sources = one<V1Deployment>(objs, 'Deployment').spec!.template.spec!.volumes!.find((v) => v.name === 'member-kubeconfigs')!
      .projected!.sources!;
    assert.deepEqual(plain(sources.map((s) => [s.secret?.name, s.secret?.items])),
      [['clusterlet-member-kubeconfig', [{ key: 'kubeconfig', path: 'member.kubeconfig' }]]]);
    const checksum = (o: KubernetesObject[]) => one<V1Deployment>(o, 'Deployment').spec!.template.metadata!.annotations!['checksum/config'];
    assert.notEqual(checksum(render(['hostName=other'])), checksum(objs));
  });

  it('flowControl: the FlowSchemas of manifests/host/flowcontrol.yaml; none with flowControl.enabled=false', () => {
    const specs = (x: KubernetesObject[]) => plain(x.filter((f) => f.kind === 'FlowSchema')
      .map((f) => [f.metadata!.name, (f as KubernetesObject & { spec: unknown }).spec]).sort());
    assert.deepEqual(specs(objs), specs(base));
    assertFlowSchemas(objs);
    assert.deepEqual(render(['flowControl.enabled=false']).filter((f) => f.kind === 'FlowSchema'), []);
    assert.match(refused(['--set', 'flowControl.enable=true']), /flowControl/);
  });

  it('tokenRequestPolicy: the ValidatingAdmissionPolicy of manifests/host/tokenrequest-policy.yaml, for the release\'s ServiceAccount; none when disabled', () => {
    const specs = (x: KubernetesObject[]) => plain(x.filter((f) => (f.kind ?? '').startsWith('ValidatingAdmissionPolicy'))
      .map((f) => [f.kind, f.metadata!.name, (f as KubernetesObject & { spec: unknown }).spec]).sort());
    assert.deepEqual(specs(objs), specs(base));
    assertTokenRequestPolicy(objs);
    assertTokenRequestPolicy(render([], { release: 'edge', namespace: 'offload' }));
    assert.deepEqual(render(['tokenRequestPolicy.enabled=false']).filter((f) => (f.kind ?? '').startsWith('ValidatingAdmissionPolicy')), []);
  });

  it('the PodDisruptionBudget and Service select the Deployment\'s pods; one replica has no budget', () => {
    const d = one<V1Deployment>(objs, 'Deployment');
    const pdb = one<V1PodDisruptionBudget>(objs, 'PodDisruptionBudget');
    assert.equal(pdb.spec!.minAvailable, 1);
    assert.ok(selects(pdb.spec!.selector?.matchLabels, d));
    const s = one<V1Service>(objs, 'Service');
    assert.ok(selects(s.spec!.selector, d));
    assert.deepEqual(s.spec!.ports?.map((p) => [p.name, p.port, p.targetPort]), [['kubelet', 10250, 'kubelet']]);
    assert.deepEqual(render(['replicaCount=1']).filter((o) => o.kind === 'PodDisruptionBudget'), []);
  });

  it('several members, mounted or read from the host API, with their settings; host name, exports, workers', () => {
    using f = valuesFile(`
hostName: prod-host
podSyncWorkers: 20
exportNamespaces: [results]
members:
- name: eu-1
  secret: { name: eu-1-kubeconfig }
  labels: { example.com/region: eu }
  taints: [{ key: example.com/burst, value: "true", effect: NoSchedule }]
- name: us-1
  kubeconfigSecret: { name: us-1-kubeconfig, key: config }
  nodeName: us-one
  namespaceMapping: { template: "{namespace}-prod" }
`);
    const o = render([], { values: [f.path], release: 'fleet', namespace: 'ops' });
    assertConfigMounted(o);
    assert.deepEqual(providerConfig(o, 'fleet-clusterlet-config'), {
      hostName: 'prod-host', podSyncWorkers: 20, exportNamespaces: ['results'],
      members: [
        { name: 'eu-1', kubeconfig: '/etc/clusterlet-members/eu-1.kubeconfig', labels: { 'example.com/region': 'eu' },
          taints: [{ key: 'example.com/burst', value: 'true', effect: 'NoSchedule' }] },
        { name: 'us-1', kubeconfigSecret: { namespace: 'ops', name: 'us-1-kubeconfig', key: 'config' }, nodeName: 'us-one',
          namespaceMapping: { template: '{namespace}-prod' } },
      ],
    });
    const sources = one<V1Deployment>(o, 'Deployment').spec!.template.spec!.volumes!.find((v) => v.name === 'member-kubeconfigs')!
      .projected!.sources!;
    assert.deepEqual(sources.map((s) => s.secret?.name), ['eu-1-kubeconfig'], 'only the mounted member');
    // clusterlet itself accepts it, with the mounted file where the pod has it.
    using mounts = tempDir();
    const dir = mounts.path;
    writeFileSync(join(dir, 'eu-1.kubeconfig'), '');
    const text = one<V1ConfigMap>(o, 'ConfigMap', 'fleet-clusterlet-config').data!['clusterlet.yaml'].replaceAll('/etc/clusterlet-members', dir);
    writeFileSync(join(dir, 'clusterlet.yaml'), text);
    const { members, settings } = loadProviderConfig(join(dir, 'clusterlet.yaml'), { qps: 200, burst: 400 });
    assert.deepEqual(members.map((m) => [m.name, m.nodeName, m.kubeconfigSecret?.namespace]), [['eu-1', 'clusterlet-eu-1', undefined], ['us-1', 'us-one', 'ops']]);
    assert.equal(settings.hostName, 'prod-host');
    // Another release and namespace: the namespaced objects in it (the node lease Role in kube-node-lease), bound to its ServiceAccount.
    for (const x of o) {
      if (['ClusterRole', 'ClusterRoleBinding', 'FlowSchema', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding'].includes(x.kind!)) continue;
      assert.equal(x.metadata!.namespace, x.metadata!.name!.endsWith('-node-lease') ? 'kube-node-lease' : 'ops', `${x.kind} ${x.metadata!.name}`);
    }
    assertLeastPrivilegeShape(o);
    assert.equal(one(o, 'ServiceAccount').metadata!.name, 'fleet-clusterlet');
    // The FlowSchemas name the release's ServiceAccount, and its leader election's Leases in the release namespace.
    assertFlowSchemas(o);
  });

  it('reflectHostEndpoints: the switch in clusterlet.yaml and the EndpointSlice RBAC of manifests/host/rbac-host-endpoints.yaml', () => {
    const o = render(['reflectHostEndpoints=true']);
    assert.equal(providerConfig(o).reflectHostEndpoints, true);
    const extra = (loadAllYaml(readFileSync(join(ROOT, 'manifests/host/rbac-host-endpoints.yaml'), 'utf8')) as KubernetesObject[]).filter(Boolean);
    assert.deepEqual(permissions(o), permissions([...base, ...extra]));
    assertLeastPrivilegeShape(o);
  });

  it('clusterProfiles: the flags, the provider file, and manifests/host/rbac-clusterprofiles.yaml\'s Role in the profiles\' namespace', () => {
    using v = valuesFile('members: []\nclusterProfiles:\n  enabled: true\n  namespace: fleet\n  selector: env=prod\n'
      + '  providers:\n  - name: secretreader\n    execConfig: { apiVersion: client.authentication.k8s.io/v1, command: /plugins/secretreader }\n');
    const o = helmTemplate(helm!, { values: [v.path] });
    const args = one<V1Deployment>(o, 'Deployment').spec!.template.spec!.containers[0].args!;
    for (const a of ['--member-source=clusterprofile', '--clusterprofile-namespace=fleet', '--clusterprofile-selector=env=prod',
      '--clusterprofile-provider-file=/etc/clusterlet/clusterprofile-providers.json']) assert.ok(args.includes(a), `${a} in ${args.join(' ')}`);
    const cm = one<V1ConfigMap>(o, 'ConfigMap', 'clusterlet-config');
    assert.deepEqual(providerConfig(o).members, []);
    // The provider file is the cluster-inventory-api's format, read by clusterlet's own parser.
    using d = tempDir();
    const file = join(d.path, 'providers.json');
    writeFileSync(file, cm.data!['clusterprofile-providers.json']);
    assert.deepEqual(loadAccessProviders(file).map((p) => [p.name, p.execConfig?.command]), [['secretreader', '/plugins/secretreader']]);
    // The Role of manifests/host/rbac-clusterprofiles.yaml, in the profiles' namespace.
    const extra = (loadAllYaml(readFileSync(join(ROOT, 'manifests/host/rbac-clusterprofiles.yaml'), 'utf8')) as KubernetesObject[])
      .filter(Boolean).map((x) => ({ ...x, metadata: { ...x.metadata, namespace: 'fleet' } }));
    assert.deepEqual(permissions(o), permissions([...base, ...extra]));
    assertLeastPrivilegeShape(o);
    assert.equal(objs.filter((x) => x.metadata?.name?.endsWith('-clusterprofiles')).length, 0, 'off by default');
  });

  it('nodes and fit: per member in clusterlet.yaml, as clusterlet reads it; the chart-wide defaults as --nodes and --fit; unset by default', () => {
    using f = valuesFile(`
nodes: { pool: node.kubernetes.io/instance-type }
fit: enforce
members:
- name: eu-1
  kubeconfigSecret: { name: eu-1-kubeconfig }
  nodes: node
  fit: advisory
- name: eu-2
  kubeconfigSecret: { name: eu-2-kubeconfig }
  nodes: { pool: topology.kubernetes.io/zone }
- name: eu-3
  kubeconfigSecret: { name: eu-3-kubeconfig }
`);
    const o = render([], { values: [f.path] });
    const args = (x: KubernetesObject[]) => one<V1Deployment>(x, 'Deployment').spec!.template.spec!.containers[0].args!;
    assert.ok(args(o).includes('--nodes=pool=node.kubernetes.io/instance-type'), args(o).join(' '));
    assert.ok(args(render(['nodes=node'])).includes('--nodes=node'));
    assert.deepEqual(args(objs).filter((a) => a.startsWith('--nodes')), [], 'unset by default');
    assert.ok(args(o).includes('--fit=enforce'), args(o).join(' '));
    assert.deepEqual(args(objs).filter((a) => a.startsWith('--fit')), [], 'fit unset by default');
    using d = tempDir();
    const file = join(d.path, 'clusterlet.yaml');
    writeFileSync(file, one<V1ConfigMap>(o, 'ConfigMap', 'clusterlet-config').data!['clusterlet.yaml']);
    const { members } = loadProviderConfig(file, { qps: 200, burst: 400, nodes: { mode: 'pool', label: 'node.kubernetes.io/instance-type' },
      fit: 'enforce' });
    assert.deepEqual(members.map((m) => m.nodes), [{ mode: 'node' }, { mode: 'pool', label: 'topology.kubernetes.io/zone' },
      { mode: 'pool', label: 'node.kubernetes.io/instance-type' }]);
    assert.deepEqual(members.map((m) => m.fit), ['advisory', 'enforce', 'enforce']);
  });

  it('leader election timings, a single replica without election, extra flags and env', () => {
    const args = (o: KubernetesObject[]) => one<V1Deployment>(o, 'Deployment').spec!.template.spec!.containers[0].args;
    assert.ok(args(render(['leaderElection.leaseDuration=30s']))?.includes('--leader-elect-lease-duration=30s'));
    const lone = args(render(['replicaCount=1', 'leaderElection.enabled=false', 'extraArgs={--probe-period-seconds=5}']));
    assert.ok(lone?.includes('--leader-elect=false') && lone.includes('--probe-period-seconds=5'), lone?.join(' '));
    const env = one<V1Deployment>(render(['extraEnv[0].name=A', 'extraEnv[0].value=b']), 'Deployment').spec!.template.spec!.containers[0].env;
    assert.deepEqual(plain(env?.at(-1)), { name: 'A', value: 'b' });
  });

  it('the Grafana dashboard, when enabled, is a ConfigMap for the Grafana sidecar holding dashboards/clusterlet.json', () => {
    assert.equal(objs.filter((o) => o.kind === 'ConfigMap').length, 1, 'off by default');
    const cm = one<V1ConfigMap>(render(['dashboard.enabled=true', 'dashboard.namespace=monitoring']), 'ConfigMap', 'clusterlet-dashboard');
    assert.equal(cm.metadata!.namespace, 'monitoring');
    assert.equal(cm.metadata!.labels?.grafana_dashboard, '1');
    assert.deepEqual(JSON.parse(cm.data!['clusterlet.json']), JSON.parse(readFileSync(DASHBOARD, 'utf8')));
  });

  it('refuses values it cannot use, naming them', () => {
    const cases: [string, RegExp][] = [
      ['replicaCount: 0', /at '\/replicaCount': minimum: got 0, want 1/],
      ['members: [{ name: EU_1, secret: { name: x } }]', /at '\/members\/0\/name': 'EU_1' does not match pattern/],
      ['logLevel: verbose', /at '\/logLevel': value must be one of/],
      ['replicas: 3', /additional properties 'replicas' not allowed/],
      ['hostName: Prod', /at '\/hostName': 'Prod' does not match pattern/],
      ['leaderElection: { leaseDuration: 15 seconds }', /at '\/leaderElection\/leaseDuration': '15 seconds' does not match pattern/],
      ['members: [{ name: a, secret: { name: x }, taints: [{ key: k, effect: Never }] }]', /at '\/members\/0\/taints\/0\/effect': value must be one of/],
      ['members: [{ name: a, secret: { name: x }, nodename: n }]', /at '\/members\/0': additional properties 'nodename' not allowed/],
      ['extraArgs: [probe-period-seconds=5]', /at '\/extraArgs\/0': 'probe-period-seconds=5' does not match pattern '\^--'/],
      ['nodes: pools', /at '\/nodes': value must be one of 'cluster', 'node'/],
      ['fit: sometimes', /at '\/fit': value must be one of 'auto', 'enforce', 'advisory', 'off'/],
      ['members: [{ name: a, secret: { name: x }, nodes: { pool: a b } }]', /at '\/members\/0\/nodes\/pool': 'a b' does not match pattern/],
      ['members: [{ name: a, secret: { name: x }, nodes: { pool: x, extra: 1 } }]',
        /at '\/members\/0\/nodes': additional properties 'extra' not allowed/],
      ['members: []', /members: give at least one member, or enable clusterProfiles/],
      // What the schema cannot say, the templates do.
      ['members: [{ name: a, secret: { name: x }, kubeconfigSecret: { name: other } }]',
        /members\[0\] \(a\): give exactly one of secret \(mounted\) or kubeconfigSecret \(read from the host API\)/],
      ['members: [{ name: a }]', /members\[0\] \(a\): give exactly one of secret/],
      ['members: [{ name: a, secret: { name: x } }, { name: a, secret: { name: other } }]', /members\[1\].name: duplicate member "a"/],
      ['leaderElection: { enabled: false }', /leaderElection.enabled: false needs replicaCount: 1/],
    ];
    for (const [values, message] of cases) {
      using f = valuesFile(values);
      assert.match(refused(['--values', f.path]), message, values);
    }
  });
});
