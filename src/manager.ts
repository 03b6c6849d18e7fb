// Wires one process: the host client, and per member its cluster, node controller and pod controller.
// Per member, the caches run on every replica; the writers only while this replica leads it (src/host/ha/).
// Members are isolated: one that cannot be reached or fails never stops another.
// One file, though long: with virtualnodes.ts (the node and pod controllers of each of a member's virtual nodes), it
// is the only place host and member side meet (test/unit/layers.test.ts), so everything a member's wiring needs is here.
import { ConfigError, type Config, type MemberConfig } from './config.ts';
import { toKubeError } from './kube/errors.ts';
import { ClusterClient } from './kube/client.ts';
import { type ClusterAccess, inClusterAccess, loadKubeconfigFile } from './kube/kubeconfig.ts';
import { MemberCluster, type MemberOptions, type ProbeResult } from './member/cluster.ts';
import { fileSource, followMemberAccess, type AccessWatcher } from './member/credentials.ts';
import type { AccessSource } from './provider/access.ts';
import { secretSource } from './host/credentials.ts';
import { memberConflict, ProfileReconciler, type MemberState, type ProfileMembers } from './host/profiles/reconciler.ts';
import { hostProfileApi } from './host/profiles/api.ts';
import type { NodeControllerOptions } from './host/node/controller.ts';
import { MemberPodProvider } from './member/pod/provider.ts';
import { MemberNamespaces } from './member/pod/namespaces.ts';
import { proxyInformer } from './host/pod/controller.ts';
import { MemberVirtualNodes, type KubeletPorts } from './virtualnodes.ts';
import { CLUSTER_GRANULARITY, describeForeignNode, ownGroup } from './forge/groups.ts';
import { Leadership, hostLeaseApi, leaseInformer } from './host/ha/leadership.ts';
import type { LeaseElector } from './host/ha/elector.ts';
import { MemberReflection } from './member/reflection/manager.ts';
import { SharedReflection } from './host/reflection/shared.ts';
import { MemberVolumes, memberClaimsApi } from './member/storage/volumes.ts';
import { VolumeController } from './host/storage/controller.ts';
import { hostClaims, hostStorageApi, hostVolumes } from './host/storage/api.ts';
import type { Informer } from './kube/informer.ts';
import type { V1PersistentVolume, V1PersistentVolumeClaim, V1Pod } from '@kubernetes/client-node';
import type { Subscription } from 'rxjs';
import { hostClusterID } from './host/identity.ts';
import { forgetMember } from './metrics.ts';
import { adoptLegacyObjects } from './member/adopt.ts';
import { retryWithBackoff } from './util/backoff.ts';
import type { Logger } from './log.ts';
import type { NodeDirectory, VirtualNode } from './host/api/nodes.ts';
import { hostApiAccess, hostEndpointFor } from './host/tokens.ts';
import type { DelegateTokensOptions } from './member/pod/tokens.ts';
import { settle, settleOrExit } from './util/settle.ts';

export interface ManagerOptions {
  member?: MemberOptions;
  node?: NodeControllerOptions;
  /** How often a ClusterProfile's condition is judged again (default 5 s). */
  profileStatusPeriodMs?: number;
  /** How host tokens of delegates are kept fresh (member/pod/tokens.ts). */
  tokens?: DelegateTokensOptions;
}

/** What runs for a member: started once it is set up, stopped with the process. */
interface Part { start(): void; stop(): void }

export interface MemberParts {
  config: MemberConfig;
  /** Loaded at start from the member's kubeconfig file; undefined for one in a Secret (read when set up). */
  access?: ClusterAccess;
  /** Its virtual nodes, their node and pod controllers and kubelet API runtimes, while this replica leads it. */
  vnodes?: MemberVirtualNodes;
  /** The member's caches and probe, running on every replica (warm for a take-over). */
  cluster?: MemberCluster;
  /** The node's proxy pods, likewise warm on every replica. */
  proxies?: Informer<V1Pod>;
  /**
   * The writers that run while this replica leads the member (nodes, reflectors, pod controllers), in start
   * order; stopped in reverse. The nodes start first, on their own (see #lead).
   */
  parts: Part[];
  /** Counts the times this replica started leading the member (a lead that ended stops its pending starts). */
  term: number;
  /** Follows this replica's leadership of the member. */
  leading?: Subscription;
  /** This replica's election for the member (undefined with --leader-elect=false). */
  elector?: LeaseElector;
  /** Set while the member could not be set up (e.g. its kubeconfig Secret is missing); retried. */
  setupError?: string;
  /** Re-reads the kubeconfig file or Secret and moves the member's client to new credentials. */
  credentials?: AccessWatcher;
  /** Where a ClusterProfile member's access comes from (static members: their file or Secret). */
  source?: AccessSource;
  /** Its ClusterProfile went away: a setup still pending or retried does not go on. */
  removed?: boolean;
  /** A ClusterProfile member's last probe, for the profile's condition. */
  probe?: ProbeResult;
  probeSub?: Subscription;
}

