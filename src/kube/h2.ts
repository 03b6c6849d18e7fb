// HTTP/2 to an API server: requests are streams multiplexed over a few TLS connections instead of one connection
// each (watches stay on HTTPS/1.1 connections of their own: sharing these, they make the creation latency's tail much
// longer). Opt-in (--api-protocol http2): a request costs the client less CPU than on HTTPS/1.1, and clusterlet less
// memory, but its status path's tail latency is longer. See docs/performance.md, 'HTTP/2, opt-in'.
//
// A connection (session) takes streams up to the limit the server set (SETTINGS_MAX_CONCURRENT_STREAMS, 250 for
// kube-apiserver); past it another one is opened, as Go's transport does, since a server refuses the excess streams.
// A session the server is leaving (GOAWAY), that failed, or that did not answer a PING after a request timed out is
// not used again; its streams under way finish or fail on it, and their callers retry as after any failed request.
import { connect, constants, type ClientHttp2Session, type ClientHttp2Stream, type IncomingHttpHeaders } from 'node:http2';
import type { SecureContext } from 'node:tls';
import type { Priority } from '../util/lanes.ts';

/** A response body as its readers use it: a node stream (HTTP/2) or H1Body (HTTP/1.1, h1.ts). */
export interface Body {
  on(ev: 'data', fn: (chunk: Buffer) => void): unknown;
  on(ev: 'end' | 'close', fn: () => void): unknown;
  on(ev: 'error', fn: (err: Error) => void): unknown;
  resume(): unknown;
}

/** One request's answer, whatever the protocol carried it. */
export interface Exchange {
  status: number;
  contentType: string;
  /** The response body. */
  body: Body;
  /** Ends the exchange: its `onError` handlers get `err`. */
  destroy(err?: Error): void;
  /** Calls `onIdle` once nothing has been received for `ms`. */
  onIdle(ms: number, onIdle: () => void): void;
  /** Errors after the response head (the connection lost mid-body, say). */
  onError(handler: (err: Error) => void): void;
}

/** One request, whatever the protocol carries it. */
export interface ApiRequest {
  method: string;
  /** Path and query. */
  path: string;
  headers: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
  /**
   * The exchange fails with a TimeoutError if it has not ended by then (a request, not a watch), counted from when it
   * has a connection (HTTPS/1.1) or a stream (HTTP/2).
   */
  timeoutMs?: number;
  /** Which waits for a connection less (HTTPS/1.1: see H1Pool), when all are busy. */
  priority?: Priority;
}

/** What a request that outlived its timeout fails with. */
export function timeoutError(ms: number): Error {
  return Object.assign(new Error(`no answer within ${ms} ms`), { name: 'TimeoutError', code: 'ETIMEDOUT' });
}

/** How long a session that let a request time out has to answer a PING before it is dropped. */
const PING_TIMEOUT_MS = 15_000;
/** Streams a session is assumed to take before the server's SETTINGS say (HTTP/2's recommended minimum). */
const DEFAULT_MAX_STREAMS = 100;
/** Streams on one session at most, whatever the server allows. */
const MAX_STREAMS = 1000;
/** Flow-control windows: a LIST of thousands of objects is not held to 64 KB in flight. */
const STREAM_WINDOW = 4 << 20;
const SESSION_WINDOW = 32 << 20;

/** A session, the streams it has open, and how many it takes at once (the server's setting, once known). */
interface Session { s: ClientHttp2Session; active: number; max: number; usable: boolean }

/** Attempts at a request whose stream the server refused unprocessed (REFUSED_STREAM: always safe to send again). */
const REFUSED_ATTEMPTS = 5;

/** The sessions to one server with one TLS identity (a new identity or server gets a new H2Sessions). */
export class H2Sessions {
  readonly #authority: string;
  readonly #tls: { secureContext: SecureContext; servername?: string; rejectUnauthorized: boolean };
  #sessions: Session[] = [];
  #closed = false;
  /** Set when the server would not speak HTTP/2 (ALPN): the caller uses HTTP/1.1 from then on. */
  refused = false;

  constructor(authority: string, tls: { secureContext: SecureContext; servername?: string; rejectUnauthorized: boolean }) {
    this.#authority = authority;
    this.#tls = tls;
  }

