// Host → member reflection of the ConfigMaps, Secrets and ServiceAccounts offloaded pods use: a policy over one
// Reflector per kind. Keys are in host coordinates: `<Kind>/<hostNamespace>/<name>`. A copy exists while a delegate
// of this node refers to it (counted from the delegates' own specs, so the count survives restarts) or a delegate
// that refers to it is being created; it is removed once none does. The host objects come from the host's caches
// (HostCaches, provider/reflection.ts), which keep only what some member's mirror wants.
import { Subject, type Observable, type Subscription } from 'rxjs';
import { LRUCache } from 'lru-cache';
import { upTo } from '../../util/lru.ts';
import type { V1ConfigMap, V1Pod, V1Secret, V1ServiceAccount } from '@kubernetes/client-node';
import type { MemberCluster } from '../cluster.ts';
import type { MemberConfig } from '../../config.ts';
import { memberNamespace } from '../../forge/namespace.ts';
import {
  forgeMirroredConfigMap, forgeMirroredSecret, forgeServiceAccount, isHostCredential, mirrorMatches,
  podReferences, type MirrorContext, type ObjectRef, type RefKind,
} from '../../forge/refs.ts';
import { NODE_LABEL, ORIGIN_LABEL, PROXY_NAMESPACE_ANNOTATION, ROLE_OBJECT_LABEL } from '../../forge/keys.ts';
import { delegateOf, fromHost, ownedBy } from '../../forge/owner.ts';
import { nameOf, namespacedName, objectId } from '../../forge/meta.ts';
import { RefIndex } from '../../util/refindex.ts';
import { objectKey } from '../../kube/informer.ts';
import { target, type ObjectOf, type Target } from '../../kube/kinds.ts';
import type { HostCaches, HostObjectCache } from '../../provider/reflection.ts';
import { Reflector, type UpdateRule } from './reflector.ts';
import type { Logger } from '../../log.ts';

export interface Notice { type: 'Normal' | 'Warning'; reason: string; message: string }

/**
 * The event reason for a referenced ConfigMap or Secret that does not exist on the host: virtual-kubelet's
 * (internal/podutils/env.go: ReasonMandatoryConfigMapNotFound, ReasonMandatorySecretNotFound,
 * ReasonOptionalConfigMapNotFound, ReasonOptionalSecretNotFound), so that tools and alerts written for it work here.
 * As there, both kinds of event are Warnings and their messages say `<kind> "<name>" not found`. A mandatory one is
 * also the reason of the proxy's clusterlet.io/Offloaded=False condition (provider.ts `rejection`).
 */
export function notFoundReason(ref: Pick<ObjectRef, 'kind' | 'optional'>): string {
  return `${ref.optional ? 'Optional' : 'Mandatory'}${ref.kind}NotFound`;
}

/** What the mirror uses of its member: every pod there, the owner of what it writes, the name and namespace mapping. */
export type MirrorMember = Pick<MemberCluster, 'pods' | 'owner'> & { config: Pick<MemberConfig, 'name' | 'namespaceMapping'> };

/** Where copies go, per kind. */
export type MirrorTargets = { [K in RefKind]: Target<ObjectOf<K>> };

/**
 * The member objects the mirror judges: this host's, but those with a role of their own (the host-token Secrets of
 * member/pod/tokens.ts, which no host object stands behind).
 */
export function mirrorSelector(hostName: string): string {
  return `${ORIGIN_LABEL}=${hostName},!${ROLE_OBJECT_LABEL}`;
}

/** The member's copies of every kind, as mirrorSelector selects them. */
export function mirrorTargets(member: MemberCluster, log: Logger): MirrorTargets {
  const origin = mirrorSelector(member.hostName);
  const c = member.client;
  return { ConfigMap: target(c, 'ConfigMap', origin, log), Secret: target(c, 'Secret', origin, log),
    ServiceAccount: target(c, 'ServiceAccount', origin, log) };
}

export interface MirrorOptions {
  /** How long a delegate just created holds its copies if it is never seen. */
  createHoldMs?: number;
  /**
   * How long a pod that waits for a missing mandatory object is remembered, to be woken when it appears. A pod still
   * rejected is retried (and waits again) well within this; one deleted meanwhile is forgotten after it.
   */
  waitMs?: number;
}

