// clusterlet's identities in the local clusters, as manifests/ define them: the RBAC objects (and the FlowSchemas, and
// the host's ValidatingAdmissionPolicy on clusterlet's TokenRequests) of
// manifests/host (on the host) and manifests/member (on each member), plus their rbac-host-endpoints.yaml (and the host's rbac-clusterprofiles.yaml), are
// applied once per run, a token is minted for each ServiceAccount with the TokenRequest API, and clusterlet
// processes in tests get kubeconfigs with those tokens (not the admin's), so a permission missing from the
// manifests fails a test.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import {
  AuthorizationV1Api, CoreV1Api, dumpYaml, loadAllYaml, type KubernetesObject, type V1PolicyRule,
} from '@kubernetes/client-node';
import type { LocalCluster } from '../harness/cluster.ts';
import { pollUntil } from '../harness/net.ts';

const run = promisify(execFile);
const MANIFESTS = fileURLToPath(new URL('../../manifests/', import.meta.url));
/**
 * What the integration suite applies: the identity, how the API server queues its requests (FlowSchemas) and what it
 * admits of them (the TokenRequest policy), never the Deployment, Service or config.
 */
export const IDENTITY_KINDS = new Set(['Namespace', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding', 'FlowSchema',
  'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']);
export type Side = 'host' | 'member';

interface Rbac { objects: KubernetesObject[]; serviceAccount: { namespace: string; name: string } }

/** `kubectl kustomize manifests/<side>`, parsed. */
export async function kustomize(kubectlBin: string, dir: string): Promise<KubernetesObject[]> {
  const { stdout } = await run(kubectlBin, ['kustomize', dir], { maxBuffer: 16 << 20 });
  return (loadAllYaml(stdout) as KubernetesObject[]).filter((o) => o !== null && o !== undefined);
}

/**
 * The side's RBAC outside its kustomization (--reflect-host-endpoints; on the host also --member-source=clusterprofile):
 * granted too, so one identity serves every test.
 */
const optionalRbac = (side: Side): KubernetesObject[] =>
  (side === 'host' ? ['rbac-host-endpoints.yaml', 'rbac-clusterprofiles.yaml'] : ['rbac-host-endpoints.yaml'])
    .flatMap((f) => (loadAllYaml(readFileSync(join(MANIFESTS, side, f), 'utf8')) as KubernetesObject[]).filter(Boolean));

async function rbacOf(kubectlBin: string, side: Side): Promise<Rbac> {
  const objects = [...await kustomize(kubectlBin, join(MANIFESTS, side)), ...optionalRbac(side)].filter((o) => IDENTITY_KINDS.has(o.kind ?? ''));
  const sas = objects.filter((o) => o.kind === 'ServiceAccount');
  if (sas.length !== 1) throw new Error(`manifests/${side}: expected one ServiceAccount, found ${sas.length}`);
  return { objects, serviceAccount: { namespace: sas[0].metadata!.namespace!, name: sas[0].metadata!.name! } };
}

/** The ServiceAccount of clusterlet's identity on one side, as manifests/<side> defines it. */
export async function identityServiceAccount(kubectlBin: string, side: Side): Promise<{ namespace: string; name: string }> {
  return (await rbacOf(kubectlBin, side)).serviceAccount;
}

const identities = new Map<string, Promise<string>>();
const ready = new Map<string, string>();
/** Every cluster with an identity, and the ServiceAccount's user there, for lastingDenials. */
const identityClusters = new Map<string, { cluster: LocalCluster; user: { name: string; groups: string[] } }>();

function saUser(sa: { namespace: string; name: string }): { name: string; groups: string[] } {
  return { name: `system:serviceaccount:${sa.namespace}:${sa.name}`,
    groups: ['system:serviceaccounts', `system:serviceaccounts:${sa.namespace}`, 'system:authenticated'] };
}

/**
 * Applies the side's RBAC objects to the cluster (once per run and cluster), waits until the API server
 * authorizes every rule for the ServiceAccount, mints a 24 h token and writes a kubeconfig with it.
 * Resolves with the kubeconfig's path.
 */
export function identity(cluster: LocalCluster, side: Side, kubectlBin: string): Promise<string> {
  const key = `${cluster.name}/${side}`;
  let p = identities.get(key);
  if (!p) {
    p = setUp(cluster, side, kubectlBin).then((path) => { ready.set(key, path); return path; });
    void p.catch(() => identities.delete(key)); // a failed setup is tried again by the next caller
    identities.set(key, p);
  }
  return p;
}

/** The kubeconfig of an identity already set up with `identity()`. */
export function identityKubeconfig(cluster: LocalCluster, side: Side): string {
  const path = ready.get(`${cluster.name}/${side}`);
  if (!path) throw new Error(`clusterlet's ${side} identity in ${cluster.name} is not set up: await identity(cluster, '${side}', kubectl) first`);
  return path;
}

