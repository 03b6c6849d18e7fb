// Member kubeconfigs kept in host Secrets: a static member's `kubeconfigSecret`, and the Secret a ClusterProfile's
// built-in kubeconfig-secretreader names. Read with the process's host client; each read is a fresh GET, so the
// member's AccessWatcher (src/member/credentials.ts) sees a rotated Secret on its next check.
import type { SecretRef } from '../config.ts';
import type { ClusterClient } from '../kube/client.ts';
import { parseKubeconfig } from '../kube/kubeconfig.ts';
import type { AccessSource } from '../provider/access.ts';

/** What reading a kubeconfig Secret uses of the host API. */
export type SecretReader = { core: Pick<ClusterClient['core'], 'readNamespacedSecret'> };

/** The text under `ref.key` of a host Secret; rejects naming the Secret when it cannot be read or lacks the key. */
export async function readSecretText(host: SecretReader, ref: SecretRef): Promise<string> {
  const where = `Secret ${ref.namespace}/${ref.name}`;
  const secret = await host.core.readNamespacedSecret({ name: ref.name, namespace: ref.namespace }).catch((err: unknown) => {
    throw new Error(`${where}: ${(err as Error).message}`);
  });
  const data = secret.data?.[ref.key];
  if (!data) throw new Error(`${where} has no key "${ref.key}"`);
  return Buffer.from(data, 'base64').toString('utf8');
}

/** The kubeconfig under `ref.key` of a host Secret, as a member's access source. */
export function secretSource(host: SecretReader, ref: SecretRef): AccessSource {
  const name = `Secret ${ref.namespace}/${ref.name} key ${ref.key}`;
  return {
    name,
    // File paths in a kubeconfig from a Secret resolve against the working directory.
    read: async () => parseKubeconfig(await readSecretText(host, ref), { source: name, baseDir: process.cwd() }),
  };
}