/** What `prepare` found: a pod with missing mandatory objects or conflicts cannot start. */
export interface Prepared {
  /** Optional objects missing: for the proxy's events. */
  notices: Notice[];
  /** Mandatory objects missing on the host; the pod is woken (wake$) when one appears. */
  missing: ObjectRef[];
  /** Objects that cannot be copied because a member object of that name is not clusterlet's, one message each. */
  conflicts: string[];
  /** Call once the delegate is created (true), or not (false): the copies stay needed until the delegate is seen. */
  release(created?: boolean): void;
}

type Mirrored = V1ConfigMap | V1Secret | V1ServiceAccount;
type Copied = 'ConfigMap' | 'Secret';

const KINDS: RefKind[] = ['ConfigMap', 'Secret', 'ServiceAccount'];

export function mirrorKey(kind: RefKind, hostNamespace: string, name: string): string {
  return `${kind}/${hostNamespace}/${name}`;
}

function parseKey(key: string): { kind: RefKind; hostNamespace: string; name: string } {
  const [kind, hostNamespace, name] = key.split('/');
  return { kind: kind as RefKind, hostNamespace, name };
}

/** The holder of the copies a proxy's delegate needs while it is being created (`:` is in no namespace's name). */
const creating = (proxyUID: string): string => `creating:${proxyUID}`;

const isCredential = (kind: RefKind, host: V1ConfigMap | V1Secret): boolean => kind === 'Secret' && isHostCredential(host as V1Secret);

export class ObjectMirror {
  /** Host pod keys to sync again: a mandatory object they waited for appeared. */
  readonly wake$: Observable<string>;
  #member: MirrorMember;
  #hosts: HostCaches;
  #log: Logger;
  #createHoldMs: number;
  #reflectors: { [K in RefKind]: Reflector<ObjectOf<K>> };
  /**
   * Who needs each copy: this node's delegates (by member key) and delegates being created (`creating(uid)`). The
   * host caches keep what is needed.
   */
  #uses = new RefIndex();
  /**
   * Copies in member coordinates (`<Kind>/<memberNamespace>/<name>`) → the delegates of this host, of any of its
   * virtual nodes, that refer to them (tagged with their host namespace): a copy another node's delegate uses is
   * never removed from under it.
   */
  #hostRefs = new RefIndex<string>();
  /** Proxies (UID) whose delegate is being created → once it is, the timer that ends the hold if it is never seen. */
  #creating = new Map<string, NodeJS.Timeout | undefined>();
  /** Missing mandatory objects (mirror keys) → host pods to wake when they appear; the host caches watch for them. */
  #waiting: LRUCache<string, Set<string>>;
  #wake = new Subject<string>();
  /** ServiceAccounts known to exist (the member's own "default" among them), re-checked after a minute. */
  #accounts = new LRUCache<string, true>({ ...upTo(10_000), ttl: 60_000 });
  #subs: Subscription[] = [];

