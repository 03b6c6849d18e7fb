// The host side of one virtual node: registers it, keeps its labels, taints and status in line with what its
// NodeProvider reports (patches, only on change and at least every 5 minutes, as a kubelet's nodeStatusReportFrequency),
// renews its lease on each ping while the back end answers, and recreates the node if someone deletes it.
import { interval, type Subscription } from 'rxjs';
import type { V1Node, V1NodeStatus } from '@kubernetes/client-node';
import { PATCH, type ClusterClient } from '../../kube/client.ts';
import type { WatchClient } from '../../kube/listwatch.ts';
import { Informer } from '../../kube/informer.ts';
import { listWatch } from '../../kube/listwatch.ts';
import { toKubeError } from '../../kube/errors.ts';
import { WorkQueue } from '../../util/workqueue.ts';
import {
  forgeNewNode, forgeNodeLabels, forgeNodeStatus, forgeNodeTaints, labelPatch, managedLabelKeys, managedLabelsValue,
  managedTaintIds, managedTaintsValue, mergeTaints, nodeStatusMatches, RETIRING_TAINT, stampConditions, type NodeContext,
} from '../../forge/node.ts';
import { groupId } from '../../forge/groups.ts';
import type { NodeProvider, NodeState } from '../../provider/node.ts';
import { GROUP_ANNOTATION, MANAGED_LABELS_ANNOTATION, MANAGED_TAINTS_ANNOTATION } from '../../forge/keys.ts';
import { microTime } from '../../forge/objects.ts';
import type { Logger } from '../../log.ts';
import { settleOrExit } from '../../util/settle.ts';

export const LEASE_NAMESPACE = 'kube-node-lease';
export const LEASE_DURATION_SECONDS = 40;

export interface NodeControllerOptions {
  /** The status is written at least this often, changed or not (its heartbeat times). */
  statusRefreshMs?: number;
  watchSilenceMs?: number;
  /** What its queue is named after on /metrics (default the node's name; see PodControllerOptions.queueName). */
  queueName?: string;
  /**
   * The host's nodes from an informer someone else runs (the virtual nodes of one member, shared by their controllers);
   * the controller then neither starts nor stops it. Default: its own, of this node alone.
   */
  nodes?: Informer<V1Node>;
  /**
   * Whether a host node of this name is ours to write (e.g. forge/groups.ts `ownGroup`); default: any. A node that is
   * not (another member's, registered by someone else in the meantime) is never written, nor its Lease renewed:
   * `onForeign` is told, once a sync finds it.
   */
  owns?: (node: V1Node) => boolean;
  onForeign?: (node: V1Node) => void;
}

// The node's status and lease go before clusterlet's other requests that wait: late, the node turns NotReady.
const strategic = { contentType: PATCH.strategic, priority: 'high' } as const;
const mergePatch = { contentType: PATCH.merge, priority: 'high' } as const;

/**
 * What the node controller uses of the host API: its node (list and watch, create, read, patch, status) and its Lease.
 * It takes this, not a whole client, so that a fake implements just these.
 */
export type NodeHost = WatchClient & {
  core: Pick<ClusterClient['core'], 'listNode' | 'createNode' | 'readNode' | 'patchNode' | 'patchNodeStatus' | 'deleteNode'>;
  coordination: Pick<ClusterClient['coordination'], 'patchNamespacedLease' | 'createNamespacedLease'>;
};

export class NodeController {
  #ctx: NodeContext;
  #host: NodeHost;
  #provider: NodeProvider;
  #log: Logger;
  #node: Informer<V1Node>;
  #queue: WorkQueue;
  #state: NodeState | undefined;
  #lastStatusWrite = 0;
  /**
   * The answer to our last write (the node as it stood after it) and the versions it replaced: until the informer
   * shows it, a sync judges the node by it, not by the informer's older copy (which would make it write again).
   */
  #written: { node: V1Node; replaced: Set<string> } | undefined;
  #subs: Subscription[] = [];
  #opts: Required<Omit<NodeControllerOptions, 'nodes' | 'queueName' | 'owns' | 'onForeign'>>;
  #owns: (node: V1Node) => boolean;
  #onForeign: ((node: V1Node) => void) | undefined;
  /** The informer is someone else's (NodeControllerOptions.nodes). */
  #sharedNodes: boolean;
  /** A node of an earlier granularity or of a group gone, kept while pods are bound to it: the retiring taint's value. */
  #retiring: string | undefined;
  /** The node is being removed, or is found to be someone else's: it is not registered, nor written, again. */
  #removed = false;

