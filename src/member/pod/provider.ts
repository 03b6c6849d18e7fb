// The member-cluster provider: runs each proxy pod as a delegate pod in the member (PodLifecycleHandler) and reports
// delegate changes and member events in host coordinates (PodNotifier). Beside it, each with its own state:
//   namespaces.ts  the member namespaces delegates go into
//   creations.ts   delegates created and not shown yet (creating(), their appearance, their early events)
//   events.ts      the member's events about this node's delegates
//   resize.ts      resizes through the member's resize subresource, and the ones it refused
import { distinctUntilChanged, EMPTY, filter, from, map, merge, mergeMap, share, type Observable } from 'rxjs';
import type { V1EphemeralContainer, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import type { MemberCluster } from '../cluster.ts';
import { checkMemberNamespace, memberNamespace } from '../../forge/namespace.ts';
import { DISCARD, PATCH } from '../../kube/client.ts';
import { objectKey, splitKey } from '../../kube/informer.ts';
import { ignoreGone, refusedByFence, toKubeError, type KubeError } from '../../kube/errors.ts';
import { delegateUpdate, ephemeralContainersToAdd, forgeDelegatePod, type DelegateContext } from '../../forge/pod.ts';
import { deletionDisruption, forgeHostStatus } from '../../forge/status.ts';
import { PROXY_UID_LABEL } from '../../forge/keys.ts';
import { hostRefOf } from '../../forge/owner.ts';
import { namespacedName } from '../../forge/meta.ts';
import { PodNotReadyError, PodRejectedError } from '../../provider/errors.ts';
import type { CreateOptions, PodChange, PodEvent, PodNotice, PodProvider, ProviderPod } from '../../provider/pod.ts';
import { notFoundReason, type ObjectMirror, type Prepared } from '../reflection/mirror.ts';
import type { Logger } from '../../log.ts';
import { Creations, isOwnAppearance, type Creation } from './creations.ts';
import { memberPodEvents } from './events.ts';
import { MemberNamespaces, namespaceGone } from './namespaces.ts';
import { Resizes } from './resize.ts';
import { DelegateTokens, type CreationOutcome, type DelegateTokensOptions } from './tokens.ts';
import { accessModeOf, tokenSecretName, type ApiAccessMode, type DelegateApiAccess } from '../../forge/apiaccess.ts';
import type { HostApiAccess, HostProxies } from '../../provider/tokens.ts';
import { fitView, noFitMessage, scaleUpMessage, WAITING_FOR_SCALE_UP, type FitAnswer, type FitMode } from '../../forge/fit.ts';
import { describeGroup, groupConstraint, type NodeGroup } from '../../forge/groups.ts';

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
  /** The member namespaces, shared with whoever else makes them (the member's volumes); default: its own. */
  namespaces?: MemberNamespaces;
  /**
   * Which API server the delegates' tokens are for (forge/apiaccess.ts): the member's default mode, and the host's half
   * for host mode. Without it, every delegate gets the member's token (member mode).
   */
  apiAccess?: {
    mode: ApiAccessMode; host: HostApiAccess; tokens?: DelegateTokensOptions;
    /** The proxies of the member's virtual nodes, as the host's caches hold them: what a token Secret found at start is for. */
    proxies?: HostProxies;
  };
  /**
   * Where a delegate fits among the member's nodes (MemberCluster.fitGate), and what becomes of one that fits none.
   * Without it (fit `off`), every delegate is created and the member's scheduler says what it can.
   */
  fit?: FitGate;
}

/** What the provider asks of its member to judge whether a delegate fits (MemberCluster.fitGate). */
export interface FitGate {
  /** enforce: a delegate that fits no node is not created (NoMemberNodeFits) but tried again when room may have
   * appeared; advisory: it is created, to wait for the member's autoscaler (WaitingForMemberScaleUp); auto: advisory
   * while `growth()` tells the member adds nodes, else enforce. A delegate pinned to one member node (`nodes: node`)
   * is judged as in enforce whatever the mode. */
  mode: Exclude<FitMode, 'off'>;
  /** Where the pod fits among the member's nodes as they are now (forge/fit.ts memberFit). */
  fit(pod: V1Pod): FitAnswer;
  /** Room may have appeared in the member. */
  room$: Observable<void>;
  /** Whether a verdict can be given: the member's nodes are listed (and, for auto, whether it adds nodes was read). */
  ready(): boolean;
  /** What shows that the member adds nodes for Pending pods, or undefined: nothing does (member/scaling.ts). */
  growth(): string | undefined;
}

