// The member namespaces a provider puts delegates in: created when missing, labelled as the host's, and checked to
// hold only the host namespace mapped onto them (two host namespaces never share one).
import { PROXY_NAMESPACE_ANNOTATION } from '../../forge/keys.ts';
import { fromHost, ownerLabels } from '../../forge/owner.ts';
import { KubeError, toKubeError } from '../../kube/errors.ts';
import { PodRejectedError } from '../../provider/errors.ts';
import type { MemberCluster } from '../cluster.ts';

export type NamespacesMember = Pick<MemberCluster, 'client' | 'config' | 'hostName' | 'owner'>;

export class MemberNamespaces {
  #member: NamespacesMember;
  /** Member namespaces known to exist → the host namespace they hold. */
  #known = new Map<string, string>();
  /** Creations of member namespaces under way: a burst of pods into a new namespace shares one (a failure is not kept). */
  #creating = new Map<string, Promise<string>>();

  constructor(member: NamespacesMember) {
    this.#member = member;
  }

  /** The member namespace `ns` exists and holds `hostNamespace` (MemberNamespaceConflict if not). */
  async ensure(ns: string, hostNamespace: string): Promise<void> {
    const holder = this.#known.get(ns) ?? await this.#createOnce(ns, hostNamespace);
    if (holder !== hostNamespace) {
      throw new PodRejectedError('MemberNamespaceConflict',
        `host namespace "${hostNamespace}" maps to member namespace "${ns}" (namespace mapping of member `
        + `${this.#member.config.name}), which already holds host namespace "${holder}": two host namespaces cannot share one; give one of them its own member namespace (namespaceMapping.overrides) and restart clusterlet`,
      { retry: false });
    }
  }

  /** The namespace went away under us (or is going: see namespaceGone): it is created again next time. */
  forget(ns: string): void { this.#known.delete(ns); }

  /** #create, joined by the callers that come while it runs; what it finds is kept in #known. */
  #createOnce(ns: string, hostNamespace: string): Promise<string> {
    let creating = this.#creating.get(ns);
    if (!creating) {
      creating = this.#create(ns, hostNamespace)
        .then((holder) => { this.#known.set(ns, holder); return holder; })
        .finally(() => this.#creating.delete(ns));
      this.#creating.set(ns, creating);
    }
    return creating;
  }

  /** Creates the member namespace for `hostNamespace` when missing; resolves with the host namespace it holds. */
  async #create(ns: string, hostNamespace: string): Promise<string> {
    try {
      await this.#member.client.core.createNamespace({ body: { metadata: {
        name: ns, labels: ownerLabels(this.#member.owner), annotations: { [PROXY_NAMESPACE_ANNOTATION]: hostNamespace },
      } } });
      return hostNamespace;
    } catch (err) {
      const k = toKubeError(err);
      if (k.kind !== 'AlreadyExists') throw k;
    }
    const [existing] = (await this.#member.client.core.listNamespace({ fieldSelector: `metadata.name=${ns}`, limit: 1 })).items;
    // Being deleted (by hand, say): nothing can be created in it, and it is not kept as known. The caller's retry
    // finds it gone and makes it again.
    if (existing?.metadata?.deletionTimestamp) {
      throw new KubeError('Forbidden', 403, 'Forbidden', `member namespace ${ns} is being deleted; it is made again once it is gone`);
    }
    // A namespace of the member's own holds any host namespace mapped onto it; one this host made holds its own.
    return existing && fromHost(existing.metadata, this.#member.hostName)
      ? existing.metadata?.annotations?.[PROXY_NAMESPACE_ANNOTATION] ?? hostNamespace : hostNamespace;
  }
}

/**
 * Whether a write into member namespace `ns` failed because the namespace is gone or being deleted: the API answers
 * NotFound naming the namespace, or Forbidden "unable to create new content in namespace ... because it is being
 * terminated" (and MemberNamespaces.ensure says "is being deleted").
 */
export function namespaceGone(err: unknown, ns: string): boolean {
  const k = toKubeError(err);
  if (k.kind === 'NotFound') return k.message.includes(`namespaces "${ns}" not found`);
  // The member's own words, naming this namespace: a refusal that only says "terminated" (a webhook's) is not this.
  return k.kind === 'Forbidden' && (k.message.includes(`in namespace ${ns} because it is being terminated`)
    || k.message.includes(`namespace ${ns} is being deleted`));
}
