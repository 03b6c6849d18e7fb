// A ClusterProfile (multicluster.x-k8s.io/v1alpha1, SIG-Multicluster's cluster-inventory-api, KEP-4322) as a
// member's access: which of its access providers to use, and the kubeconfig that provider amounts to. The profile
// gives the cluster (server, CA, TLS name, proxy, extensions: client-go's clientcmd v1 Cluster) and never the
// credentials; those come from the consumer's side, as the API's pkg/access builds them:
// - an exec plugin named in the provider file (ExecConfig; the profile's `client.authentication.k8s.io/exec`
//   extension is its ExecCredential's spec.cluster.config, and the KEP-5339 additional-args/-envs extensions are
//   applied as the provider's policies say);
// - the built-in `kubeconfig-secretreader`: clusterlet reads the kubeconfig Secret the extension names (name, key,
//   namespace, context: the API's kubeconfig-secretreader plugin's convention) itself, and takes only its user's
//   token or client certificate, as that plugin does.
// Both become one kubeconfig text parsed with src/kube/kubeconfig.ts, so rotation (AccessWatcher), exec caching
// and TLS handling are the static members' own.
import { load as loadYaml } from 'js-yaml';
import type { AccessProviderConfig } from '../../config.ts';
import { type ClusterAccess, parseKubeconfig } from '../../kube/kubeconfig.ts';
import type { AccessSource } from '../../provider/access.ts';
import { readSecretText, type SecretReader } from '../credentials.ts';
import type { ClusterProfile, ProfileAccessProvider } from './api.ts';

/** client-go's reserved cluster extension: the exec plugin's spec.cluster.config. */
const EXEC_EXTENSION = 'client.authentication.k8s.io/exec';
const ARGS_EXTENSION = 'clusterprofiles.multicluster.x-k8s.io/exec/additional-args';
const ENVS_EXTENSION = 'clusterprofiles.multicluster.x-k8s.io/exec/additional-envs';
/** Variables a profile may never set for a plugin, whatever the policy: they choose what runs, and how. */
const PROTECTED_ENV = /^(PATH|NODE_OPTIONS|LD_[A-Z_]*|DYLD_[A-Z_]*)$/;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Thrown when a profile cannot give access; `reason` is the condition reason shown on the profile. */
export class ProfileAccessError extends Error {
  readonly reason: string;
  constructor(reason: string, message: string) {
    super(message);
    this.name = 'ProfileAccessError';
    this.reason = reason;
  }
}

/**
 * The access provider to use, as pkg/access picks it: the profile's providers by name (accessProviders win over the
 * deprecated credentialProviders of the same name), and the first of the consumer's providers, in its order, that
 * the profile offers.
 */
export function chooseAccessProvider(profile: ClusterProfile, providers: AccessProviderConfig[]):
  { provider: AccessProviderConfig; access: ProfileAccessProvider } {
  const offered = new Map<string, ProfileAccessProvider>();
  for (const p of [...profile.status?.credentialProviders ?? [], ...profile.status?.accessProviders ?? []]) offered.set(p.name, p);
  for (const provider of providers) {
    const access = offered.get(provider.name);
    if (access) return { provider, access };
  }
  const names = [...offered.keys()];
  throw new ProfileAccessError('NoAccessProvider', `${names.length === 0 ? 'the profile lists no access providers'
    : `none of the profile's access providers (${names.join(', ')}) is configured here`} (clusterlet uses: `
    + `${providers.map((p) => p.name).join(', ')})`);
}

/** The extension called `name` in the profile's cluster, or undefined. */
function extension(cluster: Obj, name: string): unknown {
  const list = Array.isArray(cluster.extensions) ? cluster.extensions : [];
  return list.find((e): e is Obj => isObj(e) && e.name === name)?.extension;
}

/**
 * The profile's cluster as a kubeconfig cluster. A CA file path is refused: a host object must not make clusterlet
 * read its own files.
 */
