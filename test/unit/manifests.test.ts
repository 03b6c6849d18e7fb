// manifests/ builds with kustomize and says what it must: the Deployment's probes, security context, POD_* env
// and high availability (two replicas, a rolling update that never runs fewer, spread, a PodDisruptionBudget); the config and kubeconfig mounts that clusterlet.yaml refers to; and RBAC that is exactly the
// least privilege derived from the code (a new API call needs a rule here and in the manifests, on purpose).
// Also: every shell script parses. Needs the kubectl that hack/build-k8s.sh builds (or $KUBECTL).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { NODE_ENV_VARS, NODE_FLAGS } from '../../src/nodeflags.ts';
import {
  loadAllYaml, type KubernetesObject, type V1Deployment, type V1PodDisruptionBudget, type V1Service,
} from '@kubernetes/client-node';
import {
  assertConfigMounted, assertFlowSchemas, assertLeastPrivilegeShape, assertTokenRequestPolicy, findKubectl, kustomizeBuild, one, permissions,
  ROOT, selects,
} from '../support/manifests.ts';

const kubectl = findKubectl();
const skip = kubectl ? false
  : 'kubectl not found (built by `make binaries` into ~/.cache/clusterlet, or set KUBECTL): the manifests are not checked';

const build = (dir: string): KubernetesObject[] => kustomizeBuild(kubectl!, dir);

/**
 * The permissions of a side's optional RBAC (`file`: rbac-host-endpoints.yaml for --reflect-host-endpoints,
 * rbac-clusterprofiles.yaml for --member-source=clusterprofile), after checking it has the least-privilege shape for
 * the side's ServiceAccount and is off by default: none of its objects is in the kustomization (`objs`).
 */
function optionalRbacPermissions(side: 'host' | 'member', objs: KubernetesObject[], file = 'rbac-host-endpoints.yaml'): Record<string, string[]> {
  const extra = (loadAllYaml(readFileSync(join(ROOT, `manifests/${side}/${file}`), 'utf8')) as KubernetesObject[])
    .filter(Boolean);
  assert.ok(extra.length > 0, `manifests/${side}/${file} has objects`);
  assertLeastPrivilegeShape([...extra, one(objs, 'ServiceAccount')]);
  for (const o of extra) {
    const name = o.metadata!.name;
    assert.ok(!objs.some((k) => k.metadata?.name === name), `off by default: ${o.kind} ${name} not in the kustomization`);
  }
  return permissions(extra);
}

