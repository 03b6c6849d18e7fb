// The virtual nodes of one member, while this replica leads it: one for the whole member, or one per group of its
// nodes (a pool, a member node: forge/groups.ts), each with its node controller, pod controller (over its view of the
// member's one pod provider) and kubelet API runtime. Groups come and go with the member's nodes. A virtual node of
// this member that its granularity no longer shows (a pool gone, a switch of granularity) stays while pods are bound to
// it, tainted so that no new pod goes there (RETIRING_TAINT), and is deleted once the last of them is gone.
// Beside manager.ts, the one other place host and member side meet: it wires the controllers of each virtual node.
import { auditTime, interval, merge, Subject, type Subscription } from 'rxjs';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import type { ClusterClient } from './kube/client.ts';
import { Informer, splitKey } from './kube/informer.ts';
import { listWatch } from './kube/listwatch.ts';
import { toKubeError } from './kube/errors.ts';
import { MEMBER_LABEL, RETIRING_TAINT_KEY } from './forge/keys.ts';
import { CLUSTER_GRANULARITY, describeForeignNode, groupId, ownGroup, virtualNodeName, type NodeGranularity, type NodeGroup }
  from './forge/groups.ts';
import { isDaemonSetPod, isTerminal } from './forge/pod.ts';
import type { NodeContext } from './forge/node.ts';
import type { MemberConfig } from './config.ts';
import type { MemberCluster } from './member/cluster.ts';
import type { MemberPodProvider } from './member/pod/provider.ts';
import { VirtualNodePods } from './member/pod/view.ts';
import { MemberRuntime } from './member/runtime/runtime.ts';
import { NodeController, type NodeControllerOptions } from './host/node/controller.ts';
import { PodController, proxyInformer } from './host/pod/controller.ts';
import type { VirtualNode } from './host/api/nodes.ts';
import type { Logger } from './log.ts';
import { settleOrExit } from './util/settle.ts';

/** Opens and closes a kubelet API port for one virtual node (KubeletServer.openPort). */
export interface KubeletPorts {
  open(): Promise<number>;
  close(port: number): void;
}

/**
 * Why a node is retiring (its taint's value): its member is shown at another granularity now, or its group (a pool, a
 * member node) is gone.
 */
type RetiringReason = 'granularity-changed' | 'group-gone';

function retiringReason(group: NodeGroup, now: NodeGranularity): RetiringReason {
  const same = (group.kind === 'cluster' && now.mode === 'cluster') || (group.kind === 'node' && now.mode === 'node')
    || (group.kind === 'pool' && now.mode === 'pool' && group.label === now.label);
  return same ? 'group-gone' : 'granularity-changed';
}

/** How long a name found to be someone else's node is not looked at again. */
const REFUSED_RECHECK_MS = 300_000;

/** Whether a host node carries the retiring taint (clusterlet's, of an earlier granularity). */
const isRetiring = (n: V1Node): boolean => (n.spec?.taints ?? []).some((t) => t.key === RETIRING_TAINT_KEY);

/** What a member's virtual nodes are made of. */
export interface VirtualNodesOptions {
  member: MemberConfig;
  cluster: MemberCluster;
  provider: MemberPodProvider;
  /** The member's host writer (fenced by its leadership). */
  host: ClusterClient;
  /** Every virtual node's context but its name and group. */
  node: Omit<NodeContext, 'nodeName' | 'group'>;
  nodeOptions?: NodeControllerOptions;
  /** The proxies of the member's own node name, kept warm by the manager on every replica. */
  baseProxies: Informer<V1Pod>;
  podSyncWorkers: number;
  watchSilenceMs: number;
  /**
   * With a granularity other than the whole member, each group's node gets a port of its own from here (its daemon
   * endpoint), so that a scraper calling a node's port (metrics-server, with the node status port) reaches that node
   * alone; without it, or when it fails, the member's port.
   */
  ports?: KubeletPorts;
  /** How often retiring nodes are looked at again besides their pods' changes (default 30 s). */
  recheckMs?: number;
}

