// Host → member reflection of the ConfigMaps, Secrets and ServiceAccounts offloaded pods use.
// One reflector (queue + workers) per kind; keys are in host coordinates: `<Kind>/<hostNamespace>/<name>`.
// A copy exists while a delegate in the member refers to it (counted from the delegates' own specs, so
// the count survives restarts) or a delegate is being created; it is removed once none does.
import { Subject, type Observable, type Subscription } from 'rxjs';
import { LRUCache } from 'lru-cache';
import type { V1ConfigMap, V1Pod, V1Secret, V1ServiceAccount } from '@kubernetes/client-node';
import type { MemberCluster } from '../cluster.ts';
import { memberNamespace } from '../../config.ts';
import { Informer } from '../../kube/informer.ts';
import { listWatch } from '../../kube/listwatch.ts';
import { ignoreGone, toKubeError } from '../../kube/errors.ts';
import { WorkQueue } from '../../util/workqueue.ts';
import {
  forgeMirroredConfigMap, forgeMirroredSecret, forgeServiceAccount, isHostCredential, mirrorMatches,
  podReferences, type MirrorContext, type ObjectRef, type RefKind,
} from '../../forge/refs.ts';
import { NODE_LABEL, ORIGIN_LABEL, PROXY_NAMESPACE_ANNOTATION } from '../../forge/keys.ts';
import { delegateOf, fromHost, ownedBy } from '../../forge/owner.ts';
import { RefIndex } from '../../util/refindex.ts';
import { PodRejectedError } from '../../provider/errors.ts';
import type { HostObjectCache } from './hostcache.ts';
import type { Logger } from '../../log.ts';

export interface Notice { type: 'Normal' | 'Warning'; reason: string; message: string }

export interface HostCaches {
  configMaps: HostObjectCache<V1ConfigMap>;
  secrets: HostObjectCache<V1Secret>;
}

type Mirrored = V1ConfigMap | V1Secret | V1ServiceAccount;

interface KindOps {
  store: Informer<Mirrored>;
  create(ns: string, body: Mirrored): Promise<unknown>;
  replace(ns: string, name: string, body: Mirrored): Promise<unknown>;
  remove(ns: string, name: string, uid: string): Promise<unknown>;
}

const KINDS: RefKind[] = ['ConfigMap', 'Secret', 'ServiceAccount'];
/** How long a copy made for a delegate being created counts as needed, until the delegate is seen. */
const INFLIGHT_MS = 30_000;

export function mirrorKey(kind: RefKind, hostNamespace: string, name: string): string {
  return `${kind}/${hostNamespace}/${name}`;
}

function parseKey(key: string): { kind: RefKind; hostNamespace: string; name: string } {
  const [kind, hostNamespace, name] = key.split('/');
  return { kind: kind as RefKind, hostNamespace, name };
}

/** The host cache's key (namespace/name) of a mirror key. */
function cacheKey(key: string): string {
  const { hostNamespace, name } = parseKey(key);
  return `${hostNamespace}/${name}`;
}

export class ObjectMirror {
  /** Host pod keys to sync again: a mandatory object they waited for appeared. */
  readonly wake$: Observable<string>;
  #member: MemberCluster;
  #caches: HostCaches;
  #log: Logger;
  #ops: Record<RefKind, KindOps>;
  #queues: Record<RefKind, WorkQueue>;
  /** mirror key → member keys of this node's delegates that refer to it. */
  #refs = new RefIndex();
  /**
   * Copies in member coordinates (`<Kind>/<memberNamespace>/<name>`) → the delegates of this host, of any of its
   * virtual nodes, that refer to them (tagged with their host namespace): a copy another node's delegate uses is
   * never removed from under it.
   */
  #hostRefs = new RefIndex<string>();
  #inflight = new Map<string, number>();
  /** member pod key → in-flight keys held for its delegate until the delegate is seen. */
  #pending = new Map<string, { keys: string[]; timer: NodeJS.Timeout }>();
  /** mirror key → host pods waiting for it to appear. */
  #waiting = new Map<string, Set<string>>();
  /** Keys this mirror holds interest in, in the host caches. */
  #held = new Set<string>();
  #wake = new Subject<string>();
  /** ServiceAccounts known to exist (the member's own "default" among them), re-checked after a minute. */
  #accounts = new LRUCache<string, true>({ max: 10_000, ttl: 60_000 });
  #subs: Subscription[] = [];

