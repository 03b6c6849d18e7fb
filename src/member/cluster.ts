// One member cluster as clusterlet sees it: its API client, cluster-wide informers of its nodes and pods,
// a liveness probe, and `state$`, the stream of what its virtual node should show: the member is its virtual
// node's NodeProvider.
import {
  BehaviorSubject, Subject, auditTime, combineLatest, concat, defer, distinctUntilChanged, exhaustMap, filter, from, map, merge, of, scan,
  share, shareReplay, startWith, timer, type Observable, type Subscription, catchError,
} from 'rxjs';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import type { MemberConfig } from '../config.ts';
import type { ClusterClient } from '../kube/client.ts';
import { Informer, storedSpecs } from '../kube/informer.ts';
import { MemberPodShapes } from './podshapes.ts';
import { listWatch } from '../kube/listwatch.ts';
import { PodRequests } from './requests.ts';
import { DelegateIndex } from './delegates.ts';
import { toKubeError } from '../kube/errors.ts';

import { aggregateCapacityFromRequests, isNodeReady, isVirtualNode, nodeSystemInfo, sharedNodeLabels, sharedTaints } from '../forge/capacity.ts';
import { ownedBy, type Owner } from '../forge/owner.ts';
import { memberFit, type FitAnswer } from '../forge/fit.ts';
import { MemberScaling } from './scaling.ts';
import type { FitGate } from './pod/provider.ts';
import { CLUSTER_GRANULARITY, groupId, inGroup, memberGroups, type NodeGroup } from '../forge/groups.ts';
import { CORDONED_TAINT } from '../forge/node.ts';
import type { NodeProvider, NodeState } from '../provider/node.ts';
import type { Logger } from '../log.ts';
import { metrics } from '../metrics.ts';

/**
 * The member's health as its virtual node shows it. `reachable` turns false only after `failureThreshold`
 * consecutive failed probes (a blip is not an outage); `failures` counts the failures in a row so far.
 */
export interface ProbeResult { reachable: boolean; reason?: string; at: number; failures: number }

export interface MemberOptions {
  probeIntervalMs?: number;
  probeTimeoutMs?: number;
  /** Consecutive failed probes before the member counts as unreachable (once it has answered). */
  probeFailureThreshold?: number;
  /** Coalescing window for bursts of member changes. */
  coalesceMs?: number;
  watchSilenceMs?: number;
}

export class MemberCluster implements NodeProvider {
  readonly config: MemberConfig;
  readonly client: ClusterClient;
  /** The host's identity (the value of clusterlet.io/origin on what clusterlet creates here). */
  readonly hostName: string;
  /** This virtual node's objects in the member: (host identity, node name). */
  readonly owner: Owner;
  readonly nodes: Informer<V1Node>;
  readonly pods: Informer<V1Pod>;
  /** This virtual node's delegates, by the proxy they stand for. */
  readonly delegates: DelegateIndex;
  /** Probe results, every `probeIntervalMs`, with the failure threshold applied; replays the latest. */
  readonly probe$: Observable<ProbeResult>;
  /** The NodeProvider's ping: each probe result (the node's lease is renewed on the reachable ones). */
  readonly ping$: Observable<ProbeResult>;
  /** What the member's own virtual node (the whole member) should show; replays the latest, emits only on change. */
  readonly state$: Observable<NodeState>;
  /** The groups of member nodes of its granularity (config `nodes`), each shown as a virtual node; emits on change. */
  readonly groups$: Observable<NodeGroup[]>;
  /** A coalesced change of the member's nodes or of their pods' requests (caches synced). */
  #changed$: Observable<void>;
  #probeState$: Observable<ProbeResult>;
  #log: Logger;
  #opts: Required<MemberOptions>;
  #version = new BehaviorSubject<string | undefined>(undefined);
  /** Requests per node of the member's own pods, and of every bound pod (this node's delegates too), from the pod events. */
  #usage: PodRequests;
  /** Room may have appeared on a member node: its nodes changed, or a pod came, went or changed its requests. */
  readonly room$: Observable<void>;
  #subs: Subscription[] = [];
  #reachable = false;
  /** Whether the member adds nodes for Pending pods: read only for the auto fit (config `fit`). */
  readonly scaling: MemberScaling | undefined;

