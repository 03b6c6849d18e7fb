// exec and attach. The runtime side is a WebSocket of the API server's channel protocol (v5.channel.k8s.io, else
// v4: channel byte + payload), as pods/exec or pods/attach of a member API server speaks it. The host side is
// either of the kubelet's transports:
// - SPDY/3.1 (API servers up to 1.35, and 1.36 translating for nodes that do not declare ExtendWebSocketsToKubelet):
//   the remote-command protocol with one stream per stdin/stdout/stderr/resize plus the error stream, v4 → v2.
//     host stdin  → channel 0; its FIN → v5 close signal for channel 0 (so `cat` ends)
//     host resize → channel 4 (the same JSON terminal sizes)
//     1/2         → host stdout/stderr; 3 (a metav1.Status) → host error stream, as is for v4, as text
//                   for v2/v3; the runtime side closing → FIN on every output stream, then GOAWAY.
// - WebSocket (1.36 passing kubectl's through, and clients reaching the kubelet directly): the same channels, so
//   messages are relayed one for one, re-framed for base64 clients; a Status goes to v1 clients as its message.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type WebSocket from 'ws';
import type { Logger } from '../../log.ts';
import type { RemoteCommandKind } from '../../provider/runtime.ts';
import { ApiError } from './errors.ts';
import { relay, writeHolding } from './flow.ts';
import { requireContainer, type ResolvedPod } from './nodes.ts';
import { countSession, sessionLog, socketClosed } from './sessions.ts';
import { SpdySession, type SpdyStream } from './spdy/session.ts';
import { acceptUpgrade, negotiate, offeredProtocols, requireSpdyUpgrade } from './upgrade.ts';
import {
  acceptWebSocket, closedWebSocket, closeWebSocket, decodeChannel, encodeChannel, negotiateChannelProtocol, offeredSubprotocols,
  REMOTECOMMAND_WS_PROTOCOLS, requireWebSocketHandshake, STREAM_CLOSE, type ChannelProtocol,
} from './websocket.ts';
import { settle } from '../../util/settle.ts';

/** Remote-command protocols served to the host, best first (v1 has no well-defined error stream). */
export const REMOTECOMMAND_PROTOCOLS = ['v4.channel.k8s.io', 'v3.channel.k8s.io', 'v2.channel.k8s.io'];
/** Channel protocols asked of the runtime, best first (v5 can signal the end of stdin). */
const CHANNEL_PROTOCOLS = ['v5.channel.k8s.io', 'v4.channel.k8s.io'];

const STDIN = 0;
const STDOUT = 1;
const STDERR = 2;
const ERROR = 3;
const RESIZE = 4;
const CLOSE = STREAM_CLOSE;

/** A message of the runtime's channel protocol: channel byte + payload. */
const frame = (channel: number, data: Buffer): Buffer => Buffer.concat([Buffer.from([channel]), data]);

export interface RemoteCommandOptions {
  command: string[];
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
}

const on = (v: string | null): boolean => v === '1';

/**
 * The kubelet's reading of the query (cri/streaming/remotecommand NewOptions): the API server sends
 * input/output/error/tty=1 (core/v1 ExecStdinParam...) and one `command` per argument.
 */
export function remoteCommandOptions(query: URLSearchParams, kind: RemoteCommandKind): RemoteCommandOptions {
  const tty = on(query.get('tty'));
  const opts = {
    command: query.getAll('command'), stdin: on(query.get('input')), stdout: on(query.get('output')),
    // A terminal has no separate stderr.
    stderr: on(query.get('error')) && !tty, tty,
  };
  if (!opts.stdin && !opts.stdout && !opts.stderr) throw new ApiError('BadRequest', 'you must specify at least 1 of stdin, stdout, stderr');
  if (kind === 'exec' && opts.command.length === 0) throw new ApiError('BadRequest', 'you must specify a command to exec');
  return opts;
}

/** The API's options for the same request (PodExecOptions / PodAttachOptions, the container aside). */
export function podRemoteCommandOptions(o: RemoteCommandOptions, kind: RemoteCommandKind): URLSearchParams {
  const q = new URLSearchParams();
  if (kind === 'exec') for (const c of o.command) q.append('command', c);
  if (o.stdin) q.set('stdin', 'true');
  if (o.stdout) q.set('stdout', 'true');
  if (o.stderr) q.set('stderr', 'true');
  if (o.tty) q.set('tty', 'true');
  return q;
}

/**
 * What goes on the host's error stream once the runtime side is done: the Status JSON (`json`: v4 and v5), else
 * the failure's text (v1 to v3; nothing for a success).
 */
export function errorStreamPayload(json: boolean, status: Buffer | undefined, closeCode: number, closeReason: string): Buffer {
  let text = status?.length ? status.toString('utf8') : undefined;
  if (!text) {
    text = normalClose(closeCode)
      ? JSON.stringify({ metadata: {}, status: 'Success' })
      : JSON.stringify({ metadata: {}, status: 'Failure', reason: 'InternalError',
        message: `member connection closed (${closeCode}${closeReason ? `: ${closeReason}` : ''})` });
  }
  if (json) return Buffer.from(text);
  try {
    const s = JSON.parse(text) as { status?: string; message?: string };
    return s.status === 'Failure' ? Buffer.from(s.message ?? 'error') : Buffer.alloc(0);
  } catch {
    return Buffer.from(text);
  }
}

