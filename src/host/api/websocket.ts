// WebSocket on the kubelet API: the upgrade handshake and the Kubernetes channel framing carried on it, as the
// kubelet serves them (k8s.io/streaming wsstream, cri-streaming's remotecommand and portforward, and 1.36's
// stream translator and SPDY tunnel of pkg/kubelet/server). RFC 6455 itself is the `ws` package's: it already
// speaks WebSocket to the members, so the server side costs no new dependency and no framing code of our own.
//   channel framing  binary: one message per write, channel byte + payload;
//                    base64 (text messages): channel as an ASCII digit ('0' + channel) + the payload in base64.
//   v5 close signal  [255, channel]: the sender is done writing to that channel (the end of stdin).
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { ApiError } from './errors.ts';

const PROTOCOL_HEADER = 'sec-websocket-protocol';
const WS_KEY = /^[+/0-9A-Za-z]{22}==$/;
/**
 * The largest message taken from a client: SPDY frames tunnelled for port-forward are under 16 MiB (a 24-bit
 * length), stdin and resize messages far smaller.
 */
const MAX_MESSAGE_BYTES = (16 << 20) + 64;

export const STREAM_CLOSE = 255;

/** A channel protocol of the kubelet: its framing, and the remote-command version it is (1 for pre-v4 names). */
export interface ChannelProtocol {
  name: string;
  binary: boolean;
  version: 1 | 4 | 5;
}

/** Remote-command protocols, as the kubelet serves them (no subprotocol at all is v1, binary). */
export const REMOTECOMMAND_WS_PROTOCOLS: readonly ChannelProtocol[] = [
  { name: 'v5.channel.k8s.io', binary: true, version: 5 },
  { name: 'v4.channel.k8s.io', binary: true, version: 4 },
  { name: 'v4.base64.channel.k8s.io', binary: false, version: 4 },
  { name: 'channel.k8s.io', binary: true, version: 1 },
  { name: 'base64.channel.k8s.io', binary: false, version: 1 },
  { name: '', binary: true, version: 1 },
];

/** Port-forward's channel protocols (a data and an error channel per port). */
export const PORTFORWARD_WS_PROTOCOLS: readonly ChannelProtocol[] = [
  { name: 'v4.channel.k8s.io', binary: true, version: 4 },
  { name: 'v4.base64.channel.k8s.io', binary: false, version: 4 },
  { name: '', binary: true, version: 4 },
];

/** Port-forward's SPDY/3.1 tunnelled in binary WebSocket messages (client-go 1.31+, kubectl's default). */
export const TUNNEL_PREFIX = 'SPDY/3.1+';

export function isWebSocketRequest(req: IncomingMessage): boolean {
  return (req.headers.upgrade ?? '').toLowerCase() === 'websocket';
}

/**
 * The subprotocols the client offers, in its order: every Sec-WebSocket-Protocol value, split at commas and
 * trimmed, as Go servers read them. (RFC 6455 wants tokens, which `SPDY/3.1+portforward.k8s.io` is not: `ws`
 * refuses it, so the header is read here.)
 */
export function offeredSubprotocols(req: IncomingMessage): string[] {
  const raw = req.headers[PROTOCOL_HEADER];
  const values = Array.isArray(raw) ? raw : raw ? [raw] : [];
  return values.flatMap((v) => v.split(',')).map((v) => v.trim()).filter(Boolean);
}

/** Replaces the offered subprotocols (authentication takes its token out of them, as the kubelet's does). */
export function setOfferedSubprotocols(req: IncomingMessage, protocols: string[]): void {
  req.headers[PROTOCOL_HEADER] = protocols.join(', ');
}

/**
 * The protocol to answer with: the first the client offers that is supported (no offer at all asks for ""),
 * as wsstream's handshake; else ApiError Forbidden (the kubelet's WebSocket handshake answers 403).
 */
