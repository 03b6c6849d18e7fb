// Host tokens of host-mode delegates (forge/apiaccess.ts): one member Secret per delegate, written before the delegate
// is created and deleted when the creation fails (no host token stays where no delegate of ours runs), refreshed at
// 80 % of its tokens' lifetime (or after a day) as the kubelet refreshes projected tokens, and deleted with the
// delegate. A failed refresh is retried with backoff and told on the proxy (a Warning event) long before the token
// expires. A restarted process finds its Secrets by label and keeps fresh those whose proxy the host's caches have:
// what the tokens are (ServiceAccount, audiences, lifetimes) is read from the proxy, never from the Secret, which the
// member may edit. Tokens are never logged.
import { Subject, type Observable } from 'rxjs';
import type { V1Pod, V1Secret } from '@kubernetes/client-node';
import {
  forgeTokenSecret, refreshTime, serviceAccountOf, tokenNeeds, tokenSecretName, tokenSecretProxy, tokenSecretState, type TokenNeed,
} from '../../forge/apiaccess.ts';
import { HOST_TOKEN_ROLE, PROXY_UID_LABEL, ROLE_OBJECT_LABEL } from '../../forge/keys.ts';
import { namespacedName, uidOf } from '../../forge/meta.ts';
import { hostRefOf, ownedBy, ownerLabels } from '../../forge/owner.ts';
import type { ClusterClient } from '../../kube/client.ts';
import { ignoreGone, toKubeError } from '../../kube/errors.ts';
import { PodRejectedError } from '../../provider/errors.ts';
import type { PodEvent } from '../../provider/pod.ts';
import type { HostApiAccess, HostProxies } from '../../provider/tokens.ts';
import { backoffDelay } from '../../util/backoff.ts';
import type { Logger } from '../../log.ts';
import type { MemberCluster } from '../cluster.ts';
import { settle } from '../../util/settle.ts';

export type TokensMember = Pick<MemberCluster, 'owner'> & { client: { core: Pick<ClusterClient['core'],
  'createNamespacedSecret' | 'replaceNamespacedSecret' | 'readNamespacedSecret' | 'deleteNamespacedSecret' | 'listSecretForAllNamespaces'
  | 'readNamespacedPod'> } };

export interface DelegateTokensOptions {
  /** How often due refreshes are looked for (default 5 s, or a quarter of maxAgeMs when shorter). */
  checkPeriodMs?: number;
  /** A token is refreshed at 80 % of its lifetime, and at the latest after this long (default 24 h, the kubelet's). */
  maxAgeMs?: number;
  /** Whether the proxy still has a delegate: a Secret without one goes, after `orphanGraceMs`. */
  alive?: (proxy: { namespace: string; name: string }) => boolean;
  /**
   * Whether the member's pod cache has synced: until it has, `alive` says no for every proxy, and no Secret is judged
   * an orphan. The grace runs from then at the earliest.
   */
  synced?: () => boolean;
  /** How long a Secret may be without a delegate (its delegate may still be on its way); default 2 minutes. */
  orphanGraceMs?: number;
  /** The member namespace a host namespace's delegates go into (default: the same name). */
  memberNamespace?: (hostNamespace: string) => string;
  /**
   * Whether the proxy's delegate gets host tokens (its mode, the member's, a host endpoint known): a Secret found at
   * start for a proxy whose delegate does not is never kept fresh, whatever it says (default: every proxy's does).
   */
  hostMode?: (proxy: V1Pod) => boolean;
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
  /** A creation that wrote it is under way: not an orphan, whatever the member shows. */
  creating: boolean;
  /** The Secret's UID as this process last wrote it (deletes are UID-checked); undefined when none is in the member. */
  uid: string | undefined;
  /**
   * The tokens last minted, kept while no delegate is known to use them (a creation under way or failed): a retry
   * writes them again rather than asking the host for new ones, until they are due.
   */
  tokens: Record<string, string> | undefined;
}

/** A Secret of ours found in the member whose proxy the host's caches do not have (yet): never refreshed. */
interface Found {
  namespace: string;
  name: string;
  uid: string | undefined;
  /** The proxy it names (a hint: written in the member). */
  proxy: { namespace: string; name: string; uid: string };
  /** What it said when listed (its refresh time and tokens, compared with the proxy's), if it parses. */
  state: ReturnType<typeof tokenSecretState>;
}

/** How a creation that wrote a token Secret ended: its delegate made, refused (nothing made), or unknown. */
export type CreationOutcome = 'created' | 'refused' | 'unknown';

