// What the manifests and chart tests share: the kubectl and helm that hack/build-k8s.sh and hack/build-helm.sh
// build (or $KUBECTL, $HELM), rendering manifests/ and charts/, and the checks both forms of the install must pass.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  loadAllYaml, loadYaml, type KubernetesObject, type V1ClusterRoleBinding, type V1ConfigMap, type V1Deployment,
  type V1FlowSchema, type V1PolicyRule,
} from '@kubernetes/client-node';
import { LEASE_NAMESPACE } from '../../src/host/node/controller.ts';
import { MAX_TOKEN_SECONDS } from '../../src/forge/apiaccess.ts';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const cache = (): string => process.env.CLUSTERLET_CACHE ?? join(homedir(), '.cache/clusterlet');
/** A build script's default for a version variable, e.g. K8S_VERSION="${K8S_VERSION:-v1.36.3}"; the environment wins. */
function versionOf(script: string, variable: string): string | undefined {
  const text = readFileSync(join(ROOT, 'hack', script), 'utf8');
  return process.env[variable] ?? new RegExp(`${variable}="\\$\\{${variable}:-([^}]+)\\}"`).exec(text)?.[1];
}

/** The kubectl of hack/build-k8s.sh's cache (same version defaults), or $KUBECTL. */
export function findKubectl(): string | undefined {
  if (process.env.KUBECTL) return process.env.KUBECTL;
  const bin = join(cache(), `k8s-${versionOf('build-k8s.sh', 'K8S_VERSION')}-kwok-${versionOf('build-k8s.sh', 'KWOK_VERSION')}`, 'bin', 'kubectl');
  return existsSync(bin) ? bin : undefined;
}

/** The helm of hack/build-helm.sh's cache (same version default), or $HELM. */
export function findHelm(): string | undefined {
  if (process.env.HELM) return process.env.HELM;
  const bin = join(cache(), `helm-${versionOf('build-helm.sh', 'HELM_VERSION')}`, 'bin', 'helm');
  return existsSync(bin) ? bin : undefined;
}

export const CHART = join(ROOT, 'charts/clusterlet');

export function parseObjects(yaml: string): KubernetesObject[] {
  return (loadAllYaml(yaml) as KubernetesObject[]).filter(Boolean);
}

/** `kubectl kustomize <dir>` (relative to the repository), parsed. */
export function kustomizeBuild(kubectl: string, dir: string): KubernetesObject[] {
  return parseObjects(execFileSync(kubectl, ['kustomize', join(ROOT, dir)], { encoding: 'utf8' }));
}

/** `helm template <release> charts/clusterlet -n <namespace>` with `--set`-style values, parsed. */
export function helmTemplate(helm: string, opts: { release?: string; namespace?: string; set?: string[]; values?: string[] } = {}):
  KubernetesObject[] {
  const args = ['template', opts.release ?? 'clusterlet', CHART, '--namespace', opts.namespace ?? 'clusterlet',
    ...(opts.set ?? []).flatMap((s) => ['--set', s]), ...(opts.values ?? []).flatMap((f) => ['--values', f])];
  return parseObjects(execFileSync(helm, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }));
}

export const one = <T extends KubernetesObject>(objs: KubernetesObject[], kind: string, name?: string): T => {
  const found = objs.filter((o) => o.kind === kind && (name === undefined || o.metadata?.name === name));
  assert.equal(found.length, 1, `exactly one ${kind}${name ? ` ${name}` : ''}`);
  return found[0] as T;
};

type Rules = KubernetesObject & { rules?: V1PolicyRule[] };

/** A label selector (matchLabels) that is not empty and matches the Deployment's pod template. */
export const selects = (labels: Record<string, string> | undefined, d: V1Deployment): boolean =>
  Object.keys(labels ?? {}).length > 0
  && Object.entries(labels ?? {}).every(([k, v]) => d.spec!.template.metadata!.labels?.[k] === v);

/** "group/resource" → sorted verbs, over every Role and ClusterRole (namespaced ones prefixed "ns:"). */
export function permissions(objs: KubernetesObject[]): Record<string, string[]> {
  const out: Record<string, Set<string>> = {};
  for (const o of objs) {
    if (o.kind !== 'Role' && o.kind !== 'ClusterRole') continue;
    const scope = o.kind === 'Role' ? `${o.metadata!.namespace}:` : '';
    for (const r of (o as Rules).rules ?? []) {
      for (const g of r.apiGroups ?? []) {
        for (const res of r.resources ?? []) for (const v of r.verbs) (out[`${scope}${g || 'core'}/${res}`] ??= new Set()).add(v);
      }
    }
  }
  return Object.fromEntries(Object.entries(out).map(([k, v]): [string, string[]] => [k, [...v].sort()])
    .sort(([a], [b]) => a.localeCompare(b)));
}

