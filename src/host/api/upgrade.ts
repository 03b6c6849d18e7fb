// The HTTP side of exec, attach and port-forward: a SPDY/3.1 upgrade with a negotiated stream protocol
// (X-Stream-Protocol-Version, as k8s.io/apimachinery's httpstream.Handshake: the first protocol in the
// client's order that the server supports), answered with 101 Switching Protocols on the raw socket.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { ApiError } from './errors.ts';

export const SPDY_31 = 'SPDY/3.1';
const PROTOCOL_HEADER = 'x-stream-protocol-version';

/** The client's offered protocols, in order (repeated headers arrive joined with ", "). */
export function offeredProtocols(req: IncomingMessage): string[] {
  const raw = req.headers[PROTOCOL_HEADER];
  const values = Array.isArray(raw) ? raw : raw ? [raw] : [];
  return values.flatMap((v) => v.split(',')).map((v) => v.trim()).filter(Boolean);
}

/** The first offered protocol we support; ApiError Forbidden when there is none (as the kubelet). */
export function negotiate(offered: string[], supported: string[]): string {
  const p = offered.find((o) => supported.includes(o));
  if (!p) {
    throw new ApiError('Forbidden', `unable to upgrade: unable to negotiate protocol: client supports [${offered.join(' ')}], `
      + `server accepts [${supported.join(' ')}]`);
  }
  return p;
}

/** The request asks for SPDY/3.1 (streams.ts sends WebSocket handshakes elsewhere). */
export function requireSpdyUpgrade(req: IncomingMessage): void {
  const connection = (req.headers.connection ?? '').toLowerCase();
  const upgrade = (req.headers.upgrade ?? '').toLowerCase();
  if (!connection.includes('upgrade') || !upgrade.includes(SPDY_31.toLowerCase())) {
    throw new ApiError('BadRequest', `unable to upgrade: this kubelet speaks ${SPDY_31} and websocket (requested: ${req.headers.upgrade ?? 'none'})`);
  }
}

/** Writes the 101 answer; the socket is the SPDY transport from here on (with `head`, bytes already read). */
export function acceptUpgrade(socket: Duplex, head: Buffer, protocol: string): void {
  socket.write(`HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: ${SPDY_31}\r\n`
    + `X-Stream-Protocol-Version: ${protocol}\r\n\r\n`);
  if (head.length) socket.unshift(head);
}