  constructor(config: MemberConfig, client: ClusterClient, hostName: string, log: Logger, opts: MemberOptions = {}) {
    this.config = config;
    this.client = client;
    this.hostName = hostName;
    this.owner = { hostName, node: config.nodeName };
    this.#log = log;
    this.#opts = {
      probeIntervalMs: opts.probeIntervalMs ?? 10_000, probeTimeoutMs: opts.probeTimeoutMs ?? 5_000,
      probeFailureThreshold: opts.probeFailureThreshold ?? 3,
      coalesceMs: opts.coalesceMs ?? 250, watchSilenceMs: opts.watchSilenceMs ?? 90_000,
    };
    const lwOpts = { log, silenceMs: this.#opts.watchSilenceMs };
    this.nodes = new Informer('member-nodes', listWatch<V1Node>(client, {
      path: '/api/v1/nodes', model: 'V1Node', resource: 'nodes',
      list: (p) => client.core.listNode(p),
    }, lwOpts));
    const shapes = new MemberPodShapes(this.owner);
    this.pods = new Informer('member-pods', listWatch<V1Pod>(client, {
      path: '/api/v1/pods', model: 'V1Pod', resource: 'pods', cutManagedFields: true,
      knownSpec: shapes.knownSpec(storedSpecs(() => this.pods)),
      shape: (pod) => shapes.shape(pod),
      list: (p) => client.core.listPodForAllNamespaces(p),
    }, lwOpts));
    this.delegates = new DelegateIndex(this.pods, this.owner);
    this.scaling = (config.fit ?? 'auto') === 'auto' ? new MemberScaling(client, log) : undefined;

    const threshold = this.#opts.probeFailureThreshold;
    this.probe$ = timer(0, this.#opts.probeIntervalMs).pipe(
      exhaustMap(() => from(this.#probe())),
      scan<ProbeResult, ProbeResult | undefined>((prev, p) => {
        const next = withThreshold(prev, p, threshold);
        if (next.reachable && !p.reachable) {
          this.#log.info({ err: p.reason, failures: next.failures, threshold }, 'member probe failed; not unreachable yet');
        }
        return next;
      }, undefined),
      filter((p): p is ProbeResult => p !== undefined),
      shareReplay({ bufferSize: 1, refCount: true }),
    );
    this.ping$ = this.probe$;
    // Only this node's own delegates are its load; other nodes' and other hosts' delegates use the member like
    // any other workload.
    const boundChanged$ = new Subject<void>();
    this.#usage = new PodRequests((key, err) => this.#log.warn({ pod: key, err: err.message }, 'pod requests unreadable; not counted'),
      (pod) => ownedBy(pod.metadata, this.owner), () => boundChanged$.next());
    // Kept from the first event on (the informer emits each listed pod), whoever subscribes to state$ and when.
    const usageChanged$ = this.pods.events$.pipe(filter((e) => this.#usage.apply(e)), share());
    this.#subs.push(usageChanged$.subscribe());
    this.room$ = merge(this.nodes.events$, boundChanged$).pipe(auditTime(this.#opts.coalesceMs), map(() => undefined), share());
    const synced$ = from(Promise.all([this.nodes.waitSynced(), this.pods.waitSynced()]));
    // Each coalesced change of the member's nodes or of what their pods request, once both caches have synced: every
    // virtual node's state is computed again from it.
    this.#changed$ = merge(this.nodes.events$, usageChanged$, synced$).pipe(
      startWith(undefined),
      auditTime(this.#opts.coalesceMs),
      filter(() => this.nodes.hasSynced && this.pods.hasSynced),
      map(() => undefined),
      share(),
    );
    this.#probeState$ = this.probe$.pipe(distinctUntilChanged((a, b) => a.reachable === b.reachable && a.reason === b.reason));
    this.state$ = this.stateOf({ kind: 'cluster' });
    const granularity = config.nodes ?? CLUSTER_GRANULARITY;
    this.groups$ = this.#changed$.pipe(
      map(() => [...memberGroups(this.nodes.list(), granularity).values()].map((g) => g.group)),
      distinctUntilChanged((a, b) => a.map(groupId).join('\n') === b.map(groupId).join('\n')),
      shareReplay({ bufferSize: 1, refCount: true }),
    );
  }

  /**
   * What the virtual node of one group of the member's nodes should show (the whole member's: `state$`); replays the
   * latest, emits only on change.
   */
  stateOf(group: NodeGroup): Observable<NodeState> {
    const empty = { synced: false, readyNodes: 0, capacity: {}, allocatable: {}, topologyLabels: {},
      operatingSystem: 'linux', architecture: 'amd64' };
    const synced = (): boolean => this.nodes.hasSynced && this.pods.hasSynced;
    // A node controller that subscribes once the caches have synced (it leads the member from then on) starts from
    // the member as it is, not from "not synced", which would turn the node NotReady for a moment.
    const current = defer(() => of(synced() ? this.#computeCapacity(group) : empty));
    return combineLatest([
      this.#probeState$,
      concat(current, this.#changed$.pipe(map(() => this.#computeCapacity(group)))),
      this.#version,
    ]).pipe(
      map(([probe, cap, version]): NodeState => ({
        reachable: probe.reachable, unreachableReason: probe.reason, backendVersion: version, ...cap,
      })),
      distinctUntilChanged((a, b) => JSON.stringify(a) === JSON.stringify(b)),
      shareReplay({ bufferSize: 1, refCount: true }),
    );
  }

  /** The group's node provider: its state, and the member's probe as its ping. */
  nodeProvider(group: NodeGroup): NodeProvider {
    return { state$: group.kind === 'cluster' ? this.state$ : this.stateOf(group), ping$: this.ping$ };
  }

  start(): void {
    this.nodes.start();
    this.pods.start();
    this.delegates.start();
    this.scaling?.start();
    // Learn the member's version once it answers (shown in the node's containerRuntimeVersion).
    this.#subs.push(this.probe$.pipe(
      filter((p) => p.reachable && this.#version.value === undefined),
      exhaustMap(() => from(this.client.request<{ gitVersion?: string }>('GET', '/version')).pipe(
        map((v) => v.gitVersion), catchError(() => of(undefined)))),
    ).subscribe((v) => { if (v) this.#version.next(v); }));
    this.#subs.push(this.probe$.subscribe((p) => {
      this.#reachable = p.reachable;
      metrics.memberReady.set({ member: this.config.name }, p.reachable ? 1 : 0);
    }));
  }

  /** Where the delegate `pod` fits among the member's nodes, as its scheduler counts (forge/fit.ts). */
  fit(pod: V1Pod): FitAnswer {
    return memberFit(pod, this.nodes.list(), this.#usage.boundByNode);
  }

  /** The fit of the member's delegates as its config `fit` says; undefined for `off` (nothing judged). */
  fitGate(): FitGate | undefined {
    const mode = this.config.fit ?? 'auto';
    if (mode === 'off') return undefined;
    const scaling = this.scaling;
    return {
      mode, room$: this.room$, fit: (pod) => this.fit(pod),
      ready: () => this.nodes.hasSynced && (scaling?.read ?? true),
      growth: () => scaling?.growth,
    };
  }

  /** Whether the member answers (the latest probe result, threshold applied). */
  get reachable(): boolean { return this.#reachable; }

  stop(): void {
    for (const s of this.#subs.splice(0)) s.unsubscribe();
    this.scaling?.stop();
    this.delegates.stop();
    this.nodes.stop();
    this.pods.stop();
  }

  #computeCapacity(group: NodeGroup): Omit<NodeState, 'reachable' | 'unreachableReason' | 'backendVersion'> {
    const all = this.nodes.list();
    const grouped = group.kind !== 'cluster';
    const nodes = grouped ? all.filter((n) => inGroup(n, group) && !isVirtualNode(n)) : all;
    const agg = aggregateCapacityFromRequests(nodes, this.#usage.byNode);
    const info = nodeSystemInfo(nodes);
    // A pool's virtual node shows its pool label: every node of the pool has it.
    const poolLabel = group.kind === 'pool' ? { [group.label]: group.value } : {};
    // A group's node is Ready while one of its member nodes is, cordoned or not: cordoned, it takes no new pod (a
    // taint) but keeps its pods, as a cordoned kubelet node does. The whole member's counts usable nodes only.
    const ready = grouped ? nodes.filter(isNodeReady).length : agg.nodeCount;
    const cordoned = grouped && ready > 0 && agg.nodeCount === 0 ? [CORDONED_TAINT] : [];
    return {
      synced: true, readyNodes: ready, capacity: agg.capacity, allocatable: agg.allocatable,
      topologyLabels: { ...sharedNodeLabels(nodes, { all: grouped }), ...poolLabel },
      taints: [...sharedTaints(nodes, { all: grouped }), ...cordoned],
      operatingSystem: info.operatingSystem,
      architecture: info.architecture, ...(group.kind === 'cluster' ? {} : { groupNodes: nodes.length }),
    };
  }

  async #probe(): Promise<ProbeResult> {
    const at = Date.now();
    try {
      const body = await this.client.request<unknown>('GET', '/readyz', { signal: AbortSignal.timeout(this.#opts.probeTimeoutMs) })
        .catch((err: unknown) => { if (toKubeError(err).code >= 500) return 'not ok'; throw err; });
      return body === 'ok' ? { reachable: true, at, failures: 0 }
        : { reachable: false, reason: 'the API server reports not ready (/readyz)', at, failures: 1 };
    } catch (err) {
      const reason = rootCause(err);
      this.#log.debug({ err: reason }, 'member probe failed');
      return { reachable: false, reason, at, failures: 1 };
    }
  }
}

/**
 * The member's health after one more probe: unreachable only after `threshold` consecutive failures, and at
 * once while it has never answered (nothing says it is reachable then).
 */
export function withThreshold(prev: ProbeResult | undefined, probe: ProbeResult, threshold: number): ProbeResult {
  if (probe.reachable) return { ...probe, failures: 0 };
  const failures = (prev?.failures ?? 0) + 1;
  const reachable = prev !== undefined && prev.reachable && failures < threshold;
  return reachable ? { reachable, at: probe.at, failures } : { ...probe, failures };
}

/** The innermost cause of a (fetch) error, e.g. "connect ECONNREFUSED 127.0.0.1:6443". */
export function rootCause(err: unknown): string {
  let e = err as { message?: string; code?: string; cause?: unknown; name?: string } | undefined;
  while (e?.cause) e = e.cause as typeof e;
  if (e?.name === 'TimeoutError') return 'no answer within the probe timeout';
  return e?.message ?? String(err);
}
