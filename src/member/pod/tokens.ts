// Host tokens of host-mode delegates (forge/apiaccess.ts): one member Secret per delegate, written before the delegate
// is created, refreshed at 80 % of its tokens' lifetime (or after a day) as the kubelet refreshes projected tokens,
// and deleted with the delegate. A failed refresh is retried with backoff and told on the proxy (a Warning event) long
// before the token expires. A restarted process finds its Secrets by label and refreshes them on time without
// the proxies. Tokens are never logged.
import { Subject, type Observable } from 'rxjs';
import type { V1Pod, V1Secret } from '@kubernetes/client-node';
import {
  forgeTokenSecret, refreshTime, serviceAccountOf, tokenNeeds, tokenSecretName, tokenSecretState, type TokenNeed,
} from '../../forge/apiaccess.ts';
import { HOST_TOKEN_ROLE, PROXY_UID_LABEL, ROLE_OBJECT_LABEL } from '../../forge/keys.ts';
import { namespacedName, uidOf } from '../../forge/meta.ts';
import { ownedBy, ownerLabels } from '../../forge/owner.ts';
import type { ClusterClient } from '../../kube/client.ts';
import { ignoreGone, toKubeError } from '../../kube/errors.ts';
import { PodRejectedError } from '../../provider/errors.ts';
import type { PodEvent } from '../../provider/pod.ts';
import type { HostApiAccess } from '../../provider/tokens.ts';
import { backoffDelay } from '../../util/backoff.ts';
import type { Logger } from '../../log.ts';
import type { MemberCluster } from '../cluster.ts';
import { settle } from '../../util/settle.ts';

export type TokensMember = Pick<MemberCluster, 'owner'> & { client: { core: Pick<ClusterClient['core'],
  'createNamespacedSecret' | 'replaceNamespacedSecret' | 'readNamespacedSecret' | 'deleteNamespacedSecret' | 'listSecretForAllNamespaces'> } };

export interface DelegateTokensOptions {
  /** How often due refreshes are looked for (default 5 s, or a quarter of maxAgeMs when shorter). */
  checkPeriodMs?: number;
  /** A token is refreshed at 80 % of its lifetime, and at the latest after this long (default 24 h, the kubelet's). */
  maxAgeMs?: number;
  /** Whether the proxy still has a delegate: a Secret without one goes, after `orphanGraceMs`. */
  alive?: (proxy: { namespace: string; name: string }) => boolean;
  /** How long a Secret may be without a delegate (its delegate may still be on its way); default 2 minutes. */
  orphanGraceMs?: number;
}

/** One delegate's token Secret, as refreshes need it. */
interface Held {
  hostKey: string;
  namespace: string;
  name: string;
  proxy: { namespace: string; name: string; uid: string };
  serviceAccount: string;
  needs: TokenNeed[];
  refreshAt: number;
  writtenAt: number;
  failures: number;
  refreshing: boolean;
}

export class DelegateTokens {
  readonly warnings$: Observable<PodEvent>;
  #member: TokensMember;
  #host: HostApiAccess;
  #log: Logger;
  #opts: Required<Omit<DelegateTokensOptions, 'alive'>>;
  #alive: NonNullable<DelegateTokensOptions['alive']>;
  #held = new Map<string, Held>();
  #warnings = new Subject<PodEvent>();
  #timer: NodeJS.Timeout | undefined;
  #recovered = false;

  constructor(member: TokensMember, host: HostApiAccess, log: Logger, opts: DelegateTokensOptions = {}) {
    this.#member = member;
    this.#host = host;
    this.#log = log;
    const { alive, ...rest } = opts;
    this.#alive = alive ?? (() => true);
    const maxAgeMs = rest.maxAgeMs ?? 24 * 3600_000;
    // Looked at often enough that a short maximum age (seconds, in tests) is kept too.
    this.#opts = { checkPeriodMs: Math.min(5_000, Math.max(100, maxAgeMs / 4)), orphanGraceMs: 120_000, ...rest, maxAgeMs };
    this.warnings$ = this.#warnings.asObservable();
  }

