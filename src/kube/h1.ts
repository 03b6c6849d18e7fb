// HTTP/1.1 to an API server, on connections of our own (node:tls / node:net), instead of node:http's client.
//
// Why: node:http's client spends most of a request's CPU on its own machinery (ClientRequest, IncomingMessage and their
// streams, the agent's bookkeeping, llhttp); writing the request and reading its answer on the socket directly costs a
// fraction of it (undici's Agent lies between the two). clusterlet makes about five requests per pod and reads about
// ten watch events, so this is a good part of its CPU. See docs/performance.md, 'The HTTP/1.1 client and its buffer
// pool'.
//
// What it speaks is what kube-apiserver answers: a response body sized by Content-Length or chunked (watches), or
// ended by the connection's close; no compression (we send no Accept-Encoding), no pipelining (one request at a time
// per connection), no upgrades (exec, attach and port-forward open their own connections). Connections are kept for
// reuse, and closed once unused for a while or when the server says `Connection: close`.
// One file, though long: the response parser (Conn), its body and the pool that hands out connections are one
// protocol's parts, each used only by the others.
import { connect as netConnect, isIP, type Socket } from 'node:net';
import { connect as tlsConnect, type SecureContext } from 'node:tls';
import { timeoutError, type ApiRequest, type Body, type Exchange } from './h2.ts';
import { Lanes, type Priority } from '../util/lanes.ts';

export interface H1Origin {
  secure: boolean;
  hostname: string;
  port: number;
  /** TLS: one context for every connection (CA, client certificate and key). */
  secureContext?: SecureContext;
  servername?: string;
  rejectUnauthorized?: boolean;
}

export interface H1PoolOptions {
  /** Connections open at once at most; more requests wait for one (default: no limit). */
  maxSockets?: number;
  /** Unused connections kept for reuse at most (default: as many as maxSockets, else 16). */
  maxFree?: number;
  /** An unused connection is closed after this long. */
  idleMs: number;
  /** Told, in ms, how long a request waited for a connection, when it had to (all maxSockets busy). */
  onWaited?: (ms: number, priority: Priority) => void;
}

/** The connection ended or failed before the answer did (node:http's word for it). */
function hangUp(): Error {
  return Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
}

function abortError(signal: AbortSignal): Error {
  return Object.assign(new Error('The operation was aborted', { cause: signal.reason }), { name: 'AbortError', code: 'ABORT_ERR' });
}

/** A response body: 'data' chunks as they arrive, then 'end' (or 'error'), then 'close'. No backpressure. */
class H1Body implements Body {
  #data: ((chunk: Buffer) => void)[] = [];
  #end: (() => void)[] = [];
  #close: (() => void)[] = [];
  #error: ((err: Error) => void)[] = [];
  /** Chunks that came before anyone listened for them. */
  #held: Buffer[] | undefined = [];
  #ended = false;
  #failed: Error | undefined;
  #closed = false;