  /**
   * Sends one request; resolves with its exchange once the response head arrives. Rejects with the stream's error,
   * whose `cause` is the connection's when it could not be opened (e.g. ECONNREFUSED), and marks the sessions
   * refused when the server does not speak HTTP/2.
   */
  async request(r: ApiRequest): Promise<Exchange> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#attempt(r);
      } catch (err) {
        // A session's first streams go before its server's SETTINGS say how many it takes (as with Go's transport):
        // the excess is refused unprocessed, and sent again on a session with room.
        if ((err as { refused?: boolean }).refused !== true || attempt >= REFUSED_ATTEMPTS) throw err;
      }
    }
  }

  #attempt(r: ApiRequest): Promise<Exchange> {
    const session = this.#pick();
    session.active++;
    if (session.active === 1) session.s.ref();
    const stream = session.s.request({
      [constants.HTTP2_HEADER_METHOD]: r.method, [constants.HTTP2_HEADER_PATH]: r.path, ...r.headers,
    }, { endStream: r.body === undefined, ...(r.signal ? { signal: r.signal } : {}) });
    stream.once('close', () => {
      session.active--;
      if (session.active === 0) {
        if (session.usable) session.s.unref(); else session.s.close();
      }
    });
    if (r.body !== undefined) stream.end(r.body);
    if (r.timeoutMs !== undefined) {
      const ms = r.timeoutMs;
      const timer = setTimeout(() => {
        this.#check(session);
        stream.destroy(timeoutError(ms));
      }, ms);
      stream.once('close', () => clearTimeout(timer));
    }
    return new Promise((resolve, reject) => {
      const early = (err: Error): void => {
        if (isNoH2(err)) this.refused = true;
        if (stream.rstCode === constants.NGHTTP2_REFUSED_STREAM) {
          session.max = Math.max(1, Math.min(session.max, session.active));
          Object.assign(err, { refused: true });
        }
        reject(err);
      };
      stream.once('error', early);
      stream.once('response', (headers: IncomingHttpHeaders) => {
        stream.off('error', early);
        resolve(exchange(stream, headers, () => this.#check(session)));
      });
    });
  }

  /** Closes every session: those with streams under way once they end. */
  close(): void {
    this.#closed = true;
    for (const x of this.#sessions.splice(0)) this.#retire(x);
  }

  /** A usable session with a stream to spare, or a new one. */
  #pick(): Session {
    if (this.#closed) throw new Error('HTTP/2 sessions closed');
    for (const x of this.#sessions) {
      if (x.usable && !x.s.closed && !x.s.destroyed && x.active < x.max) return x;
    }
    const s = connect(this.#authority, {
      ...this.#tls, settings: { enablePush: false, initialWindowSize: STREAM_WINDOW },
    });
    const x: Session = { s, active: 0, max: DEFAULT_MAX_STREAMS, usable: true };
    s.on('remoteSettings', (settings) => { x.max = Math.min(settings.maxConcurrentStreams ?? DEFAULT_MAX_STREAMS, MAX_STREAMS); });
    // Unused sessions do not hold the process: the streams under way do (request()).
    s.unref();
    s.once('connect', (_s, socket) => {
      // A server that picked no protocol (no ALPN) does not speak HTTP/2 here.
      if ((socket as { alpnProtocol?: string | false }).alpnProtocol !== 'h2') {
        this.refused = true;
        this.#drop(x);
        s.destroy(Object.assign(new Error(`${this.#authority} does not speak HTTP/2 (ALPN)`), { code: 'ERR_HTTP2_ERROR' }));
        return;
      }
      try { s.setLocalWindowSize(SESSION_WINDOW); } catch { /* closed meanwhile */ }
    });
    s.on('error', (err) => {
      if (isNoH2(err)) this.refused = true;
      this.#drop(x);
    });
    s.once('goaway', () => this.#drop(x));
    s.once('close', () => this.#drop(x));
    this.#sessions.push(x);
    return x;
  }

  /** No new stream goes to `x` (its own close when idle, see request()). */
  #drop(x: Session): void {
    x.usable = false;
    const i = this.#sessions.indexOf(x);
    if (i >= 0) this.#sessions.splice(i, 1);
  }

  /** No new stream goes to `x`; it closes now if idle, else once its last stream ends (see #attempt). */
  #retire(x: Session): void {
    x.usable = false;
    if (x.active === 0) x.s.close();
  }

  /** A session found dead: dropped, and its streams failed now. */
  #kill(x: Session): void {
    this.#drop(x);
    x.s.destroy();
  }

  /** A request on `x` timed out: a session that does not answer a PING either is gone (a dead peer, say) and destroyed. */
  #check(x: Session): void {
    if (!x.usable) return;
    const timer = setTimeout(() => this.#kill(x), PING_TIMEOUT_MS);
    timer.unref();
    try {
      x.s.ping((err) => {
        clearTimeout(timer);
        if (err) this.#kill(x);
      });
    } catch {
      clearTimeout(timer);
      this.#kill(x);
    }
  }
}

function exchange(stream: ClientHttp2Stream, headers: IncomingHttpHeaders, timedOut: () => void): Exchange {
  return {
    status: Number(headers[constants.HTTP2_HEADER_STATUS] ?? 0),
    contentType: String(headers[constants.HTTP2_HEADER_CONTENT_TYPE] ?? ''),
    body: stream,
    destroy: (err) => {
      if (err?.name === 'TimeoutError') timedOut();
      stream.destroy(err);
    },
    onIdle: (ms, onIdle) => { stream.setTimeout(ms, onIdle); },
    onError: (h) => { stream.on('error', h); },
  };
}

/** The server would not agree to HTTP/2: a TLS alert, or the session's own protocol error. */
function isNoH2(err: unknown): boolean {
  let e = err as { code?: string; cause?: unknown } | undefined;
  while (e) {
    if (e.code === 'ERR_SSL_TLSV1_ALERT_NO_APPLICATION_PROTOCOL' || e.code === 'ERR_HTTP2_ERROR') return true;
    e = e.cause as typeof e;
  }
  return false;
}