export function assertLeastPrivilegeShape(objs: KubernetesObject[]): void {
  for (const o of objs.filter((x) => x.kind === 'Role' || x.kind === 'ClusterRole')) {
    const rules = (o as Rules).rules ?? [];
    assert.ok(rules.length > 0, `${o.metadata!.name} has rules`);
    for (const r of rules) {
      for (const list of [r.verbs, r.resources ?? [], r.apiGroups ?? [], r.resourceNames ?? []]) {
        assert.ok(!list.includes('*'), `${o.kind} ${o.metadata!.name}: no "*" in ${JSON.stringify(r)}`);
      }
      assert.equal(r.nonResourceURLs, undefined, `${o.metadata!.name}: no nonResourceURLs`);
      for (const v of ['escalate', 'bind', 'impersonate', 'deletecollection']) {
        assert.ok(!r.verbs.includes(v), `${o.metadata!.name}: no ${v}`);
      }
    }
    assert.equal((o as KubernetesObject & { aggregationRule?: unknown }).aggregationRule, undefined);
  }
  // Every binding grants a role of these manifests to their ServiceAccount, and nothing else.
  const sa = one(objs, 'ServiceAccount');
  for (const b of objs.filter((x) => x.kind === 'RoleBinding' || x.kind === 'ClusterRoleBinding') as V1ClusterRoleBinding[]) {
    assert.ok(objs.some((r) => r.kind === b.roleRef.kind && r.metadata?.name === b.roleRef.name), `${b.metadata!.name} binds a role defined here`);
    assert.deepEqual(b.subjects?.map((s) => [s.kind, s.namespace, s.name]), [['ServiceAccount', sa.metadata!.namespace, sa.metadata!.name]]);
  }
}

/**
 * The FlowSchemas (manifests/host/flowcontrol.yaml, or the chart's): only the objects' ServiceAccount, per user; its node
 * leases (in LEASE_NAMESPACE) and node status in node-high, its leader election's Leases (in the namespace of the
 * leader-election Role) in leader-election, everything else in system, the narrower ones matched first and all ahead
 * of the built-in service-accounts (9000).
 */
export function assertFlowSchemas(objs: KubernetesObject[]): void {
  const schemas = objs.filter((o) => o.kind === 'FlowSchema') as V1FlowSchema[];
  const spec = (f: V1FlowSchema) => ({ ...f.spec!, rules: f.spec!.rules ?? [], matchingPrecedence: f.spec!.matchingPrecedence ?? 1000 }); // the API's default
  const sa = one(objs, 'ServiceAccount').metadata!;
  const byLevel = new Map(schemas.map((f) => [spec(f).priorityLevelConfiguration.name, spec(f)]));
  assert.deepEqual([...byLevel.keys()].sort(), ['leader-election', 'node-high', 'system']);
  for (const [level, f] of byLevel) {
    assert.equal(f.distinguisherMethod?.type, 'ByUser', level);
    assert.deepEqual(f.rules.flatMap((r) => r.subjects.map((x) => [x.kind, x.serviceAccount?.namespace, x.serviceAccount?.name])),
      f.rules.map(() => ['ServiceAccount', sa.namespace, sa.name]), `${level}: only clusterlet's ServiceAccount`);
    assert.ok(f.matchingPrecedence < 9000, `${level} matched before service-accounts`);
  }
  const rules = (f: ReturnType<typeof spec>) => f.rules.flatMap((r) => r.resourceRules ?? [])
    .flatMap((r) => r.resources.map((res) => `${r.apiGroups.join(',')}/${res} in ${r.clusterScope ? '(cluster)' : (r.namespaces ?? []).join(',')}`)).sort();
  const heartbeats = byLevel.get('node-high')!, election = byLevel.get('leader-election')!, rest = byLevel.get('system')!;
  assert.deepEqual(rules(heartbeats), ['/nodes in (cluster)', '/nodes/status in (cluster)', `coordination.k8s.io/leases in ${LEASE_NAMESPACE}`]);
  const electionRole = objs.find((o) => o.kind === 'Role' && o.metadata!.name!.endsWith('-leader-election'))!;
  assert.deepEqual(rules(election), [`coordination.k8s.io/leases in ${electionRole.metadata!.namespace}`]);
  assert.deepEqual(rules(rest), ['*/* in (cluster)']);
  assert.ok(rest.rules.some((r) => r.resourceRules?.some((x) => x.namespaces?.includes('*')) && r.nonResourceRules?.length),
    'the rest: namespaced and non-resource requests too');
  assert.ok(heartbeats.matchingPrecedence < rest.matchingPrecedence && election.matchingPrecedence < rest.matchingPrecedence,
    'the narrower FlowSchemas are matched first');
}