/** What the provider uses of its member cluster (narrowed so that unit tests can stand in for one). */
export type ProviderMember = Pick<MemberCluster,
  'client' | 'config' | 'hostName' | 'owner' | 'pods' | 'delegates' | 'probe$' | 'reachable'>;

/**
 * How long a delegate created waits to show (Creations) at most: one a member's watch never shows (deleted during a
 * watch gap, which a relist folds away) holds up no proxy's removal longer, and events about it are held no longer.
 */
const APPEARANCE_WAIT_MS = 120_000;

/** How long a delegate that fits nowhere is woken by room in the member (see #unfit). */
const UNFIT_WAKE_MS = 600_000;

/** Proxies whose delegate the member's admission was asked about (#admitted), kept at most (the oldest go first). */
const ADMITTED_CACHE = 10_000;

/**
 * How long what the member's admission answered is kept unused: a proxy deleted before it got a delegate tells the
 * provider nothing, and its entry goes this long after the last try (the controller tries an unfit proxy at least every
 * minute).
 */
const ADMITTED_TTL_MS = 15 * 60_000;

/** After a dry run that failed, how long until the member is asked again: doubled per failure in a row, up to the max. */
const DRY_RUN_RETRY_MS = 10_000;
const DRY_RUN_RETRY_MAX_MS = 5 * 60_000;

/** How soon a pod is looked at again while the member's nodes are not listed yet (FitGate.ready). */
const FIT_NOT_READY_RETRY_MS = 1_000;

/**
 * The member's ServiceAccount admission refusing a pod whose ServiceAccount it does not have (plugin/pkg/admission/
 * serviceaccount: `error looking up service account <ns>/<name>: serviceaccount "<name>" not found`): the one refusal a
 * copy of what the pod refers to can end.
 */
const MISSING_SERVICE_ACCOUNT = /error looking up service account [^\s/]+\/[^\s:]+: serviceaccount "[^"]+" not found/;

/**
 * What the member's admission made of the delegate of one proxy UID and generation (#admitted): the pod as it would
 * store it (only what the fit reads: forge/fit.ts fitView), or its refusal, or neither (it did not answer); after a
 * failure, when to ask again.
 */
interface Admission {
  uid: string;
  generation: number | undefined;
  pod?: V1Pod;
  refused?: PodRejectedError;
  failures: number;
  retryAt: number;
  /** When it was last used: entries unused for ADMITTED_TTL_MS go. */
  usedAt: number;
  /** That the member did not answer was logged at warn (once per proxy UID). */
  warned: boolean;
}

/** The virtual node a delegate is created for, when the member has several (forge/groups.ts). */
export interface VirtualNodeTarget {
  name: string;
  group: NodeGroup;
}

export class MemberPodProvider implements PodProvider {
  /** Changes by host key; a delegate's tell the virtual node of its proxy (VirtualNodePods keeps its own). */
  readonly podChanges$: Observable<PodChange & { virtualNode?: string }>;
  readonly podEvents$: Observable<PodEvent>;
  readonly resync$: Observable<void>;
  readonly unreachable$: Observable<void>;
  #member: ProviderMember;
  /** The host tokens of host-mode delegates: started and stopped with the provider's other writers. */
  readonly tokens: DelegateTokens | undefined;
  #opts: Required<Omit<MemberPodProviderOptions, 'volumes' | 'namespaces' | 'apiAccess' | 'fit'>>;
  #fit: MemberPodProviderOptions['fit'];
  /**
   * Proxies whose delegate fit no member node, by host key, and since when: synced again when room may have appeared.
   * One waiting longer than UNFIT_WAKE_MS is left to the controller's retries (a proxy deleted meanwhile is forgotten).
   */
  #unfit = new Map<string, number>();
  /**
   * What the member's admission made of the delegate of a proxy that looked unfit as forged (a server-side dry-run
   * create), by host key, for that proxy's UID and generation: judged again on each wake without asking again, a
   * failure not asked again before its backoff ends. In the order of last use (the least recently used first).
   */
  #admissions = new Map<string, Admission>();
  /** Delegates created to wait for the member to add a node, by host key: their binding is a lifecycle change. */
  #waiting = new Set<string>();
  #apiAccess: MemberPodProviderOptions['apiAccess'];
  #volumes: MemberPodProviderOptions['volumes'];
  #log: Logger;
  #creations: Creations;
  #namespaces: MemberNamespaces;
  #resizes: Resizes;
  #mirror: ObjectMirror;