  start(): void {
    this.#timer ??= setInterval(() => settle(this.#tick(), this.#log, 'token check failed'), this.#opts.checkPeriodMs);
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** How many token Secrets this process keeps fresh. */
  get size(): number { return this.#held.size; }

  /**
   * Writes the proxy's token Secret in member namespace `namespace`, with fresh tokens for each of its projections;
   * nothing for a proxy without one. Throws PodRejectedError when the host refuses a token or a Secret of that name
   * is not ours.
   */
  async write(proxy: V1Pod, namespace: string): Promise<void> {
    const needs = tokenNeeds(proxy.spec ?? { containers: [] });
    if (needs.length === 0) return;
    const { namespace: hostNamespace, name } = namespacedName(proxy);
    const held: Held = {
      hostKey: `${hostNamespace}/${name}`, namespace, name: tokenSecretName(name),
      proxy: { namespace: hostNamespace, name, uid: uidOf(proxy) }, serviceAccount: serviceAccountOf(proxy.spec),
      needs, refreshAt: 0, writtenAt: 0, failures: 0, refreshing: false,
    };
    const body = await this.#forge(held);
    try {
      await this.#member.client.core.createNamespacedSecret({ namespace, body });
    } catch (err) {
      if (toKubeError(err).kind !== 'AlreadyExists') throw err;
      await this.#replaceOurs(held, body);
    }
    held.writtenAt = Date.now();
    this.#held.set(held.hostKey, held);
  }

  /** Deletes the token Secret of a delegate deleted (none for a proxy without one). */
  async remove(hostKey: string): Promise<void> {
    const held = this.#held.get(hostKey);
    if (!held) return;
    this.#held.delete(hostKey);
    await this.#delete(held);
  }

  /** The Secret body with fresh tokens; refreshAt set from the soonest refresh among them. */
  async #forge(held: Held): Promise<V1Secret> {
    const tokens: Record<string, string> = {};
    let refreshAt = Infinity;
    for (const need of held.needs) {
      let issued;
      try {
        issued = await this.#host.request({ namespace: held.proxy.namespace, serviceAccount: held.serviceAccount,
          pod: { name: held.proxy.name, uid: held.proxy.uid }, audience: need.audience, expirationSeconds: need.expirationSeconds });
      } catch (err) {
        throw tokenRefusal(err, held);
      }
      tokens[need.key] = issued.token;
      refreshAt = Math.min(refreshAt, refreshTime(issued.issuedAt, issued.expiresAt, this.#opts.maxAgeMs).getTime());
    }
    held.refreshAt = refreshAt;
    return forgeTokenSecret({
      name: held.name, namespace: held.namespace, ownerLabels: ownerLabels(this.#member.owner), proxy: held.proxy,
      serviceAccount: held.serviceAccount, needs: held.needs, tokens, ca: this.#host.ca, refreshAt: new Date(refreshAt),
    });
  }

  /** Replaces the Secret of that name if it is ours for this proxy (an earlier write's), else refuses the pod. */
  async #replaceOurs(held: Held, body: V1Secret): Promise<void> {
    const existing = await this.#member.client.core.readNamespacedSecret({ namespace: held.namespace, name: held.name });
    const role = existing.metadata?.labels?.[ROLE_OBJECT_LABEL];
    if (!ownedBy(existing.metadata, this.#member.owner) || role !== HOST_TOKEN_ROLE) {
      throw new PodRejectedError('MemberObjectConflict', `member namespace ${held.namespace} already has a Secret `
        + `"${held.name}" that clusterlet did not create for this pod's host token; it is left untouched: delete or rename it, `
        + 'or set clusterlet.io/api-access: member on the pod');
    }
    await this.#member.client.core.replaceNamespacedSecret({ namespace: held.namespace, name: held.name, body });
  }

  async #delete(held: Held): Promise<void> {
    try {
      await this.#member.client.core.deleteNamespacedSecret({ namespace: held.namespace, name: held.name });
    } catch (err) {
      ignoreGone(err);
    }
  }

  /** Refreshes what is due, and removes Secrets whose delegate is gone; learns the Secrets of an earlier process first. */
  async #tick(): Promise<void> {
    if (!this.#recovered) {
      try {
        await this.#recover();
        this.#recovered = true;
      } catch (err) {
        this.#log.warn({ err: toKubeError(err).message }, 'could not list the member\'s host-token Secrets; trying again');
        return;
      }
    }
    const now = Date.now();
    for (const held of this.#held.values()) {
      if (held.refreshing) continue;
      if (!this.#alive(held.proxy)) {
        if (now - held.writtenAt < this.#opts.orphanGraceMs) continue;
        this.#held.delete(held.hostKey);
        void this.#delete(held).catch((err: unknown) => {
          this.#log.warn({ err: toKubeError(err).message, secret: `${held.namespace}/${held.name}` }, 'could not delete a host-token Secret');
        });
        continue;
      }
      if (held.refreshAt <= now) settle(this.#refresh(held), this.#log, 'token refresh failed');
    }
  }