describe('manifests/host', { skip }, () => {
  const objs = kubectl ? build('manifests/host') : [];

  it('has the namespace, identity, Deployment, PodDisruptionBudget, Service and config', () => {
    const kinds = objs.map((o) => `${o.kind}/${o.metadata!.namespace ?? ''}/${o.metadata!.name}`).sort();
    for (const k of ['Namespace//clusterlet', 'ServiceAccount/clusterlet/clusterlet', 'ClusterRole//clusterlet',
      'ClusterRoleBinding//clusterlet', 'Role/kube-node-lease/clusterlet-node-lease', 'RoleBinding/kube-node-lease/clusterlet-node-lease',
      'Role/clusterlet/clusterlet-member-kubeconfigs', 'RoleBinding/clusterlet/clusterlet-member-kubeconfigs',
      'Role/clusterlet/clusterlet-leader-election', 'RoleBinding/clusterlet/clusterlet-leader-election',
      'Deployment/clusterlet/clusterlet', 'PodDisruptionBudget/clusterlet/clusterlet', 'Service/clusterlet/clusterlet']) {
      assert.ok(kinds.includes(k), `${k} in ${kinds.join(', ')}`);
    }
  });

  it('a ValidatingAdmissionPolicy confines clusterlet\'s TokenRequests: bound to a Pod, at most 48 h, not in kube-system', () => {
    assertTokenRequestPolicy(objs);
  });

  it('FlowSchemas: the host API server queues its heartbeats in node-high, its leader election in leader-election, the rest in system', () => {
    assertFlowSchemas(objs);
  });

  it('the Deployment: probes on the health port, resources, POD_* env, hardened security context', () => {
    const d = one<V1Deployment>(objs, 'Deployment');
    const pod = d.spec!.template.spec!;
    assert.equal(pod.serviceAccountName, 'clusterlet');
    assert.equal(pod.containers.length, 1);
    const c = pod.containers[0];
    assert.equal(c.image, 'clusterlet:latest');
    assert.ok(c.args?.includes('--provider-config=/etc/clusterlet/clusterlet.yaml'), `args ${c.args?.join(' ')}`);
    const port = (name: string): number | undefined => c.ports?.find((p) => p.name === name)?.containerPort;
    assert.equal(port('health'), 10255);
    assert.equal(port('kubelet'), 10250);
    assert.equal(c.livenessProbe?.httpGet?.path, '/healthz');
    assert.equal(c.readinessProbe?.httpGet?.path, '/readyz');
    for (const p of [c.livenessProbe, c.readinessProbe]) assert.ok(p?.httpGet?.port === 'health' || p?.httpGet?.port === 10255);
    for (const k of ['cpu', 'memory']) assert.ok(c.resources?.requests?.[k], `requests.${k}`);
    assert.ok(c.resources?.limits?.memory, 'limits.memory');
    const fieldOf = (name: string) => c.env?.find((e) => e.name === name)?.valueFrom?.fieldRef?.fieldPath;
    assert.deepEqual(['POD_IP', 'POD_NAME', 'POD_NAMESPACE', 'POD_UID'].map(fieldOf),
      ['status.podIP', 'metadata.name', 'metadata.namespace', 'metadata.uid'], 'node IP, and leader election identity, namespace, owner');
    assert.equal(pod.securityContext?.runAsNonRoot, true);
    assert.equal(pod.securityContext?.seccompProfile?.type, 'RuntimeDefault');
    const sc = c.securityContext!;
    assert.equal(sc.readOnlyRootFilesystem, true);
    assert.equal(sc.allowPrivilegeEscalation, false);
    assert.equal(sc.runAsNonRoot, true);
    assert.deepEqual(sc.capabilities?.drop, ['ALL']);
    assert.equal(sc.capabilities?.add, undefined);
    assert.notEqual(sc.privileged, true);
    assert.equal(pod.hostNetwork, undefined);
  });

  it('high availability: two replicas, a rolling update that never runs fewer, spread over host nodes where it can be', () => {
    const d = one<V1Deployment>(objs, 'Deployment');
    assert.equal(d.spec!.replicas, 2);
    assert.equal(d.spec!.strategy?.type, 'RollingUpdate');
    const { maxSurge, maxUnavailable } = d.spec!.strategy?.rollingUpdate ?? {};
    assert.deepEqual([maxSurge, maxUnavailable], [1, 0], 'a new replica is up before an old one stops');
    const anti = d.spec!.template.spec!.affinity?.podAntiAffinity;
    assert.equal(anti?.requiredDuringSchedulingIgnoredDuringExecution, undefined, 'soft: a one-node cluster still runs both');
    const terms = anti?.preferredDuringSchedulingIgnoredDuringExecution ?? [];
    assert.equal(terms.length, 1);
    assert.equal(terms[0].podAffinityTerm.topologyKey, 'kubernetes.io/hostname');
    assert.ok(selects(terms[0].podAffinityTerm.labelSelector?.matchLabels, d), 'away from its own replicas');
  });

  it('a PodDisruptionBudget keeps one replica of the Deployment through voluntary evictions', () => {
    const pdb = one<V1PodDisruptionBudget>(objs, 'PodDisruptionBudget');
    const d = one<V1Deployment>(objs, 'Deployment');
    assert.equal(pdb.metadata!.namespace, d.metadata!.namespace);
    assert.equal(pdb.spec!.minAvailable, 1);
    assert.equal(pdb.spec!.maxUnavailable, undefined);
    assert.equal(pdb.spec!.selector?.matchExpressions, undefined);
    assert.ok(selects(pdb.spec!.selector?.matchLabels, d), `selects the Deployment's pods: ${JSON.stringify(pdb.spec!.selector)}`);
  });

  it('clusterlet.yaml comes from the generated ConfigMap and every member kubeconfig it names is mounted', () => {
    assertConfigMounted(objs);
  });

  it('the Service exposes the kubelet port of the clusterlet pod', () => {
    const s = one<V1Service>(objs, 'Service');
    const d = one<V1Deployment>(objs, 'Deployment');
    assert.deepEqual(s.spec!.ports?.map((p) => [p.name, p.port, p.targetPort]), [['kubelet', 10250, 'kubelet']]);
    assert.ok(selects(s.spec!.selector, d));
  });

  it('RBAC: least privilege, exactly what the code uses on the host', () => {
    assertLeastPrivilegeShape(objs);
    assert.deepEqual(permissions(objs), {
      'authentication.k8s.io/tokenreviews': ['create'],
      'authorization.k8s.io/subjectaccessreviews': ['create'],
      'certificates.k8s.io/certificatesigningrequests': ['create', 'list', 'watch'],
      'clusterlet:coordination.k8s.io/leases': ['create', 'get', 'list', 'update', 'watch'],
      'clusterlet:core/secrets': ['get'],
      'core/configmaps': ['create', 'delete', 'get', 'list', 'update', 'watch'],
      'core/events': ['create', 'get', 'patch'],
      'core/namespaces': ['get', 'list', 'watch'],
      'core/nodes': ['create', 'delete', 'get', 'list', 'patch', 'watch'],
      'core/nodes/status': ['patch'],
      'core/persistentvolumeclaims': ['list', 'patch', 'watch'],
      'core/persistentvolumeclaims/status': ['patch'],
      'core/persistentvolumes': ['create', 'delete', 'list', 'patch', 'watch'],
      'core/pods': ['delete', 'list', 'watch'],
      'core/pods/status': ['patch'],
      'core/secrets': ['create', 'delete', 'get', 'list', 'update', 'watch'],
      'core/serviceaccounts/token': ['create'],
      'core/services': ['list', 'watch'],
      'kube-node-lease:coordination.k8s.io/leases': ['create', 'patch'],
      'storage.k8s.io/storageclasses': ['create', 'delete', 'get', 'update'],
    });
  });

  it('--reflect-host-endpoints: its extra RBAC, outside the kustomization, reads the host\'s EndpointSlices only', () => {
    assert.deepEqual(optionalRbacPermissions('host', objs), { 'discovery.k8s.io/endpointslices': ['list', 'watch'] });
  });

  it('--member-source=clusterprofile: its extra RBAC, outside the kustomization, watches the ClusterProfiles of one namespace and patches their status', () => {
    assert.deepEqual(optionalRbacPermissions('host', objs, 'rbac-clusterprofiles.yaml'), {
      'clusterlet:multicluster.x-k8s.io/clusterprofiles': ['list', 'watch'],
      'clusterlet:multicluster.x-k8s.io/clusterprofiles/status': ['patch'],
    });
  });
});