  constructor(member: MemberCluster, caches: HostCaches, log: Logger) {
    this.#member = member;
    this.#caches = caches;
    this.#log = log;
    this.wake$ = this.#wake.asObservable();
    const c = member.client;
    const origin = `${ORIGIN_LABEL}=${member.hostName}`;
    const informer = <T extends Mirrored>(resource: string, model: string, list: (p: Parameters<typeof c.core.listConfigMapForAllNamespaces>[0]) => Promise<{ items: T[] }>) =>
      new Informer<Mirrored>(`member-${resource}`, listWatch<Mirrored>(c, {
        path: `/api/v1/${resource}`, model, resource, labelSelector: origin, list: list as never,
      }, { log }));
    const precondition = (uid: string) => ({ preconditions: { uid } });
    this.#ops = {
      ConfigMap: {
        store: informer('configmaps', 'V1ConfigMap', (p) => c.core.listConfigMapForAllNamespaces(p)),
        create: (ns, body) => c.core.createNamespacedConfigMap({ namespace: ns, body: body as V1ConfigMap }),
        replace: (ns, name, body) => c.core.replaceNamespacedConfigMap({ namespace: ns, name, body: body as V1ConfigMap }),
        remove: (ns, name, uid) => c.core.deleteNamespacedConfigMap({ namespace: ns, name, body: precondition(uid) }),
      },
      Secret: {
        store: informer('secrets', 'V1Secret', (p) => c.core.listSecretForAllNamespaces(p)),
        create: (ns, body) => c.core.createNamespacedSecret({ namespace: ns, body: body as V1Secret }),
        replace: (ns, name, body) => c.core.replaceNamespacedSecret({ namespace: ns, name, body: body as V1Secret }),
        remove: (ns, name, uid) => c.core.deleteNamespacedSecret({ namespace: ns, name, body: precondition(uid) }),
      },
      ServiceAccount: {
        store: informer('serviceaccounts', 'V1ServiceAccount', (p) => c.core.listServiceAccountForAllNamespaces(p)),
        create: (ns, body) => c.core.createNamespacedServiceAccount({ namespace: ns, body: body as V1ServiceAccount }),
        replace: (ns, name, body) => c.core.replaceNamespacedServiceAccount({ namespace: ns, name, body: body as V1ServiceAccount }),
        remove: (ns, name, uid) => c.core.deleteNamespacedServiceAccount({ namespace: ns, name, body: precondition(uid) }),
      },
    };
    this.#queues = Object.fromEntries(KINDS.map((k) => [k,
      new WorkQueue({ name: `mirror-${k.toLowerCase()}-${member.config.name}`, workers: 4, log, maxDelayMs: 30_000 })])) as Record<RefKind, WorkQueue>;
  }

  start(): void {
    for (const k of KINDS) {
      this.#ops[k].store.start();
      this.#queues[k].start((key) => this.#sync(key));
    }
    this.#subs.push(
      this.#member.pods.events$.subscribe((ev) => this.#trackDelegate(ev.key, ev.type === 'DELETED' ? undefined : ev.object, ev.old)),
      ...(['ConfigMap', 'Secret'] as const).map((kind) => this.#cacheOf(kind)!.events$.subscribe((ev) => {
        const key = mirrorKey(kind, ev.object.metadata!.namespace!, ev.object.metadata!.name!);
        if (this.#held.has(key)) this.#enqueue(key);
        for (const pod of this.#waiting.get(key) ?? []) this.#wake.next(pod);
      })),
      // A copy changed or removed by someone is set back.
      ...KINDS.map((k) => this.#ops[k].store.events$.subscribe((ev) => {
        const hostNs = ev.object.metadata?.annotations?.[PROXY_NAMESPACE_ANNOTATION];
        if (hostNs) this.#enqueue(mirrorKey(k, hostNs, ev.object.metadata!.name!));
      })),
    );
    // Stale copies (their delegates went while we were away) are removed once every view is complete.
    void Promise.all([this.#member.pods.waitSynced(), ...KINDS.map((k) => this.#ops[k].store.waitSynced())]).then(() => {
      for (const k of KINDS) {
        for (const o of this.#ops[k].store.list()) {
          const hostNs = o.metadata?.annotations?.[PROXY_NAMESPACE_ANNOTATION];
          if (hostNs) this.#enqueue(mirrorKey(k, hostNs, o.metadata!.name!));
        }
      }
    });
  }

  stop(): void {
    for (const s of this.#subs.splice(0)) s.unsubscribe();
    for (const k of KINDS) {
      this.#queues[k].shutdown();
      this.#ops[k].store.stop();
    }
    for (const p of this.#pending.values()) clearTimeout(p.timer);
    this.#pending.clear();
    for (const key of this.#held) this.#cacheOf(parseKey(key).kind)?.release(cacheKey(key));
    this.#held.clear();
  }

  hasSynced(): boolean { return KINDS.every((k) => this.#ops[k].store.hasSynced); }

  /**
   * Makes sure everything `proxy` refers to exists in `memberNs` before its delegate is created.
   * Throws PodRejectedError naming what is missing (mandatory) or in conflict; returns notices for the
   * proxy (optional objects missing). Call `release()` once the delegate is created or given up.
   */
  async prepare(proxy: V1Pod, memberNs: string): Promise<{ notices: Notice[]; release(created?: boolean): void }> {
    const hostNs = proxy.metadata!.namespace!;
    const podKey = `${hostNs}/${proxy.metadata!.name}`;
    const refs = podReferences(proxy.spec);
    const keys = refs.map((r) => mirrorKey(r.kind, hostNs, r.name));
    for (const k of keys) this.#inflight.set(k, (this.#inflight.get(k) ?? 0) + 1);
    const memberKey = `${memberNs}/${proxy.metadata!.name}`;
    let released = false;
    // Copies made for a delegate count as needed until the delegate itself is seen (then its spec counts),
    // or, if it never shows up, for INFLIGHT_MS.
    const release = (created = true): void => {
      if (released) return;
      released = true;
      if (!created) return this.#endInflight(keys);
      const timer = setTimeout(() => { this.#pending.delete(memberKey); this.#endInflight(keys); }, INFLIGHT_MS);
      timer.unref();
      this.#pending.set(memberKey, { keys, timer });
    };
    try {
      const notices: Notice[] = [];
      const missing: ObjectRef[] = [];
      const conflicts: string[] = [];
      for (const ref of refs) {
        const key = mirrorKey(ref.kind, hostNs, ref.name);
        if (ref.kind === 'ServiceAccount') {
          await this.#ensureServiceAccount(ref.name, hostNs, memberNs);
          continue;
        }
        this.#hold(key);
        const host = await this.#cacheOf(ref.kind)!.lookup(cacheKey(key));
        if (!host || (ref.kind === 'Secret' && isHostCredential(host as V1Secret))) {
          if (ref.optional) {
            notices.push({ type: 'Normal', reason: `Optional${ref.kind}Missing`,
              message: `optional ${ref.kind.toLowerCase()} "${ref.name}" ${host ? 'is a host credential and is not copied' : 'not found'}; the pod runs without it` });
          } else {
            missing.push(ref);
            this.#waitFor(key, podKey);
          }
          continue;
        }
        this.#unwait(key, podKey);
        const conflict = await this.#upsert(ref.kind, key, memberNs);
        if (conflict) conflicts.push(conflict);
      }
      if (missing.length) {
        throw new PodRejectedError(`Missing${missing[0].kind}`, missing.map((m) =>
          `${m.kind.toLowerCase()} "${m.name}" not found in namespace ${hostNs}`).join('; ') + '; the pod starts once it exists');
      }
      if (conflicts.length) throw new PodRejectedError('MemberObjectConflict', conflicts.join('; '));
      return { notices, release };
    } catch (err) {
      release(false);
      throw err;
    }
  }

  #endInflight(keys: string[]): void {
    for (const k of keys) {
      const n = (this.#inflight.get(k) ?? 1) - 1;
      if (n > 0) this.#inflight.set(k, n); else this.#inflight.delete(k);
      this.#enqueue(k);
    }
  }

  #cacheOf(kind: RefKind): HostObjectCache<V1ConfigMap | V1Secret> | undefined {
    if (kind === 'ConfigMap') return this.#caches.configMaps as HostObjectCache<V1ConfigMap | V1Secret>;
    if (kind === 'Secret') return this.#caches.secrets as HostObjectCache<V1ConfigMap | V1Secret>;
    return undefined;
  }

  #hold(key: string): void {
    if (this.#held.has(key)) return;
    const kind = parseKey(key).kind;
    if (!this.#cacheOf(kind)) return;
    this.#held.add(key);
    this.#cacheOf(kind)!.want(cacheKey(key));
  }

  #unhold(key: string): void {
    if (!this.#held.delete(key)) return;
    this.#cacheOf(parseKey(key).kind)?.release(cacheKey(key));
  }

  #waitFor(key: string, podKey: string): void {
    let s = this.#waiting.get(key);
    if (!s) this.#waiting.set(key, s = new Set());
    s.add(podKey);
  }

  #unwait(key: string, podKey: string): void {
    const s = this.#waiting.get(key);
    if (!s) return;
    s.delete(podKey);
    if (s.size === 0) this.#waiting.delete(key);
  }

  /** Forgets waits of a host pod that is gone. */
  forgetPod(podKey: string): void {
    for (const [key, s] of this.#waiting) {
      s.delete(podKey);
      if (s.size === 0) this.#waiting.delete(key);
    }
  }

  #trackDelegate(memberKey: string, pod: V1Pod | undefined, old: V1Pod | undefined): void {
    // What a pod refers to lives in its spec: status-only changes (most events) cannot change it.
    if (pod && old && pod.metadata?.generation === old.metadata?.generation
      && pod.metadata?.labels?.[ORIGIN_LABEL] === old.metadata?.labels?.[ORIGIN_LABEL]
      && pod.metadata?.labels?.[NODE_LABEL] === old.metadata?.labels?.[NODE_LABEL]) return;
    const delegate = delegateOf(pod, this.#member.owner);
    const hostNs = delegate?.ref.namespace;
    const memberNs = pod?.metadata?.namespace;
    const refs = delegate && memberNs ? podReferences(pod!.spec) : [];
    // Every delegate of this host, whatever its node, in member coordinates.
    const host = this.#hostRefs.update(memberKey, refs.map((r) => `${r.kind}/${memberNs}/${r.name}`), hostNs ?? '');
    for (const k of host?.released ?? []) {
      // The last delegate using it went: the node that owns the copy may remove it now.
      const [kind, , name] = k.split('/');
      this.#enqueue(mirrorKey(kind as RefKind, host!.previousTag!, name));
    }
    // This node's delegates, in host coordinates.
    const after = delegate?.ownNode ? refs.map((r) => mirrorKey(r.kind, hostNs!, r.name)) : [];
    const own = this.#refs.update(memberKey, after, undefined);
    if (!own) return;
    for (const k of own.released) this.#enqueue(k);
    for (const k of own.added) this.#hold(k);
    const pending = this.#pending.get(memberKey);
    if (pending && after.length) {
      clearTimeout(pending.timer);
      this.#pending.delete(memberKey);
      this.#endInflight(pending.keys);
    }
  }

  #needed(key: string): boolean {
    return this.#refs.has(key) || (this.#inflight.get(key) ?? 0) > 0;
  }

  #enqueue(key: string): void {
    this.#queues[parseKey(key).kind].add(key);
  }

  async #sync(key: string): Promise<void> {
    if (!this.#member.pods.hasSynced || !this.hasSynced()) return;
    const { kind, hostNamespace, name } = parseKey(key);
    const memberNs = memberNamespace(this.#member.config.namespaceMapping, hostNamespace);
    const copy = this.#ops[kind].store.get(`${memberNs}/${name}`);
    if (!this.#needed(key)) {
      this.#unhold(key);
      // Only the node that owns a copy removes it, and only once no delegate of this host uses it. The member's own
      // "default" ServiceAccount is recreated by its controller anyway: leave it.
      if (copy && this.#mine(copy) && !this.#hostRefs.has(`${kind}/${memberNs}/${name}`)
        && !(kind === 'ServiceAccount' && name === 'default')) {
        await this.#ops[kind].remove(memberNs, name, copy.metadata!.uid!).catch(ignoreGone);
        this.#log.debug({ kind, namespace: memberNs, name }, 'removed a copy no delegate needs');
      }
      return;
    }
    if (kind === 'ServiceAccount') {
      if (!copy) await this.#ensureServiceAccount(name, hostNamespace, memberNs);
      return;
    }
    const conflict = await this.#upsert(kind, key, memberNs);
    if (conflict) this.#log.warn({ kind, namespace: memberNs, name }, conflict);
  }

  /** Creates or updates the copy; returns a conflict message when a foreign object holds the name. */
  async #upsert(kind: RefKind, key: string, memberNs: string): Promise<string | undefined> {
    const { hostNamespace, name } = parseKey(key);
    const host = await this.#cacheOf(kind)!.lookup(cacheKey(key));
    // Deleted on the host: the copy stays while a delegate needs it, and goes with the last one.
    if (!host) return undefined;
    if (kind === 'Secret' && isHostCredential(host as V1Secret)) return undefined;
    const ops = this.#ops[kind];
    let copy = ops.store.get(`${memberNs}/${name}`) as V1ConfigMap | V1Secret | undefined;
    const desired = this.#forgeCopy(kind, host, memberNs, hostNamespace, copy);
    if (!copy) {
      try {
        await ops.create(memberNs, desired);
        this.#log.debug({ kind, namespace: memberNs, name }, 'mirrored to the member');
        return undefined;
      } catch (err) {
        if (toKubeError(err).kind !== 'AlreadyExists') throw toKubeError(err);
        copy = await this.#read(kind, memberNs, name);
        if (!copy) return undefined;
      }
    }
    if (!fromHost(copy.metadata, this.#member.hostName)) {
      return `${kind.toLowerCase()} ${memberNs}/${name} exists in member ${this.#member.config.name} and was not created by clusterlet; it is left untouched`;
    }
    const wanted = this.#forgeCopy(kind, host, memberNs, hostNamespace, copy);
    if (mirrorMatches(wanted, copy)) return undefined;
    try {
      await ops.replace(memberNs, name, { ...wanted, metadata: { ...wanted.metadata, resourceVersion: copy.metadata?.resourceVersion } });
    } catch (err) {
      const k = toKubeError(err);
      // An immutable copy cannot change: replace it.
      if (k.kind !== 'Invalid') throw k;
      await ops.remove(memberNs, name, copy.metadata!.uid!).catch(ignoreGone);
      await ops.create(memberNs, wanted);
    }
    this.#log.debug({ kind, namespace: memberNs, name }, 'updated the member copy');
    return undefined;
  }

  /**
   * The copy of a host object, owned by this node, or by the node of this host that already owns `existing` (a copy
   * two virtual nodes of one host share in a member namespace keeps its owner; both keep its content current).
   */
  #forgeCopy(kind: RefKind, host: V1ConfigMap | V1Secret, memberNs: string, hostNamespace: string,
    existing: V1ConfigMap | V1Secret | undefined): V1ConfigMap | V1Secret {
    const otherNode = existing && fromHost(existing.metadata, this.#member.hostName) ? existing.metadata?.labels?.[NODE_LABEL] : undefined;
    const ctx: MirrorContext = { originCluster: this.#member.hostName, nodeName: otherNode ?? this.#member.owner.node,
      memberNamespace: memberNs, hostNamespace };
    return kind === 'ConfigMap' ? forgeMirroredConfigMap(host as V1ConfigMap, ctx) : forgeMirroredSecret(host as V1Secret, ctx);
  }

  /** This node's copy: labelled for it, or one of this host's from before copies had an owning node (adopted). */
  #mine(copy: Mirrored): boolean {
    return ownedBy(copy.metadata, this.#member.owner)
      || (fromHost(copy.metadata, this.#member.hostName) && copy.metadata?.labels?.[NODE_LABEL] === undefined);
  }

  async #read(kind: RefKind, ns: string, name: string): Promise<V1ConfigMap | V1Secret | undefined> {
    const c = this.#member.client.core;
    try {
      return kind === 'ConfigMap' ? await c.readNamespacedConfigMap({ namespace: ns, name })
        : await c.readNamespacedSecret({ namespace: ns, name });
    } catch (err) {
      if (toKubeError(err).kind === 'NotFound') return undefined;
      throw toKubeError(err);
    }
  }

  /** The pod's ServiceAccount exists in the member namespace: any existing one will do (tokens are the member's). */
  async #ensureServiceAccount(name: string, hostNs: string, memberNs: string): Promise<void> {
    const key = `${memberNs}/${name}`;
    if (this.#accounts.has(key) || this.#ops.ServiceAccount.store.get(key)) return;
    const body = forgeServiceAccount(name, { originCluster: this.#member.hostName, nodeName: this.#member.owner.node,
      memberNamespace: memberNs, hostNamespace: hostNs });
    try {
      await this.#ops.ServiceAccount.create(memberNs, body);
    } catch (err) {
      if (toKubeError(err).kind !== 'AlreadyExists') throw toKubeError(err);
    }
    this.#accounts.set(key, true);
  }
}

