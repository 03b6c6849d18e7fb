// The member-cluster provider: runs each proxy pod as a delegate pod in the member (PodLifecycleHandler)
// and reports delegate changes and member events in host coordinates (PodNotifier).
import { EMPTY, Subject, distinctUntilChanged, filter, from, map, merge, mergeMap, of, share, type Observable } from 'rxjs';
import { LRUCache } from 'lru-cache';
import { upTo } from '../util/lru.ts';
import type { CoreV1Event, V1EphemeralContainer, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import type { MemberCluster } from './cluster.ts';
import type { DelegateChange } from './delegates.ts';
import { checkMemberNamespace, memberNamespace } from '../config.ts';
import { DISCARD, PATCH } from '../kube/client.ts';
import { listWatch, type ListWatchEvent } from '../kube/listwatch.ts';
import { objectKey } from '../kube/informer.ts';
import { ignoreGone, refusedByFence, toKubeError, type KubeError } from '../kube/errors.ts';
import { delegateResize, delegateUpdate, ephemeralContainersToAdd, forgeDelegatePod, type DelegateContext, type ResizePatch } from '../forge/pod.ts';
import { deletionDisruption, forgeHostStatus, withResizeInfeasible, type RefusedResize } from '../forge/status.ts';
import { PROXY_NAMESPACE_ANNOTATION, PROXY_UID_LABEL } from '../forge/keys.ts';
import { fromHost, hostRefOf, ownerLabels } from '../forge/owner.ts';
import { PodRejectedError } from '../provider/errors.ts';
import type { CreateOptions, PodChange, PodEvent, PodNotice, PodProvider, ProviderPod } from '../provider/pod.ts';
import { notFoundReason, type ObjectMirror, type Prepared } from './reflection/mirror.ts';
import type { Logger } from '../log.ts';

export interface MemberPodProviderOptions {
  nodeName: string;
  /** The virtual node's address: the hostIP of every proxy. */
  hostIP: string;
  /** On the first list, member events older than this are not mirrored again (they were, before a restart). */
  eventReplayWindowMs?: number;
  /**
   * How long a delegate created is awaited to show at most (creating(), from the create's answer), and the member
   * events about it held meanwhile (from the request); default APPEARANCE_WAIT_MS.
   */
  appearanceWaitMs?: number;
  /** Why a proxy's claims have no volume in the member (member/storage/volumes.ts): it gets no delegate then. */
  volumes?: { podRejection(proxy: V1Pod): Promise<PodRejectedError | undefined> };
}

/** What the provider uses of its member cluster (narrowed so that unit tests can stand in for one). */
export type ProviderMember = Pick<MemberCluster,
  'client' | 'config' | 'hostName' | 'owner' | 'pods' | 'delegates' | 'probe$' | 'reachable'>;

/**
 * How long a delegate created waits to show (#creations) at most: one a member's watch never shows (deleted during a
 * watch gap, which a relist folds away) holds up no proxy's removal longer, and events about it are held no longer.
 */
const APPEARANCE_WAIT_MS = 120_000;
/** How many events about a delegate not shown yet are held for it (the latest). */
const EARLY_EVENTS_PER_POD = 20;

/**
 * A delegate this provider is creating or created, that the delegate index has not shown since: marked before the
 * create is sent, and ended by the next change of its member key (#take), or by the member refusing the create.
 */
interface Creation {
  /** The proxy's key: creating() is asked in host coordinates. */
  hostKey: string;
  /**
   * The member answered that the delegate exists (created, or AlreadyExists and ours): creating() is true. A create
   * left without an answer (the connection lost, a timeout) may have made it: its events are held, nothing is awaited.
   */
  answered: boolean;
  /**
   * The resourceVersion the create answered with, where its appearance at that version needs no sync
   * (PodChange.created); undefined before the answer, after an AlreadyExists, or with ephemeral containers to add.
   */
  rv: string | undefined;
  /**
   * Member events that came before the delegate showed: the event watch and the pod informer are two streams, and the
   * member's scheduler can report on a new delegate (FailedScheduling) before the informer shows it.
   */
  events: CoreV1Event[];
}

/** Answers of the member's API server that refuse a resize for good (admission, validation), not for a while. */
const RESIZE_REFUSALS = new Set(['Forbidden', 'Invalid', 'BadRequest']);

/** A resize the member refused, for the delegate it was asked of. */
interface Refusal extends RefusedResize {
  delegateUID: string;
  /** The refused patch (JSON): the same refusal again is not news. */
  patch: string;
}

export class MemberPodProvider implements PodProvider {
  readonly podChanges$: Observable<PodChange>;
  readonly podEvents$: Observable<PodEvent>;
  readonly resync$: Observable<void>;
  readonly unreachable$: Observable<void>;
  #member: ProviderMember;
  #opts: Required<Omit<MemberPodProviderOptions, 'volumes'>>;
  #volumes: MemberPodProviderOptions['volumes'];
  #log: Logger;
  /** Member events (uid and resourceVersion) already passed on, so that a relist does not repeat them. */
  #seenEvents = new LRUCache<string, true>(upTo(20_000));
  /**
   * Delegates this provider is creating or created that the delegate index does not show yet, by member key: the
   * events held for them, and whether their appearance is the create's own. Bounded in number and time
   * (appearanceWaitMs), for delegates a relist never showed. The events of pods not created here (the member's own)
   * are never held.
   */
  #creations: LRUCache<string, Creation>;
  /** Member namespaces known to exist → the host namespace they hold. */
  #namespaces = new Map<string, string>();
  /** Creations of member namespaces under way: a burst of pods into a new namespace shares one (a failure is not kept). */
  #creatingNamespaces = new Map<string, Promise<string>>();
  #mirror: ObjectMirror;
  /** Resizes the member refused, by host key: on the proxy as PodResizePending/Infeasible until its resources change. */
  #refusedResizes = new Map<string, Refusal>();
  /** Host keys whose refused resize came or went: their status changed. */
  #resizeChanges = new Subject<PodChange>();

  constructor(member: ProviderMember, mirror: ObjectMirror, log: Logger, opts: MemberPodProviderOptions) {
    this.#member = member;
    this.#mirror = mirror;
    this.#log = log;
    const { volumes, ...rest } = opts;
    this.#opts = { eventReplayWindowMs: 120_000, appearanceWaitMs: APPEARANCE_WAIT_MS, ...rest };
    this.#volumes = volumes;
    this.#creations = new LRUCache({ ...upTo(20_000), ttl: this.#opts.appearanceWaitMs });
    // Each delegate change ends the wait for a creation of its key, once: shared by the changes and the held events.
    const delegateChanges$ = member.delegates.changes$.pipe(map((c) => ({ c, creation: this.#take(c) })), share());
    // A delegate changed, or an object a waiting pod needs appeared.
    this.podChanges$ = merge(
      delegateChanges$.pipe(map(({ c, creation }): PodChange =>
        ({ key: c.hostKey, lifecycle: c.lifecycle, ...(isOwnAppearance(c, creation) ? { created: true } : {}) }))),
      mirror.wake$.pipe(map((key) => ({ key, lifecycle: true }))), this.#resizeChanges);
    // The member answers (at start, or again): everything is synced again (see PodNotifier.resync$). Status is not
    // written before the first probe answers, so the first answer counts too.
    const reachable$ = member.probe$.pipe(map((p) => p.reachable), distinctUntilChanged());
    this.resync$ = reachable$.pipe(filter((reachable) => reachable), map(() => undefined));
    this.unreachable$ = reachable$.pipe(filter((reachable) => !reachable), map(() => undefined));
    const started = Date.now();
    const events = listWatch<CoreV1Event>(member.client, {
      path: '/api/v1/events', model: 'CoreV1Event', resource: 'events', fieldSelector: 'involvedObject.kind=Pod',
      // Most of a member's pod events are about its own pods: dropped before they are revived or remembered.
      wanted: (e) => this.#mayMirror(e),
      list: (p) => member.client.core.listEventForAllNamespaces(p),
    }, { log });
    const memberEvents$ = events.pipe(
      mergeMap((ev: ListWatchEvent<CoreV1Event>) => {
        if (ev.type === 'SYNC') {
          // The first list replays what happened shortly before clusterlet started; a relist (the watch expired,
          // or the member was away) only what was not seen yet: never the member's whole event history again.
          const since = started - this.#opts.eventReplayWindowMs;
          return from(ev.items.filter((e) => eventTime(e) >= since && this.#firstSight(e)));
        }
        return ev.type === 'DELETED' || !this.#firstSight(ev.object) ? EMPTY : of(ev.object);
      }),
    );
    // Events held for a delegate the pod informer had not shown yet go on once it does. Nearly every change holds
    // none: no inner stream is made for those (this runs for every watch event of a delegate).
    const released$ = delegateChanges$.pipe(mergeMap(({ creation }) => (creation?.events.length ? from(creation.events) : EMPTY)));
    this.podEvents$ = merge(memberEvents$, released$).pipe(
      map((e) => this.#toPodEvent(e)),
      filter((e): e is PodEvent => e !== undefined),
    );
  }

  get #ctxBase(): Omit<DelegateContext, 'memberNamespace'> {
    return { originCluster: this.#member.hostName, nodeName: this.#opts.nodeName, nodeLabels: this.#member.config.labels };
  }

  hasSynced(): boolean { return this.#member.pods.hasSynced; }
  available(): boolean { return this.#member.reachable; }
  waitSynced(): Promise<void> { return this.#member.pods.waitSynced(); }
  listPodKeys(): string[] { return this.#member.delegates.hostKeys(); }
  podCount(): number { return this.#member.delegates.size; }

  #delegate(namespace: string, name: string): V1Pod | undefined {
    return this.#member.delegates.get(namespace, name);
  }

  getPod(namespace: string, name: string): ProviderPod | undefined {
    const d = this.#delegate(namespace, name);
    if (!d) return undefined;
    return {
      proxyUID: d.metadata?.labels?.[PROXY_UID_LABEL] ?? '',
      terminating: d.metadata?.deletionTimestamp !== undefined,
      phase: d.status?.phase, reason: d.status?.reason, message: d.status?.message,
      ready: d.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false,
      disruption: deletionDisruption(d),
    };
  }

  getPodStatus(namespace: string, name: string): V1PodStatus | undefined {
    const d = this.#delegate(namespace, name);
    if (!d) return undefined;
    const status = forgeHostStatus(d, this.#opts.hostIP);
    const refused = this.#refusedResizes.get(`${namespace}/${name}`);
    return refused && refused.delegateUID === d.metadata?.uid ? withResizeInfeasible(status, refused) : status;
  }

  async createPod(proxy: V1Pod, opts: CreateOptions = {}): Promise<PodNotice[]> {
    const check = checkMemberNamespace(this.#member.config.namespaceMapping, proxy.metadata!.namespace!);
    // A namespace that cannot exist is a configuration matter: retrying changes nothing.
    if (check.error) throw new PodRejectedError(check.reason ?? 'InvalidNamespace', check.error, { retry: false });
    const ns = check.namespace;
    // The delegate has the proxy's name (forgeDelegatePod). Asked again before an earlier create's delegate showed (the
    // proxy may have changed since): its appearance is no longer that create's own, and needs a sync.
    const memberKey = `${ns}/${proxy.metadata!.name}`;
    const earlier = this.#creations.get(memberKey);
    if (earlier) earlier.rv = undefined;
    // A delegate whose claims the member lacks would stay Pending: none is made (tried again while one may come).
    const noVolume = await this.#volumes?.podRejection(proxy);
    if (noVolume) throw noVolume;
    await this.ensureNamespace(ns, proxy.metadata!.namespace!);
    // What the pod refers to goes first, so the delegate finds it when it starts.
    const prepared = await this.#mirror.prepare(proxy, ns);
    const rejected = rejection(prepared, proxy.metadata!.namespace!);
    if (rejected) {
      prepared.release(false);
      throw rejected;
    }
    const body = forgeDelegatePod(proxy, { ...this.#ctxBase, memberNamespace: ns, restarts: opts.restarts });
    // A new delegate has the proxy's resources: a refusal about its predecessor is over.
    this.#refusedResizes.delete(`${proxy.metadata!.namespace}/${proxy.metadata!.name}`);
    let created = false;
    // Marked before the create: the member's scheduler may report on the delegate before the create returns. Asked
    // again before it showed, the events held for it stay held.
    const creation: Creation = { hostKey: `${proxy.metadata!.namespace}/${proxy.metadata!.name}`, answered: false,
      rv: undefined, events: earlier?.events ?? [] };
    this.#creations.set(memberKey, creation);
    try {
      let rv: string | undefined;
      await this.#member.client.core.createNamespacedPod({ namespace: ns, body }, { ...DISCARD, onVersion: (v) => { rv = v; } });
      created = true;
      // A proxy's ephemeral containers cannot be created with its delegate: the sync after it appears adds them.
      // (Shown before the answer, the creation has ended already: its appearance was told as a lifecycle change.)
      if (!proxy.spec?.ephemeralContainers?.length) creation.rv = rv;
      this.#answered(memberKey, creation);
      this.#log.debug({ namespace: ns, pod: body.metadata?.name }, 'delegate created');
      return prepared.notices;
    } catch (err) {
      const k = toKubeError(err);
      if (k.kind === 'AlreadyExists') {
        // Ours, not shown yet (asked again before it showed, the proxy may have changed since): its appearance needs
        // a sync, as the creation's version stays unknown. Not ours: nothing is awaited.
        await this.#checkExisting(ns, proxy).catch((e: unknown) => { this.#end(memberKey, creation); throw e; });
        // Shown meanwhile, with no change since to end it: nothing left to await.
        if (this.#member.delegates.get(proxy.metadata!.namespace!, proxy.metadata!.name!)) this.#end(memberKey, creation);
        else this.#answered(memberKey, creation);
        return [];
      }
      // Refused: nothing was created. Left without an answer, it may have been: its events stay held a while.
      if (!maybeApplied(k)) this.#end(memberKey, creation);
      if (k.kind === 'NotFound') this.#namespaces.delete(ns); // the namespace went away under us: recreate next time
      if (k.kind === 'Forbidden' || k.kind === 'Invalid' || k.kind === 'BadRequest') {
        throw new PodRejectedError(k.reason || k.kind, k.message, { cause: err });
      }
      throw k;
    } finally {
      prepared.release(created);
    }
  }

  /** The creation a delegate change ends, if one waits for its member key: any change of the key ends it. */
  #take(c: DelegateChange): Creation | undefined {
    const creation = this.#creations.get(c.memberKey);
    if (creation) this.#creations.delete(c.memberKey);
    return creation;
  }

  /** The member says `creation`'s delegate exists: awaited (creating()) for appearanceWaitMs from now, if still current. */
  #answered(memberKey: string, creation: Creation): void {
    creation.answered = true;
    if (this.#creations.get(memberKey) === creation) this.#creations.set(memberKey, creation);
  }

  /** Ends `creation` unless a later one of the same key replaced it. */
  #end(memberKey: string, creation: Creation): void {
    if (this.#creations.get(memberKey) === creation) this.#creations.delete(memberKey);
  }

  creating(namespace: string, name: string): boolean {
    const creation = this.#creations.get(`${memberNamespace(this.#member.config.namespaceMapping, namespace)}/${name}`);
    return creation?.answered === true && creation.hostKey === `${namespace}/${name}`;
  }

  /** A pod of that name exists: fine if it is this proxy's delegate, a conflict if it is not ours. */
  async #checkExisting(ns: string, proxy: V1Pod): Promise<void> {
    const existing = await this.#member.client.core.readNamespacedPod({ namespace: ns, name: proxy.metadata!.name! });
    const ref = hostRefOf(existing, this.#member.owner);
    if (!ref) {
      throw new PodRejectedError('DelegateConflict',
        `member ${this.#member.config.name} already has a pod ${ns}/${proxy.metadata!.name} that clusterlet did not create; it is left untouched`);
    }
    // Ours: this proxy's (the cache had not seen it yet) or an earlier proxy's of its name, which the controller
    // replaces. Another proxy's (two host namespaces that map to one member namespace, claimed in turn across a
    // restart) is not this one's to run as.
    if (ref.namespace !== proxy.metadata!.namespace || ref.name !== proxy.metadata!.name) {
      throw new PodRejectedError('DelegateConflict', `member ${this.#member.config.name} already has a pod ${ns}/${proxy.metadata!.name} `
        + `that runs proxy ${ref.namespace}/${ref.name}; it is left untouched`);
    }
  }

  /** The member namespace `ns` exists and holds `hostNamespace` (MemberNamespaceConflict if not); also for the member's volumes. */
  async ensureNamespace(ns: string, hostNamespace: string): Promise<void> {
    const holder = this.#namespaces.get(ns) ?? await this.#createNamespaceOnce(ns, hostNamespace);
    if (holder !== hostNamespace) {
      throw new PodRejectedError('MemberNamespaceConflict',
        `host namespace "${hostNamespace}" maps to member namespace "${ns}" (namespace mapping of member `
        + `${this.#member.config.name}), which already holds host namespace "${holder}": two host namespaces cannot share one`,
      { retry: false });
    }
  }

  /** #createNamespace, joined by the callers that come while it runs; what it finds is kept in #namespaces. */
  #createNamespaceOnce(ns: string, hostNamespace: string): Promise<string> {
    let creating = this.#creatingNamespaces.get(ns);
    if (!creating) {
      creating = this.#createNamespace(ns, hostNamespace)
        .then((holder) => { this.#namespaces.set(ns, holder); return holder; })
        .finally(() => this.#creatingNamespaces.delete(ns));
      this.#creatingNamespaces.set(ns, creating);
    }
    return creating;
  }

  /** Creates the member namespace for `hostNamespace` when missing; resolves with the host namespace it holds. */
  async #createNamespace(ns: string, hostNamespace: string): Promise<string> {
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
    // A namespace of the member's own holds any host namespace mapped onto it; one this host made holds its own.
    return existing && fromHost(existing.metadata, this.#member.hostName)
      ? existing.metadata?.annotations?.[PROXY_NAMESPACE_ANNOTATION] ?? hostNamespace : hostNamespace;
  }

  async updatePod(proxy: V1Pod): Promise<PodNotice[]> {
    const d = this.#delegate(proxy.metadata!.namespace!, proxy.metadata!.name!);
    if (!d || d.metadata?.deletionTimestamp) return [];
    const ns = d.metadata!.namespace!;
    const ctx = { ...this.#ctxBase, memberNamespace: ns };
    const updated = delegateUpdate(proxy, d, ctx);
    if (updated) {
      await this.#member.client.core.replaceNamespacedPod({ namespace: ns, name: d.metadata!.name!, body: updated });
      this.#log.debug({ namespace: ns, pod: d.metadata!.name }, 'delegate updated');
    }
    await this.#addEphemeralContainers(d, ephemeralContainersToAdd(proxy, d, ctx));
    return this.#resize(proxy, d);
  }

  /**
   * A resize of the proxy's containers, applied to the delegate through the member's `resize` subresource: the
   * member's kubelet does it and reports it in the delegate's status, which comes back to the proxy. A resize the
   * member refuses (more than the delegate's node has, a quota) is what a kubelet shows for one it cannot do:
   * PodResizePending/Infeasible on the proxy, and a Warning event once. Tried again on each sync of the proxy (a
   * member node may have grown), until the proxy's resources match the delegate's again.
   */
  async #resize(proxy: V1Pod, d: V1Pod): Promise<PodNotice[]> {
    const key = `${proxy.metadata!.namespace}/${proxy.metadata!.name}`;
    const patch = delegateResize(proxy, d);
    if (!patch) {
      this.#forgetRefusal(key);
      return [];
    }
    const [namespace, name] = [d.metadata!.namespace!, d.metadata!.name!];
    try {
      await this.#member.client.core.patchNamespacedPodResize({ namespace, name, body: patch }, { contentType: PATCH.strategic });
    } catch (err) {
      const k = toKubeError(err);
      if (k.kind === 'NotFound') return []; // gone meanwhile; its delete event requeues the proxy
      if (!RESIZE_REFUSALS.has(k.kind)) throw k;
      return this.#refuseResize(key, d, patch, k.message);
    }
    this.#forgetRefusal(key);
    this.#log.debug({ namespace, pod: name }, 'delegate resized');
    return [];
  }

  #refuseResize(key: string, d: V1Pod, patch: ResizePatch, reason: string): PodNotice[] {
    const message = `member ${this.#member.config.name} refused the resize: ${reason}`;
    const refusal: Refusal = { delegateUID: d.metadata?.uid ?? '', patch: JSON.stringify(patch), message, at: new Date() };
    const known = this.#refusedResizes.get(key);
    if (known && known.delegateUID === refusal.delegateUID && known.patch === refusal.patch && known.message === message) return [];
    this.#refusedResizes.set(key, refusal);
    this.#resizeChanges.next({ key, lifecycle: false });
    // The kubelet's event for a resize it cannot do.
    return [{ type: 'Warning', reason: 'ResizeInfeasible', message: `Pod resize Infeasible: ${message}` }];
  }

  #forgetRefusal(key: string): void {
    if (this.#refusedResizes.delete(key)) this.#resizeChanges.next({ key, lifecycle: false });
  }

  /**
   * `kubectl debug` on the proxy: its new ephemeral containers go to the delegate the same way, through the
   * `ephemeralcontainers` subresource (the only way to add one; none is ever removed), by a strategic merge patch
   * that merges them by name into the delegate's, as kubectl's own. Its `$setElementOrder` keeps them after the
   * delegate's (a strategic merge puts new items first otherwise). The UID in the patch makes it fail on another
   * pod of that name. virtual-kubelet likewise counts ephemeral containers as a change that reaches the provider's
   * UpdatePod (node/pod.go podsEqual); Liqo's ShadowPods never pass them on.
   */
  async #addEphemeralContainers(d: V1Pod, add: V1EphemeralContainer[]): Promise<void> {
    if (add.length === 0) return;
    const { namespace, name, uid } = d.metadata!;
    const order = [...d.spec?.ephemeralContainers ?? [], ...add].map((c) => ({ name: c.name }));
    await this.#member.client.core.patchNamespacedPodEphemeralcontainers({
      namespace: namespace!, name: name!,
      body: { metadata: { uid }, spec: { '$setElementOrder/ephemeralContainers': order, ephemeralContainers: add } },
    }, { contentType: PATCH.strategic });
    this.#log.debug({ namespace, pod: name, containers: add.map((c) => c.name) }, 'ephemeral containers added to the delegate');
  }

  async deletePod(namespace: string, name: string, gracePeriodSeconds?: number): Promise<void> {
    this.#refusedResizes.delete(`${namespace}/${name}`);
    const d = this.#delegate(namespace, name);
    if (!d) return;
    try {
      await this.#member.client.core.deleteNamespacedPod({
        namespace: d.metadata!.namespace!, name: d.metadata!.name!, gracePeriodSeconds,
        body: { gracePeriodSeconds, preconditions: { uid: d.metadata!.uid } },
      }, DISCARD);
    } catch (err) {
      // Gone already, or replaced by another pod of that name (the UID precondition): nothing of ours to delete.
      ignoreGone(err);
    }
  }

  /** True the first time this version of an event is seen. */
  #firstSight(e: CoreV1Event): boolean {
    const key = `${e.metadata?.uid}/${e.metadata?.resourceVersion}`;
    if (this.#seenEvents.has(key)) return false;
    this.#seenEvents.set(key, true);
    return true;
  }

  /**
   * Whether a member event is about one of this node's delegates, or a pod it is creating (#creations): what #toPodEvent
   * may mirror or hold. Its timestamps may not be revived yet.
   */
  #mayMirror(e: CoreV1Event): boolean {
    const io = involvedPod(e);
    return io !== undefined && (this.#member.delegates.hostRefOf(io.memberKey) !== undefined || this.#creations.has(io.memberKey));
  }

  #toPodEvent(e: CoreV1Event): PodEvent | undefined {
    const io = involvedPod(e);
    if (!io) return undefined;
    const memberKey = io.memberKey;
    const ref = this.#member.delegates.hostRefOf(memberKey);
    if (!ref) {
      const held = this.#creations.get(memberKey)?.events;
      if (held && held.push(e) > EARLY_EVENTS_PER_POD) held.shift();
      return undefined;
    }
    if (io.uid && this.#delegateUidMismatch(io.namespace, io.name, io.uid)) return undefined;
    const at = new Date(eventTime(e));
    return {
      namespace: ref.namespace, name: ref.name, id: e.metadata?.uid ?? objectKey(e),
      event: {
        type: e.type, reason: e.reason, message: e.message, count: e.count ?? e.series?.count ?? 1,
        firstTimestamp: e.firstTimestamp ?? e.eventTime ?? at, lastTimestamp: at,
        source: { component: e.reportingComponent || e.source?.component || 'member', host: e.source?.host },
      },
    };
  }

  /** An event about an earlier pod of the same name (another UID) is not this proxy's. */
  #delegateUidMismatch(namespace: string, name: string, uid: string): boolean {
    const p = this.#member.pods.get(`${namespace}/${name}`);
    return p !== undefined && p.metadata?.uid !== uid;
  }
}

/** Why a pod whose references were prepared cannot start: mandatory objects missing, or copies in conflict. */
export function rejection(prepared: Prepared, hostNamespace: string): PodRejectedError | undefined {
  const { missing, conflicts } = prepared;
  if (missing.length) {
    return new PodRejectedError(notFoundReason(missing[0]), missing.map((m) =>
      `${m.kind.toLowerCase()} "${m.name}" not found in namespace ${hostNamespace}`).join('; ') + '; the pod starts once it exists');
  }
  if (conflicts.length) return new PodRejectedError('MemberObjectConflict', conflicts.join('; '));
  return undefined;
}

/**
 * Whether a create that failed with `k` may have been applied all the same: no answer came (the connection lost, a
 * timeout), or the server could not say (a 5xx). Not when the request was never sent (NotLeader: the replica's fence).
 */
function maybeApplied(k: KubeError): boolean {
  return (k.kind === 'Unavailable' && !refusedByFence(k)) || k.kind === 'Unknown';
}

/**
 * Whether a delegate's change is its appearance as this provider's create left it (at the version that create answered
 * with): the controller that asked for it has had its answer (PodChange.created).
 */
function isOwnAppearance(c: DelegateChange, creation: Creation | undefined): boolean {
  return creation?.rv !== undefined && creation.rv === c.appearedAt && creation.hostKey === c.hostKey;
}

/** The member pod an event is about (its namespace, name, UID if given, and key), if the event names one. */
function involvedPod(e: CoreV1Event): { namespace: string; name: string; uid?: string; memberKey: string } | undefined {
  const io = e.involvedObject;
  if (!io?.namespace || !io.name) return undefined;
  return { namespace: io.namespace, name: io.name, uid: io.uid, memberKey: `${io.namespace}/${io.name}` };
}

function eventTime(e: CoreV1Event): number {
  const t = e.lastTimestamp ?? e.series?.lastObservedTime ?? e.eventTime ?? e.firstTimestamp ?? e.metadata?.creationTimestamp;
  return t ? new Date(t).getTime() : Date.now();
}