describe('manifests/member', { skip }, () => {
  const objs = kubectl ? build('manifests/member') : [];

  it('RBAC: least privilege, exactly what the code uses in a member', () => {
    assertLeastPrivilegeShape(objs);
    assert.deepEqual(permissions(objs), {
      'core/configmaps': ['create', 'delete', 'get', 'list', 'update', 'watch'],
      'core/events': ['list', 'watch'],
      'core/namespaces': ['create', 'list', 'update', 'watch'],
      'core/nodes': ['list', 'watch'],
      'core/nodes/proxy': ['get'],
      'core/persistentvolumeclaims': ['create', 'delete', 'get', 'list', 'patch', 'watch'],
      'core/pods': ['create', 'delete', 'get', 'list', 'update', 'watch'],
      'core/pods/attach': ['create', 'get'],
      'core/pods/ephemeralcontainers': ['patch'],
      'core/pods/exec': ['create', 'get'],
      'core/pods/log': ['get'],
      'core/pods/portforward': ['create', 'get'],
      'core/pods/resize': ['patch'],
      'core/secrets': ['create', 'delete', 'get', 'list', 'update', 'watch'],
      'core/serviceaccounts': ['create', 'delete', 'list', 'update', 'watch'],
      'core/services': ['create', 'delete', 'get', 'list', 'update', 'watch'],
      'karpenter.sh/nodepools': ['list'],
      'kube-system:core/configmaps': ['get'],
      'metrics.k8s.io/pods': ['list'],
      'multicluster.x-k8s.io/serviceexports': ['create', 'delete', 'get', 'list', 'update', 'watch'],
      'storage.k8s.io/storageclasses': ['get'],
    });
    // In kube-system, the cluster-autoscaler's status ConfigMap only (the auto fit, src/member/scaling.ts).
    const ks = objs.filter((o) => o.kind === 'Role' && o.metadata?.namespace === 'kube-system') as (KubernetesObject & { rules: { resourceNames?: string[] }[] })[];
    assert.deepEqual(ks.flatMap((r) => r.rules.map((x) => x.resourceNames)), [['cluster-autoscaler-status']]);
  });

  it('--reflect-host-endpoints: its extra RBAC, outside the kustomization, writes EndpointSlices', () => {
    assert.deepEqual(optionalRbacPermissions('member', objs),
      { 'discovery.k8s.io/endpointslices': ['create', 'delete', 'get', 'list', 'update', 'watch'] });
  });

  it('a long-lived token Secret for the ServiceAccount, which mint-kubeconfig.sh reads', () => {
    const sa = one(objs, 'ServiceAccount');
    const secret = one<KubernetesObject & { type?: string }>(objs, 'Secret');
    assert.equal(secret.type, 'kubernetes.io/service-account-token');
    assert.equal(secret.metadata!.namespace, sa.metadata!.namespace);
    assert.equal(secret.metadata!.annotations?.['kubernetes.io/service-account.name'], sa.metadata!.name);
    const script = readFileSync(join(ROOT, 'manifests/member/mint-kubeconfig.sh'), 'utf8');
    assert.match(script, new RegExp(`secret="${secret.metadata!.name}"`));
  });
});