export class DelegateTokens {
  readonly warnings$: Observable<PodEvent>;
  #member: TokensMember;
  #host: HostApiAccess;
  #proxies: HostProxies | undefined;
  #log: Logger;
  #opts: Required<Omit<DelegateTokensOptions, 'alive' | 'synced' | 'memberNamespace' | 'hostMode'>>;
  #alive: NonNullable<DelegateTokensOptions['alive']>;
  #synced: NonNullable<DelegateTokensOptions['synced']>;
  #memberNamespace: NonNullable<DelegateTokensOptions['memberNamespace']>;
  #hostMode: NonNullable<DelegateTokensOptions['hostMode']>;
  #held = new Map<string, Held>();
  /** Secrets of an earlier process not matched to a proxy yet, by member key. */
  #found = new Map<string, Found>();
  #warnings = new Subject<PodEvent>();
  #timer: NodeJS.Timeout | undefined;
  #recovered = false;
  /** When the member's pod cache was first seen synced (the orphan grace runs from then at the earliest). */
  #syncedAt: number | undefined;

  constructor(member: TokensMember, host: HostApiAccess, log: Logger, opts: DelegateTokensOptions = {}, proxies?: HostProxies) {
    this.#member = member;
    this.#host = host;
    this.#proxies = proxies;
    this.#log = log;
    const { alive, synced, memberNamespace, hostMode, ...rest } = opts;
    this.#hostMode = hostMode ?? (() => true);
    this.#alive = alive ?? (() => true);
    this.#synced = synced ?? (() => true);
    this.#memberNamespace = memberNamespace ?? ((ns) => ns);
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
  get size(): number { let n = 0; for (const h of this.#held.values()) if (h.uid !== undefined) n++; return n; }

  /**
   * Writes the proxy's token Secret in member namespace `namespace`, with tokens for each of its projections (those a
   * failed creation of the same proxy minted, while they are not due; else fresh ones); nothing for a proxy without
   * one. Throws PodRejectedError when the host refuses a token or a Secret of that name is not ours for this proxy.
   * A write is followed by settle() once the creation has ended.
   */
  async write(proxy: V1Pod, namespace: string): Promise<void> {
    const needs = tokenNeeds(proxy.spec ?? { containers: [] });
    if (needs.length === 0) return;
    const { namespace: hostNamespace, name } = namespacedName(proxy);
    const hostKey = `${hostNamespace}/${name}`;
    const serviceAccount = serviceAccountOf(proxy.spec);
    const prior = this.#held.get(hostKey);
    const reuse = prior?.tokens && prior.proxy.uid === uidOf(proxy) && prior.namespace === namespace
      && prior.serviceAccount === serviceAccount && sameNeeds(prior.needs, needs) && prior.refreshAt > Date.now() ? prior : undefined;
    const held: Held = reuse ?? {
      hostKey, namespace, name: tokenSecretName(name),
      proxy: { namespace: hostNamespace, name, uid: uidOf(proxy) }, serviceAccount,
      needs, refreshAt: 0, writtenAt: 0, failures: 0, refreshing: false, creating: true, uid: prior?.uid, tokens: undefined,
    };
    held.creating = true;
    this.#held.set(hostKey, held);
    try {
      const body = reuse?.tokens ? this.#body(held, reuse.tokens) : await this.#forge(held, true);
      let written: V1Secret;
      try {
        written = await this.#member.client.core.createNamespacedSecret({ namespace, body });
      } catch (err) {
        if (toKubeError(err).kind !== 'AlreadyExists') throw err;
        written = await this.#replaceOurs(held, body);
      }
      held.uid = written.metadata?.uid;
      held.writtenAt = Date.now();
    } catch (err) {
      held.creating = false;
      // Nothing of ours was written: no entry stays but one that holds a Secret of an earlier write.
      if (held.uid === undefined && this.#held.get(hostKey) === held) this.#held.delete(hostKey);
      throw err;
    }
  }

  /**
   * The creation after write() ended. Created: the delegate uses the Secret. Refused (nothing was created): the
   * Secret is deleted, as no delegate of ours uses it; its tokens are kept for a retry. Unknown (no answer): the Secret
   * stays for the delegate that may have been made, and goes as an orphan if none shows.
   */
  async settle(hostKey: string, outcome: CreationOutcome): Promise<void> {
    const held = this.#held.get(hostKey);
    if (!held?.creating) return;
    held.creating = false;
    if (outcome === 'created') {
      held.tokens = undefined;
      return;
    }
    if (outcome === 'unknown' || held.uid === undefined) return;
    const uid = held.uid;
    held.uid = undefined;
    await this.#delete(held, uid);
  }

  /** Deletes the token Secret of a delegate deleted (none for a proxy without one). */
  async remove(hostKey: string): Promise<void> {
    const held = this.#held.get(hostKey);
    if (!held) return;
    this.#held.delete(hostKey);
    if (held.uid !== undefined) await this.#delete(held, held.uid);
  }

  /** Fresh tokens for `held`, and refreshAt set from the soonest refresh among them; kept on it when `keep`. */
  async #forge(held: Held, keep = false): Promise<V1Secret> {
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
    if (keep) held.tokens = tokens;
    return this.#body(held, tokens);
  }

  #body(held: Held, tokens: Record<string, string>): V1Secret {
    return forgeTokenSecret({
      name: held.name, namespace: held.namespace, ownerLabels: ownerLabels(this.#member.owner), proxy: held.proxy,
      serviceAccount: held.serviceAccount, needs: held.needs, tokens, ca: this.#host.ca, refreshAt: new Date(held.refreshAt),
    });
  }

  /**
   * Replaces the Secret of that name if it is ours and this proxy's, or an earlier proxy's whose delegate is gone;
   * else refuses the pod, leaving it as it is.
   */
  async #replaceOurs(held: Held, body: V1Secret): Promise<V1Secret> {
    const { namespace, name } = held;
    const existing = await this.#member.client.core.readNamespacedSecret({ namespace, name });
    const role = existing.metadata?.labels?.[ROLE_OBJECT_LABEL];
    if (!ownedBy(existing.metadata, this.#member.owner) || role !== HOST_TOKEN_ROLE) {
      throw new PodRejectedError('MemberObjectConflict', `member namespace ${namespace} already has a Secret `
        + `"${name}" that clusterlet did not create for this pod's host token; it is left untouched: delete or rename it, `
        + 'or set clusterlet.io/api-access: member on the pod');
    }
    const other = existing.metadata?.labels?.[PROXY_UID_LABEL];
    if (other !== held.proxy.uid) {
      // Another proxy's: replaced only if no delegate of ours runs for it (the pod of that name, which mounts it).
      const pod = await this.#member.client.core.readNamespacedPod({ namespace, name: held.proxy.name }).catch((err: unknown) => {
        if (toKubeError(err).kind === 'NotFound') return undefined;
        throw err;
      });
      const ref = pod && hostRefOf(pod, this.#member.owner);
      if (ref && ref.uid !== held.proxy.uid) {
        throw new PodRejectedError('DelegateConflict', `member namespace ${namespace} already has a delegate `
          + `${held.proxy.name} of proxy ${ref.namespace}/${ref.name}, and its host-token Secret "${name}"; both are left untouched: `
          + 'two host namespaces map to one member namespace (namespaceMapping)');
      }
    }
    return this.#member.client.core.replaceNamespacedSecret({ namespace, name,
      body: { ...body, metadata: { ...body.metadata, resourceVersion: existing.metadata?.resourceVersion } } });
  }

