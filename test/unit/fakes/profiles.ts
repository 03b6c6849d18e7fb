// Fakes for the ClusterProfile reconciler (src/host/profiles/reconciler.ts): the host's profiles as a hand-fed watch, the
// status patches it sends, and the manager's member set it starts and stops members in.
import { Subject } from 'rxjs';
import type { V1Secret } from '@kubernetes/client-node';
import type { ClusterProfileSource, MemberConfig } from '../../../src/config.ts';
import { Informer } from '../../../src/kube/informer.ts';
import type { ListWatchEvent } from '../../../src/kube/listwatch.ts';
import { KubeError } from '../../../src/kube/errors.ts';
import type { SecretReader } from '../../../src/host/credentials.ts';
import type { ClusterProfile, Condition, ProfileApi } from '../../../src/host/profiles/api.ts';
import { memberConflict, type MemberState, type ProfileMembers } from '../../../src/host/profiles/reconciler.ts';
import type { AccessSource } from '../../../src/provider/access.ts';

export const NS = 'fleet';

export const SOURCE: ClusterProfileSource = {
  namespace: NS, selector: '', qps: 50, burst: 100, storage: { reclaimPolicy: 'Delete' }, apiAccess: { mode: 'host' },
  providers: [{ name: 'kubeconfig-secretreader', profileSourcedCLIArgsPolicy: 'Ignore', profileSourcedEnvVarsPolicy: 'Ignore' }],
};

/** A profile offering the built-in kubeconfig Secret reader, its Secret `<name>-kubeconfig` key `value`. */
export function profile(name: string, extra: { annotations?: Record<string, string>; rv?: string; providers?: string[] } = {}): ClusterProfile {
  return {
    apiVersion: 'multicluster.x-k8s.io/v1alpha1', kind: 'ClusterProfile',
    metadata: { name, namespace: NS, resourceVersion: extra.rv ?? '1', generation: 1, annotations: extra.annotations },
    spec: { clusterManager: { name: 'test' } },
    status: {
      conditions: [{ type: 'ControlPlaneHealthy', status: 'True', reason: 'Healthy', message: '', lastTransitionTime: '2026-01-01T00:00:00Z' }],
      accessProviders: (extra.providers ?? ['kubeconfig-secretreader']).map((p) => ({
        name: p, cluster: { server: `https://${name}.example:6443`, extensions: [{ name: 'client.authentication.k8s.io/exec',
          extension: { name: `${name}-kubeconfig`, key: 'value' } }] },
      })),
    },
  };
}

/** A kubeconfig whose current context's user has a token (and a server the profile overrides). */
export function kubeconfigText(token: string): string {
  return JSON.stringify({
    apiVersion: 'v1', kind: 'Config', 'current-context': 'admin',
    clusters: [{ name: 'c', cluster: { server: 'https://ignored.example' } }],
    users: [{ name: 'u', user: { token } }], contexts: [{ name: 'admin', context: { cluster: 'c', user: 'u' } }],
  });
}

/** The host's core API as the built-in Secret reader uses it: Secrets by namespace/name. */
export function fakeSecrets(secrets: Record<string, Record<string, string>>): SecretReader {
  return {
    core: {
      readNamespacedSecret: async ({ namespace, name }: { namespace: string; name: string }): Promise<V1Secret> => {
        const data = secrets[`${namespace}/${name}`];
        if (!data) throw new KubeError('NotFound', 404, 'NotFound', `secrets "${name}" not found`);
        return { data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])) };
      },
    },
  };
}

export class FakeProfileApi implements ProfileApi {
  readonly events = new Subject<ListWatchEvent<ClusterProfile>>();
  readonly informer = new Informer<ClusterProfile>('clusterprofiles', this.events);
  readonly host = fakeSecrets({});
  readonly patches: { name: string; conditions: Condition[] }[] = [];
  /** The error the next patch fails with, if any. */
  failNext: Error | undefined;

  async patchConditions(name: string, _resourceVersion: string, conditions: Condition[]): Promise<void> {
    const err = this.failNext;
    this.failNext = undefined;
    if (err) throw err;
    this.patches.push({ name, conditions });
  }

  /** Our condition in the last patch of that profile. */
  offloading(name: string): Condition | undefined {
    return this.patches.filter((p) => p.name === name).at(-1)?.conditions.find((c) => c.type === 'clusterlet.io/Offloading');
  }
}

export class FakeMembers implements ProfileMembers {
  readonly running = new Map<string, { config: MemberConfig; source?: AccessSource; state: MemberState }>();
  readonly log: string[] = [];

  constructor(staticNames: string[] = []) {
    for (const name of staticNames) {
      this.running.set(name, { config: { name, nodeName: `clusterlet-${name}`, storage: { className: `clusterlet-${name}` } } as MemberConfig,
        state: { phase: 'starting' } });
    }
  }

  add(config: MemberConfig, source: AccessSource): void {
    this.log.push(`add ${config.name} ${config.nodeName}`);
    this.running.set(config.name, { config, source, state: { phase: 'starting' } });
  }

  async remove(name: string): Promise<void> {
    this.log.push(`remove ${name}`);
    this.running.delete(name);
  }

  /** Whether a member of that name runs (for the tests). */
  has(name: string): boolean { return this.running.has(name); }
  conflict(config: MemberConfig): string | undefined { return memberConflict(config, [...this.running.values()].map((r) => r.config)); }
  /** How many times the reconciler asked for a member's state: each judgement of a profile asks once. */
  asked = 0;
  state(name: string): MemberState | undefined { this.asked++; return this.running.get(name)?.state; }
}