  constructor(member: ProviderMember, mirror: ObjectMirror, log: Logger, opts: MemberPodProviderOptions) {
    this.#member = member;
    this.#mirror = mirror;
    this.#log = log;
    const { volumes, namespaces, apiAccess, fit, ...rest } = opts;
    this.#fit = fit;
    this.#opts = { eventReplayWindowMs: 120_000, appearanceWaitMs: APPEARANCE_WAIT_MS, ...rest };
    this.#apiAccess = apiAccess;
    this.tokens = apiAccess && new DelegateTokens(member, apiAccess.host, log, {
      alive: ({ namespace, name }) => member.delegates.get(namespace, name) !== undefined,
      synced: () => member.pods.hasSynced,
      memberNamespace: (ns) => memberNamespace(member.config.namespaceMapping, ns),
      hostMode: (proxy) => this.#hostMode(proxy),
      ...apiAccess.tokens }, apiAccess.proxies);
    this.#volumes = volumes;
    this.#creations = new Creations(this.#opts.appearanceWaitMs);
    this.#namespaces = namespaces ?? new MemberNamespaces(member);
    this.#resizes = new Resizes(member, log);
    // Each delegate change ends the wait for a creation of its key, once: shared by the changes and the held events.
    const delegateChanges$ = member.delegates.changes$.pipe(map((c) => ({ c, creation: this.#creations.take(c) })), share());
    // A delegate changed, or an object a waiting pod needs appeared, or a refused resize came or went.
    this.podChanges$ = merge(
      delegateChanges$.pipe(map(({ c, creation }): PodChange & { virtualNode?: string } => ({ key: c.hostKey,
        lifecycle: c.lifecycle || this.#boundAfterWait(c.hostKey),
        virtualNode: c.virtualNode, ...(isOwnAppearance(c, creation) ? { created: true } : {}) }))),
      mirror.wake$.pipe(map((key) => ({ key, lifecycle: true }))), this.#resizes.changes$,
      (fit?.room$ ?? EMPTY).pipe(mergeMap(() => from(this.#unfitKeys())), map((key) => ({ key, lifecycle: true }))));
    // The member answers (at start, or again): everything is synced again (see PodNotifier.resync$). Status is not
    // written before the first probe answers, so the first answer counts too.
    const reachable$ = member.probe$.pipe(map((p) => p.reachable), distinctUntilChanged());
    this.resync$ = reachable$.pipe(filter((reachable) => reachable), map(() => undefined));
    this.unreachable$ = reachable$.pipe(filter((reachable) => !reachable), map(() => undefined));
    // Events held for a delegate the pod informer had not shown yet go on once it does. Nearly every change holds
    // none: no inner stream is made for those (this runs for every watch event of a delegate).
    const released$ = delegateChanges$.pipe(mergeMap(({ creation }) => (creation?.events.length ? from(creation.events) : EMPTY)));
    const events$ = memberPodEvents(member, this.#creations, released$, log, this.#opts.eventReplayWindowMs);
    // One stream for all subscribers (each virtual node's view): the events are read and told once.
    this.podEvents$ = (this.tokens ? merge(events$, this.tokens.warnings$) : events$).pipe(share());
  }

  get #ctxBase(): Omit<DelegateContext, 'memberNamespace'> {
    return { hostName: this.#member.hostName, nodeName: this.#opts.nodeName, nodeLabels: this.#member.config.labels };
  }

  // The delegates are known. (A fit verdict also needs the member's nodes: #checkFit waits for them on its own.)
  hasSynced(): boolean { return this.#member.pods.hasSynced; }
  available(): boolean { return this.#member.reachable; }
  async waitSynced(): Promise<void> { await this.#member.pods.waitSynced(); }
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
      scheduled: d.spec?.nodeName !== undefined && d.spec.nodeName !== '',
      disruption: deletionDisruption(d),
    };
  }

  getPodStatus(namespace: string, name: string): V1PodStatus | undefined {
    const d = this.#delegate(namespace, name);
    if (!d) return undefined;
    return this.#resizes.statusWith(`${namespace}/${name}`, d, forgeHostStatus(d, this.#opts.hostIP));
  }

  /** Creates the proxy's delegate; for one of the member's group virtual nodes (`vn`), labelled and kept in its group. */
  async createPod(proxy: V1Pod, opts: CreateOptions = {}, vn?: VirtualNodeTarget): Promise<PodNotice[]> {
    const { namespace: hostNamespace, name } = namespacedName(proxy);
    const check = checkMemberNamespace(this.#member.config.namespaceMapping, hostNamespace);
    // A namespace that cannot exist is a configuration matter: retrying changes nothing.
    if (check.error) throw new PodRejectedError(check.reason ?? 'InvalidNamespace', check.error, { retry: false });
    const ns = check.namespace;
    // The delegate has the proxy's name (forgeDelegatePod). Asked again before an earlier create's delegate showed (the
    // proxy may have changed since): its appearance is no longer that create's own, and needs a sync.
    const memberKey = `${ns}/${name}`;
    const earlier = this.#creations.get(memberKey);
    if (earlier) earlier.rv = undefined;
    // A delegate whose claims the member lacks would stay Pending: none is made (tried again while one may come).
    const noVolume = await this.#volumes?.podRejection(proxy);
    if (noVolume) throw noVolume;
    await this.#namespaces.ensure(ns, hostNamespace).catch((err: unknown) => {
      throw namespaceGone(err, ns) ? namespaceTerminating(ns, err) : err;
    });
    const access = this.#accessOf(proxy);
    const virtualNode = vn && { name: vn.name, constraint: groupConstraint(vn.group) };
    const body = forgeDelegatePod(proxy, { ...this.#ctxBase, memberNamespace: ns, restarts: opts.restarts, apiAccess: access.apiAccess,
      virtualNode });
    const group = vn?.group ?? { kind: 'cluster' };
    // What the pod refers to goes first, so the delegate finds it when it starts (prepared already if the fit needed
    // it): its host tokens too, written meanwhile. A creation that fails (a refused fit included) leaves no token Secret
    // behind (settle), and a write that finds the namespace gone or going makes it be created again on the next try.
    const hostKey = `${hostNamespace}/${name}`;
    const hostTokens = access.apiAccess.mode === 'host' ? this.tokens : undefined;
    let outcome: CreationOutcome = 'refused';
    try {
      // A pod of that name the member's cache shows, not this proxy's: refused before a host token is written where
      // that pod could mount it (the create's AlreadyExists says the same for one the cache has not shown).
      const squatter = this.#member.pods.get(memberKey);
      const conflict = squatter && this.#conflict(squatter, ns, hostNamespace, name);
      if (conflict) throw conflict;
      const { waiting, prepared: early } = await this.#checkFit(proxy, body, describeGroup(this.#member.config.name, group),
        group.kind === 'node');
      const [ready, written] = await Promise.allSettled([early ?? this.#mirror.prepare(proxy, ns), hostTokens?.write(proxy, ns)]);
      if (ready.status === 'rejected') throw ready.reason;
      const prepared = ready.value;
      if (written.status === 'rejected') {
        prepared.release(false);
        throw written.reason;
      }
      const rejected = rejection(prepared, hostNamespace);
      if (rejected) {
        prepared.release(false);
        throw rejected;
      }
      const notices = await this.#createDelegate(proxy, ns, body, prepared, earlier, (o) => { outcome = o; });
      if (!notices) return [];
      if (waiting) this.#waiting.add(hostKey);
      return [...notices, ...access.notice ? [access.notice] : [], ...waiting ? [waiting] : []];
    } catch (err) {
      if (namespaceGone(err, ns)) {
        this.#namespaces.forget(ns);
        this.#mirror.forgetNamespace(ns);
        throw namespaceTerminating(ns, err);
      }
      throw err;
    } finally {
      if (hostTokens) {
        await hostTokens.settle(hostKey, outcome).catch((err: unknown) => {
          this.#log.warn({ pod: hostKey, err: toKubeError(err).message }, 'could not delete the host-token Secret of a failed creation');
        });
      }
    }
  }

  /**
   * Creates the delegate `body` in member namespace `ns`, what it refers to `prepared`; tells how it ended
   * (`ended`: created, refused, or unknown when no answer came). Resolves with the notices of a delegate made by this
   * create, and undefined when it was there already (this proxy's, not shown yet).
   */
  async #createDelegate(proxy: V1Pod, ns: string, body: V1Pod, prepared: Prepared, earlier: Creation | undefined,
    ended: (o: CreationOutcome) => void): Promise<PodNotice[] | undefined> {
    const { namespace: hostNamespace, name } = namespacedName(proxy);
    const memberKey = `${ns}/${name}`;
    // A new delegate has the proxy's resources: a refusal about its predecessor is over.
    this.#resizes.drop(`${hostNamespace}/${name}`);
    let created = false;
    // Marked before the create: the member's scheduler may report on the delegate before the create returns. Asked
    // again before it showed, the events held for it stay held.
    const creation: Creation = { hostKey: `${hostNamespace}/${name}`, answered: false, rv: undefined, events: earlier?.events ?? [] };
    this.#creations.begin(memberKey, creation);
    try {
      let rv: string | undefined;
      await this.#member.client.core.createNamespacedPod({ namespace: ns, body }, { ...DISCARD, onVersion: (v) => { rv = v; } });
      created = true;
      ended('created');
      // A proxy's ephemeral containers cannot be created with its delegate: the sync after it appears adds them.
      // (Shown before the answer, the creation has ended already: its appearance was told as a lifecycle change.)
      if (!proxy.spec?.ephemeralContainers?.length) creation.rv = rv;
      this.#creations.answered(memberKey, creation);
      this.#log.debug({ namespace: ns, pod: name }, 'delegate created');
      return prepared.notices;
    } catch (err) {
      const k = toKubeError(err);
      if (k.kind === 'AlreadyExists') {
        // Ours, not shown yet (asked again before it showed, the proxy may have changed since): its appearance needs
        // a sync, as the creation's version stays unknown. Not ours: nothing is awaited.
        await this.#checkExisting(ns, hostNamespace, name).catch((e: unknown) => { this.#creations.end(memberKey, creation); throw e; });
        ended('created');
        // Shown meanwhile, with no change since to end it: nothing left to await.
        if (this.#member.delegates.get(hostNamespace, name)) this.#creations.end(memberKey, creation);
        else this.#creations.answered(memberKey, creation);
        return undefined;
      }
      // Refused: nothing was created. Left without an answer, it may have been: its events stay held a while.
      if (maybeApplied(k)) ended('unknown');
      else this.#creations.end(memberKey, creation);
      if (namespaceGone(k, ns)) throw k;
      if (k.kind === 'Forbidden' || k.kind === 'Invalid' || k.kind === 'BadRequest') {
        throw new PodRejectedError(k.reason || k.kind, k.message, { cause: err });
      }
      throw k;
    } finally {
      prepared.release(created);
    }
  }

  /** Whether the proxy's delegate gets host tokens, as a creation now would decide. */
  #hostMode(proxy: V1Pod): boolean {
    try {
      return this.#accessOf(proxy).apiAccess.mode === 'host';
    } catch {
      return false;
    }
  }

  /**
   * The API access of the proxy's delegate: its annotation's mode, else the member's. Host mode without a known host
   * endpoint falls back to the member's token, told on the proxy.
   */
  #accessOf(proxy: V1Pod): { apiAccess: DelegateApiAccess; notice?: PodNotice } {
    const cfg = this.#apiAccess;
    if (!cfg) return { apiAccess: { mode: 'member' } };
    const m = accessModeOf(proxy, cfg.mode);
    if ('error' in m) throw new PodRejectedError('InvalidAPIAccess', m.error, { retry: false });
    if (m.mode !== 'host') return { apiAccess: { mode: m.mode } };
    const endpoint = cfg.host.endpoint;
    if (!endpoint) {
      return { apiAccess: { mode: 'member' }, notice: { type: 'Warning', reason: 'HostAPIAccessUnavailable',
        message: `the delegate has the member's ServiceAccount token, not the host's: ${cfg.host.unavailable ?? 'no host API endpoint'}; `
          + 'set hostAPI.server (--host-api-server) to the host API server as the member\'s pods reach it' } };
    }
    return { apiAccess: { mode: 'host', secretName: tokenSecretName(namespacedName(proxy).name), endpoint } };
  }

  /**
   * Whether the delegate `body` fits a Ready member node. The forged pod is judged first; only one that looks unfit is
   * judged again as the member would store it (#admitted: tolerations, node selectors and overhead its admission
   * adds). One that fits none would stay Pending in the member: in a member that adds nodes (advisory, or auto with a
   * sign of it) it is created all the same, and the notice says it waits for a node (the proxy's Offloaded reason);
   * otherwise it is refused, with the largest free slot in the reason, and tried again when room may have appeared
   * (room$). A delegate pinned to one member node (`pinned`: the member shown per node) is refused in advisory and
   * auto too: no node the member adds can take it. No verdict before the member's nodes are listed (and, for auto,
   * whether it adds nodes read): the pod is tried again soon, nothing shown.
   */
  async #checkFit(proxy: V1Pod, body: V1Pod, scope: string, pinned: boolean): Promise<{ waiting?: PodNotice; prepared?: Prepared }> {
    const hostKey = objectKey(proxy);
    const gate = this.#fit;
    if (gate && !gate.ready()) {
      throw new PodNotReadyError(`member ${this.#member.config.name}: its nodes are not listed yet`, FIT_NOT_READY_RETRY_MS);
    }
    let answer = gate?.fit(body);
    let prepared: Prepared | undefined;
    if (gate && answer && !answer.fits) {
      const admitted = await this.#admitted(proxy, body);
      prepared = admitted?.prepared;
      if (admitted) answer = gate.fit(admitted.pod);
    }
    if (!gate || !answer || answer.fits) {
      this.#unfit.delete(hostKey);
      return { prepared };
    }
    const growth = gate.growth();
    if (!pinned && (gate.mode === 'advisory' || (gate.mode === 'auto' && growth !== undefined))) {
      this.#unfit.delete(hostKey);
      return { prepared, waiting: { type: 'Normal', reason: WAITING_FOR_SCALE_UP, message: scaleUpMessage(scope, answer, growth), offloaded: true } };
    }
    prepared?.release(false);
    if (!this.#unfit.has(hostKey)) this.#unfit.set(hostKey, Date.now());
    // The message carries the member's free room, which changes with every pod there: the host rewrites it seldom.
    throw new PodRejectedError('NoMemberNodeFits', noFitMessage(scope, answer), { changing: true });
  }

  /**
   * The delegate as the member would store it (what the fit reads of it): a server-side dry-run create (its admission
   * runs, nothing is stored), asked once per proxy UID and generation. Refused for a ServiceAccount the member lacks
   * (its ServiceAccount admission; the copies are made only for a delegate), it is asked again once what the pod
   * refers to is prepared, which is handed on (`prepared`: the caller creates the delegate with it, or releases it).
   * Refused otherwise (a quota, a policy, the namespace terminating), the refusal is thrown: the create would meet it
   * too, and the proxy shows it. Not answered: undefined, the forged pod is judged. A failure is kept for that proxy
   * generation, and the member asked again only after a backoff.
   */
  async #admitted(proxy: V1Pod, body: V1Pod): Promise<{ pod: V1Pod; prepared?: Prepared } | undefined> {
    const hostKey = objectKey(proxy);
    const uid = proxy.metadata?.uid ?? '';
    const generation = proxy.metadata?.generation;
    const now = Date.now();
    this.#expireAdmissions(now);
    const known = this.#admissions.get(hostKey);
    const same = known !== undefined && known.uid === uid && known.generation === generation;
    if (same) {
      this.#keepAdmission(hostKey, { ...known, usedAt: now });
      if (known.pod) return { pod: known.pod };
      if (now < known.retryAt) {
        if (known.refused) throw known.refused;
        return undefined;
      }
    }
    const failures = same ? known.failures : 0;
    const warned = known?.uid === uid && known.warned;
    const namespace = body.metadata?.namespace ?? '';
    const dryRun = (): Promise<V1Pod> => this.#member.client.core.createNamespacedPod({ namespace, body, dryRun: 'All' });
    let prepared: Prepared | undefined;
    try {
      let pod: V1Pod;
      try {
        pod = await dryRun();
      } catch (err) {
        const k = toKubeError(err);
        if (k.kind !== 'Forbidden' || !MISSING_SERVICE_ACCOUNT.test(k.message)) throw err;
        prepared = await this.#mirror.prepare(proxy, namespace);
        pod = await dryRun();
      }
      const view = fitView(pod);
      this.#keepAdmission(hostKey, { uid, generation, pod: view, failures: 0, retryAt: 0, usedAt: now, warned });
      return { pod: view, prepared };
    } catch (err) {
      prepared?.release(false);
      const k = toKubeError(err);
      const retryAt = now + Math.min(DRY_RUN_RETRY_MS * 2 ** failures, DRY_RUN_RETRY_MAX_MS);
      const failed = { uid, generation, failures: failures + 1, retryAt, usedAt: now };
      if (k.kind === 'Forbidden' || k.kind === 'Invalid') {
        // What the member's admission says of the pod: the create would be refused the same way.
        const refused = new PodRejectedError(k.reason || k.kind, k.message, { cause: err });
        this.#keepAdmission(hostKey, { ...failed, refused, warned });
        throw refused;
      }
      this.#keepAdmission(hostKey, { ...failed, warned: true });
      if (!warned) {
        this.#log.warn({ namespace, pod: body.metadata?.name, err: k.message },
          'the member did not answer a dry-run create of the delegate; its fit is judged as forged, and the member asked again later');
      }
      return undefined;
    }
  }

  /** Keeps `a` for `hostKey` as the most recently used, within ADMITTED_CACHE entries. */
  #keepAdmission(hostKey: string, a: Admission): void {
    this.#admissions.delete(hostKey);
    if (this.#admissions.size >= ADMITTED_CACHE) this.#admissions.delete(this.#admissions.keys().next().value ?? '');
    this.#admissions.set(hostKey, a);
  }

  /** Drops what was kept for proxies not tried for ADMITTED_TTL_MS (deleted ones among them): the oldest come first. */
  #expireAdmissions(now: number): void {
    for (const [key, a] of this.#admissions) {
      if (a.usedAt > now - ADMITTED_TTL_MS) break;
      this.#admissions.delete(key);
    }
  }

  /** Whether a delegate created to wait for a node has been bound to one: its proxy's reason changes then. */
  #boundAfterWait(hostKey: string): boolean {
    if (!this.#waiting.has(hostKey)) return false;
    const { namespace, name } = splitKey(hostKey);
    const d = this.#member.delegates.get(namespace, name);
    if (d && !d.spec?.nodeName) return false;
    this.#waiting.delete(hostKey);
    return d !== undefined;
  }

  #unfitKeys(): string[] {
    const since = Date.now() - UNFIT_WAKE_MS;
    for (const [key, at] of this.#unfit) if (at < since) this.#unfit.delete(key);
    return [...this.#unfit.keys()];
  }

  creating(namespace: string, name: string): boolean {
    const creation = this.#creations.get(`${memberNamespace(this.#member.config.namespaceMapping, namespace)}/${name}`);
    return creation?.answered === true && creation.hostKey === `${namespace}/${name}`;
  }

  /** A pod of that name exists: fine if it is this proxy's delegate, a conflict if it is not ours. */
  async #checkExisting(ns: string, hostNamespace: string, name: string): Promise<void> {
    const conflict = this.#conflict(await this.#member.client.core.readNamespacedPod({ namespace: ns, name }), ns, hostNamespace, name);
    if (conflict) throw conflict;
  }

  /** Why `existing`, a member pod of the delegate's name, is not this proxy's to run as; undefined if it is. */
  #conflict(existing: V1Pod, ns: string, hostNamespace: string, name: string): PodRejectedError | undefined {
    const ref = hostRefOf(existing, this.#member.owner);
    if (!ref) {
      return new PodRejectedError('DelegateConflict',
        `member ${this.#member.config.name} already has a pod ${ns}/${name} that clusterlet did not create; it is left untouched: delete or rename it, or map the namespace elsewhere (namespaceMapping)`);
    }
    // Ours: this proxy's (the cache had not seen it yet) or an earlier proxy's of its name, which the controller
    // replaces. Another proxy's (two host namespaces that map to one member namespace, claimed in turn across a
    // restart) is not this one's to run as.
    if (ref.namespace !== hostNamespace || ref.name !== name) {
      return new PodRejectedError('DelegateConflict', `member ${this.#member.config.name} already has a pod ${ns}/${name} `
        + `that runs proxy ${ref.namespace}/${ref.name}; it is left untouched: two host namespaces map to one member namespace (namespaceMapping)`);
    }
    return undefined;
  }

  async updatePod(proxy: V1Pod, vn?: VirtualNodeTarget): Promise<PodNotice[]> {
    const { namespace, name } = namespacedName(proxy);
    const d = this.#delegate(namespace, name);
    const ns = d?.metadata?.namespace;
    const dName = d?.metadata?.name;
    if (!d || !ns || !dName || d.metadata?.deletionTimestamp) return [];
    // A mode annotation made invalid after the delegate's creation changes nothing of a running delegate.
    let apiAccess: DelegateApiAccess;
    try {
      apiAccess = this.#accessOf(proxy).apiAccess;
    } catch {
      apiAccess = { mode: 'member' };
    }
    const ctx = { ...this.#ctxBase, memberNamespace: ns, apiAccess, virtualNode: vn && { name: vn.name } };
    const updated = delegateUpdate(proxy, d, ctx);
    if (updated) {
      await this.#member.client.core.replaceNamespacedPod({ namespace: ns, name: dName, body: updated });
      this.#log.debug({ namespace: ns, pod: dName }, 'delegate updated');
    }
    await this.#addEphemeralContainers(d, ephemeralContainersToAdd(proxy, d, ctx));
    return this.#resizes.resize(proxy, d);
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
    const { namespace, name, uid } = d.metadata ?? {};
    if (add.length === 0 || !namespace || !name) return;
    const order = [...d.spec?.ephemeralContainers ?? [], ...add].map((c) => ({ name: c.name }));
    await this.#member.client.core.patchNamespacedPodEphemeralcontainers({
      namespace, name,
      body: { metadata: { uid }, spec: { '$setElementOrder/ephemeralContainers': order, ephemeralContainers: add } },
    }, { contentType: PATCH.strategic });
    this.#log.debug({ namespace, pod: name, containers: add.map((c) => c.name) }, 'ephemeral containers added to the delegate');
  }

  async deletePod(namespace: string, name: string, gracePeriodSeconds?: number): Promise<void> {
    this.#resizes.drop(`${namespace}/${name}`);
    this.#unfit.delete(`${namespace}/${name}`);
    this.#admissions.delete(`${namespace}/${name}`);
    this.#waiting.delete(`${namespace}/${name}`);
    const d = this.#delegate(namespace, name);
    const ns = d?.metadata?.namespace;
    const dName = d?.metadata?.name;
    if (!d || !ns || !dName) {
      await this.tokens?.remove(`${namespace}/${name}`);
      return;
    }
    try {
      await this.#member.client.core.deleteNamespacedPod({
        namespace: ns, name: dName, gracePeriodSeconds, body: { gracePeriodSeconds, preconditions: { uid: d.metadata?.uid } },
      }, DISCARD);
    } catch (err) {
      // Gone already, or replaced by another pod of that name (the UID precondition): nothing of ours to delete.
      ignoreGone(err);
    }
    await this.tokens?.remove(`${namespace}/${name}`);
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

/** How soon a creation is tried again while its member namespace is being deleted (nothing tells when it is gone). */
const NAMESPACE_TERMINATING_RETRY_MS = 2_000;

/** A creation that found its member namespace gone or being deleted: made again on the next try, soon. */
function namespaceTerminating(ns: string, cause: unknown): PodRejectedError {
  return new PodRejectedError('MemberNamespaceTerminating', `member namespace ${ns} is gone or being deleted `
    + `(${toKubeError(cause).message}); it is made again once the member has deleted it`, { cause, retryAfterMs: NAMESPACE_TERMINATING_RETRY_MS });
}

/**
 * Whether a create that failed with `k` may have been applied all the same: no answer came (the connection lost, a
 * timeout), or the server could not say (a 5xx). Not when the request was never sent (NotLeader: the replica's fence).
 */
function maybeApplied(k: KubeError): boolean {
  return (k.kind === 'Unavailable' && !refusedByFence(k)) || k.kind === 'Unknown';
}