function kubeconfigCluster(access: ProfileAccessProvider): Obj {
  const cluster = access.cluster ?? {};
  if (typeof cluster.server !== 'string' || cluster.server === '') {
    throw new ProfileAccessError('InvalidAccessProvider', `access provider "${access.name}": cluster.server is missing`);
  }
  if (cluster['certificate-authority'] !== undefined) {
    throw new ProfileAccessError('InvalidAccessProvider', `access provider "${access.name}": cluster.certificate-authority `
      + '(a file path) is not used from a ClusterProfile; give certificate-authority-data');
  }
  return cluster;
}

/** An access provider of the provider file that runs an exec plugin. */
export type ExecProvider = AccessProviderConfig & { execConfig: Obj };

const runsExec = (provider: AccessProviderConfig): provider is ExecProvider => provider.execConfig !== undefined;

/** The provider's ExecConfig with the profile's additional args and env applied as its policies say (KEP-5339). */
export function execUser(provider: ExecProvider, cluster: Obj): Obj {
  const exec: Obj = { ...provider.execConfig, interactiveMode: 'Never' };
  const args = extension(cluster, ARGS_EXTENSION);
  if (args !== undefined && provider.profileSourcedCLIArgsPolicy === 'Append') {
    if (!Array.isArray(args) || !args.every((a) => typeof a === 'string')) {
      throw new ProfileAccessError('InvalidAccessProvider', `extension ${ARGS_EXTENSION} must be a list of strings`);
    }
    exec.args = [...(Array.isArray(exec.args) ? exec.args : []), ...args];
  }
  const envs = extension(cluster, ENVS_EXTENSION);
  if (envs !== undefined && provider.profileSourcedEnvVarsPolicy !== 'Ignore') {
    if (!isObj(envs) || !Object.values(envs).every((v) => typeof v === 'string')) {
      throw new ProfileAccessError('InvalidAccessProvider', `extension ${ENVS_EXTENSION} must be a map of strings`);
    }
    const own = new Map((Array.isArray(exec.env) ? exec.env as { name: string; value: string }[] : []).map((e) => [e.name, e.value]));
    const denied = Object.keys(envs).find((name) => PROTECTED_ENV.test(name));
    if (denied !== undefined) {
      throw new ProfileAccessError('InvalidAccessProvider', `extension ${ENVS_EXTENSION} may not set ${denied}: it chooses which program runs`);
    }
    // AppendIfNotExists: what clusterlet's own environment sets exists too, and is kept.
    const profile = new Map(Object.entries(envs as Record<string, string>).filter(([name]) =>
      provider.profileSourcedEnvVarsPolicy !== 'AppendIfNotExists' || process.env[name] === undefined));
    // AppendIfNotExists: the provider file's value wins; Replace: the profile's.
    const merged = provider.profileSourcedEnvVarsPolicy === 'Replace' ? new Map([...own, ...profile]) : new Map([...profile, ...own]);
    exec.env = [...merged].map(([name, value]) => ({ name, value }));
  }
  return { exec };
}

/** Where the built-in reader finds the kubeconfig: the exec extension's name, key, namespace and context. */
interface KubeconfigSecretRef { namespace: string; name: string; key: string; context?: string }

/** `namespace`: the profile's. */
function kubeconfigSecretRef(namespace: string, access: ProfileAccessProvider): KubeconfigSecretRef {
  const ext = extension(access.cluster ?? {}, EXEC_EXTENSION);
  const str = (k: string) => (isObj(ext) && typeof ext[k] === 'string' && ext[k] !== '' ? ext[k] as string : undefined);
  const [name, key] = [str('name'), str('key')];
  if (!name || !key) {
    throw new ProfileAccessError('InvalidAccessProvider', `access provider "${access.name}": the ${EXEC_EXTENSION} `
      + 'extension must give the kubeconfig Secret\'s name and key (and may give namespace and context)');
  }
  // Omitted: the profile's own namespace (the plugin infers the consumer's; clusterlet watches one namespace). Another
  // namespace is refused: clusterlet reads Secrets with rights of its own, and whoever writes a profile's status must
  // not make it send the credentials of a Secret they cannot read to a server they choose.
  const given = str('namespace');
  if (given !== undefined && given !== namespace) {
    throw new ProfileAccessError('InvalidAccessProvider', `access provider "${access.name}": the kubeconfig Secret must be in `
      + `the profile's namespace "${namespace}", not "${given}"`);
  }
  return { namespace, name, key, context: str('context') };
}

