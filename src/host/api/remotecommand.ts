// exec and attach: the host side speaks the kubelet's remote-command protocol over SPDY/3.1 (one stream per
// stdin/stdout/stderr/resize plus the error stream, protocols v4 → v2), the runtime side is a WebSocket of the
// API server's channel protocol (v5.channel.k8s.io, else v4: channel byte + payload), as pods/exec or
// pods/attach of a member API server speaks it.
//   host stdin  → channel 0; its FIN → v5 close signal for channel 0 (so `cat` ends)
//   host resize → channel 4 (the same JSON terminal sizes)
//   1/2         → host stdout/stderr; 3 (a metav1.Status) → host error stream, as is for v4, as text
//                 for v2/v3; the runtime side closing → FIN on every output stream, then GOAWAY.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type WebSocket from 'ws';
import type { Logger } from '../../log.ts';
import type { RemoteCommandKind } from '../../provider/runtime.ts';
import { ApiError } from './errors.ts';
import { requireContainer, type ResolvedPod } from './nodes.ts';
import { SpdySession, type SpdyStream } from './spdy/session.ts';
import { acceptUpgrade, negotiate, offeredProtocols, requireSpdyUpgrade } from './upgrade.ts';

/** Remote-command protocols served to the host, best first (v1 has no well-defined error stream). */
export const REMOTECOMMAND_PROTOCOLS = ['v4.channel.k8s.io', 'v3.channel.k8s.io', 'v2.channel.k8s.io'];
/** Channel protocols asked of the runtime, best first (v5 can signal the end of stdin). */
const CHANNEL_PROTOCOLS = ['v5.channel.k8s.io', 'v4.channel.k8s.io'];

const STDIN = 0;
const STDOUT = 1;
const STDERR = 2;
const ERROR = 3;
const RESIZE = 4;
const CLOSE = 255;

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

/** What goes on the host's error stream once the runtime side is done: v4 the Status JSON, v2/v3 the failure text. */
export function errorStreamPayload(protocol: string, status: Buffer | undefined, closeCode: number, closeReason: string): Buffer {
  let json = status?.length ? status.toString('utf8') : undefined;
  if (!json) {
    json = closeCode === 1000 || closeCode === 1005
      ? JSON.stringify({ metadata: {}, status: 'Success' })
      : JSON.stringify({ metadata: {}, status: 'Failure', reason: 'InternalError',
        message: `member connection closed (${closeCode}${closeReason ? `: ${closeReason}` : ''})` });
  }
  if (protocol === 'v4.channel.k8s.io') return Buffer.from(json);
  try {
    const s = JSON.parse(json) as { status?: string; message?: string };
    return s.status === 'Failure' ? Buffer.from(s.message ?? 'error') : Buffer.alloc(0);
  } catch {
    return Buffer.from(json);
  }
}

export async function serveRemoteCommand(kind: RemoteCommandKind, req: IncomingMessage, socket: Duplex, head: Buffer,
  target: ResolvedPod, container: string, log: Logger): Promise<void> {
  requireSpdyUpgrade(req);
  requireContainer(target.proxy, container);
  const opts = remoteCommandOptions(new URL(req.url ?? '/', 'https://kubelet').searchParams, kind);
  const protocol = negotiate(offeredProtocols(req), REMOTECOMMAND_PROTOCOLS);
  // The runtime first: whatever it refuses (no such container, forbidden) is answered as a plain HTTP error.
  const ws = await target.node.runtime.remoteCommand(kind, target.namespace, target.name, target.uid, container,
    podRemoteCommandOptions(opts, kind), CHANNEL_PROTOCOLS);
  ws.pause();
  log.debug({ namespace: target.namespace, pod: target.name, protocol, memberProtocol: ws.protocol }, `${kind}: member connected; upgrading`);
  acceptUpgrade(socket, head, protocol);
  bridge(kind, ws, socket, protocol, opts, log.child({ namespace: target.proxy.metadata?.namespace, pod: target.proxy.metadata?.name, kind }));
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
    const send = (channel: number, data: Buffer, sent?: () => void): void => {
      if (ws.readyState !== ws.OPEN) return;
      ws.send(Buffer.concat([Buffer.from([channel]), data]), sent);
    };
    const stdin = streams.stdin;
    if (stdin) {
      stdin.on('data', (d: Buffer) => {
        // Back-pressure: a member that reads slowly holds the client's stdin.
        if (ws.bufferedAmount > 1 << 20) {
          stdin.pause();
          send(STDIN, d, () => stdin.resume());
        } else {
          send(STDIN, d);
        }
      });
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
      if (payload.length && !out.write(payload)) {
        ws.pause();
        out.once('drain', () => ws.resume());
      }
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
      const payload = errorStreamPayload(protocol, errorBytes.length ? Buffer.concat(errorBytes) : undefined, code, reason);
      if (payload.length) err.write(payload);
      err.end();
    }
    log.debug({ code, reason }, `${kind}: member side closed`);
    // GOAWAY once the FINs and the status are on their way.
    const flushed = (st: SpdyStream | undefined): Promise<void> => !st || st.writableFinished || st.destroyed ? Promise.resolve()
      : new Promise((resolve) => { st.once('finish', () => resolve()); st.once('close', () => resolve()); });
    void Promise.all([streams.stdout, streams.stderr, streams.error].map(flushed)).then(() => session.close());
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