export class Manager implements NodeDirectory {
  readonly config: Config;
  readonly host: ClusterClient;
  /** Static members, then those of ClusterProfiles as they come (and leave). */
  readonly members: MemberParts[];
  #log: Logger;
  #opts: ManagerOptions;
  #retryTimers: NodeJS.Timeout[] = [];
  /**
   * The host watches every member's reflection shares (referenced ConfigMaps and Secrets, Services, EndpointSlices
   * with --reflect-host-endpoints, the namespaces that accept exports): one of each, whatever the number of members.
   */
  readonly hostReflection: SharedReflection;
  /** Every host claim, and the host volumes clusterlet provisioned: one watch of each shared by every member. */
  readonly hostClaims: Informer<V1PersistentVolumeClaim>;
  readonly hostVolumes: Informer<V1PersistentVolume>;
  /** Which replica leads which member; undefined with --leader-elect=false (this one leads all). */
  readonly leadership: Leadership | undefined;
  /** Members from the host's ClusterProfiles (--member-source=clusterprofile), started and stopped as they come and go. */
  readonly profiles: ProfileReconciler | undefined;
  #stopped = false;
  /** How this process reaches the host API server (its server and CA are the default for pods' host API access). */
  #hostAccess: ClusterAccess;
  /** The host's identity on member objects: --host-name, or its cluster ID once read. */
  #hostName: string | undefined;
  /** Ports of their own for the virtual nodes of members shown per pool or node (the kubelet API server's). */
  #kubeletPorts: KubeletPorts | undefined;

  constructor(config: Config, log: Logger, opts: ManagerOptions = {}) {
    this.config = config;
    this.#log = log;
    this.#opts = opts;
    const access = this.#hostAccess = config.hostKubeconfig ? loadKubeconfigFile(config.hostKubeconfig) : inClusterAccess();
    this.host = new ClusterClient(access, { cluster: 'host', qps: config.hostQPS, burst: config.hostBurst,
      http2: config.apiProtocol === 'http2' });
    // A member kubeconfig file that cannot work is a configuration error now, not a retry loop later.
    this.members = config.members.map((m) => ({ config: m, access: m.kubeconfig ? loadKubeconfigFile(m.kubeconfig) : undefined, parts: [], term: 0 }));
    this.leadership = config.leaderElection
      ? new Leadership(hostLeaseApi(this.host, config.leaderElection.namespace),
        leaseInformer(this.host, config.leaderElection.namespace, log), config.leaderElection, log)
      : undefined;
    const h = this.host;
    this.hostReflection = new SharedReflection(h, { exportNamespaces: config.exportNamespaces, endpoints: config.reflectHostEndpoints }, log);
    this.hostClaims = hostClaims(h, log);
    this.hostVolumes = hostVolumes(h, log);
    const cp = config.clusterProfiles;
    this.profiles = cp && new ProfileReconciler(hostProfileApi(h, cp, log, config.watchSilenceSeconds * 1000), this.#profileMembers(), cp, log,
      { statusPeriodMs: opts.profileStatusPeriodMs });
  }

  /** The members' one start and stop path, as the ClusterProfile reconciler drives it. */
  #profileMembers(): ProfileMembers {
    return {
      add: (config, source) => {
        const m: MemberParts = { config, source, parts: [], term: 0 };
        this.members.push(m);
        settle(this.#startMember(m, 0), this.#log, 'member setup failed');
      },
      remove: (name) => this.#removeMember(name),
      conflict: (config) => memberConflict(config, this.members.map((m) => m.config)),
      state: (name) => {
        const m = this.members.find((x) => x.config.name === name);
        return m && this.#memberState(m);
      },
    };
  }