/** A WebSocket close code of a session that ended as it should (1005: a close frame without a code). */
const normalClose = (code: number): boolean => code === 1000 || code === 1005;

/**
 * What either transport does before its upgrade: the container and the options checked, the client's protocol
 * chosen (`choose`), then the runtime's WebSocket, so that whatever the runtime refuses (no such container,
 * forbidden) is answered as a plain HTTP error.
 */
async function openRuntime<P>(kind: RemoteCommandKind, req: IncomingMessage, target: ResolvedPod, container: string,
  choose: () => P): Promise<{ opts: RemoteCommandOptions; protocol: P; member: WebSocket }> {
  requireContainer(target.proxy, container);
  const opts = remoteCommandOptions(new URL(req.url ?? '/', 'https://kubelet').searchParams, kind);
  const protocol = choose();
  const member = await target.node.runtime.remoteCommand(kind, target.namespace, target.name, target.uid, container,
    podRemoteCommandOptions(opts, kind), CHANNEL_PROTOCOLS);
  return { opts, protocol, member };
}

export async function serveRemoteCommand(kind: RemoteCommandKind, req: IncomingMessage, socket: Duplex, head: Buffer,
  target: ResolvedPod, container: string, log: Logger): Promise<void> {
  requireSpdyUpgrade(req);
  const { opts, protocol, member: ws } = await openRuntime(kind, req, target, container,
    () => negotiate(offeredProtocols(req), REMOTECOMMAND_PROTOCOLS));
  log.debug({ namespace: target.namespace, pod: target.name, protocol, memberProtocol: ws.protocol }, `${kind}: member connected; upgrading`);
  acceptUpgrade(socket, head, protocol);
  countSession(kind, 'spdy', [socketClosed(socket), closedWebSocket(ws)]);
  bridge(kind, ws, socket, protocol, opts, sessionLog(log, target, kind));
}

/** exec or attach for a WebSocket client: the runtime's WebSocket first, then the 101. */
export async function serveRemoteCommandWebSocket(kind: RemoteCommandKind, req: IncomingMessage, socket: Duplex, head: Buffer,
  target: ResolvedPod, container: string, log: Logger): Promise<void> {
  requireWebSocketHandshake(req);
  const { protocol, member } = await openRuntime(kind, req, target, container,
    () => negotiateChannelProtocol(offeredSubprotocols(req), REMOTECOMMAND_WS_PROTOCOLS));
  const client = acceptWebSocket(req, socket, head, protocol.name, () => member.terminate());
  countSession(kind, 'websocket', [closedWebSocket(client), closedWebSocket(member)]);
  const rlog = sessionLog(log, target, kind);
  rlog.debug({ protocol: protocol.name || '(none)', memberProtocol: member.protocol }, `${kind}: WebSocket session`);
  relayChannels(client, member, protocol, rlog);
}

/**
 * Relays a remote-command session between a WebSocket client speaking `protocol` and the runtime's WebSocket:
 *   client 0 (stdin), 4 (resize) → runtime; the client's v5 close signal → runtime, if it speaks v5 (else the
 *          end of stdin cannot be told, as over SPDY to a v4 runtime)
 *   runtime 1, 2 → client (the empty first message included: it tells clients the session is up); 3 (a Status)
 *          → client, as its message for v1 clients; a v5 close signal → v5 clients
 *   either side closing closes the other; the runtime going away without a Status sends the client a Failure.
 */
function relayChannels(client: WebSocket, member: WebSocket, protocol: ChannelProtocol, log: Logger): void {
  const closeSignals = protocol.version === 5 && member.protocol === 'v5.channel.k8s.io';
  const statusAsJSON = protocol.version >= 4;
  let statusSeen = false;
  client.on('message', (m: Buffer) => {
    const f = decodeChannel(protocol, m);
    if (f && (f.channel === STDIN || f.channel === RESIZE || (f.channel === CLOSE && closeSignals))) {
      relay(client, member, frame(f.channel, f.data));
    }
  });
  member.on('message', (m: Buffer, isBinary: boolean) => {
    if (!isBinary || m.length === 0) return;
    const channel = m[0];
    let data = m.subarray(1);
    if (channel === CLOSE) {
      if (protocol.version === 5) relay(member, client, m);
      return;
    }
    if (channel === ERROR && data.length) {
      statusSeen = true;
      data = errorStreamPayload(statusAsJSON, data, 1000, '');
      // A v1 client hears of failures only.
      if (!data.length) return;
    }
    if (channel === STDOUT || channel === STDERR || channel === ERROR) relay(member, client, encodeChannel(protocol, channel, data));
  });
  member.on('close', (code: number, reason: Buffer) => {
    log.debug({ code, reason: reason.toString() }, 'remote command: member side closed');
    if (!normalClose(code) && !statusSeen) {
      relay(member, client, encodeChannel(protocol, ERROR, errorStreamPayload(statusAsJSON, undefined, code, reason.toString())));
    }
    closeWebSocket(client, normalClose(code) ? 1000 : 1011);
  });
  client.on('close', (code: number) => {
    log.debug({ code }, 'remote command: client side closed');
    closeWebSocket(member, 1000);
  });
  // Each failure is followed by 'close'.
  member.on('error', (err: Error) => log.debug({ err: err.message }, 'remote command: member connection failed'));
  client.on('error', (err: Error) => log.debug({ err: err.message }, 'remote command: client connection failed'));
  member.resume();
}

