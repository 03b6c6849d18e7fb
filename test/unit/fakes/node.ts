// A fake NodeProvider: the test pushes the node's state and each ping.
import { ReplaySubject, Subject } from 'rxjs';
import type { NodeProvider, NodeState, Ping } from '../../../src/provider/node.ts';

export class FakeNodeProvider implements NodeProvider {
  readonly states = new ReplaySubject<NodeState>(1);
  readonly state$ = this.states.asObservable();
  readonly pings = new Subject<Ping>();
  readonly ping$ = this.pings.asObservable();

  /** A back end that answers and has `readyNodes` Ready nodes, with whatever `o` changes. */
  static state(o: Partial<NodeState> = {}): NodeState {
    return {
      reachable: true, synced: true, readyNodes: 2,
      capacity: { cpu: '8', memory: '32Gi', pods: '220' },
      allocatable: { cpu: '7', memory: '30Gi', pods: '200' },
      topologyLabels: {}, operatingSystem: 'linux', architecture: 'amd64', backendVersion: 'v1.34.1',
      ...o,
    };
  }
}
