// A SPDY/3.1 session over any byte stream (a TLS socket after an HTTP upgrade, or a WebSocket), in the
// server or the client role, as Kubernetes uses it: the client opens streams (odd ids) with headers that say
// what each is for; the other side replies (SYN_REPLY) and both send data, half-close (FIN) or reset.
// Like Go's spdystream (Kubernetes' implementation) this sends no SETTINGS or WINDOW_UPDATE and enforces no
// flow-control window; back-pressure is the transport's: a stream whose reader lags pauses the transport.
// Pings are answered. Frames are handled strictly in order (header blocks are inflated asynchronously).
import { Duplex } from 'node:stream';
import {
  FLAG_FIN, FrameParser, HeaderCompressor, HeaderDecompressor, ProtocolError, RstStatus, decodeControl, encodeData,
  encodeGoAway, encodePing, encodeRstStream, encodeSynReply, encodeSynStream, headerBlockOffset,
  type Frame, type Headers, type RawFrame,
} from './framing.ts';

/** Data frames are cut to this size. */
const MAX_DATA_FRAME = 32 * 1024;

export class StreamResetError extends Error {
  readonly status: number;
  constructor(status: number, byPeer: boolean) {
    super(`stream reset ${byPeer ? 'by the peer' : 'locally'} (status ${status})`);
    this.name = 'StreamResetError';
    this.status = status;
  }
}

/** One SPDY stream as a Duplex: readable = the peer's data (ends at its FIN), writable = ours (end() = FIN). */
export class SpdyStream extends Duplex {
  readonly id: number;
  /** The headers it was opened with (SYN_STREAM), for a stream the peer opened; the reply's for ours. */
  headers: Headers;
  readonly #session: SpdySession;
  #replied: boolean;
  #localFin = false;
  #remoteFin = false;
  #reset = false;

  constructor(session: SpdySession, id: number, headers: Headers, replied: boolean) {
    super({ allowHalfOpen: true });
    this.#session = session;
    this.id = id;
    this.headers = headers;
    this.#replied = replied;
    // A reset or a lost session must never take the process down: users watch 'close' (or add their own).
    this.on('error', () => { /* see above */ });
  }

  /** The first value of a header. */
  header(name: string): string | undefined { return this.headers[name.toLowerCase()]?.[0]; }

