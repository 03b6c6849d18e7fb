// The seam between the pod controller (host side) and a back end that runs pods, modelled on
// virtual-kubelet's PodLifecycleHandler + PodNotifier. Everything here is in host coordinates
// (host namespace and name); a provider translates to and from its own.
import type { Observable } from 'rxjs';
import type { CoreV1Event, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { splitKey } from '../kube/informer.ts';

/** A pod the provider runs for a proxy, as the controller needs to see it. */
export interface ProviderPod {
  /** UID of the proxy this pod was created for. */
  proxyUID: string;
  /** The back end is terminating it. */
  terminating: boolean;
  /** Its last phase, and why, as the back end reports them (for pods lost or evicted). */
  phase?: string;
  /** Its Ready condition is True. */
  ready?: boolean;
  /** It is bound to a node of the back end (a member node). */
  scheduled?: boolean;
  /** The back end is removing it (pod GC of a lost node, eviction, preemption): a Failed phase is not the pod's end. */
  disruption?: string;
  reason?: string;
  message?: string;
}

/** An event about a pod the provider runs, to be shown on its proxy. */
export interface PodEvent {
  namespace: string;
  name: string;
  /** Stable id of the source event, so updates of it (count) update the same host event. */
  id: string;
  event: Pick<CoreV1Event, 'type' | 'reason' | 'message' | 'count' | 'firstTimestamp' | 'lastTimestamp' | 'source'>;
}

/**
 * Something worth telling the proxy's owner (an event on the proxy): about a pod created anyway (createPod), or a
 * change of it the back end refused (updatePod).
 */
/**
 * Something the proxy is told, as an event; with `offloaded`, also its Offloaded condition (True, with this reason and
 * message) in place of DelegateCreated: the pod was created and waits, and says for what.
 */
export interface PodNotice { type: 'Normal' | 'Warning'; reason: string; message: string; offloaded?: true }

export interface CreateOptions {
  /** The pod replaces one that was lost: restarts so far per container, so the proxy's count goes on. */
  restarts?: Record<string, number>;
}

export interface PodLifecycleHandler {
  /**
   * Creates what runs `proxy` (and what it needs). Throws PodRejectedError when the back end refuses it
   * or something it needs is missing; resolves with notices for the proxy's events.
   */
  createPod(proxy: V1Pod, opts?: CreateOptions): Promise<PodNotice[]>;
  /**
   * Brings a running pod in line with the proxy's mutable fields, its resources too (an in-place resize); a no-op
   * when nothing differs. Resolves with notices for the proxy's events (a resize the back end refused).
   */
  updatePod(proxy: V1Pod): Promise<PodNotice[]>;
  /** Deletes the pod for `key` with the given grace period, if it exists; resolves once the delete is accepted. */
  deletePod(namespace: string, name: string, gracePeriodSeconds?: number): Promise<void>;
  /** The pod for a host key, if the provider runs one. */
  getPod(namespace: string, name: string): ProviderPod | undefined;
  /**
   * Whether a pod createPod made for the host key has not shown in getPod yet (its appearance is still to come
   * through podChanges$): its absence is no sign that it is gone.
   */
  creating(namespace: string, name: string): boolean;
  /**
   * The status of the pod for a host key in host coordinates (the back end's own conditions only: the controller
   * merges the proxy's and decides what to write); undefined if no pod runs.
   */
  getPodStatus(namespace: string, name: string): V1PodStatus | undefined;
  /** Host keys (namespace/name) of every pod the provider runs for this node. */
  listPodKeys(): string[];
  /** How many pods the provider runs for this node (cheap: for metrics on every sync). */
  podCount(): number;
}

/** A change in the back end for one host key. */
export interface PodChange {
  key: string;
  /**
   * The pod appeared, disappeared or began terminating (or something it waited for appeared): the
   * controller's lifecycle must look at it. Otherwise only its status changed.
   */
  lifecycle: boolean;
  /**
   * The change is the pod's appearance just as the provider's createPod made it, whose answer the controller has
   * had: it may skip the sync if its proxy is still the one it created it for. Not set where a sync is owed all the
   * same (createPod asked again before the pod showed, or something the create could not carry is still to add).
   */
  created?: boolean;
}

export interface PodNotifier {
  /** Changes in the back end, by host key. Never blocks the provider. */
  readonly podChanges$: Observable<PodChange>;
  /** Events about pods, to mirror onto their proxies. */
  readonly podEvents$: Observable<PodEvent>;
  /**
   * The back end answers again after it could not be reached: what it reported before may be stale and what the
   * host wrote meanwhile (the node-lifecycle controller marks pods NotReady) wrong, so every pod is synced again.
   */
  readonly resync$: Observable<void>;
  /**
   * The back end stopped answering (a probe said so, not merely none has answered yet): the readiness of its pods
   * can no longer be vouched for, and the controller marks their proxies NotReady until resync$.
   */
  readonly unreachable$: Observable<void>;
}

export interface PodProvider extends PodLifecycleHandler, PodNotifier {
  /** Whether the provider's view is complete (its caches have synced): orphans may only be judged then. */
  hasSynced(): boolean;
  /** Resolves when hasSynced() becomes true. */
  waitSynced(): Promise<void>;
  /**
   * Whether the back end answers now. While it does not, what the provider reports is its last word, not the
   * truth: the controller writes no status from it.
   */
  available(): boolean;
}

/** The provider's pod for a proxy's host key (namespace/name), if it runs one. */
export function delegateOf(provider: Pick<PodLifecycleHandler, 'getPod'>, key: string): ProviderPod | undefined {
  const { namespace, name } = splitKey(key);
  return provider.getPod(namespace, name);
}