  constructor(member: MirrorMember, targets: MirrorTargets, hosts: HostCaches, log: Logger, opts: MirrorOptions = {}) {
    this.#member = member;
    this.#hosts = hosts;
    this.#log = log;
    this.#createHoldMs = opts.createHoldMs ?? 30_000;
    this.wake$ = this.#wake.asObservable();
    const sync = (key: string): Promise<void> => this.#sync(key);
    // Stale copies (their delegates went while we were away) are removed once every view is complete.
    const reads = [member.pods, ...KINDS.map((k) => targets[k].store)];
    const reflector = <K extends RefKind>(kind: K, update?: UpdateRule<ObjectOf<K>>): Reflector<ObjectOf<K>> => new Reflector({
      name: `mirror-${kind.toLowerCase()}-${member.config.name}`, workers: 4, target: targets[kind], update, sync, log, reads,
      // A copy changed or removed by someone is set back.
      keyOf: (o) => {
        const hostNs = o.metadata?.annotations?.[PROXY_NAMESPACE_ANNOTATION];
        return hostNs ? mirrorKey(kind, hostNs, nameOf(o)) : undefined;
      },
      metrics: { member: member.config.name, kind, direction: 'to-member', counts: (o) => this.#mine(o) },
    });
    // A copy of this host's (whichever of its nodes made it) follows the host object; any other is not touched.
    const copies: UpdateRule<V1ConfigMap | V1Secret> = { ours: (o) => fromHost(o.metadata, member.owner.hostName), matches: mirrorMatches };
    // Any ServiceAccount of the pod's name will do (tokens are the member's).
    this.#reflectors = { ConfigMap: reflector('ConfigMap', copies), Secret: reflector('Secret', copies), ServiceAccount: reflector('ServiceAccount') };
    this.#waiting = new LRUCache<string, Set<string>>({
      ...upTo(10_000), ttl: opts.waitMs ?? 600_000, ttlAutopurge: true, noDisposeOnSet: true,
      dispose: (_pods, key) => this.#release(key),
    });
  }

  start(): void {
    for (const k of KINDS) this.#reflector(k).start();
    // The member's pods may be cached already (a replica that takes over keeps them warm): what its delegates use is
    // known before any copy is judged unused. Tracking is per pod and idempotent, so the events that follow agree.
    for (const pod of this.#member.pods.list()) this.#trackDelegate(objectKey(pod), pod, undefined);
    this.#subs.push(
      this.#member.pods.events$.subscribe((ev) => this.#trackDelegate(ev.key, ev.type === 'DELETED' ? undefined : ev.object, ev.old)),
      ...(['ConfigMap', 'Secret'] as const).map((kind) => this.#hostObjects(kind).events$.subscribe((ev) => {
        const { namespace, name } = namespacedName(ev.object);
        const key = mirrorKey(kind, namespace, name);
        if (this.#uses.has(key)) this.#enqueue(key);
        this.#wakeWaiting(key);
      })),
    );
  }

  stop(): void {
    for (const s of this.#subs.splice(0)) s.unsubscribe();
    for (const k of KINDS) this.#reflector(k).stop();
    for (const timer of this.#creating.values()) clearTimeout(timer);
    this.#creating.clear();
    for (const key of this.#uses.keys()) this.#release(key);
    this.#waiting.clear();
  }

  /**
   * Makes sure everything `proxy` refers to exists in `memberNs` before its delegate is created, and says what is
   * missing or in conflict. Call `release()` once the delegate is created or given up.
   */
  async prepare(proxy: V1Pod, memberNs: string): Promise<Prepared> {
    const { namespace: hostNs, name, uid } = objectId(proxy);
    const podKey = `${hostNs}/${name}`;
    const refs = podReferences(proxy.spec);
    // Copies made for a delegate count as needed until the delegate itself is seen (then its spec counts), or, if
    // it never shows up, for a while.
    this.#use(creating(uid), refs.map((r) => mirrorKey(r.kind, hostNs, r.name)));
    if (!this.#creating.has(uid)) this.#creating.set(uid, undefined);
    let released = false;
    const release = (created = true): void => {
      if (released) return;
      released = true;
      this.#created(uid, created);
    };
    try {
      const prepared: Prepared = { notices: [], missing: [], conflicts: [], release };
      for (const ref of refs) {
        const key = mirrorKey(ref.kind, hostNs, ref.name);
        if (ref.kind === 'ServiceAccount') {
          await this.#ensureServiceAccount(ref.name, hostNs, memberNs);
          continue;
        }
        const host = await this.#hostObjects(ref.kind).lookup(`${hostNs}/${ref.name}`);
        if (!host || isCredential(ref.kind, host)) {
          if (ref.optional) {
            prepared.notices.push({ type: 'Warning', reason: notFoundReason(ref),
              message: `optional ${ref.kind.toLowerCase()} "${ref.name}" ${host ? 'is a host credential and is not copied' : 'not found'}; the pod runs without it` });
          } else {
            prepared.missing.push(ref);
            this.#waitFor(key, podKey);
          }
          continue;
        }
        this.#unwait(key, podKey);
        const conflict = await this.#copy(ref.kind, host, memberNs, hostNs);
        if (conflict) prepared.conflicts.push(conflict);
      }
      return prepared;
    } catch (err) {
      release(false);
      throw err;
    }
  }

  /**
   * A delegate was created, or not. Created, it holds its copies until it is seen or the hold expires; not created,
   * the hold ends now, unless an earlier attempt for the same proxy created it (its hold runs on).
   */
  #created(uid: string, created: boolean): void {
    // Its delegate was seen already: its spec counts.
    if (!this.#creating.has(uid)) return;
    const timer = this.#creating.get(uid);
    if (!created) {
      if (timer === undefined) this.#endCreating(uid);
      return;
    }
    clearTimeout(timer);
    const expiry = setTimeout(() => this.#endCreating(uid), this.#createHoldMs);
    expiry.unref();
    this.#creating.set(uid, expiry);
  }

  #endCreating(uid: string): void {
    clearTimeout(this.#creating.get(uid));
    this.#creating.delete(uid);
    this.#use(creating(uid), []);
  }

  /** Sets what a holder needs; the host caches keep what is needed, and copies no longer needed are looked at. */
  #use(holder: string, keys: string[]): void {
    const change = this.#uses.update(holder, keys, undefined);
    for (const k of change?.added ?? []) this.#want(k);
    for (const k of change?.released ?? []) {
      this.#release(k);
      this.#enqueue(k);
    }
  }

  /** The host cache of a mirror key's kind, and the key there; none for ServiceAccounts (only their name matters). */
  #hostEntry(key: string): { cache: HostObjectCache<V1ConfigMap | V1Secret>; key: string } | undefined {
    const { kind, hostNamespace, name } = parseKey(key);
    return kind === 'ServiceAccount' ? undefined : { cache: this.#hostObjects(kind), key: `${hostNamespace}/${name}` };
  }

  #want(key: string): void {
    const h = this.#hostEntry(key);
    h?.cache.want(h.key);
  }

  #release(key: string): void {
    const h = this.#hostEntry(key);
    h?.cache.release(h.key);
  }

  #hostObjects(kind: Copied): HostObjectCache<V1ConfigMap | V1Secret> {
    return (kind === 'ConfigMap' ? this.#hosts.configMaps : this.#hosts.secrets) as HostObjectCache<V1ConfigMap | V1Secret>;
  }

  #reflector(kind: RefKind): Reflector<Mirrored> {
    return this.#reflectors[kind] as Reflector<Mirrored>;
  }

  /** `podKey` waits for the missing `key`: the host cache watches for it, and the pod is woken when it appears. */
  #waitFor(key: string, podKey: string): void {
    const pods = this.#waiting.get(key);
    if (!pods) this.#want(key);
    // Set again (the same set) to restart its expiry.
    this.#waiting.set(key, (pods ?? new Set()).add(podKey));
  }

  #unwait(key: string, podKey: string): void {
    const pods = this.#waiting.get(key);
    if (pods?.delete(podKey) && pods.size === 0) this.#waiting.delete(key);
  }

  /** Wakes the pods waiting for `key`, once: one still missing something waits again when it is synced. */
  #wakeWaiting(key: string): void {
    const pods = this.#waiting.get(key);
    if (!pods) return;
    this.#waiting.delete(key);
    for (const pod of pods) this.#wake.next(pod);
  }

  #trackDelegate(memberKey: string, pod: V1Pod | undefined, old: V1Pod | undefined): void {
    // What a pod refers to lives in its spec: status-only changes (most events) cannot change it.
    if (pod && old && pod.metadata?.generation === old.metadata?.generation
      && pod.metadata?.labels?.[ORIGIN_LABEL] === old.metadata?.labels?.[ORIGIN_LABEL]
      && pod.metadata?.labels?.[NODE_LABEL] === old.metadata?.labels?.[NODE_LABEL]) return;
    const delegate = delegateOf(pod, this.#member.owner);
    const hostNs = delegate?.ref.namespace;
    const memberNs = pod?.metadata?.namespace;
    const refs = delegate && memberNs ? podReferences(pod?.spec) : [];
    // Every delegate of this host, whatever its node, in member coordinates.
    const { released = [], previousTag: previousHostNs = '' } =
      this.#hostRefs.update(memberKey, refs.map((r) => `${r.kind}/${memberNs}/${r.name}`), hostNs ?? '') ?? {};
    for (const k of released) {
      // The last delegate using it went: the node that owns the copy may remove it now.
      const [kind, , name] = k.split('/');
      this.#enqueue(mirrorKey(kind as RefKind, previousHostNs, name));
    }
    // This node's delegates, in host coordinates; one being created is seen now, and its spec counts from here on.
    this.#use(memberKey, delegate?.ownNode ? refs.map((r) => mirrorKey(r.kind, delegate.ref.namespace, r.name)) : []);
    if (delegate?.ownNode && this.#creating.has(delegate.ref.uid)) this.#endCreating(delegate.ref.uid);
  }

  #enqueue(key: string): void {
    this.#reflector(parseKey(key).kind).add(key);
  }

  async #sync(key: string): Promise<void> {
    const { kind, hostNamespace, name } = parseKey(key);
    const memberNs = memberNamespace(this.#member.config.namespaceMapping, hostNamespace);
    const reflector = this.#reflector(kind);
    const copy = reflector.store.get(`${memberNs}/${name}`);
    if (!this.#uses.has(key)) {
      // Only the node that owns a copy removes it, and only once no delegate of this host uses it. The member's own
      // "default" ServiceAccount is recreated by its controller anyway: leave it.
      if (copy && this.#mine(copy) && !this.#hostRefs.has(`${kind}/${memberNs}/${name}`)
        && !(kind === 'ServiceAccount' && name === 'default')) {
        await reflector.remove(copy);
        this.#log.debug({ kind, namespace: memberNs, name }, 'removed a copy no delegate needs');
      }
      return;
    }
    if (kind === 'ServiceAccount') {
      if (!copy) await this.#ensureServiceAccount(name, hostNamespace, memberNs);
      return;
    }
    const host = await this.#hostObjects(kind).lookup(`${hostNamespace}/${name}`);
    // Deleted on the host: the copy stays while a delegate needs it, and goes with the last one.
    if (!host || isCredential(kind, host)) return;
    const conflict = await this.#copy(kind, host, memberNs, hostNamespace);
    if (conflict) this.#log.warn({ kind, namespace: memberNs, name }, conflict);
  }

  /** Creates or updates the copy of `host`; returns a conflict message when a foreign object holds the name. */
  async #copy(kind: Copied, host: V1ConfigMap | V1Secret, memberNs: string, hostNamespace: string): Promise<string | undefined> {
    const name = nameOf(host);
    const applied = await this.#reflector(kind).apply(memberNs, name,
      (existing) => this.#forgeCopy(kind, host, memberNs, hostNamespace, existing as V1ConfigMap | V1Secret | undefined));
    if (applied === 'conflict') {
      return `${kind.toLowerCase()} ${memberNs}/${name} exists in member ${this.#member.config.name} and was not created by clusterlet; it is left untouched: delete or rename it, or map the namespace elsewhere (namespaceMapping)`;
    }
    if (applied === 'created') this.#log.debug({ kind, namespace: memberNs, name }, 'mirrored to the member');
    if (applied === 'updated') this.#log.debug({ kind, namespace: memberNs, name }, 'updated the member copy');
    return undefined;
  }

  /**
   * The copy of a host object, owned by this node, or by the node of this host that already owns `existing` (a copy
   * two virtual nodes of one host share in a member namespace keeps its owner; both keep its content current).
   */
  #forgeCopy(kind: Copied, host: V1ConfigMap | V1Secret, memberNs: string, hostNamespace: string,
    existing: V1ConfigMap | V1Secret | undefined): V1ConfigMap | V1Secret {
    const otherNode = existing && fromHost(existing.metadata, this.#member.owner.hostName) ? existing.metadata?.labels?.[NODE_LABEL] : undefined;
    const ctx: MirrorContext = { hostName: this.#member.owner.hostName, nodeName: otherNode ?? this.#member.owner.node,
      memberNamespace: memberNs, hostNamespace };
    return kind === 'ConfigMap' ? forgeMirroredConfigMap(host as V1ConfigMap, ctx) : forgeMirroredSecret(host as V1Secret, ctx);
  }

  /** This node's copy: labelled for it, or one of this host's from before copies had an owning node (adopted). */
  #mine(copy: Mirrored): boolean {
    return ownedBy(copy.metadata, this.#member.owner)
      || (fromHost(copy.metadata, this.#member.owner.hostName) && copy.metadata?.labels?.[NODE_LABEL] === undefined);
  }

  /**
   * Member namespace `memberNs` is gone or going (deleted by hand): the ServiceAccounts ensured there are made again by
   * the next prepare, rather than taken as there until their mark expires.
   */
  forgetNamespace(memberNs: string): void {
    for (const key of [...this.#accounts.keys()]) if (key.startsWith(`${memberNs}/`)) this.#accounts.delete(key);
  }

  /** The pod's ServiceAccount exists in the member namespace: any existing one will do (tokens are the member's). */
  async #ensureServiceAccount(name: string, hostNs: string, memberNs: string): Promise<void> {
    const key = `${memberNs}/${name}`;
    if (this.#accounts.has(key)) return;
    await this.#reflectors.ServiceAccount.apply(memberNs, name, () => forgeServiceAccount(name, {
      hostName: this.#member.owner.hostName, nodeName: this.#member.owner.node, memberNamespace: memberNs, hostNamespace: hostNs,
    }));
    this.#accounts.set(key, true);
  }
}