  constructor(host: NodeHost, ctx: NodeContext, provider: NodeProvider, log: Logger, opts: NodeControllerOptions = {}) {
    this.#host = host;
    this.#ctx = ctx;
    this.#provider = provider;
    this.#log = log;
    this.#opts = { statusRefreshMs: opts.statusRefreshMs ?? 300_000, watchSilenceMs: opts.watchSilenceMs ?? 90_000 };
    const name = ctx.nodeName;
    this.#sharedNodes = opts.nodes !== undefined;
    this.#owns = opts.owns ?? (() => true);
    this.#onForeign = opts.onForeign;
    this.#node = opts.nodes ?? new Informer(`node-${name}`, listWatch<V1Node>(host, {
      path: '/api/v1/nodes', model: 'V1Node', resource: 'nodes', fieldSelector: `metadata.name=${name}`,
      list: (p) => host.core.listNode(p),
    }, { log, silenceMs: this.#opts.watchSilenceMs }));
    this.#queue = new WorkQueue({ name: `node-${opts.queueName ?? name}`, workers: 1, log, maxDelayMs: 10_000 });
  }

  get nodeName(): string { return this.#ctx.nodeName; }

  /** The node as last seen on the host. */
  get node(): V1Node | undefined { return this.#node.get(this.nodeName); }

  start(): void {
    if (!this.#sharedNodes) this.#node.start();
    this.#queue.start(() => this.#sync());
    // The first state may arrive before the node cache has synced; sync again once it has.
    settleOrExit(this.#node.waitSynced().then(() => this.#queue.add('node')), this.#log, 'node cache sync failed');
    this.#subs.push(
      this.#provider.state$.subscribe((s) => { this.#state = s; this.#queue.add('node'); }),
      // A node deleted by someone is recreated; a status overwritten by someone is set back.
      this.#node.events$.subscribe((ev) => { if (ev.key === this.nodeName) this.#queue.add('node'); }),
      interval(this.#opts.statusRefreshMs).subscribe(() => this.#queue.add('node')),
      this.#provider.ping$.subscribe((p) => {
        if (p.reachable) void this.#renewLease().catch((err: unknown) =>
          this.#log.warn({ err: toKubeError(err).message }, 'lease renewal failed'));
      }),
    );
  }

  stop(): void {
    for (const s of this.#subs.splice(0)) s.unsubscribe();
    this.#queue.shutdown();
    if (!this.#sharedNodes) this.#node.stop();
  }

  /**
   * Whether the node is one of an earlier granularity or of a group gone, kept while pods are bound to it (the
   * retiring taint, its value `reason`), or not.
   */
  retire(retiring: boolean, reason: string = RETIRING_TAINT.value ?? ''): void {
    const next = retiring ? reason : undefined;
    if (this.#retiring === next) return;
    this.#retiring = next;
    this.#queue.add('node');
  }

  get retiring(): boolean { return this.#retiring !== undefined; }

  /**
   * Stops and deletes the node (its Lease goes with it, owned by it): the node of a group that is no longer shown,
   * once no pod is bound to it. The UID precondition spares a node of that name registered since.
   */
  async remove(): Promise<void> {
    this.#removed = true;
    const node = this.node;
    const uid = node?.metadata?.uid;
    this.stop();
    // Only a node of ours goes: one someone else registered under the name meanwhile is left as it is.
    if (!node || !uid || !this.#owns(node)) return;
    await this.#host.core.deleteNode({ name: this.nodeName, body: { preconditions: { uid } } }).catch((err: unknown) => {
      if (toKubeError(err).kind !== 'NotFound' && toKubeError(err).kind !== 'Conflict') throw toKubeError(err);
    });
    this.#log.info({ node: this.nodeName }, 'removed virtual node: its group is no longer shown and no pod is bound to it');
  }

  async #sync(): Promise<void> {
    const shown = this.#state;
    if (!shown || !this.#node.hasSynced || this.#removed) return;
    const retiring = this.#retiring;
    const state = retiring !== undefined ? { ...shown, taints: [...shown.taints ?? [], { ...RETIRING_TAINT, value: retiring }] } : shown;
    const now = new Date();
    const current = this.#current();
    if (current && !this.#owns(current)) {
      this.#foreign(current);
      return;
    }
    if (!current) {
      const node = forgeNewNode(this.#ctx, state, now);
      try {
        const created = await this.#host.core.createNode({ body: node });
        // Status is dropped on create by some API server versions: write it explicitly.
        await this.#patchStatus(created, forgeNodeStatus(this.#ctx, state), now);
        if (state.reachable) await this.#renewLease();
        this.#log.info({ node: this.nodeName, ready: state.reachable && state.readyNodes > 0 }, 'registered virtual node');
      } catch (err) {
        if (toKubeError(err).kind !== 'AlreadyExists') throw toKubeError(err);
        // Registered by someone else since it was looked at (another member's controller, a kubelet): never ours.
        const there = await this.#host.core.readNode({ name: this.nodeName }).catch(() => undefined);
        if (there && !this.#owns(there)) this.#foreign(there);
      }
      return;
    }
    const latest = await this.#patchMeta(current, state);
    const desired = forgeNodeStatus(this.#ctx, state, latest.status);
    // The refresh tick comes a little less than statusRefreshMs after the write it follows: a slack keeps it due.
    const slack = Math.min(500, this.#opts.statusRefreshMs / 10);
    const due = Date.now() - this.#lastStatusWrite >= this.#opts.statusRefreshMs - slack;
    if (!due && nodeStatusMatches(desired, latest.status)) return;
    await this.#patchStatus(latest, desired, now);
  }

  /** A node of this name that is not ours: nothing more is written for it; whoever runs the controller is told. */
  #foreign(node: V1Node): void {
    if (this.#removed) return;
    this.#removed = true;
    this.#onForeign?.(node);
  }

  /** The node as it stands: the informer's, unless that is still a version our last write replaced. */
  #current(): V1Node | undefined {
    const cached = this.node;
    const written = this.#written;
    if (written && cached && written.replaced.has(cached.metadata?.resourceVersion ?? '')) return written.node;
    this.#written = undefined; // the informer has caught up, or shows a change of someone else's (or the node gone)
    return cached;
  }

  /** Remembers the answer to a write made on `basedOn` (see #written); returns it. */
  #wrote(basedOn: V1Node, answer: V1Node): V1Node {
    const replaced = this.#written?.replaced ?? new Set<string>();
    for (const n of [basedOn, this.#written?.node]) if (n?.metadata?.resourceVersion) replaced.add(n.metadata.resourceVersion);
    replaced.delete(answer.metadata?.resourceVersion ?? '');
    this.#written = { node: answer, replaced };
    return answer;
  }

  /** Sets our labels, taints and managed-labels annotation where they differ; returns the node as it stands after. */
  async #patchMeta(node: V1Node, state: NodeState): Promise<V1Node> {
    const labels = forgeNodeLabels(this.#ctx, state);
    const lp = labelPatch(labels, node.metadata?.labels, managedLabelKeys(node));
    const taints = mergeTaints(node.spec?.taints, forgeNodeTaints(this.#ctx, state), managedTaintIds(node));
    const managedValue = managedLabelsValue(labels);
    const managedTaints = managedTaintsValue(state);
    const group = this.#ctx.group ? { [GROUP_ANNOTATION]: groupId(this.#ctx.group) } : {};
    const annotations = node.metadata?.annotations;
    const annChanged = annotations?.[MANAGED_LABELS_ANNOTATION] !== managedValue
      || (annotations?.[MANAGED_TAINTS_ANNOTATION] ?? '') !== managedTaints
      || Object.entries(group).some(([k, v]) => annotations?.[k] !== v);
    if (!lp && !taints && !annChanged) return node;
    const body: Record<string, unknown> = {
      metadata: { labels: lp ?? {}, annotations: {
        [MANAGED_LABELS_ANNOTATION]: managedValue, [MANAGED_TAINTS_ANNOTATION]: managedTaints, ...group } },
      ...(taints ? { spec: { taints } } : {}),
    };
    return this.#wrote(node, await this.#host.core.patchNode({ name: this.nodeName, body }, strategic));
  }

  /** Writes `status` (forged, not yet stamped: its conditions are stamped here) over the node's. */
  async #patchStatus(node: V1Node, status: V1NodeStatus, now: Date): Promise<void> {
    status.conditions = stampConditions(status.conditions ?? [], node.status?.conditions, now);
    // Resources the back end no longer has are removed (null), not left behind by the merge.
    const drop = (cur: Record<string, string> | undefined, want: Record<string, string> | undefined) =>
      Object.fromEntries(Object.keys(cur ?? {}).filter((k) => !(k in (want ?? {}))).map((k) => [k, null]));
    const body = {
      status: {
        ...status,
        capacity: { ...drop(node.status?.capacity, status.capacity), ...status.capacity },
        allocatable: { ...drop(node.status?.allocatable, status.allocatable), ...status.allocatable },
      },
    };
    this.#wrote(node, await this.#host.core.patchNodeStatus({ name: this.nodeName, body }, strategic));
    this.#lastStatusWrite = Date.now();
  }

  /** Renews the node's lease (creating it, owned by the node, when missing). */
  async #renewLease(): Promise<void> {
    const node = this.node ?? await this.#host.core.readNode({ name: this.nodeName }).catch(() => undefined);
    if (!node?.metadata?.uid || this.#removed || !this.#owns(node)) return;
    // renewTime is a MicroTime: the client's Date serialisation (milliseconds) is refused, so patch a string.
    const body = { spec: { holderIdentity: this.nodeName, leaseDurationSeconds: LEASE_DURATION_SECONDS, renewTime: microTime(new Date()) } };
    const patch = () => this.#host.coordination.patchNamespacedLease(
      { name: this.nodeName, namespace: LEASE_NAMESPACE, body }, mergePatch);
    try {
      await patch();
    } catch (err) {
      if (toKubeError(err).kind !== 'NotFound') throw toKubeError(err);
      try {
        await this.#host.coordination.createNamespacedLease({ namespace: LEASE_NAMESPACE, body: {
          metadata: {
            name: this.nodeName, namespace: LEASE_NAMESPACE,
            ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: this.nodeName, uid: node.metadata.uid }],
          },
          spec: { holderIdentity: this.nodeName, leaseDurationSeconds: LEASE_DURATION_SECONDS },
        } });
      } catch (e) {
        if (toKubeError(e).kind !== 'AlreadyExists') throw toKubeError(e);
      }
      await patch();
    }
  }
}
