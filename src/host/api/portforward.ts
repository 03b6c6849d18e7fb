// port-forward. The runtime side is the kubelet's portforward.k8s.io protocol on a SPDY/3.1 connection the runtime
// opens (for a member, an upgrade of its API server's pods/portforward, which every version proxies to its
// kubelet): per forwarded connection an error stream and a data stream, with headers port and requestID. One
// runtime connection per host connection. (The runtime is not asked for 1.31's WebSocket tunnel, subprotocol
// "SPDY/3.1+portforward.k8s.io": the `ws` client refuses a subprotocol with a "/" in it.) The host side is one of:
// - SPDY/3.1 (an upgrade with X-Stream-Protocol-Version), or the same SPDY tunnelled in binary WebSocket messages
//   (subprotocol "SPDY/3.1+portforward.k8s.io": kubectl 1.31+, passed through by 1.36 API servers): each host
//   stream is mirrored by a runtime stream with the same headers; data, half-closes and resets pass through.
// - WebSocket channels (v4.channel.k8s.io, its base64 form, or no subprotocol; the ports in the query, as the
//   JavaScript and Python clients use it): per port i, channel 2i carries data both ways and 2i+1 errors to the
//   client, each opened by the port as 2 bytes little-endian; once every port's connection has ended, the
//   WebSocket closes.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { createWebSocketStream, type WebSocket } from 'ws';
import type { Logger } from '../../log.ts';
import { ApiError } from './errors.ts';
import { relay, writeHolding } from './flow.ts';
import type { ResolvedPod } from './nodes.ts';
import { countSession, sessionLog, socketClosed } from './sessions.ts';
import { SpdySession, type SpdyStream } from './spdy/session.ts';
import { acceptUpgrade, negotiate, offeredProtocols, requireSpdyUpgrade } from './upgrade.ts';
import {
  acceptWebSocket, closedWebSocket, closeWebSocket, decodeChannel, encodeChannel, negotiateChannelProtocol,
  offeredSubprotocols, PORTFORWARD_WS_PROTOCOLS, requireWebSocketHandshake, TUNNEL_PREFIX, type ChannelProtocol,
} from './websocket.ts';

export const PORTFORWARD_PROTOCOL = 'portforward.k8s.io';

export async function servePortForward(req: IncomingMessage, socket: Duplex, head: Buffer, target: ResolvedPod, log: Logger): Promise<void> {
  requireSpdyUpgrade(req);
  const protocol = negotiate(offeredProtocols(req), [PORTFORWARD_PROTOCOL]);
  const member = await memberSession(target, log);
  acceptUpgrade(socket, head, protocol);
  countSession('portForward', 'spdy', [socketClosed(socket), member.closed]);
  mirrorSessions(socket, member.session, member.log);
}

/** port-forward for a WebSocket client: the member's connection first, then the 101. */
export async function servePortForwardWebSocket(req: IncomingMessage, socket: Duplex, head: Buffer, target: ResolvedPod,
  log: Logger): Promise<void> {
  requireWebSocketHandshake(req);
  const forward = webSocketForward(req);
  const member = await memberSession(target, log);
  const client = acceptWebSocket(req, socket, head, forward.protocol, () => member.session.destroy());
  countSession('portForward', 'websocket', [closedWebSocket(client), member.closed]);
  client.on('error', (err: Error) => member.log.debug({ err: err.message }, 'port-forward: client connection failed'));
  forward.serve(client, member);
}

/** What a WebSocket client asks for, checked before the member is: its subprotocol, and how the session is served. */
interface WebSocketForward {
  protocol: string;
  serve(client: WebSocket, member: MemberSession): void;
}

/** The SPDY tunnel when one of the client's subprotocols asks for it, else channels for the ports of its query. */
function webSocketForward(req: IncomingMessage): WebSocketForward {
  const offered = offeredSubprotocols(req);
  // As the kubelet: the SPDY protocols a tunnel offers are its subprotocols with the prefix taken off.
  const tunnelled = offered.filter((p) => p.startsWith(TUNNEL_PREFIX) && p.endsWith('.k8s.io')).map((p) => p.slice(TUNNEL_PREFIX.length));
  if (tunnelled.length) {
    return {
      protocol: `${TUNNEL_PREFIX}${negotiate(tunnelled, [PORTFORWARD_PROTOCOL])}`,
      serve: (client, member) => mirrorSessions(createWebSocketStream(client), member.session, member.log),
    };
  }
  const channels = negotiateChannelProtocol(offered, PORTFORWARD_WS_PROTOCOLS);
  const ports = forwardedPorts(new URL(req.url ?? '/', 'https://kubelet').searchParams);
  return { protocol: channels.name, serve: (client, member) => forwardChannels(client, channels, ports, member.session, member.log) };
}

/**
 * The ports of a channel port-forward: every `port` parameter, each a comma-separated list (as the kubelet's
 * NewV4Options); ApiError BadRequest when there is none or one is not a port.
 */