interface Vap extends KubernetesObject {
  spec: { failurePolicy?: string; matchConstraints: { resourceRules: { apiGroups: string[]; apiVersions: string[]; operations: string[]; resources: string[] }[] };
    matchConditions: { expression: string }[]; validations: { expression: string; reason?: string }[] };
}

/**
 * The ValidatingAdmissionPolicy on clusterlet's TokenRequests (manifests/host/tokenrequest-policy.yaml): it matches
 * creates of serviceaccounts/token by clusterlet's ServiceAccount only, wants a Pod bound, a lifetime of at most
 * MAX_TOKEN_SECONDS (what clusterlet asks at most) and no kube-system, fails closed, and a binding denies.
 */
export function assertTokenRequestPolicy(objs: KubernetesObject[]): void {
  const sa = one(objs, 'ServiceAccount').metadata!;
  const policy = JSON.parse(JSON.stringify(one<Vap>(objs, 'ValidatingAdmissionPolicy'))) as Vap;
  assert.equal(policy.spec.failurePolicy, 'Fail');
  assert.deepEqual(policy.spec.matchConstraints.resourceRules,
    [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['serviceaccounts/token'] }]);
  assert.deepEqual(policy.spec.matchConditions.map((c) => c.expression),
    [`request.userInfo.username == 'system:serviceaccount:${sa.namespace}:${sa.name}'`], 'clusterlet\'s ServiceAccount only');
  const rules = policy.spec.validations.map((v) => v.expression);
  assert.ok(rules.some((r) => r.includes("object.spec.boundObjectRef.kind == 'Pod'") && r.includes('boundObjectRef.uid')), 'bound to a Pod');
  assert.ok(rules.includes(`!has(object.spec.expirationSeconds) || object.spec.expirationSeconds <= ${MAX_TOKEN_SECONDS}`), 'the lifetime cap');
  assert.ok(rules.includes("request.namespace != 'kube-system'"), 'not kube-system');
  const binding = one<KubernetesObject & { spec: { policyName: string; validationActions: string[] } }>(objs, 'ValidatingAdmissionPolicyBinding');
  assert.equal(binding.spec.policyName, policy.metadata!.name);
  assert.deepEqual(binding.spec.validationActions, ['Deny']);
}

export interface ProviderConfig { members: { name: string; kubeconfig?: string }[] }

/** The Deployment mounts the generated ConfigMap at /etc/clusterlet and every member kubeconfig file it names. */
export function assertConfigMounted(objs: KubernetesObject[]): ProviderConfig {
  const d = one<V1Deployment>(objs, 'Deployment');
  const pod = d.spec!.template.spec!;
  const mounts = pod.containers[0].volumeMounts ?? [];
  const volumeAt = (path: string) => pod.volumes?.find((v) => v.name === mounts.find((m) => m.mountPath === path)?.name);
  const cmName = volumeAt('/etc/clusterlet')?.configMap?.name;
  assert.ok(cmName, 'a ConfigMap mounted at /etc/clusterlet');
  const cm = one<V1ConfigMap>(objs, 'ConfigMap', cmName);
  const cfg = loadYaml<ProviderConfig>(cm.data!['clusterlet.yaml']);
  assert.ok(cfg.members.length > 0);
  for (const m of cfg.members) {
    if (!m.kubeconfig) continue;
    const dir = m.kubeconfig.slice(0, m.kubeconfig.lastIndexOf('/'));
    const file = m.kubeconfig.slice(dir.length + 1);
    const v = volumeAt(dir);
    assert.ok(v, `a volume mounted at ${dir} for member ${m.name}`);
    const served = [
      ...(v.projected?.sources ?? []).flatMap((s) => s.secret?.items?.map((i) => i.path) ?? []),
      ...(v.secret?.items?.map((i) => i.path) ?? []),
    ];
    assert.ok(served.includes(file), `${file} of member ${m.name} is among ${served.join(', ')}`);
  }
  return cfg;
}
