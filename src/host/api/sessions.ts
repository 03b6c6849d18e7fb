// Streaming sessions of the kubelet API (exec, attach, port-forward), counted from the upgrade until both of their
// connections have closed, the caller's and the one to the member: a session that ends on one side only and
// keeps the other open (liqo#2612, virtual-kubelet#1425) stays in clusterlet_kubelet_api_streams. Logged by the host
// pod they are for.
import type { Duplex } from 'node:stream';
import type { Logger } from '../../log.ts';
import { metrics } from '../../metrics.ts';
import type { ResolvedPod } from './nodes.ts';

export type StreamTransport = 'spdy' | 'websocket';
export type SessionEndpoint = 'exec' | 'attach' | 'portForward';

/** The log of a session: the host pod's namespace and name (not the delegate's), and the endpoint. */
export function sessionLog(log: Logger, target: ResolvedPod, endpoint: SessionEndpoint): Logger {
  return log.child({ namespace: target.proxy.metadata?.namespace, pod: target.proxy.metadata?.name, kind: endpoint });
}

/** Counts a session open until every one of `closed` has settled. */
export function countSession(endpoint: SessionEndpoint, transport: StreamTransport, closed: Promise<unknown>[]): void {
  const labels = { endpoint, transport };
  metrics.kubeletApiStreams.inc(labels);
  const dec = (): void => { metrics.kubeletApiStreams.dec(labels); };
  Promise.allSettled(closed).then(dec, dec);
}

/** Resolves once `socket` has closed. */
export function socketClosed(socket: Duplex): Promise<void> {
  return socket.closed ? Promise.resolve() : new Promise((resolve) => socket.once('close', () => resolve()));
}
