// Streaming sessions of the kubelet API (exec, attach, port-forward), counted from the upgrade until both of their
// connections have closed, the caller's and the one to the member: a session that ends on one side only and
// keeps the other open (liqo#2612, virtual-kubelet#1425) stays in clusterlet_kubelet_api_streams.
import type { Duplex } from 'node:stream';
import { metrics } from '../../metrics.ts';

export type StreamTransport = 'spdy' | 'websocket';

/** Counts a session open until every one of `closed` has settled. */
export function countSession(endpoint: 'exec' | 'attach' | 'portForward', transport: StreamTransport, closed: Promise<unknown>[]): void {
  const labels = { endpoint, transport };
  metrics.kubeletApiStreams.inc(labels);
  void Promise.allSettled(closed).then(() => metrics.kubeletApiStreams.dec(labels));
}

/** Resolves once `socket` has closed. */
export function socketClosed(socket: Duplex): Promise<void> {
  return socket.closed ? Promise.resolve() : new Promise((resolve) => socket.once('close', () => resolve()));
}