  async #delete(at: { namespace: string; name: string }, uid: string | undefined): Promise<void> {
    try {
      await this.#member.client.core.deleteNamespacedSecret({ namespace: at.namespace, name: at.name,
        ...uid ? { body: { preconditions: { uid } } } : {} });
    } catch (err) {
      // Gone already, or another Secret of that name now (the UID precondition): nothing of ours to delete.
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
    if (this.#syncedAt === undefined && this.#synced()) this.#syncedAt = now;
    // Orphans are judged on the member's whole pod list only, and not before the grace has run since it came.
    const judge = (since: number): boolean => this.#syncedAt !== undefined && now - Math.max(since, this.#syncedAt) >= this.#opts.orphanGraceMs;
    this.#match(now, judge);
    for (const held of this.#held.values()) {
      if (held.refreshing || held.creating) continue;
      if (held.uid === undefined) {
        // Tokens of a refused creation, kept for its retry: forgotten once due (a retry then mints new ones).
        if (held.refreshAt <= now) this.#held.delete(held.hostKey);
        continue;
      }
      if (!this.#alive(held.proxy)) {
        if (!judge(held.writtenAt)) continue;
        this.#held.delete(held.hostKey);
        this.#drop(held, held.uid, 'its delegate is gone');
        continue;
      }
      if (held.refreshAt <= now) settle(this.#refresh(held), this.#log, 'token refresh failed');
    }
  }

  /** Deletes a Secret of ours no delegate uses, with a log line; a failure is logged (the next tick does not retry it). */
  #drop(at: { namespace: string; name: string }, uid: string | undefined, why: string): void {
    const secret = `${at.namespace}/${at.name}`;
    this.#log.info({ secret, why }, 'deleting a host-token Secret');
    this.#delete(at, uid).catch((err: unknown) => {
      this.#log.warn({ err: toKubeError(err).message, secret }, 'could not delete a host-token Secret');
    });
  }

  async #refresh(held: Held): Promise<void> {
    held.refreshing = true;
    try {
      const body = await this.#forge(held);
      let written: V1Secret;
      try {
        written = await this.#member.client.core.replaceNamespacedSecret({ namespace: held.namespace, name: held.name, body });
      } catch (err) {
        // Deleted under us (by a member admin): written again, as the delegate still mounts it.
        if (toKubeError(err).kind !== 'NotFound') throw err;
        written = await this.#member.client.core.createNamespacedSecret({ namespace: held.namespace, body });
      }
      held.uid = written.metadata?.uid ?? held.uid;
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

  /**
   * The token Secrets an earlier process wrote for this node: each is kept fresh once matched to its proxy (#match).
   * One that does not even name its proxy is deleted.
   */
  async #recover(): Promise<void> {
    const labelSelector = Object.entries({ ...ownerLabels(this.#member.owner), [ROLE_OBJECT_LABEL]: HOST_TOKEN_ROLE })
      .map(([k, v]) => `${k}=${v}`).join(',');
    let cont: string | undefined;
    do {
      const page = await this.#member.client.core.listSecretForAllNamespaces({ labelSelector, limit: 500, _continue: cont });
      for (const s of page.items) {
        const { namespace, name, uid } = s.metadata ?? {};
        if (!namespace || !name) continue;
        const proxy = tokenSecretProxy(s);
        if (!proxy) {
          this.#drop({ namespace, name }, uid, 'it does not say which proxy it is for');
          continue;
        }
        const hostKey = `${proxy.namespace}/${proxy.name}`;
        const held = this.#held.get(hostKey);
        if (held?.namespace === namespace && held.name === name) continue;
        this.#found.set(`${namespace}/${name}`, { namespace, name, uid, proxy, state: tokenSecretState(s) });
      }
      cont = page.metadata?._continue || undefined;
    } while (cont);
  }

  /**
   * Found Secrets whose proxy the host's caches have (its UID the Secret's, the Secret where its delegate's would be)
   * are kept fresh from now on, with what the proxy says: its ServiceAccount, audiences and lifetimes. A Secret that
   * says otherwise, or says it is due later than the proxy's tokens allow, is rewritten at once. A found Secret that
   * matches no proxy gets no token, and goes as an orphan once no delegate runs for the proxy it names.
   */
  #match(now: number, judge: (since: number) => boolean): void {
    for (const [key, f] of this.#found) {
      const hostKey = `${f.proxy.namespace}/${f.proxy.name}`;
      const taken = this.#held.get(hostKey);
      if (taken?.namespace === f.namespace && taken.name === f.name) {
        this.#found.delete(key);
        continue;
      }
      const proxy = this.#proxies?.get(f.proxy.namespace, f.proxy.name);
      const needs = proxy ? tokenNeeds(proxy.spec ?? { containers: [] }) : [];
      const sameProxy = proxy !== undefined && uidOf(proxy) === f.proxy.uid
        && this.#memberNamespace(f.proxy.namespace) === f.namespace && tokenSecretName(f.proxy.name) === f.name;
      // A Secret for a proxy whose delegate gets no host token (mode member or none, of the pod or the member) is not
      // one this process wrote for it: it gets no token, and goes.
      if (sameProxy && !this.#hostMode(proxy)) {
        this.#found.delete(key);
        this.#drop(f, f.uid, 'its proxy\'s delegate gets no host token');
        continue;
      }
      if (sameProxy && needs.length > 0 && !proxy.metadata?.deletionTimestamp) {
        const serviceAccount = serviceAccountOf(proxy.spec);
        const state = f.state;
        const soonest = Math.min(this.#opts.maxAgeMs, ...needs.map((n) => n.expirationSeconds * 800));
        const same = state && state.serviceAccount === serviceAccount && sameNeeds(state.needs, needs);
        const refreshAt = same ? Math.min(state.refreshAt.getTime(), now + soonest) : now;
        this.#held.set(hostKey, { hostKey, namespace: f.namespace, name: f.name, proxy: f.proxy, serviceAccount, needs,
          refreshAt, writtenAt: now, failures: 0, refreshing: false, creating: false, uid: f.uid, tokens: undefined });
        this.#found.delete(key);
        continue;
      }
      if (!this.#alive(f.proxy) && judge(0)) {
        this.#found.delete(key);
        this.#drop(f, f.uid, 'no delegate of ours runs for the proxy it names');
      }
    }
  }
}

/** Whether two lists of token needs ask for the same tokens. */
function sameNeeds(a: TokenNeed[], b: TokenNeed[]): boolean {
  return a.length === b.length && a.every((n, i) => n.key === b[i].key && n.audience === b[i].audience
    && n.expirationSeconds === b[i].expirationSeconds);
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