/**
 * The user of the Secret's kubeconfig (its context, else current-context): token and inline client certificate only,
 * as the API's kubeconfig-secretreader plugin. Exec, files and the like are refused: whoever can write a Secret must
 * not make clusterlet run a program or read its files.
 */
function secretKubeconfigUser(text: string, ref: KubeconfigSecretRef): Obj {
  const where = `Secret ${ref.namespace}/${ref.name} key ${ref.key}`;
  const bad = (problem: string) => new ProfileAccessError('CredentialsUnavailable', `${where}: ${problem}`);
  let doc: unknown;
  try {
    doc = loadYaml(text);
  } catch {
    throw bad('not a kubeconfig (not valid YAML)');
  }
  const list = (k: string): Obj[] => (isObj(doc) && Array.isArray(doc[k]) ? (doc[k] as unknown[]).filter(isObj) : []);
  const contextName = ref.context ?? (isObj(doc) ? doc['current-context'] : undefined);
  const context = list('contexts').find((c) => c.name === contextName)?.context;
  const userName = isObj(context) ? context.user : undefined;
  const user = list('users').find((u) => u.name === userName)?.user;
  if (!isObj(user)) throw bad(`no user for context "${String(contextName)}"`);
  const out: Obj = {};
  for (const k of ['token', 'client-certificate-data', 'client-key-data']) if (typeof user[k] === 'string' && user[k] !== '') out[k] = user[k];
  if (!out.token && !out['client-certificate-data']) {
    throw bad('its user has neither a token nor client-certificate-data/client-key-data (the only credentials read from a profile\'s Secret)');
  }
  return out;
}

/** The kubeconfig (JSON, which is YAML) of the profile's cluster and a user. */
function profileKubeconfig(cluster: Obj, user: Obj): string {
  return JSON.stringify({
    apiVersion: 'v1', kind: 'Config', 'current-context': 'profile',
    clusters: [{ name: 'profile', cluster }], users: [{ name: 'profile', user }],
    contexts: [{ name: 'profile', context: { cluster: 'profile', user: 'profile' } }],
  });
}

/** What a profile's access is read with: the host client (for the Secret) and the latest profile. */
export interface ProfileAccessContext {
  host: SecretReader;
  /** The profile as the watch last saw it (undefined once gone). */
  profile(): ClusterProfile | undefined;
  providers: AccessProviderConfig[];
}

/** The profile's access, read anew each time (the member's AccessWatcher follows Secret and profile changes). */
export function profileAccessSource(ref: { namespace: string; name: string }, ctx: ProfileAccessContext): AccessSource {
  const name = `ClusterProfile ${ref.namespace}/${ref.name}`;
  return {
    name,
    async read(): Promise<ClusterAccess> {
      const profile = ctx.profile();
      if (!profile) throw new ProfileAccessError('NotFound', `${name} is gone`);
      const { provider, access } = chooseAccessProvider(profile, ctx.providers);
      const cluster = kubeconfigCluster(access);
      let user: Obj;
      if (runsExec(provider)) {
        user = execUser(provider, cluster);
      } else {
        const secretRef = kubeconfigSecretRef(ref.namespace, access);
        const text = await readSecretText(ctx.host, secretRef).catch((err: unknown) => {
          throw new ProfileAccessError('CredentialsUnavailable', (err as Error).message);
        });
        user = secretKubeconfigUser(text, secretRef);
      }
      const source = `${name} (access provider ${provider.name})`;
      try {
        return parseKubeconfig(profileKubeconfig(cluster, user), { source, baseDir: process.cwd() });
      } catch (err) {
        throw new ProfileAccessError('InvalidAccessProvider', (err as Error).message);
      }
    },
  };
}