  async #refresh(held: Held): Promise<void> {
    held.refreshing = true;
    try {
      const body = await this.#forge(held);
      try {
        await this.#member.client.core.replaceNamespacedSecret({ namespace: held.namespace, name: held.name, body });
      } catch (err) {
        // Deleted under us (by a member admin): written again, as the delegate still mounts it.
        if (toKubeError(err).kind !== 'NotFound') throw err;
        await this.#member.client.core.createNamespacedSecret({ namespace: held.namespace, body });
      }
      if (held.failures > 0) this.#log.info({ pod: held.hostKey }, 'host token refreshed after failures');
      held.failures = 0;
    } catch (err) {
      held.failures++;
      held.refreshAt = Date.now() + backoffDelay(held.failures, 1_000, 60_000);
      const message = `could not refresh the host ServiceAccount token of this pod's delegate (attempt ${held.failures}): `
        + `${(err as Error).message}; retrying`;
      this.#log.warn({ pod: held.hostKey, attempt: held.failures, err: (err as Error).message }, 'host token refresh failed');
      const { namespace, name } = held.proxy;
      this.#warnings.next({ namespace, name, id: `host-token-refresh/${held.proxy.uid}`, event: {
        type: 'Warning', reason: 'HostTokenRefreshFailed', message, count: held.failures, lastTimestamp: new Date(),
        source: { component: 'clusterlet' },
      } });
    } finally {
      held.refreshing = false;
    }
  }

  /** The token Secrets an earlier process wrote for this node, kept fresh from now on. */
  async #recover(): Promise<void> {
    const labelSelector = Object.entries({ ...ownerLabels(this.#member.owner), [ROLE_OBJECT_LABEL]: HOST_TOKEN_ROLE })
      .map(([k, v]) => `${k}=${v}`).join(',');
    let cont: string | undefined;
    do {
      const page = await this.#member.client.core.listSecretForAllNamespaces({ labelSelector, limit: 500, _continue: cont });
      for (const s of page.items) {
        const state = tokenSecretState(s);
        const { namespace, name } = s.metadata ?? {};
        if (!state || !namespace || !name) continue;
        const hostKey = `${state.proxy.namespace}/${state.proxy.name}`;
        if (this.#held.has(hostKey) || s.metadata?.labels?.[PROXY_UID_LABEL] !== state.proxy.uid) continue;
        this.#held.set(hostKey, { hostKey, namespace, name, proxy: state.proxy, serviceAccount: state.serviceAccount,
          needs: state.needs, refreshAt: state.refreshAt.getTime(), writtenAt: Date.now(), failures: 0, refreshing: false });
      }
      cont = page.metadata?._continue || undefined;
    } while (cont);
  }
}

/** The host's refusal of a token, as the proxy shows it (the pod is tried again: a ServiceAccount may yet come). */
function tokenRefusal(err: unknown, held: Held): PodRejectedError {
  const k = toKubeError(err);
  const what = `a token of host ServiceAccount ${held.proxy.namespace}/${held.serviceAccount}`;
  // The host's admission (its TokenRequest policy: manifests/host/tokenrequest-policy.yaml) says why itself.
  if (k.kind === 'Forbidden' && /denied request|admission/i.test(k.message)) {
    return new PodRejectedError('HostTokenForbidden', `the host's admission refused ${what}: ${k.message}; `
      + 'set clusterlet.io/api-access: member (or none) on the pod', { cause: err });
  }
  if (k.kind === 'Forbidden') {
    return new PodRejectedError('HostTokenForbidden', `clusterlet may not request ${what}: grant it "create" on `
      + 'serviceaccounts/token in the host (manifests/host/rbac.yaml), or set clusterlet.io/api-access: member on the pod',
    { cause: err });
  }
  if (k.kind === 'NotFound') {
    return new PodRejectedError('HostTokenUnavailable', `the host refused ${what}: ${k.message}; create the ServiceAccount, `
      + 'or set clusterlet.io/api-access: member on the pod (retried)', { cause: err });
  }
  return new PodRejectedError('HostTokenUnavailable', `could not get ${what}: ${k.message} (retried)`, { cause: err });
}