async function setUp(cluster: LocalCluster, side: Side, kubectlBin: string): Promise<string> {
  const { objects, serviceAccount: sa } = await rbacOf(kubectlBin, side);
  const file = join(cluster.dir, `clusterlet-${side}-rbac.yaml`);
  await writeFile(file, objects.map((o) => dumpYaml(o)).join('---\n'));
  await run(kubectlBin, ['--kubeconfig', cluster.kubeconfig, 'apply', '--server-side', '--force-conflicts', '-f', file]);
  await waitAuthorized(cluster, objects, sa);
  identityClusters.set(`${cluster.name}/${side}`, { cluster, user: saUser(sa) });
  const kc = cluster.kubeConfig();
  const tr = await kc.makeApiClient(CoreV1Api).createNamespacedServiceAccountToken({
    namespace: sa.namespace, name: sa.name, body: { spec: { audiences: [], expirationSeconds: 24 * 3600 } },
  });
  const token = tr.status?.token;
  if (!token) throw new Error(`no token minted for ${sa.namespace}/${sa.name} in ${cluster.name}`);
  const path = join(cluster.dir, `clusterlet-${side}.kubeconfig`);
  await cluster.writeKubeconfig(path, `system:serviceaccount:${sa.namespace}:${sa.name}`, { token });
  return path;
}

/** Every verb of every rule bound to the ServiceAccount is allowed: the RBAC caches have the new objects. */
export async function waitAuthorized(cluster: LocalCluster, objects: KubernetesObject[], sa: { namespace: string; name: string }): Promise<void> {
  const authz = cluster.kubeConfig().makeApiClient(AuthorizationV1Api);
  const { name: user, groups } = saUser(sa);
  const checks: { namespace?: string; group: string; resource: string; subresource?: string; verb: string }[] = [];
  for (const o of objects) {
    if (o.kind !== 'Role' && o.kind !== 'ClusterRole') continue;
    for (const r of (o as KubernetesObject & { rules?: V1PolicyRule[] }).rules ?? []) {
      for (const group of r.apiGroups ?? ['']) {
        for (const res of r.resources ?? []) {
          const [resource, subresource] = res.split('/');
          for (const verb of r.verbs) checks.push({ namespace: o.metadata?.namespace, group, resource, subresource, verb });
        }
      }
    }
  }
  await pollUntil(`${cluster.name}: RBAC of ${user} in effect`, async () => {
    const results = await Promise.all(checks.map(async (c) => {
      const r = await authz.createSubjectAccessReview({ body: { spec: { user, groups,
        resourceAttributes: { namespace: c.namespace, group: c.group, resource: c.resource, subresource: c.subresource, verb: c.verb } } } });
      return r.status?.allowed === true;
    }));
    return results.every(Boolean) ? true : undefined;
  }, 15_000, 100);
}

interface Denial { line: string; verb: string; resource: string; subresource?: string; group: string; namespace?: string }

/**
 * Log lines where the API server refused clusterlet for lack of an RBAC permission (clusterlet retries and
 * logs such errors rather than dying, so tests look for them in its log). A quota or admission refusal is a
 * 403 too, but says "exceeded quota" etc., not "cannot <verb> resource".
 */
export function rbacDenials(log: string): Denial[] {
  const out: Denial[] = [];
  for (const line of log.split('\n')) {
    const m = /cannot ([a-z]+) resource \\?"([^"\\]+)\\?" in API group \\?"([^"\\]*)\\?"(?: in the namespace \\?"([^"\\]+)\\?")?/.exec(line);
    if (!m) continue;
    const [resource, subresource] = m[2].split('/');
    out.push({ line, verb: m[1], resource, subresource, group: m[3], namespace: m[4] });
  }
  return out;
}

/**
 * The denials RBAC still makes now, in every cluster where clusterlet has an identity. A request refused while
 * an API server was (re)starting (its RBAC caches not yet filled, as the tests that stop API servers cause) is
 * allowed once it runs; one the manifests lack a rule for stays refused. (A rule missing on one side that the
 * other side has, e.g. configmaps, is not caught here; the tests of that behaviour catch it.)
 */
export async function lastingDenials(denials: Denial[]): Promise<Denial[]> {
  if (denials.length === 0) return [];
  const clusters = [...identityClusters.values()];
  const seen = new Map<string, Promise<boolean>>();
  const denied = (d: Denial): Promise<boolean> => {
    const key = `${d.verb} ${d.group}/${d.resource}/${d.subresource ?? ''} ${d.namespace ?? ''}`;
    let p = seen.get(key);
    if (!p) {
      p = Promise.all(clusters.map(async ({ cluster, user }) => {
        const authz = cluster.kubeConfig().makeApiClient(AuthorizationV1Api);
        const r = await authz.createSubjectAccessReview({ body: { spec: { user: user.name, groups: user.groups, resourceAttributes: {
          namespace: d.namespace, group: d.group, resource: d.resource, subresource: d.subresource, verb: d.verb,
        } } } });
        return r.status?.allowed !== true;
      }).map((q) => q.catch(() => true))).then((all) => all.every(Boolean)); // a cluster that is down has no say
      seen.set(key, p);
    }
    return p;
  };
  const results = await Promise.all(denials.map(async (d) => ((await denied(d)) ? d : undefined)));
  return results.filter((d): d is Denial => d !== undefined);
}