function bridge(kind: string, ws: WebSocket, socket: Duplex, protocol: string, opts: RemoteCommandOptions, log: Logger): void {
  const streams: Partial<Record<'error' | 'stdin' | 'stdout' | 'stderr' | 'resize', SpdyStream>> = {};
  const expected = 1 + Number(opts.stdin) + Number(opts.stdout) + Number(opts.stderr) + Number(opts.tty && protocol !== 'v2.channel.k8s.io');
  let received = 0;
  let started = false;
  const supportsClose = ws.protocol === 'v5.channel.k8s.io';
  const errorBytes: Buffer[] = [];
  let finished = false;

  const session = new SpdySession(socket, 'server', {
    onStream: (s) => {
      const type = s.header('streamtype');
      if (type !== 'error' && type !== 'stdin' && type !== 'stdout' && type !== 'stderr' && type !== 'resize') {
        log.debug({ type }, 'remote command: unexpected stream type');
        s.reset();
        return;
      }
      s.reply();
      log.debug({ type, id: s.id }, 'remote command: stream');
      streams[type] = s;
      if (++received === expected) start();
    },
  });
  const timeout = setTimeout(() => {
    log.debug({ received, expected }, 'remote command: timed out waiting for the client\'s streams');
    session.destroy();
  }, 30_000);
  timeout.unref();

  const start = (): void => {
    if (started) return;
    started = true;
    clearTimeout(timeout);
    const send = (channel: number, data: Buffer): void => {
      if (ws.readyState === ws.OPEN) ws.send(frame(channel, data));
    };
    const stdin = streams.stdin;
    if (stdin) {
      // A member that reads slowly holds the client's stdin.
      stdin.on('data', (d: Buffer) => relay(stdin, ws, frame(STDIN, d)));
      stdin.on('end', () => { if (supportsClose) send(CLOSE, Buffer.from([STDIN])); });
    }
    streams.resize?.on('data', (d: Buffer) => send(RESIZE, d));
    for (const s of Object.values(streams)) s.on('error', () => { /* reset by the client: the session end handles it */ });
    ws.resume();
  };

  ws.on('message', (data: Buffer, isBinary: boolean) => {
    if (!isBinary || data.length < 1) return;
    const channel = data[0];
    const payload = data.subarray(1);
    const out = channel === STDOUT ? streams.stdout : channel === STDERR ? streams.stderr : undefined;
    if (out) {
      if (payload.length) writeHolding(ws, out, payload);
    } else if (channel === ERROR) {
      errorBytes.push(payload);
    } else if (channel === CLOSE && payload.length === 1) {
      (payload[0] === STDOUT ? streams.stdout : payload[0] === STDERR ? streams.stderr : undefined)?.end();
    }
  });

  const finish = (code: number, reason: string): void => {
    if (finished) return;
    finished = true;
    clearTimeout(timeout);
    streams.stdout?.end();
    streams.stderr?.end();
    const err = streams.error;
    if (err && !err.destroyed) {
      const payload = errorStreamPayload(protocol === 'v4.channel.k8s.io', errorBytes.length ? Buffer.concat(errorBytes) : undefined, code, reason);
      if (payload.length) err.write(payload);
      err.end();
    }
    log.debug({ code, reason }, `${kind}: member side closed`);
    // GOAWAY once the FINs and the status are on their way.
    const flushed = (st: SpdyStream | undefined): Promise<void> => !st || st.writableFinished || st.destroyed ? Promise.resolve()
      : new Promise((resolve) => { st.once('finish', () => resolve()); st.once('close', () => resolve()); });
    settle(Promise.all([streams.stdout, streams.stderr, streams.error].map(flushed)).then(() => session.close()), log,
      `${kind}: closing the SPDY session failed`);
  };
  ws.on('close', (code: number, reason: Buffer) => finish(code, reason.toString()));
  ws.on('error', (err: Error) => {
    log.debug({ err: err.message }, `${kind}: member connection failed`);
    finish(1011, err.message);
  });
  // The client went away: so does the member side.
  session.onClose(() => {
    clearTimeout(timeout);
    if (ws.readyState === ws.OPEN || ws.readyState === ws.CONNECTING) ws.close(1000);
  });
}