/** One virtual node as it runs. */
interface Running {
  name: string;
  /** Its kubelet API port: the member's, or one of its own (VirtualNodesOptions.ports). */
  port: number;
  group: NodeGroup;
  node: NodeController;
  pods: PodController;
  view: VirtualNodePods;
  runtime: MemberRuntime;
  /** The proxies informer is this node's own (every node's but the member's own node name, whose the manager keeps). */
  ownProxies: boolean;
  podsStarted: boolean;
  /** Its proxies' deletions, which may leave a retiring node empty. */
  watch: Subscription;
}

export class MemberVirtualNodes {
  #o: VirtualNodesOptions;
  #log: Logger;
  /** The host's nodes of this member (its clusterlet.io/member label): those of an earlier granularity among them. */
  #hostNodes: Informer<V1Node>;
  #running = new Map<string, Running>();
  /** Names this member may not use (a host node of that name is someone else's), until when: looked at again later. */
  #refused = new Map<string, number>();
  /** Nodes deleted here, by UID, until the informer shows them gone. */
  #removed = new Map<string, string>();
  #groups: NodeGroup[] | undefined;
  #subs: Subscription[] = [];
  #podsOn = false;
  #stopped = false;
  #reconcile = new Subject<void>();
  /** A sync runs; another is owed after it (#sync is async: it reads node names). */
  #syncing: Promise<void> | undefined;
  #again = false;