  #memberState(m: MemberParts): MemberState {
    const ledElsewhere = this.leadership?.heldElsewhere(m.config.name) ?? false;
    if (m.setupError !== undefined) return { phase: 'failed', error: m.setupError, ledElsewhere };
    if (!m.cluster) return { phase: 'starting', ledElsewhere };
    return { phase: 'running', leading: this.leadership ? m.elector?.leading === true : true, reachable: m.probe?.reachable,
      reason: m.probe?.reason, nodeName: m.config.nodeName, replica: this.leadership?.identity };
  }

  /**
   * Stops one member for good (its ClusterProfile went away): its Lease is written free, then its writers, credential
   * watch and caches stop, as at process stop, and its metric series go. Its node stays registered and turns NotReady
   * once its lease expires; its proxies stay bound to it. Other members are not touched.
   */
  async #removeMember(name: string): Promise<void> {
    const m = this.members.find((x) => x.config.name === name);
    if (!m) return;
    m.removed = true;
    this.members.splice(this.members.indexOf(m), 1);
    m.leading?.unsubscribe();
    // Writers first (as a lost lead does), then the Lease is written free for whoever gets the member back.
    this.#stopWriters(m);
    await this.leadership?.remove(name);
    this.#stopMemberCaches(m);
    await forgetMember(name);
    this.#log.info({ member: name, node: m.config.nodeName }, 'member removed');
  }

  /** What runs for a member on every replica: its credential watch, probe subscription, proxies and member caches. */
  #stopMemberCaches(m: MemberParts): void {
    m.credentials?.stop();
    m.probeSub?.unsubscribe();
    m.proxies?.stop();
    m.cluster?.stop();
  }

  /**
   * What must hold before anything starts: the Leases' namespace exists on the host (clusterlet never creates
   * namespaces there). A ConfigError names the flag; a host that does not answer yet is no verdict.
   */
  async preflight(): Promise<void> {
    const le = this.config.leaderElection;
    if (!le) return;
    try {
      await this.host.core.readNamespace({ name: le.namespace });
    } catch (err) {
      if (toKubeError(err).kind !== 'NotFound') {
        this.#log.warn({ err: toKubeError(err).message, namespace: le.namespace }, 'could not check the leader election namespace');
        return;
      }
      throw new ConfigError('--leader-elect-namespace', `namespace "${le.namespace}" does not exist on the host: create it `
        + '(manifests/host does), choose another with --leader-elect-namespace, or run without election (--leader-elect=false)');
    }
  }

  /** Where the virtual nodes of members shown per pool or node get kubelet API ports of their own; before start(). */
  useKubeletPorts(ports: KubeletPorts): void { this.#kubeletPorts = ports; }

  /** The host's identity (clusterlet.io/origin) once known. */
  get hostName(): string | undefined { return this.#hostName; }

  start(): void {
    this.hostReflection.start();
    this.hostClaims.start();
    this.hostVolumes.start();
    void (async () => {
      this.#hostName = this.config.hostName ?? await hostClusterID(this.host, this.#log, () => this.#stopped);
      this.#log.info({ hostName: this.#hostName, configured: this.config.hostName !== undefined }, 'host identity');
      this.leadership?.start();
      for (const m of this.members) settle(this.#startMember(m, 0), this.#log, 'member setup failed');
      this.profiles?.start();
    })().catch((err: unknown) => { if (!this.#stopped) throw err; });
  }

  /**
   * Sets the member up on every replica: its client, and the caches a leader works from (the member's nodes and
   * pods, the node's proxies), kept warm. The writers start when this replica leads the member (#lead).
   */
  async #startMember(m: MemberParts, attempt: number): Promise<void> {
    if (this.#stopped || m.removed) return;
    const log = this.#log.child({ member: m.config.name });
    try {
      // Members start once the host's identity is known (start()).
      const hostName = this.#hostName;
      if (hostName === undefined) throw new Error('the host identity is not known yet');
      const source = this.#accessSource(m);
      const access = m.access ?? await source.read();
      await this.#checkNodeName(m.config);
      if (m.removed) return;
      // Writes for the member, to it and to the host, go out only while this replica surely leads it.
      const fence = this.leadership
        ? () => (m.elector?.mayWrite() ? undefined : `this replica does not lead member ${m.config.name}`) : undefined;
      const client = new ClusterClient(access, { cluster: m.config.name, qps: m.config.qps, burst: m.config.burst, fence,
        http2: this.config.apiProtocol === 'http2' });
      // The host client the member's writers use: fenced by the member's leadership (the shared one without election).
      const hostWriter = fence ? this.host.fenced(fence) : this.host;
      const silence = this.config.watchSilenceSeconds * 1000;
      const cluster = m.cluster = new MemberCluster(m.config, client, hostName, log,
        { watchSilenceMs: silence, probeIntervalMs: this.config.probePeriodSeconds * 1000,
          probeFailureThreshold: this.config.probeFailureThreshold, ...this.#opts.member });
      m.proxies = proxyInformer(this.host, m.config.nodeName, log, silence);
      // A rewritten kubeconfig (file or Secret) is used from then on, without a restart.
      m.credentials = followMemberAccess(source, client, log);
      m.setupError = undefined;
      // A ClusterProfile member's reachability is shown on its profile.
      if (m.source) m.probeSub = cluster.probe$.subscribe((p) => { m.probe = p; });
      cluster.start();
      m.proxies.start();
      if (!this.leadership) { this.#lead(m, cluster, hostWriter, log); return; }
      // Added once set up: ready to lead it from then on.
      const elector = m.elector = this.leadership.add(m.config.name, () => true);
      m.leading = elector.leading$.subscribe((leading) => { if (leading) this.#lead(m, cluster, hostWriter, log); else this.#unlead(m, log); });
    } catch (err) {
      m.setupError = (err as Error).message;
      const delay = Math.min(60_000, 1000 * 2 ** attempt);
      log.error({ err: m.setupError, retryInMs: delay }, 'member setup failed; retrying');
      this.#retryTimers.push(setTimeout(() => settle(this.#startMember(m, attempt + 1), log, 'member setup failed'), delay));
    }
  }

  /**
   * A host node of the member's node name that is not this member's (forge/groups.ts `ownGroup`: a kubelet's, another
   * member's, one recording a group that is not the whole member's) is never taken over: its pods would be delegated
   * and its status overwritten. The member's setup fails, saying so.
   */
  async #checkNodeName(member: MemberConfig): Promise<void> {
    const node = await this.host.core.readNode({ name: member.nodeName }).catch((err: unknown) => {
      if (toKubeError(err).kind === 'NotFound') return undefined;
      throw err;
    });
    if (node && ownGroup(node, member.name, member.nodeName) === undefined) {
      throw new Error(`${describeForeignNode(node, member.name)}: clusterlet does not take over a node that is not member `
        + `${member.name}'s; choose another node name`);
    }
  }

  /**
   * This replica leads the member: its node, reflectors and pod controller start, from the warm caches (`cluster`) and
   * with the member's host writer (`host`).
   */
  #lead(m: MemberParts, cluster: MemberCluster, host: ClusterClient, log: Logger): void {
    // Set with the member's caches, before any lead (#startMember).
    const proxies = m.proxies;
    if (!proxies) throw new Error(`member ${m.config.name} leads before its proxies are watched`);
    const term = ++m.term;
    const silence = this.config.watchSilenceSeconds * 1000;
    const access = m.config.apiAccess ?? { mode: 'host' };
    const hostApi = hostApiAccess(host, hostEndpointFor(access.hostServer, this.#hostAccess), this.#hostAccess.ca?.toString('utf8') ?? '');
    if (hostApi.unavailable) log.warn({ reason: hostApi.unavailable }, "host API access is off: delegates get the member's ServiceAccount tokens");
    // The member's volumes make the mapped namespace as the pod provider does (one MemberNamespaces for both), and
    // gate its delegates.
    const namespaces = new MemberNamespaces(cluster);
    const volumes = new MemberVolumes(cluster, memberClaimsApi(cluster.client, cluster.owner, log),
      (ns, hostNs): Promise<void> => namespaces.ensure(ns, hostNs), this.hostClaims, log);
    // The mirror, Services and exports, over the shared host watches; their host writes go through the member's writer.
    const reflection = new MemberReflection(cluster, this.hostReflection.forMember(host, m.config, log), log);
    const provider = new MemberPodProvider(cluster, reflection.mirror, log, { nodeName: m.config.nodeName, hostIP: this.config.nodeIP,
      volumes, namespaces, fit: cluster.fitGate(),
      apiAccess: { mode: access.mode, host: hostApi, tokens: { maxAgeMs: this.config.hostTokenMaxAgeMs, ...this.#opts.tokens },
        // Read when a token Secret found in the member is matched, after the nodes below are made.
        proxies: { get: (ns: string, name: string): V1Pod | undefined => vnodes.proxy(ns, name) } } });
    // Its virtual nodes: the whole member's, or one per pool or member node, each with its node and pod controllers.
    const vnodes: MemberVirtualNodes = m.vnodes = new MemberVirtualNodes({
      member: m.config, cluster, provider, host, baseProxies: proxies,
      node: {
        memberName: m.config.name, labels: m.config.labels, taints: m.config.taints,
        nodeIP: this.config.nodeIP, kubeletPort: m.config.kubeletPort ?? this.config.kubeletPort,
        hostAPI: hostApi.endpoint
          ? { available: true, message: `offloaded pods reach the host API server at ${hostApi.endpoint.host}:${hostApi.endpoint.port}` }
          : { available: false, message: `offloaded pods get the member's ServiceAccount tokens: ${hostApi.unavailable ?? ''}` },
      },
      nodeOptions: this.#opts.node, podSyncWorkers: this.config.podSyncWorkers, watchSilenceMs: silence, ports: this.#kubeletPorts,
    }, log);
    const grouped = (m.config.nodes ?? CLUSTER_GRANULARITY).mode !== 'cluster';
    const storage = new VolumeController(hostStorageApi(host, { claims: this.hostClaims, volumes: this.hostVolumes }, m.config.nodeName),
      volumes, { member: m.config.name, nodeName: m.config.nodeName, ...m.config.storage,
        ...grouped ? { isOwnNode: (name: string) => vnodes.has(name), zoneOf: (name: string) => vnodes.zoneOf(name) } : {} }, log);
    const pods: Part = { start: () => vnodes.startPods(), stop: () => vnodes.stopPods() };
    m.parts = [vnodes, reflection, volumes, storage, ...provider.tokens ? [provider.tokens] : [], pods];
    // The nodes register, or show this replica's address, whatever happens next.
    vnodes.start();
    const over = (): boolean => this.#stopped || m.term !== term;
    settleOrExit((async () => {
      // Objects an earlier version labelled with the old default origin are this host's: adopted before any
      // controller judges what is ours (else its delegates would be taken for someone else's).
      if (this.config.hostName === undefined) {
        await retryWithBackoff(() => adoptLegacyObjects(cluster.client, cluster.owner, log),
          'could not adopt objects of the old default origin', log, over).catch(() => undefined);
      }
      if (over()) return;
      for (const p of m.parts) if (p !== vnodes) p.start();
      log.info({ node: m.config.nodeName }, 'member started');
    })(), log, 'member start failed');
  }

  /** This replica no longer leads the member: every writer stops at once; the caches stay warm. */
  #unlead(m: MemberParts, log: Logger): void {
    if (this.#stopWriters(m)) log.info({ node: m.config.nodeName }, 'member stopped: another replica leads it');
  }

  /** Stops the member's writers, in reverse start order, and any start still pending; false if none ran. */
  #stopWriters(m: MemberParts): boolean {
    if (m.parts.length === 0) return false;
    m.term++;
    for (const p of m.parts.toReversed()) p.stop();
    m.parts = [];
    m.vnodes = undefined;
    return true;
  }

  /** Where the member's kubeconfig comes from: its ClusterProfile's access provider, its file, or its Secret in the host. */
  #accessSource(m: MemberParts): AccessSource {
    if (m.source) return m.source;
    if (m.config.kubeconfig !== undefined) return fileSource(m.config.kubeconfig);
    if (m.config.kubeconfigSecret) return secretSource(this.host, m.config.kubeconfigSecret);
    // Configuration gives every static member one of the two (config.ts), and every profile member a source.
    throw new Error(`member "${m.config.name}" has no kubeconfig, kubeconfig Secret or ClusterProfile`);
  }

  /** The virtual nodes whose member and pod controllers run, for the kubelet API. */
  nodes(): VirtualNode[] {
    return this.members.flatMap((m) => m.vnodes?.nodes() ?? []);
  }

  /**
   * Every static member set up (its caches running), led here or not, and the ClusterProfiles listed. A profile
   * member that cannot be set up says so on its profile, not here: the profiles are another team's objects.
   */
  ready(): boolean {
    return this.members.every((m) => m.cluster !== undefined || m.source !== undefined) && (this.profiles?.synced ?? true);
  }

  /**
   * Stops the process's work. A clean stop (`handOver`) stops the writers and then writes this replica's Leases
   * free, so another replica takes over at once; without it they expire.
   */
  async stop(opts: { handOver?: boolean } = {}): Promise<void> {
    this.#stopped = true;
    this.profiles?.stop();
    for (const t of this.#retryTimers) clearTimeout(t);
    // Leadership first: losing it stops each led member's writers before anything else goes.
    if (opts.handOver) await this.leadership?.release();
    else this.leadership?.stop();
    for (const m of this.members) {
      m.leading?.unsubscribe();
      this.#stopWriters(m);
      this.#stopMemberCaches(m);
    }
    this.hostReflection.stop();
    this.hostClaims.stop();
    this.hostVolumes.stop();
  }
}
