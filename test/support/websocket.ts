// WebSocket clients of the kubelet API, for tests: one speaking the channel protocols (channel byte + payload,
// or base64 text) and collecting what each channel receives, and one for port-forward's SPDY tunnel, whose
// subprotocol ("SPDY/3.1+portforward.k8s.io") the `ws` client refuses to offer (RFC 6455 wants a token).
import { randomBytes } from 'node:crypto';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Duplex } from 'node:stream';
import WebSocket, { createWebSocketStream } from 'ws';
import { SpdySession, type SpdyStream } from '../../src/host/api/spdy/session.ts';

export interface WsCredentials {
  /** Sent as `Authorization: Bearer`. */
  token?: string;
  headers?: Record<string, string>;
}

/** What a channel client has received and how its connection ended. */
export class ChannelClient {
  readonly ws: WebSocket;
  /** Every message, decoded, in order. */
  readonly received: { channel: number; data: Buffer }[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  #waiters: (() => void)[] = [];

  constructor(ws: WebSocket) {
    this.ws = ws;
    ws.on('message', (m: Buffer) => {
      if (!m.length) return;
      this.received.push(this.base64
        ? { channel: m[0] - 48, data: Buffer.from(m.subarray(1).toString(), 'base64') }
        : { channel: m[0], data: m.subarray(1) });
      for (const w of [...this.#waiters]) w();
    });
    ws.on('error', () => { /* 'close' follows */ });
    this.closed = new Promise((resolve) => ws.once('close', (code: number, reason: Buffer) => {
      resolve({ code, reason: reason.toString() });
      for (const w of [...this.#waiters]) w();
    }));
  }

  /** Whether the protocol the server chose frames in base64 text. */
  get base64(): boolean { return this.ws.protocol.includes('base64'); }

  /** Everything received on `channel`, concatenated. */
  text(channel: number): string {
    return Buffer.concat(this.received.filter((r) => r.channel === channel).map((r) => r.data)).toString();
  }

  send(channel: number, data: Buffer | string): void {
    const d = Buffer.from(data);
    this.ws.send(this.base64 ? String.fromCharCode(48 + channel) + d.toString('base64') : Buffer.concat([Buffer.from([channel]), d]));
  }

  /** Resolves once `check()` holds, checked on every message; rejects after `ms` or when the connection closes first. */
  until(what: string, check: () => boolean, ms = 10_000): Promise<void> {
    return new Promise((resolve, reject) => {
      const done = (err?: Error): void => {
        clearTimeout(timer);
        this.#waiters.splice(this.#waiters.indexOf(test), 1);
        if (err) reject(err); else resolve();
      };
      const test = (): void => {
        if (check()) done();
        else if (this.ws.readyState === WebSocket.CLOSED) done(new Error(`closed before ${what}; received ${this.describe()}`));
      };
      const timer = setTimeout(() => done(new Error(`timed out waiting for ${what}; received ${this.describe()}`)), ms);
      this.#waiters.push(test);
      test();
    });
  }

  describe(): string {
    return JSON.stringify(this.received.map((r) => [r.channel, r.data.toString()]));
  }
}

/** Opens a channel client on `url` (wss: certificates are not verified), offering `protocols`. */
export async function openChannelClient(url: string, protocols: string[], creds: WsCredentials = {}): Promise<ChannelClient> {
  const ws = new WebSocket(url, protocols, {
    rejectUnauthorized: false, perMessageDeflate: false,
    headers: { ...(creds.token ? { Authorization: `Bearer ${creds.token}` } : {}), ...creds.headers },
  });
  const client = new ChannelClient(ws);
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('unexpected-response', (_req, res: IncomingMessage) => {
      let body = '';
      res.on('data', (d: Buffer) => { body += d.toString(); });
      res.on('end', () => reject(Object.assign(new Error(`HTTP ${res.statusCode}: ${body.trim()}`), { status: res.statusCode, body })));
    });
    ws.once('error', reject);
  });
  return client;
}

/**
 * A WebSocket client of port-forward's SPDY tunnel on `url`: the handshake is made here, then `ws` frames the
 * connection (as a client: masked). Rejects with the HTTP status when the server refuses.
 */
export function openTunnel(url: string, creds: WsCredentials = {}): Promise<{ ws: WebSocket; protocol: string }> {
  const u = new URL(url);
  const request = u.protocol === 'wss:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request({
      host: u.hostname, port: u.port, path: `${u.pathname}${u.search}`, method: 'GET', rejectUnauthorized: false,
      headers: {
        Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '13',
        'Sec-WebSocket-Key': randomBytes(16).toString('base64'),
        'Sec-WebSocket-Protocol': 'SPDY/3.1+portforward.k8s.io',
        ...(creds.token ? { Authorization: `Bearer ${creds.token}` } : {}), ...creds.headers,
      },
    });
    req.on('upgrade', (res: IncomingMessage, socket: Duplex, head: Buffer) => {
      // A WebSocket made without an address is a server's; told it is a client's, it masks what it sends.
      const ws = new WebSocket(null as unknown as string, undefined, {}) as WebSocket & { _isServer: boolean;
        setSocket(s: Duplex, h: Buffer, o: object): void };
      ws._isServer = false;
      ws.setSocket(socket, head, { maxPayload: 0 });
      resolve({ ws, protocol: String(res.headers['sec-websocket-protocol'] ?? '') });
    });
    req.on('response', (res: IncomingMessage) => {
      let body = '';
      res.on('data', (d: Buffer) => { body += d.toString(); });
      res.on('end', () => reject(Object.assign(new Error(`HTTP ${res.statusCode}: ${body.trim()}`), { status: res.statusCode })));
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * One forwarded connection to `port` through port-forward's SPDY tunnel `ws`: its SPDY session and data stream
 * (the error stream opened first and read, as client-go does).
 */
export async function tunnelConnection(ws: WebSocket, port: number): Promise<{ spdy: SpdySession; data: SpdyStream }> {
  const spdy = new SpdySession(createWebSocketStream(ws), 'client');
  const headers = { port: [String(port)], requestid: ['0'] };
  (await spdy.openStream({ streamtype: ['error'], ...headers })).resume();
  return { spdy, data: await spdy.openStream({ streamtype: ['data'], ...headers }) };
}

/**
 * Writes `text` to `stream` (an echo) and resolves with what comes back once as many bytes have; rejects if the
 * stream ends first or after `ms`.
 */
export function echoOf(stream: Duplex, text: string, ms = 10_000): Promise<string> {
  const want = Buffer.byteLength(text);
  const got: Buffer[] = [];
  let n = 0;
  return new Promise((resolve, reject) => {
    const done = (err?: Error): void => {
      clearTimeout(timer);
      stream.off('data', onData);
      stream.off('end', onEnd);
      if (err) reject(err); else resolve(Buffer.concat(got).toString());
    };
    const onData = (d: Buffer): void => { got.push(d); n += d.length; if (n >= want) done(); };
    const onEnd = (): void => done(new Error(`the stream ended after ${n} of ${want} bytes of the echo`));
    const timer = setTimeout(() => done(new Error(`${n} of ${want} bytes of the echo within ${ms} ms`)), ms);
    stream.on('data', onData);
    stream.once('end', onEnd);
    stream.write(text);
  });
}
