// The seam between the node controller (host side) and the back end behind a virtual node, modelled on
// virtual-kubelet's NodeProvider: NotifyNodeStatus becomes `state$`, and Ping, which virtual-kubelet calls
// before each lease renewal, becomes `ping$`, pushed by the provider at its own probe cadence (the back end
// is probed anyway to compute the state; the controller need not probe it a second time).
import type { Observable } from 'rxjs';
import type { NodeState } from '../forge/node.ts';

export type { NodeState };

/** One liveness check of the back end. */
export interface Ping {
  /** The back end answers (with the provider's failure threshold applied). */
  reachable: boolean;
}

export interface NodeProvider {
  /** What the virtual node should show; replays the latest to a new subscriber, emits on change. */
  readonly state$: Observable<NodeState>;
  /** Each liveness check: the node's lease is renewed on each reachable one, and not while unreachable. */
  readonly ping$: Observable<Ping>;
}
