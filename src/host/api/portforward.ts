// port-forward: the host side is the kubelet's portforward.k8s.io protocol over SPDY/3.1 — per forwarded
// connection the client opens an error stream and a data stream, with headers port and requestID. The
// runtime side is the same protocol on a SPDY/3.1 connection the runtime opens (for a member, an upgrade of
// its API server's pods/portforward, which every version proxies to its kubelet), so each host stream is
// mirrored by a runtime stream with the same headers, and data, half-closes and resets pass through unchanged.
// One runtime connection per host connection. (The WebSocket tunnel of 1.31+, subprotocol
// "SPDY/3.1+portforward.k8s.io", is not used: the `ws` client refuses a subprotocol with a "/" in it.)
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from '../../log.ts';
import type { ResolvedPod } from './nodes.ts';
import { SpdySession, type SpdyStream } from './spdy/session.ts';
import { acceptUpgrade, negotiate, offeredProtocols, requireSpdyUpgrade } from './upgrade.ts';

export const PORTFORWARD_PROTOCOL = 'portforward.k8s.io';

export async function servePortForward(req: IncomingMessage, socket: Duplex, head: Buffer, target: ResolvedPod, log: Logger): Promise<void> {
  requireSpdyUpgrade(req);
  const protocol = negotiate(offeredProtocols(req), [PORTFORWARD_PROTOCOL]);
  const upgraded = await target.node.runtime.portForward(target.namespace, target.name, target.uid, [PORTFORWARD_PROTOCOL]);
  const plog = log.child({ namespace: target.proxy.metadata?.namespace, pod: target.proxy.metadata?.name, kind: 'portForward' });
  upgraded.socket.on('error', (err: Error) => plog.debug({ err: err.message }, 'port-forward: member connection error'));
  const member = new SpdySession(upgraded.socket, 'client');
  acceptUpgrade(socket, head, protocol);
  const host = new SpdySession(socket, 'server', {
    onStream: (s) => mirror(s, member, plog),
  });
  host.onClose(() => member.close());
  member.onClose(() => host.close());
}

/** Opens the member twin of a host stream and joins them. */
function mirror(hostStream: SpdyStream, member: SpdySession, log: Logger): void {
  hostStream.reply();
  // Until the twin exists, what the client sends waits in the host stream's buffer.
  hostStream.pause();
  member.openStream(hostStream.headers).then((memberStream) => {
    join(hostStream, memberStream);
  }, (err: Error) => {
    log.debug({ err: err.message, headers: hostStream.headers }, 'port-forward: member stream refused');
    hostStream.reset();
  });
}

/** Data and half-closes both ways; a reset (or a stream lost with its session) on one side resets the other. */
export function join(a: SpdyStream, b: SpdyStream): void {
  const pipe = (from: SpdyStream, to: SpdyStream): void => {
    from.on('data', (d: Buffer) => { if (!to.write(d)) { from.pause(); to.once('drain', () => from.resume()); } });
    from.on('end', () => to.end());
    from.on('close', () => { if (!from.readableEnded) to.reset(); });
  };
  pipe(a, b);
  pipe(b, a);
  a.resume();
  b.resume();
}