  on(ev: 'data', fn: (chunk: Buffer) => void): this;
  on(ev: 'end' | 'close', fn: () => void): this;
  on(ev: 'error', fn: (err: Error) => void): this;
  on(ev: string, fn: (...a: never[]) => void): this {
    switch (ev) {
      case 'data': {
        this.#data.push(fn as (c: Buffer) => void);
        const held = this.#held;
        this.#held = undefined;
        for (const c of held ?? []) (fn as (c: Buffer) => void)(c);
        if (this.#ended) this.#settle();
        break;
      }
      case 'end': this.#end.push(fn as () => void); if (this.#ended && !this.#held) this.#settle(); break;
      case 'close': this.#close.push(fn as () => void); if (this.#closed) (fn as () => void)(); break;
      case 'error': this.#error.push(fn as (e: Error) => void); if (this.#failed) (fn as (e: Error) => void)(this.#failed); break;
    }
    return this;
  }

  /** Data flows as it arrives: nothing to resume (here for the readers written for streams). */
  resume(): this {
    if (this.#held) this.on('data', () => undefined);
    return this;
  }

  push(chunk: Buffer): void {
    if (this.#held) this.#held.push(chunk);
    else for (const fn of this.#data) fn(chunk);
  }

  end(): void {
    this.#ended = true;
    if (!this.#held) this.#settle();
  }

  fail(err: Error): void {
    if (this.#ended || this.#failed) return;
    this.#failed = err;
    for (const fn of this.#error.splice(0)) fn(err);
    this.#closeOnce();
  }

  #settle(): void {
    const fns = this.#end.splice(0);
    for (const fn of fns) fn();
    this.#closeOnce();
  }

  #closeOnce(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const fn of this.#close.splice(0)) fn();
  }
}

const CRLF2 = Buffer.from('\r\n\r\n');
/** Characters a request's path or headers must not hold. */
const UNSAFE = /[\r\n\0]/;
const CRLF = Buffer.from('\r\n');

/** Response heads larger than this are refused (kube-apiserver's are well under 1 KB). */
const MAX_HEAD = 64 * 1024;

/** A request, sent or waiting for a connection. */
interface Pending {
  r: ApiRequest;
  head: string;
  resolve(ex: Exchange): void;
  reject(err: Error): void;
  /** The connection it was sent on. */
  conn?: Conn;
  /** When it began to wait for a connection (performance.now()), if it had to. */
  waitingSince?: number;
}

/** The exchange under way on a connection. */
interface Current { x: Pending; body?: H1Body; timer?: NodeJS.Timeout; onIdle?: () => void }

/** One connection and the exchange under way on it, if any. */
class Conn {
  readonly socket: Socket;
  /** The exchange under way. */
  #cur: Current | undefined;
  /** Bytes of a head or a chunk-size line not complete yet. */
  #pending: Buffer | undefined;
  #state: 'head' | 'length' | 'chunkSize' | 'chunkData' | 'chunkEnd' | 'trailer' | 'toClose' = 'head';
  #left = 0;
  #keepAlive = true;
  #done: (c: Conn, reusable: boolean) => void;
  dead = false;

  constructor(socket: Socket, done: (c: Conn, reusable: boolean) => void) {
    this.socket = socket;
    this.#done = done;
    socket.setNoDelay(true);
    // As Go's transport: the kernel probes a connection that stays silent (a watch of a quiet resource).
    socket.setKeepAlive(true, 30_000);
    socket.on('data', (chunk: Buffer) => {
      try {
        this.#read(chunk);
      } catch (err) {
        this.#fail(err as Error);
      }
    });
    socket.on('timeout', () => {
      const cur = this.#cur;
      if (cur?.onIdle) cur.onIdle();
      else if (!cur) this.#fail(new Error('unused connection closed')); // unused for too long: the pool forgets it now
    });
    socket.on('error', (err) => this.#fail(err));
    socket.on('close', () => this.#fail(hangUp()));
    socket.on('end', () => {
      // The server ended its side: a body read to the close ends here; anything else under way failed.
      const cur = this.#cur;
      try {
        if (cur?.body && this.#state === 'toClose') this.#finish(cur, true);
        else this.#fail(hangUp());
      } catch (err) {
        this.#fail(err as Error);
      }
    });
  }

  send(x: Pending): void {
    const r = x.r;
    x.conn = this;
    this.#cur = { x };
    this.#state = 'head';
    this.#keepAlive = true;
    this.socket.ref();
    this.socket.setTimeout(0);
    if (r.timeoutMs !== undefined) {
      const ms = r.timeoutMs;
      this.#cur.timer = setTimeout(() => this.#fail(timeoutError(ms)), ms);
    }
    this.socket.write(r.body === undefined ? x.head : x.head + r.body);
  }

  /** Ends the exchange of `x` (and the connection) with `err`, if it is still under way here. */
  destroyIf(x: Pending, err: Error): void {
    if (this.#cur?.x === x) this.#fail(err);
  }

  #read(chunk: Buffer): void {
    const cur = this.#cur;
    if (!cur) {
      // Nothing asked: a server talking out of turn is not to be trusted with the next request.
      this.socket.destroy();
      return;
    }
    let buf = chunk;
    if (this.#pending) {
      buf = Buffer.concat([this.#pending, chunk]);
      this.#pending = undefined;
    }
    let at = 0;
    while (at < buf.length && this.#cur === cur) {
      switch (this.#state) {
        case 'head': {
          const end = buf.indexOf(CRLF2, at);
          if (end < 0) return this.#hold(buf, at);
          const complete = this.#head(cur, buf.toString('latin1', at, end));
          at = end + 4;
          if (complete) this.#finish(cur, at === buf.length);
          break;
        }
        case 'length':
          at = this.#bodyBytes(cur, buf, at);
          if (this.#left === 0) this.#finish(cur, at === buf.length);
          break;
        case 'toClose':
          bodyOf(cur).push(at === 0 ? buf : buf.subarray(at));
          at = buf.length;
          break;
        case 'chunkSize': {
          const end = buf.indexOf(CRLF, at);
          if (end < 0) return this.#hold(buf, at);
          const line = buf.toString('latin1', at, end);
          const semi = line.indexOf(';');
          const hex = (semi < 0 ? line : line.slice(0, semi)).trim();
          if (!/^[0-9a-fA-F]{1,12}$/.test(hex)) throw new Error(`bad chunk size ${JSON.stringify(line.slice(0, 20))}`);
          const size = Number.parseInt(hex, 16);
          at = end + 2;
          this.#left = size;
          this.#state = size === 0 ? 'trailer' : 'chunkData';
          break;
        }
        case 'chunkData':
          at = this.#bodyBytes(cur, buf, at);
          if (this.#left === 0) { this.#state = 'chunkEnd'; this.#left = 2; }
          break;
        case 'chunkEnd':
          // The CRLF after a chunk's data, a byte at a time (it may come split across reads).
          if (buf[at] !== (this.#left === 2 ? 0x0d : 0x0a)) throw new Error('no CRLF after a chunk');
          at++;
          if (--this.#left === 0) this.#state = 'chunkSize';
          break;
        case 'trailer': {
          // Trailer lines (kube-apiserver sends none) up to the empty line that ends the body.
          const end = buf.indexOf(CRLF, at);
          if (end < 0) return this.#hold(buf, at);
          const empty = end === at;
          at = end + 2;
          if (empty) this.#finish(cur, at === buf.length);
          break;
        }
      }
    }
  }

  /** Up to #left bytes of `buf` from `at` go to the body of `cur`; returns where they stopped. */
  #bodyBytes(cur: Current, buf: Buffer, at: number): number {
    const n = Math.min(this.#left, buf.length - at);
    bodyOf(cur).push(buf.subarray(at, at + n));
    this.#left -= n;
    return at + n;
  }

  #hold(buf: Buffer, at: number): void {
    if (buf.length - at > MAX_HEAD) throw new Error('response head too large');
    this.#pending = Buffer.from(buf.subarray(at));
  }

  /** Takes the head of the answer to `cur`; true when the answer has no body (it is complete). */
  #head(cur: Current, text: string): boolean {
    const lines = text.split('\r\n');
    // The status line; the header lines are left.
    const statusLine = lines.shift() ?? '';
    const m = /^HTTP\/1\.([01]) (\d{3})/.exec(statusLine);
    if (!m) throw new Error(`not an HTTP/1.1 response: ${JSON.stringify(statusLine.slice(0, 40))}`);
    const status = Number(m[2]);
    if (status >= 100 && status < 200) return false; // informational: the real answer follows
    let length = -1;
    let chunked = false;
    let contentType = '';
    this.#keepAlive = m[1] === '1';
    for (const line of lines) {
      const colon = line.indexOf(':');
      if (colon < 0) continue;
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      if (name === 'content-length') {
        if (!/^\d+$/.test(value) || (length >= 0 && length !== Number(value))) throw new Error(`bad Content-Length ${JSON.stringify(value.slice(0, 20))}`);
        length = Number(value);
      } else if (name === 'transfer-encoding') chunked = value.toLowerCase().includes('chunked');
      else if (name === 'content-type') contentType = value;
      else if (name === 'connection') {
        const v = value.toLowerCase();
        if (v.includes('close')) this.#keepAlive = false;
        else if (v.includes('keep-alive')) this.#keepAlive = true;
      }
    }
    const body = new H1Body();
    cur.body = body;
    const noBody = cur.x.r.method === 'HEAD' || status === 204 || status === 304;
    const ex: Exchange = {
      status, contentType, body,
      // Only while it is under way: the connection may serve another request afterwards.
      destroy: (err) => { if (this.#cur === cur) this.#fail(err ?? abortedExchange()); },
      onIdle: (ms, onIdle) => { if (this.#cur === cur) { cur.onIdle = onIdle; this.socket.setTimeout(ms); } },
      onError: (h) => { body.on('error', h); },
    };
    cur.x.resolve(ex);
    if (noBody || (length === 0 && !chunked)) return true;
    if (chunked) this.#state = 'chunkSize';
    else if (length > 0) { this.#state = 'length'; this.#left = length; }
    else { this.#state = 'toClose'; this.#keepAlive = false; }
    return false;
  }

  /**
   * The answer of `cur` is complete: its body ends, then the connection goes back to the pool, or is closed. `clean`:
   * nothing came after it (bytes after an answer make a server not to trust with the next request).
   */
  #finish(cur: Current, clean: boolean): void {
    if (this.#cur !== cur) return; // ended meanwhile (its reader destroyed it on the last bytes, say)
    this.#cur = undefined;
    clearTimeout(cur.timer);
    this.#state = 'head';
    // The reader sees the end before the connection serves anyone else: whatever it does then touches only its own.
    let ended = false;
    try {
      bodyOf(cur).end();
      ended = true;
    } finally {
      // A reader that threw is not to be trusted with the connection's next answer either.
      const reusable = ended && clean && this.#keepAlive;
      if (!reusable) { this.dead = true; this.socket.destroy(); }
      this.#done(this, reusable);
    }
  }

  #fail(err: Error): void {
    const cur = this.#cur;
    this.#cur = undefined;
    const wasDead = this.dead;
    this.dead = true;
    if (!this.socket.destroyed) this.socket.destroy();
    if (!wasDead) this.#done(this, false);
    if (!cur) return;
    clearTimeout(cur.timer);
    if (cur.body) cur.body.fail(err);
    else cur.x.reject(err);
  }
}

/** The body of `cur`, which has one from its head on: the states that read body bytes come after it. */
function bodyOf(cur: Current): H1Body {
  if (!cur.body) throw new Error('response body bytes before the response head');
  return cur.body;
}

function abortedExchange(): Error {
  return Object.assign(new Error('exchange destroyed'), { code: 'ERR_STREAM_DESTROYED' });
}

/**
 * What a TLS socket keeps for as long as it lives (its ALPN list, the session it resumed from) must not be a slice of
 * node's shared Buffer pool: one small slice keeps the pool's whole slab alive (64 KiB on Node 24), and a watch's
 * connection lives for hours, so an idle clusterlet would keep adding slabs held this way (docs/performance.md, 'The
 * HTTP/1.1 client and its buffer pool').
 *
 * tls.connect copies a string list, a Buffer or a Uint8Array into the pool, but wraps a copy of a DataView's bytes on
 * their own: so the list goes as a DataView.
 */
const ALPN_HTTP11 = new DataView(Uint8Array.from([8, ...Buffer.from('http/1.1', 'latin1')]).buffer);

/** `b`'s bytes in memory of their own (node hands TLS sessions out as slices of its pool). */
function standalone(b: Buffer): Buffer {
  const own = Buffer.allocUnsafeSlow(b.length);
  b.copy(own);
  return own;
}

/** The connections to one server with one TLS identity (a new identity or server gets a new pool). */
export class H1Pool {
  #origin: H1Origin;
  #opts: H1PoolOptions & { maxSockets: number; maxFree: number };
  #host: string;
  #conns = new Set<Conn>();
  /** Unused connections, the most recently used last. */
  #free: Conn[] = [];
  /** Requests waiting for a connection (all maxSockets busy), the most urgent served first. */
  #waiting = new Lanes<Pending>();
  #closed = false;
  /** The server's latest TLS session: a new connection resumes it (as node's https.Agent does), saving a full handshake. */
  #session: Buffer | undefined;

  constructor(origin: H1Origin, opts: H1PoolOptions) {
    this.#origin = origin;
    const maxSockets = opts.maxSockets ?? Infinity;
    this.#opts = { maxSockets, maxFree: opts.maxFree ?? (Number.isFinite(maxSockets) ? maxSockets : 16), idleMs: opts.idleMs,
      onWaited: opts.onWaited };
    const host = isIP(origin.hostname) === 6 ? `[${origin.hostname}]` : origin.hostname;
    const std = origin.secure ? 443 : 80;
    this.#host = origin.port === std ? host : `${host}:${origin.port}`;
  }

  /** Connections open (busy or not), for tests. */
  get size(): number { return this.#conns.size; }

  /** Sends `r`; resolves with the answer's head once it has come (its body follows on `body`). */
  request(r: ApiRequest): Promise<Exchange> {
    let head = `${r.method} ${r.path} HTTP/1.1\r\nhost: ${this.#host}\r\n`;
    // What would end a line of the head early (a token with a trailing newline, say) is refused, as node:http does.
    let unsafe = UNSAFE.test(r.path);
    for (const k in r.headers) {
      const v = r.headers[k];
      unsafe ||= UNSAFE.test(k) || UNSAFE.test(v);
      head += `${k}: ${v}\r\n`;
    }
    if (unsafe) {
      return Promise.reject(Object.assign(new Error(`${r.method} ${r.path.slice(0, 80)}: a header or the path holds a line break or NUL`),
        { code: 'ERR_INVALID_CHAR' }));
    }
    if (r.body !== undefined && r.headers['content-length'] === undefined) head += `content-length: ${Buffer.byteLength(r.body)}\r\n`;
    head += '\r\n';
    return new Promise<Exchange>((resolve, reject) => {
      if (this.#closed) return reject(new Error('connection pool closed'));
      const signal = r.signal;
      if (signal?.aborted) return reject(abortError(signal));
      const x: Pending = { r, head, resolve, reject };
      if (signal) {
        const onAbort = (): void => {
          if (this.#waiting.remove(x, r.priority)) {
            reject(abortError(signal));
          } else {
            x.conn?.destroyIf(x, abortError(signal));
          }
        };
        signal.addEventListener('abort', onAbort, { once: true });
        const off = (): void => signal.removeEventListener('abort', onAbort);
        x.resolve = (ex) => { ex.body.on('close', off); resolve(ex); };
        x.reject = (err) => { off(); reject(err); };
      }
      const c = this.#take();
      if (c) {
        c.send(x);
      } else {
        x.waitingSince = performance.now();
        this.#waiting.push(x, r.priority);
      }
    });
  }

  /**
   * Takes no new request, and closes every connection: the unused ones now, the busy ones once they have served their
   * exchange and the requests already waiting for a connection (sent as before: retiring a pool, for rotated
   * credentials say, fails nothing that was asked of it).
   */
  close(): void {
    this.#closed = true;
    for (const c of this.#free.splice(0)) c.socket.destroy();
  }

  /** An unused connection, a new one if the limit allows, or none. */
  #take(): Conn | undefined {
    let c: Conn | undefined;
    while ((c = this.#free.pop())) if (!c.dead && !c.socket.destroyed) return c;
    if (this.#conns.size >= this.#opts.maxSockets) return undefined;
    return this.#connect();
  }

  #connect(): Conn {
    const o = this.#origin;
    let socket: Socket;
    if (o.secure) {
      const tls = tlsConnect({
        host: o.hostname, port: o.port, secureContext: o.secureContext, rejectUnauthorized: o.rejectUnauthorized ?? true,
        // SNI takes names only; the certificate is checked against the address otherwise.
        servername: o.servername ?? (isIP(o.hostname) ? undefined : o.hostname), ALPNProtocols: ALPN_HTTP11,
        session: this.#session,
      });
      tls.on('session', (session: Buffer) => { this.#session = standalone(session); });
      // A connection that failed does not hand its session on (node's agent drops it too).
      tls.once('error', () => { this.#session = undefined; });
      socket = tls;
    } else {
      socket = netConnect({ host: o.hostname, port: o.port });
    }
    const c = new Conn(socket, (conn, reusable) => this.#release(conn, reusable));
    this.#conns.add(c);
    return c;
  }

  #release(c: Conn, reusable: boolean): void {
    if (!reusable) {
      this.#conns.delete(c);
      const i = this.#free.indexOf(c);
      if (i >= 0) this.#free.splice(i, 1);
    }
    // A request waiting for a connection takes this one, or the room it leaves.
    if (this.#waiting.length > 0) {
      const next = reusable ? c : this.#take();
      if (next) {
        const w = this.#waiting.shift();
        // The request counted, queued with the time it began to wait.
        if (w?.waitingSince === undefined) throw new Error('H1Pool: a request counted as waiting is not there');
        this.#opts.onWaited?.(performance.now() - w.waitingSince, w.r.priority ?? 'normal');
        next.send(w);
        return;
      }
    }
    if (!reusable) return;
    if (this.#closed || this.#free.length >= this.#opts.maxFree) {
      this.#conns.delete(c);
      c.dead = true;
      c.socket.destroy();
      return;
    }
    // Unused: does not hold the process, and is closed after idleMs.
    c.socket.unref();
    c.socket.setTimeout(this.#opts.idleMs);
    this.#free.push(c);
  }
}