describe('manifests/examples/two-members', { skip }, () => {
  const objs = kubectl ? build('manifests/examples/two-members') : [];

  it('two members, each kubeconfig mounted; same RBAC as the base', () => {
    const cfg = assertConfigMounted(objs);
    assert.equal(cfg.members.length, 2);
    assert.deepEqual(permissions(objs), permissions(build('manifests/host')));
  });
});

describe('shell scripts', () => {
  const scripts = [
    ...readdirSync(join(ROOT, 'manifests/member')).filter((f) => f.endsWith('.sh')).map((f) => join('manifests/member', f)),
    ...(existsSync(join(ROOT, 'e2e/kind')) ? readdirSync(join(ROOT, 'e2e/kind')).filter((f) => f.endsWith('.sh')).map((f) => join('e2e/kind', f)) : []),
  ];
  for (const s of scripts) {
    it(`${s}: parses (bash -n), is executable and strict`, () => {
      const r = spawnSync('bash', ['-n', join(ROOT, s)], { encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
      assert.ok((statSync(join(ROOT, s)).mode & 0o111) !== 0, 'executable');
      const text = readFileSync(join(ROOT, s), 'utf8');
      assert.match(text, /^#!\/usr\/bin\/env bash\n/);
      assert.match(text, /^set -euo pipefail$/m);
    });
  }
});

describe('node flags', () => {
  const flags = NODE_FLAGS.join(' ');
  it('the image runs clusterlet with them', () => {
    const entry = /^ENTRYPOINT (.*)$/m.exec(readFileSync(new URL('../../Dockerfile', import.meta.url), 'utf8'))?.[1];
    assert.deepEqual(JSON.parse(entry ?? '[]'), ['node', ...NODE_FLAGS, 'dist/cli.js']);
  });
  it('the clusterlet bin runs with them', () => {
    const shebang = readFileSync(new URL('../../src/cli.ts', import.meta.url), 'utf8').split('\n')[0];
    const env = Object.entries(NODE_ENV_VARS).map(([k, v]) => `${k}=${v}`).join(' ');
    assert.equal(shebang, `#!/usr/bin/env -S ${env} node ${flags}`);
  });
  it('the image sets their environment', () => {
    const dockerfile = readFileSync(new URL('../../Dockerfile', import.meta.url), 'utf8');
    for (const [k, v] of Object.entries(NODE_ENV_VARS)) assert.match(dockerfile, new RegExp(`^ENV ${k}=${v}$`, 'm'));
  });
});