  constructor(o: VirtualNodesOptions, log: Logger) {
    this.#o = o;
    this.#log = log;
    const host = o.host;
    this.#hostNodes = new Informer(`nodes-${o.member.name}`, listWatch<V1Node>(host, {
      path: '/api/v1/nodes', model: 'V1Node', resource: 'nodes', labelSelector: `${MEMBER_LABEL}=${o.member.name}`,
      list: (p) => host.core.listNode(p),
    }, { log, silenceMs: o.watchSilenceMs }));
  }

  /** Registers the nodes (and keeps them), without their pod controllers: startPods() starts those. */
  start(): void {
    this.#hostNodes.start();
    this.#subs.push(
      this.#o.cluster.groups$.subscribe((g) => {
        const pool = this.#o.member.nodes?.mode === 'pool' ? this.#o.member.nodes.label : undefined;
        if (pool !== undefined && g.length === 0 && this.#groups?.length !== 0) {
          this.#log.warn({ label: pool }, 'no member node has the pool label: the member shows no virtual node');
        }
        this.#groups = g;
        this.#reconcile.next();
      }),
      merge(this.#reconcile, this.#hostNodes.events$, interval(this.#o.recheckMs ?? 30_000))
        .pipe(auditTime(200)).subscribe(() => this.#kick()),
    );
    // A first sync once the host's nodes are listed.
    settleOrExit(this.#hostNodes.waitSynced().then(() => this.#reconcile.next()), this.#log, 'host node cache sync failed');
  }

  /** Starts the pod controllers, those running and those to come. */
  startPods(): void {
    this.#podsOn = true;
    for (const r of this.#running.values()) this.#startPods(r);
  }

  /** Stops the pod controllers (writers that use the member's other parts): the nodes stay until stop(). */
  stopPods(): void {
    this.#podsOn = false;
    for (const r of this.#running.values()) {
      if (r.podsStarted) r.pods.stop();
      r.podsStarted = false;
    }
  }

  stop(): void {
    this.#stopped = true;
    for (const s of this.#subs.splice(0)) s.unsubscribe();
    for (const r of [...this.#running.values()].reverse()) this.#stopOne(r);
    this.#running.clear();
    this.#hostNodes.stop();
  }

  /** The virtual nodes running, for the kubelet API. */
  nodes(): VirtualNode[] {
    const out: VirtualNode[] = [];
    for (const r of this.#running.values()) {
      if (!r.podsStarted) continue;
      out.push({ name: r.name, port: r.port, proxies: r.pods.proxies, running: () => r.pods.running(), runtime: r.runtime });
    }
    return out;
  }

  /**
   * The proxy `namespace/name` bound to one of this member's virtual nodes, from their proxy informers (the host's
   * caches): what a host-token Secret found in the member is for (provider/tokens.ts HostProxies).
   */
  proxy(namespace: string, name: string): V1Pod | undefined {
    const key = `${namespace}/${name}`;
    const base = this.#o.baseProxies.get(key);
    if (base) return base;
    for (const r of this.#running.values()) {
      const p = r.pods.proxies.get(key);
      if (p) return p;
    }
    return undefined;
  }

  /** Whether a host node is one of this member's virtual nodes (running here). */
  has(name: string): boolean { return this.#running.has(name); }

  /** The zone one of this member's virtual nodes shows, if any. */
  zoneOf(name: string): string | undefined { return this.#hostNodes.get(name)?.metadata?.labels?.['topology.kubernetes.io/zone']; }

  /** Runs a sync, or has one run again after the one under way. */
  #kick(): void {
    if (this.#syncing) {
      this.#again = true;
      return;
    }
    this.#syncing = this.#sync().catch((err: unknown) => {
      this.#log.warn({ err: (err as Error).message }, 'could not bring the virtual nodes in line; trying again');
    }).finally(() => {
      this.#syncing = undefined;
      if (this.#again && !this.#stopped) {
        this.#again = false;
        this.#kick();
      }
    });
  }

  /** What the granularity shows, and what is left of earlier ones: started, retired, removed. */
  async #sync(): Promise<void> {
    if (this.#stopped || !this.#hostNodes.hasSynced) return;
    const base = this.#o.member.nodeName;
    const granularity = this.#o.member.nodes ?? CLUSTER_GRANULARITY;
    // Nodes deleted here stay out until the informer shows them gone (a sync owed meanwhile would start them again).
    for (const [name, uid] of this.#removed) if (this.#hostNodes.get(name)?.metadata?.uid !== uid) this.#removed.delete(name);
    const hostNodes = this.#hostNodes.list().filter((n) => !this.#removed.has(n.metadata?.name ?? ''));
    // The whole member's node needs no look at the member's nodes: it registers at once, reachable or not.
    const groups = this.#groups ?? (granularity.mode === 'cluster' ? [{ kind: 'cluster' as const }] : undefined);
    if (!groups) {
      // The member's nodes are not listed yet: the virtual nodes it has run on as they are.
      for (const n of hostNodes) {
        const name = n.metadata?.name ?? '';
        const group = this.#recordedGroup(n);
        if (group && !this.#running.has(name)) await this.#startOne(name, group, isRetiring(n) ? retiringReason(group, granularity) : undefined);
      }
      return;
    }
    const desired = new Map(groups.map((g) => [virtualNodeName(base, g), g]));
    for (const [name, group] of desired) {
      let r = this.#running.get(name);
      // Another granularity can name another group alike (two pool labels with the same values): it is the new group's.
      if (r && groupId(r.group) !== groupId(group)) {
        this.#running.delete(name);
        this.#stopOne(r);
        r = undefined;
      }
      r ??= await this.#startOne(name, group, undefined);
      r?.node.retire(false);
    }
    // This member's nodes of earlier granularities, or of groups gone (their group recorded on them).
    for (const n of hostNodes) {
      const name = n.metadata?.name ?? '';
      const group = this.#recordedGroup(n);
      if (desired.has(name) || !group) continue;
      const reason = retiringReason(group, granularity);
      const r = this.#running.get(name) ?? await this.#startOne(name, group, reason);
      r?.node.retire(true, reason);
    }
    // The groups may have changed during the awaits above: a node is removed only if still not shown.
    const shown = new Set((this.#groups ?? groups).map((g) => virtualNodeName(base, g)));
    for (const r of [...this.#running.values()]) {
      if (!desired.has(r.name) && !shown.has(r.name)) await this.#removeIfEmpty(r);
    }
    this.#sweepOrphans(hostNodes);
  }

  /**
   * Delegates of a virtual node of this member that no longer exists on the host and runs here (deleted by someone,
   * or removed while a delegate for it was still being made): no controller looks after them, and their proxies,
   * bound to a node that is gone, are the host's pod garbage collector's. They are deleted.
   */
  #sweepOrphans(hostNodes: V1Node[]): void {
    if (!this.#groups || !this.#o.provider.hasSynced()) return;
    const known = new Set(hostNodes.map((n) => n.metadata?.name ?? ''));
    for (const vn of this.#o.cluster.delegates.virtualNodes()) {
      if (this.#running.has(vn) || known.has(vn)) continue;
      for (const key of this.#o.cluster.delegates.hostKeysOf(vn)) {
        const { namespace, name } = splitKey(key);
        this.#log.info({ pod: key, node: vn }, 'deleting a delegate whose virtual node is gone');
        void this.#o.provider.deletePod(namespace, name).catch((err: unknown) =>
          this.#log.warn({ pod: key, err: toKubeError(err).message }, 'could not delete a delegate whose virtual node is gone'));
      }
    }
  }

  /**
   * The group a host node of this member records, when the node is the one clusterlet names for that group (the
   * member's own node name, without a recorded group, is the whole member's); undefined for any other node, which is
   * not this member's to write (forge/groups.ts `ownGroup`).
   */
  #recordedGroup(n: V1Node): NodeGroup | undefined {
    return ownGroup(n, this.#o.member.name, this.#o.member.nodeName);
  }

  /**
   * A retiring node without pods is deleted and its controllers stopped. Pods that hold no node, as `kubectl drain`
   * counts (DaemonSet pods, which tolerate every taint and run nowhere through clusterlet, and pods that have ended),
   * do not keep it: the host's pod garbage collector takes them with the node.
   */
  async #removeIfEmpty(r: Running): Promise<void> {
    if (!r.podsStarted || !r.pods.proxies.hasSynced || !this.#o.provider.hasSynced()) return;
    if (r.pods.proxies.list().some((p) => !isDaemonSetPod(p) && !isTerminal(p)) || r.view.podCount() > 0) return;
    this.#running.delete(r.name);
    this.#stopOne(r);
    const uid = r.node.node?.metadata?.uid;
    if (uid) this.#removed.set(r.name, uid);
    try {
      await r.node.remove();
    } catch (err) {
      this.#removed.delete(r.name);
      this.#log.warn({ node: r.name, err: toKubeError(err).message }, 'could not delete a retired virtual node; trying again');
      this.#reconcile.next();
    }
  }

  /**
   * Starts a node's controllers; `retiring` (why): it starts with the retiring taint (a node of an earlier granularity,
   * or of a group gone).
   */
  async #startOne(name: string, group: NodeGroup, retiring: RetiringReason | undefined): Promise<Running | undefined> {
    if ((this.#refused.get(name) ?? 0) > Date.now()) return undefined;
    if (!(await this.#mayUse(name))) return undefined;
    if (this.#stopped || this.#running.has(name)) return this.#running.get(name);
    const o = this.#o;
    const log = this.#log.child({ node: name });
    const port = await this.#portFor(name, log);
    if (this.#stopped || this.#running.has(name)) {
      if (port !== o.node.kubeletPort) o.ports?.close(port);
      return this.#running.get(name);
    }
    const node = new NodeController(o.host, { ...o.node, nodeName: name, group, kubeletPort: port }, o.cluster.nodeProvider(group), log,
      { watchSilenceMs: o.watchSilenceMs, ...o.nodeOptions, nodes: this.#hostNodes, queueName: this.#queueName(name),
        owns: (n) => this.#owns(n), onForeign: (n) => queueMicrotask(() => this.#foreign(n)) });
    const ownProxies = name !== o.member.nodeName;
    const proxies = ownProxies ? proxyInformer(o.host, name, log, o.watchSilenceMs) : o.baseProxies;
    const view = new VirtualNodePods(o.provider, o.cluster.delegates, { name, group }, proxies);
    const pods = new PodController(o.host, view, log, {
      nodeName: name, member: o.member.name, workers: o.podSyncWorkers, watchSilenceMs: o.watchSilenceMs, proxies,
      queueName: this.#queueName(name),
    });
    const runtime = new MemberRuntime(o.cluster, pods.proxies, { log: log.child({ component: 'kubelet-api' }), virtualNode: name });
    // A retiring node's last pod gone: it may go.
    const watch = proxies.events$.subscribe((ev) => { if (ev.type === 'DELETED') this.#reconcile.next(); });
    const r: Running = { name, port, group, node, pods, view, runtime, ownProxies, podsStarted: false, watch };
    this.#running.set(name, r);
    node.retire(retiring !== undefined, retiring);
    node.start();
    if (ownProxies) proxies.start();
    if (this.#podsOn) this.#startPods(r);
    this.#log.info({ node: name, group: groupId(group) }, 'virtual node started');
    return r;
  }

  #startPods(r: Running): void {
    if (r.podsStarted) return;
    r.podsStarted = true;
    r.pods.start();
  }

  #stopOne(r: Running): void {
    r.watch.unsubscribe();
    if (r.podsStarted) r.pods.stop();
    r.node.stop();
    if (r.ownProxies) r.pods.proxies.stop();
    if (r.port !== this.#o.node.kubeletPort) this.#o.ports?.close(r.port);
  }

  /**
   * What the node's queues are named after on /metrics: its own name for the member's own node name, `<node name>:groups`
   * for the nodes of its pools or member nodes, which share their series.
   */
  #queueName(name: string): string {
    const base = this.#o.member.nodeName;
    return name === base ? base : `${base}:groups`;
  }

  /**
   * The node's kubelet API port: the member's for the member's own node name, its own for any other
   * (VirtualNodesOptions.ports), whatever the granularity now.
   */
  async #portFor(name: string, log: Logger): Promise<number> {
    const o = this.#o;
    if (!o.ports || name === o.member.nodeName) return o.node.kubeletPort;
    return o.ports.open().catch((err: unknown) => {
      log.warn({ err: (err as Error).message, port: o.node.kubeletPort }, 'could not open a kubelet API port of its own; the node shares the member\'s');
      return o.node.kubeletPort;
    });
  }

  /** Whether a host node is one of this member's virtual nodes, which it may write. */
  #owns(n: V1Node): boolean {
    return this.#recordedGroup(n) !== undefined;
  }

  /**
   * A host node of that name that is not this member's (another member's, one of this member's label recording a
   * group that is not this name's, a kubelet's) is never taken over: its pods would be delegated here. The group is
   * not shown, and the log says why.
   */
  async #mayUse(name: string): Promise<boolean> {
    const node = this.#hostNodes.get(name) ?? await this.#o.host.core.readNode({ name }).catch((err: unknown) => {
      if (toKubeError(err).kind === 'NotFound') return undefined;
      throw err;
    }).catch((err: unknown) => {
      this.#log.warn({ node: name, err: toKubeError(err).message }, 'could not check a virtual node name; trying again');
      return null;
    });
    if (node === null) return false;
    if (node && !this.#owns(node)) {
      this.#refuse(node);
      return false;
    }
    return true;
  }

  /** Not this member's node: not looked at again for a while, and said. */
  #refuse(node: V1Node): void {
    const name = node.metadata?.name ?? '';
    this.#refused.set(name, Date.now() + REFUSED_RECHECK_MS);
    this.#log.error({ node: name, owner: node.metadata?.labels?.[MEMBER_LABEL] },
      `${describeForeignNode(node, this.#o.member.name)}: the group it would stand for is not shown (looked at again in ${REFUSED_RECHECK_MS / 60_000} minutes)`);
  }

  /**
   * A node found to be someone else's once its controllers run (registered by another in the meantime): they stop,
   * so no more of its pods are delegated here; the node is left as it is.
   */
  #foreign(node: V1Node): void {
    const r = this.#running.get(node.metadata?.name ?? '');
    this.#refuse(node);
    if (!r) return;
    this.#running.delete(r.name);
    this.#stopOne(r);
  }
}