  /** Accepts a stream the peer opened (SYN_REPLY). */
  reply(headers: Headers = {}, fin = false): void {
    if (this.#replied) return;
    this.#replied = true;
    if (fin) this.#localFin = true;
    this.#session.send(encodeSynReply(this.id, fin ? FLAG_FIN : 0, this.#session.compress(headers)));
  }

  /** RST_STREAM (CANCEL by default) and destroy. */
  reset(status: number = RstStatus.CANCEL): void {
    if (this.#reset || this.destroyed) return;
    this.#reset = true;
    this.#session.send(encodeRstStream(this.id, status));
    this.#session.forget(this.id);
    this.destroy();
  }

  override _read(): void { this.#session.resumeTransport(); }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    if (this.#reset) { cb(new StreamResetError(RstStatus.CANCEL, false)); return; }
    this.reply();
    let ok = true;
    for (let o = 0; o < chunk.length; o += MAX_DATA_FRAME) {
      ok = this.#session.send(encodeData(this.id, 0, chunk.subarray(o, o + MAX_DATA_FRAME)));
    }
    if (ok) cb(); else this.#session.onceDrained(() => cb());
  }

  override _final(cb: (err?: Error | null) => void): void {
    if (!this.#localFin && !this.#reset) {
      this.reply();
      this.#localFin = true;
      this.#session.send(encodeData(this.id, FLAG_FIN, Buffer.alloc(0)));
    }
    this.#maybeDone();
    cb();
  }

  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    this.#session.forget(this.id);
    cb(err);
  }

  /** Session side: data or FIN from the peer. */
  receive(data: Buffer, fin: boolean): void {
    if (this.#remoteFin || this.destroyed) return;
    if (data.length && !this.push(data)) this.#session.pauseTransport();
    if (fin) {
      this.#remoteFin = true;
      this.push(null);
      this.#maybeDone();
    }
  }

  /** Session side: RST_STREAM from the peer, or the session went away. */
  abort(err: Error): void {
    if (this.destroyed) return;
    this.#reset = true;
    if (!this.#remoteFin) {
      // The reader sees the end of what was sent, then the error.
      this.push(null);
    }
    this.destroy(err);
  }

  #maybeDone(): void {
    if (this.#localFin && this.#remoteFin) this.#session.forget(this.id);
  }
}

export type SessionRole = 'server' | 'client';

export interface SessionOptions {
  /** Called for each stream the peer opens; reply() to accept it (or reset()). */
  onStream?: (stream: SpdyStream) => void;
  /** Time to wait for the peer's SYN_REPLY to a stream we open. */
  replyTimeoutMs?: number;
}

/** A SPDY session on `transport`. It ends when the transport does, or on GOAWAY from either side. */
export class SpdySession {
  readonly role: SessionRole;
  readonly #transport: Duplex;
  readonly #opts: SessionOptions;
  readonly #parser = new FrameParser();
  readonly #compressor = new HeaderCompressor();
  readonly #decompressor = new HeaderDecompressor();
  readonly #streams = new Map<number, SpdyStream>();
  readonly #waiting = new Map<number, { resolve: (s: SpdyStream) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }>();
  readonly #queue: RawFrame[] = [];
  #pumping = false;
  #nextId: number;
  #lastPeerId = 0;
  #closed = false;
  #goingAway = false;
  #pausedBy = 0;
  readonly #closeListeners: ((err?: Error) => void)[] = [];
  readonly closed: Promise<Error | undefined>;

  constructor(transport: Duplex, role: SessionRole, opts: SessionOptions = {}) {
    this.#transport = transport;
    this.role = role;
    this.#opts = opts;
    this.#nextId = role === 'client' ? 1 : 2;
    this.closed = new Promise((resolve) => this.#closeListeners.push(resolve));
    transport.on('data', (chunk: Buffer) => {
      try {
        this.#queue.push(...this.#parser.push(chunk));
      } catch (err) {
        this.#fail(err as Error);
        return;
      }
      this.#pump().catch((err: unknown) => this.#fail(err as Error));
    });
    transport.on('end', () => this.#close());
    transport.on('close', () => this.#close());
    transport.on('error', (err: Error) => this.#close(err));
  }

  get isClosed(): boolean { return this.#closed; }
  get streamCount(): number { return this.#streams.size; }

  /** Opens a stream (SYN_STREAM) and resolves when the peer replies. */
  openStream(headers: Headers, fin = false): Promise<SpdyStream> {
    if (this.#closed || this.#goingAway) return Promise.reject(new Error('SPDY session closed'));
    const id = this.#nextId;
    this.#nextId += 2;
    const stream = new SpdyStream(this, id, headers, true);
    this.#streams.set(id, stream);
    return new Promise<SpdyStream>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiting.delete(id);
        stream.reset();
        reject(new Error(`no reply to SPDY stream ${id} within ${this.#opts.replyTimeoutMs ?? 30_000} ms`));
      }, this.#opts.replyTimeoutMs ?? 30_000);
      this.#waiting.set(id, { resolve, reject, timer });
      this.send(encodeSynStream(id, fin ? FLAG_FIN : 0, this.compress(headers)));
      if (fin) stream.end();
    });
  }

  /** GOAWAY, then the transport ends once what was written is flushed. */
  close(): void {
    if (this.#closed) return;
    if (!this.#goingAway) {
      this.#goingAway = true;
      this.send(encodeGoAway(this.#lastPeerId, 0));
    }
    this.#transport.end();
    this.#close();
  }

  /** Closes at once, resetting every stream. */
  destroy(err?: Error): void {
    this.#transport.destroy();
    this.#close(err);
  }

  onClose(fn: (err?: Error) => void): void {
    if (this.#closed) fn();
    else this.#closeListeners.push(fn);
  }

  // --- for SpdyStream ------------------------------------------------------------------------------

  compress(headers: Headers): Buffer { return this.#compressor.compress(headers); }

  send(frame: Buffer): boolean {
    if (this.#closed || this.#transport.destroyed || this.#transport.writableEnded) return true;
    return this.#transport.write(frame);
  }

  onceDrained(fn: () => void): void {
    if (this.#closed) { fn(); return; }
    const done = (): void => { this.#transport.off('drain', done); this.#transport.off('close', done); fn(); };
    this.#transport.once('drain', done);
    this.#transport.once('close', done);
  }

  forget(id: number): void { this.#streams.delete(id); }

  pauseTransport(): void {
    this.#pausedBy++;
    this.#transport.pause();
  }

  resumeTransport(): void {
    if (this.#pausedBy === 0) return;
    this.#pausedBy = 0;
    this.#transport.resume();
  }

  // --- inbound -------------------------------------------------------------------------------------

  async #pump(): Promise<void> {
    if (this.#pumping) return;
    this.#pumping = true;
    try {
      for (let raw = this.#queue.shift(); raw && !this.#closed; raw = this.#queue.shift()) {
        let frame: Frame;
        if (!raw.control) {
          frame = { type: 'data', streamId: raw.streamId, flags: raw.flags, data: raw.data };
        } else {
          const off = headerBlockOffset(raw.type);
          const headers = off !== undefined && raw.payload.length > off
            ? await this.#decompressor.decompress(raw.payload.subarray(off)) : undefined;
          frame = decodeControl(raw, headers);
        }
        this.#handle(frame);
      }
    } catch (err) {
      this.#fail(err as Error);
    } finally {
      this.#pumping = false;
    }
  }

  #handle(f: Frame): void {
    switch (f.type) {
      case 'data': {
        const s = this.#streams.get(f.streamId);
        if (s) s.receive(f.data, (f.flags & FLAG_FIN) !== 0);
        else if (!(f.flags & FLAG_FIN) || f.data.length) this.send(encodeRstStream(f.streamId, RstStatus.INVALID_STREAM));
        return;
      }
      case 'syn_stream': {
        const mine = this.role === 'client' ? f.streamId % 2 === 0 : f.streamId % 2 === 1;
        if (!mine || f.streamId <= this.#lastPeerId || this.#goingAway) {
          this.send(encodeRstStream(f.streamId, this.#goingAway ? RstStatus.REFUSED_STREAM : RstStatus.PROTOCOL_ERROR));
          return;
        }
        this.#lastPeerId = f.streamId;
        const s = new SpdyStream(this, f.streamId, f.headers, false);
        this.#streams.set(f.streamId, s);
        if (this.#opts.onStream) this.#opts.onStream(s);
        else s.reset(RstStatus.REFUSED_STREAM);
        if (f.flags & FLAG_FIN) s.receive(Buffer.alloc(0), true);
        return;
      }
      case 'syn_reply': {
        const w = this.#waiting.get(f.streamId);
        const s = this.#streams.get(f.streamId);
        if (!w || !s) return;
        clearTimeout(w.timer);
        this.#waiting.delete(f.streamId);
        s.headers = f.headers;
        w.resolve(s);
        if (f.flags & FLAG_FIN) s.receive(Buffer.alloc(0), true);
        return;
      }
      case 'headers': {
        if (f.flags & FLAG_FIN) this.#streams.get(f.streamId)?.receive(Buffer.alloc(0), true);
        return;
      }
      case 'rst_stream': {
        const err = new StreamResetError(f.status, true);
        const w = this.#waiting.get(f.streamId);
        if (w) { clearTimeout(w.timer); this.#waiting.delete(f.streamId); w.reject(err); }
        this.#streams.get(f.streamId)?.abort(err);
        this.#streams.delete(f.streamId);
        return;
      }
      case 'ping':
        // Our pings have even ids as a server and odd ones as a client; answer the peer's.
        if ((f.id % 2 === 1) === (this.role === 'server')) this.send(encodePing(f.id));
        return;
      case 'goaway':
        this.#goingAway = true;
        return;
      default:
        // SETTINGS, WINDOW_UPDATE and unknown frames: nothing to do (no flow control, as spdystream).
        return;
    }
  }

  #fail(err: Error): void {
    if (err instanceof ProtocolError) this.send(encodeGoAway(this.#lastPeerId, 1));
    this.#transport.destroy();
    this.#close(err);
  }

  #close(err?: Error): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#decompressor.close();
    const gone = err ?? new Error('SPDY session closed');
    for (const [, w] of this.#waiting) { clearTimeout(w.timer); w.reject(gone); }
    this.#waiting.clear();
    for (const s of [...this.#streams.values()]) s.abort(gone);
    this.#streams.clear();
    for (const fn of this.#closeListeners.splice(0)) fn(err);
  }
}