export function forwardedPorts(query: URLSearchParams): number[] {
  const values = query.getAll('port');
  if (!values.length) throw new ApiError('BadRequest', 'query parameter "port" is required');
  return values.flatMap((v) => v.split(',')).map((p) => {
    const n = /^\d+$/.test(p) ? Number(p) : NaN;
    if (!(n >= 1 && n <= 65535)) throw new ApiError('BadRequest', `unable to parse "${p}" as a port`);
    return n;
  });
}

interface MemberSession {
  session: SpdySession;
  /** Resolves once the connection to the member has closed. */
  closed: Promise<void>;
  log: Logger;
}

/** A SPDY client session on the runtime's port-forward connection. */
async function memberSession(target: ResolvedPod, log: Logger): Promise<MemberSession> {
  const upgraded = await target.node.runtime.portForward(target.namespace, target.name, target.uid, [PORTFORWARD_PROTOCOL]);
  const plog = sessionLog(log, target, 'portForward');
  upgraded.socket.on('error', (err: Error) => plog.debug({ err: err.message }, 'port-forward: member connection error'));
  return { session: new SpdySession(upgraded.socket, 'client'), closed: socketClosed(upgraded.socket), log: plog };
}

/** The host SPDY session on `transport`, each of its streams mirrored on the member's; either ending ends both. */
function mirrorSessions(transport: Duplex, member: SpdySession, log: Logger): void {
  const host = new SpdySession(transport, 'server', {
    onStream: (s) => mirror(s, member, log),
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
    from.on('data', (d: Buffer) => writeHolding(from, to, d));
    from.on('end', () => to.end());
    from.on('close', () => { if (!from.readableEnded) to.reset(); });
  };
  pipe(a, b);
  pipe(b, a);
  a.resume();
  b.resume();
}

/** One forwarded port of a channel session: its member streams once open. */
interface PortPair {
  port: number;
  data?: SpdyStream;
  /** Client data that came before the member stream was open. */
  early: Buffer[];
}

/**
 * A channel port-forward: one member connection per port (an error and a data stream with the port and a
 * requestID), as the kubelet's websocket handler runs one forwarder per port.
 */
function forwardChannels(client: WebSocket, protocol: ChannelProtocol, ports: number[], member: SpdySession, log: Logger): void {
  const send = (channel: number, data: Buffer): void => {
    if (client.readyState === client.OPEN) client.send(encodeChannel(protocol, channel, data));
  };
  const pairs: PortPair[] = ports.map((port) => ({ port, early: [] }));
  let open = pairs.length;
  const done = (): void => { if (--open === 0) closeWebSocket(client, 1000); };
  pairs.forEach((pair, i) => {
    const prefix = Buffer.alloc(2);
    prefix.writeUInt16LE(pair.port);
    send(2 * i, prefix);
    send(2 * i + 1, prefix);
    void openPair(pair, i, member).then((streams) => {
      streams.error.on('data', (d: Buffer) => send(2 * i + 1, d));
      streams.error.on('error', () => { /* reset with the session: the data stream's end says it */ });
      const data = streams.data;
      pair.data = data;
      for (const chunk of pair.early.splice(0)) data.write(chunk);
      // A client that reads slowly holds the pod's side back.
      data.on('data', (d: Buffer) => relay(data, client, encodeChannel(protocol, 2 * i, d)));
      // The pod's side ended the connection: so does this side (a channel cannot be half-closed).
      data.on('end', () => data.end());
      data.on('error', () => { /* reset: 'close' follows */ });
      data.once('close', done);
    }, (err: Error) => {
      log.debug({ err: err.message, port: pair.port }, 'port-forward: member stream refused');
      send(2 * i + 1, Buffer.from(`error forwarding port ${pair.port} to pod: ${err.message}`));
      done();
    });
  });
  client.on('message', (m: Buffer) => {
    const f = decodeChannel(protocol, m);
    // Only the data channels (even) are read, as the kubelet's.
    const pair = f && f.channel % 2 === 0 ? pairs[f.channel / 2] : undefined;
    if (!f || !pair || !f.data.length) return;
    if (!pair.data) pair.early.push(f.data);
    else writeHolding(client, pair.data, f.data);
  });
  client.on('close', () => member.close());
  member.onClose(() => closeWebSocket(client, open === 0 ? 1000 : 1011));
}

/** The member streams of port `pair.port`, error first as client-go opens them. */
async function openPair(pair: PortPair, requestID: number, member: SpdySession): Promise<{ error: SpdyStream; data: SpdyStream }> {
  const headers = { port: [String(pair.port)], requestid: [String(requestID)] };
  const error = await member.openStream({ streamtype: ['error'], ...headers });
  // The client never writes to the error stream.
  error.end();
  const data = await member.openStream({ streamtype: ['data'], ...headers });
  return { error, data };
}