export function negotiateChannelProtocol(offered: string[], supported: readonly ChannelProtocol[]): ChannelProtocol {
  for (const o of offered.length ? offered : ['']) {
    const p = supported.find((s) => s.name === o);
    if (p) return p;
  }
  throw new ApiError('Forbidden', `unable to upgrade: requested protocol(s) are not supported: [${offered.join(' ')}]; `
    + `supports [${supported.map((s) => s.name).join(' ')}]`);
}

/** A handshake `ws` would complete: checked before the member is asked for anything. ApiError BadRequest otherwise. */
export function requireWebSocketHandshake(req: IncomingMessage): void {
  const fail = (why: string): never => { throw new ApiError('BadRequest', `unable to upgrade to WebSocket: ${why}`); };
  if (req.method !== 'GET') fail(`method ${req.method} (a WebSocket handshake is a GET)`);
  if (!WS_KEY.test(req.headers['sec-websocket-key'] ?? '')) fail('missing or invalid Sec-WebSocket-Key');
  const version = req.headers['sec-websocket-version'];
  if (version !== '13' && version !== '8') fail(`unsupported Sec-WebSocket-Version ${version ?? '(none)'}`);
}

const handshakes = new WebSocketServer({ noServer: true, perMessageDeflate: false, clientTracking: false, maxPayload: MAX_MESSAGE_BYTES });
/** The subprotocol negotiated for each request being accepted, written into its 101 by the hook below. */
const answering = new WeakMap<IncomingMessage, string>();
handshakes.on('headers', (headers: string[], req: IncomingMessage) => {
  const p = answering.get(req);
  if (p) headers.push(`Sec-WebSocket-Protocol: ${p}`);
});

/**
 * Completes the handshake (101, with `protocol` unless it is "") and returns the open WebSocket. The client's
 * own Sec-WebSocket-Protocol is not shown to `ws`, which would refuse a tunnelling client's. A client gone meanwhile
 * throws ApiError, after `release()` (what was opened for the session, the member's side).
 */
export function acceptWebSocket(req: IncomingMessage, socket: Duplex, head: Buffer, protocol: string, release: () => void): WebSocket {
  delete req.headers[PROTOCOL_HEADER];
  answering.set(req, protocol);
  let accepted: WebSocket | undefined;
  // Without verifyClient, `ws` completes a checked handshake at once; it calls back only if the socket is still usable.
  handshakes.handleUpgrade(req, socket, head, (ws) => { accepted = ws; });
  if (!accepted) {
    release();
    socket.destroy();
    throw new ApiError('BadRequest', 'the client went away during the WebSocket handshake');
  }
  return accepted;
}

/** One message of `protocol`'s framing. */
export function encodeChannel(protocol: ChannelProtocol, channel: number, data: Buffer): Buffer | string {
  return protocol.binary
    ? Buffer.concat([Buffer.from([channel]), data])
    : String.fromCharCode(48 + channel) + data.toString('base64');
}

/**
 * A received message of `protocol`'s framing: its channel and payload; undefined for an empty one (ignored, as
 * wsstream does). A v5 close signal (binary, as v5 always is) comes back as channel 255 with the closed channel as
 * payload; whether to heed it is the reader's call.
 */
export function decodeChannel(protocol: ChannelProtocol, message: Buffer): { channel: number; data: Buffer } | undefined {
  if (message.length === 0) return undefined;
  if (protocol.binary) return { channel: message[0], data: message.subarray(1) };
  return { channel: message[0] - 48, data: Buffer.from(message.subarray(1).toString('latin1'), 'base64') };
}

/** Resolves once `ws` has closed (its socket included). */
export function closedWebSocket(ws: WebSocket): Promise<void> {
  return ws.readyState === ws.CLOSED ? Promise.resolve() : new Promise((resolve) => ws.once('close', () => resolve()));
}

/** Starts the closing handshake (`ws` ends the connection if the peer does not answer within 30 s). */
export function closeWebSocket(ws: WebSocket, code: number): void {
  if (ws.readyState === ws.OPEN) ws.close(code);
  else if (ws.readyState === ws.CONNECTING) ws.terminate();
}
