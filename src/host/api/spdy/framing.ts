// SPDY/3.1 framing (draft-mbelshe-httpbis-spdy-00 with the 3.1 session flow control, which Kubernetes'
// spdystream neither sends nor enforces): frames to and from bytes, and header blocks with their zlib
// compression. Kubernetes speaks "SPDY/3.1" (frame version 3) for exec, attach and port-forward between
// kubectl, the API server and kubelets.
//
// Header blocks are compressed as one zlib stream per direction with the SPDY dictionary. Outgoing blocks
// are written as stored (uncompressed) deflate blocks — valid zlib that any inflater reads, synchronous, and
// header blocks here are a few bytes; incoming blocks are inflated by a zlib stream kept for the session.
import { createInflate, constants as zc, type Inflate } from 'node:zlib';
import { SPDY_DICTIONARY } from './dictionary.ts';

const SPDY_VERSION = 3;

export const FrameType = {
  SYN_STREAM: 1, SYN_REPLY: 2, RST_STREAM: 3, SETTINGS: 4, PING: 6, GOAWAY: 7, HEADERS: 8, WINDOW_UPDATE: 9,
} as const;

export const FLAG_FIN = 0x01;

/** RST_STREAM status codes. */
export const RstStatus = {
  PROTOCOL_ERROR: 1, INVALID_STREAM: 2, REFUSED_STREAM: 3, UNSUPPORTED_VERSION: 4, CANCEL: 5,
  INTERNAL_ERROR: 6, FLOW_CONTROL_ERROR: 7, STREAM_IN_USE: 8, STREAM_ALREADY_CLOSED: 9,
} as const;

/** Lower-case names; several values of one name travel NUL-separated. */
export type Headers = Record<string, string[]>;

export type RawFrame =
  | { control: false; streamId: number; flags: number; data: Buffer }
  | { control: true; version: number; type: number; flags: number; payload: Buffer };

export type Frame =
  | { type: 'data'; streamId: number; flags: number; data: Buffer }
  | { type: 'syn_stream'; streamId: number; associatedId: number; priority: number; flags: number; headers: Headers }
  | { type: 'syn_reply'; streamId: number; flags: number; headers: Headers }
  | { type: 'headers'; streamId: number; flags: number; headers: Headers }
  | { type: 'rst_stream'; streamId: number; status: number }
  | { type: 'settings'; flags: number; entries: { id: number; flags: number; value: number }[] }
  | { type: 'ping'; id: number }
  | { type: 'goaway'; lastGoodStreamId: number; status: number }
  | { type: 'window_update'; streamId: number; delta: number }
  | { type: 'unknown'; frameType: number; flags: number };

export class ProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SpdyProtocolError';
  }
}

/** Frames are 8 bytes of header and up to 2^24-1 bytes of payload. */
const MAX_PAYLOAD = 0xffffff;

/** Splits a byte stream into raw frames. */
export class FrameParser {
  #buf: Buffer = Buffer.alloc(0);
  readonly #maxPayload: number;

  constructor(maxPayload = MAX_PAYLOAD) { this.#maxPayload = maxPayload; }

  push(chunk: Buffer): RawFrame[] {
    this.#buf = this.#buf.length ? Buffer.concat([this.#buf, chunk]) : chunk;
    const out: RawFrame[] = [];
    while (this.#buf.length >= 8) {
      const first = this.#buf.readUInt32BE(0);
      const second = this.#buf.readUInt32BE(4);
      const flags = second >>> 24;
      const length = second & 0xffffff;
      if (length > this.#maxPayload) throw new ProtocolError(`frame of ${length} bytes is too large`);
      if (this.#buf.length < 8 + length) break;
      const payload = this.#buf.subarray(8, 8 + length);
      this.#buf = this.#buf.subarray(8 + length);
      if (first & 0x80000000) {
        out.push({ control: true, version: (first >>> 16) & 0x7fff, type: first & 0xffff, flags, payload });
      } else {
        out.push({ control: false, streamId: first & 0x7fffffff, flags, data: payload });
      }
    }
    return out;
  }
}

/** Where the header block starts in a control frame's payload, for the types that carry one. */
export function headerBlockOffset(type: number): number | undefined {
  switch (type) {
    case FrameType.SYN_STREAM: return 10;
    case FrameType.SYN_REPLY: return 4;
    case FrameType.HEADERS: return 4;
    default: return undefined;
  }
}

/** A raw control frame → Frame; `headers` is its decompressed header block (when it has one). */
export function decodeControl(raw: Extract<RawFrame, { control: true }>, headers?: Headers): Frame {
  const p = raw.payload;
  const need = (n: number): void => { if (p.length < n) throw new ProtocolError(`control frame type ${raw.type} too short`); };
  const u31 = (o: number): number => p.readUInt32BE(o) & 0x7fffffff;
  switch (raw.type) {
    case FrameType.SYN_STREAM:
      need(10);
      return { type: 'syn_stream', streamId: u31(0), associatedId: u31(4), priority: p[8] >>> 5, flags: raw.flags, headers: headers ?? {} };
    case FrameType.SYN_REPLY:
      need(4);
      return { type: 'syn_reply', streamId: u31(0), flags: raw.flags, headers: headers ?? {} };
    case FrameType.HEADERS:
      need(4);
      return { type: 'headers', streamId: u31(0), flags: raw.flags, headers: headers ?? {} };
    case FrameType.RST_STREAM:
      need(8);
      return { type: 'rst_stream', streamId: u31(0), status: p.readUInt32BE(4) };
    case FrameType.SETTINGS: {
      need(4);
      const n = p.readUInt32BE(0);
      if (p.length < 4 + n * 8) throw new ProtocolError('SETTINGS frame too short');
      const entries = Array.from({ length: n }, (_, i) => {
        const idf = p.readUInt32BE(4 + i * 8);
        return { flags: idf >>> 24, id: idf & 0xffffff, value: p.readUInt32BE(8 + i * 8) };
      });
      return { type: 'settings', flags: raw.flags, entries };
    }
    case FrameType.PING:
      need(4);
      return { type: 'ping', id: p.readUInt32BE(0) };
    case FrameType.GOAWAY:
      need(4);
      return { type: 'goaway', lastGoodStreamId: u31(0), status: p.length >= 8 ? p.readUInt32BE(4) : 0 };
    case FrameType.WINDOW_UPDATE:
      need(8);
      return { type: 'window_update', streamId: u31(0), delta: p.readUInt32BE(4) & 0x7fffffff };
    default:
      return { type: 'unknown', frameType: raw.type, flags: raw.flags };
  }
}

function controlHeader(type: number, flags: number, length: number): Buffer {
  if (length > MAX_PAYLOAD) throw new ProtocolError(`control frame of ${length} bytes is too large`);
  const b = Buffer.alloc(8);
  b.writeUInt32BE((0x80000000 | (SPDY_VERSION << 16) | type) >>> 0, 0);
  b.writeUInt32BE(((flags << 24) | length) >>> 0, 4);
  return b;
}

export function encodeData(streamId: number, flags: number, data: Buffer): Buffer {
  if (data.length > MAX_PAYLOAD) throw new ProtocolError(`data frame of ${data.length} bytes is too large`);
  const b = Buffer.alloc(8);
  b.writeUInt32BE(streamId & 0x7fffffff, 0);
  b.writeUInt32BE(((flags << 24) | data.length) >>> 0, 4);
  return Buffer.concat([b, data]);
}

/** SYN_STREAM; `block` is the compressed header block. */
export function encodeSynStream(streamId: number, flags: number, block: Buffer, priority = 0, associatedId = 0): Buffer {
  const p = Buffer.alloc(10);
  p.writeUInt32BE(streamId & 0x7fffffff, 0);
  p.writeUInt32BE(associatedId & 0x7fffffff, 4);
  p[8] = (priority & 0x7) << 5;
  return Buffer.concat([controlHeader(FrameType.SYN_STREAM, flags, 10 + block.length), p, block]);
}

/** SYN_REPLY; `block` is the compressed header block. */
export function encodeSynReply(streamId: number, flags: number, block: Buffer): Buffer {
  const p = Buffer.alloc(4);
  p.writeUInt32BE(streamId & 0x7fffffff, 0);
  return Buffer.concat([controlHeader(FrameType.SYN_REPLY, flags, 4 + block.length), p, block]);
}

export function encodeRstStream(streamId: number, status: number): Buffer {
  const p = Buffer.alloc(8);
  p.writeUInt32BE(streamId & 0x7fffffff, 0);
  p.writeUInt32BE(status, 4);
  return Buffer.concat([controlHeader(FrameType.RST_STREAM, 0, 8), p]);
}

export function encodePing(id: number): Buffer {
  const p = Buffer.alloc(4);
  p.writeUInt32BE(id >>> 0, 0);
  return Buffer.concat([controlHeader(FrameType.PING, 0, 4), p]);
}

export function encodeGoAway(lastGoodStreamId: number, status = 0): Buffer {
  const p = Buffer.alloc(8);
  p.writeUInt32BE(lastGoodStreamId & 0x7fffffff, 0);
  p.writeUInt32BE(status, 4);
  return Buffer.concat([controlHeader(FrameType.GOAWAY, 0, 8), p]);
}

/** An uncompressed header block: count, then (name, value) with 32-bit lengths. */
export function encodeHeaderBlock(headers: Headers): Buffer {
  const parts: Buffer[] = [];
  const entries = Object.entries(headers);
  const count = Buffer.alloc(4);
  count.writeUInt32BE(entries.length, 0);
  parts.push(count);
  for (const [name, values] of entries) {
    for (const s of [name.toLowerCase(), values.join('\0')]) {
      const b = Buffer.from(s, 'utf8');
      const len = Buffer.alloc(4);
      len.writeUInt32BE(b.length, 0);
      parts.push(len, b);
    }
  }
  return Buffer.concat(parts);
}

export function decodeHeaderBlock(block: Buffer, limits = { maxHeaders: 1000, maxSize: 1 << 20 }): Headers {
  if (block.length < 4) throw new ProtocolError('header block too short');
  const n = block.readUInt32BE(0);
  if (n > limits.maxHeaders) throw new ProtocolError(`${n} headers are too many`);
  const out: Headers = {};
  let o = 4;
  const str = (): string => {
    if (o + 4 > block.length) throw new ProtocolError('header block truncated');
    const len = block.readUInt32BE(o);
    o += 4;
    if (len > limits.maxSize || o + len > block.length) throw new ProtocolError('header block truncated');
    const s = block.toString('utf8', o, o + len);
    o += len;
    return s;
  };
  for (let i = 0; i < n; i++) {
    const name = str().toLowerCase();
    const values = str().split('\0');
    (out[name] ??= []).push(...values);
  }
  return out;
}

const ADLER_DICT = adler32(SPDY_DICTIONARY);
const SYNC_MARKER = Buffer.from([0x00, 0x00, 0x00, 0xff, 0xff]);

function adler32(b: Buffer): number {
  let a = 1;
  let s = 0;
  for (const x of b) {
    a = (a + x) % 65521;
    s = (s + a) % 65521;
  }
  return ((s << 16) | a) >>> 0;
}

/**
 * The sending side of a session's header compression: one zlib stream (header with the dictionary's id
 * first), each block as stored deflate blocks followed by the empty stored block of a sync flush.
 */
export class HeaderCompressor {
  #started = false;

  compress(headers: Headers): Buffer {
    const block = encodeHeaderBlock(headers);
    const parts: Buffer[] = [];
    if (!this.#started) {
      this.#started = true;
      const h = Buffer.alloc(6);
      // CMF 0x78 (deflate, 32 KiB window), FLG 0xbb (FDICT, level 2, check bits: 0x78bb % 31 == 0).
      h[0] = 0x78;
      h[1] = 0xbb;
      h.writeUInt32BE(ADLER_DICT, 2);
      parts.push(h);
    }
    for (let o = 0; o < block.length; o += 0xffff) {
      const piece = block.subarray(o, o + 0xffff);
      const s = Buffer.alloc(5);
      s[0] = 0x00; // BFINAL 0, BTYPE 00 (stored)
      s.writeUInt16LE(piece.length, 1);
      s.writeUInt16LE(~piece.length & 0xffff, 3);
      parts.push(s, piece);
    }
    // An empty stored block, as a sync flush ends with: Go's inflater hands out what it has decoded only
    // when it meets one (it reads on to the next block header otherwise, past the frame).
    parts.push(SYNC_MARKER);
    return Buffer.concat(parts);
  }
}

/** The receiving side: one inflater for the session, fed block by block, in order. */
export class HeaderDecompressor {
  #inflate: Inflate;
  #error: Error | undefined;

  constructor() {
    this.#inflate = createInflate({ dictionary: SPDY_DICTIONARY });
    this.#inflate.on('error', (err: Error) => { this.#error = err; });
  }

  decompress(compressed: Buffer): Promise<Headers> {
    if (this.#error) return Promise.reject(new ProtocolError(`header decompression failed: ${this.#error.message}`));
    return new Promise<Headers>((resolve, reject) => {
      const out: Buffer[] = [];
      const onData = (d: Buffer): void => { out.push(d); };
      const onError = (err: Error): void => { cleanup(); reject(new ProtocolError(`header decompression failed: ${err.message}`)); };
      const cleanup = (): void => { this.#inflate.off('data', onData); this.#inflate.off('error', onError); };
      this.#inflate.on('data', onData);
      this.#inflate.once('error', onError);
      this.#inflate.write(compressed);
      this.#inflate.flush(zc.Z_SYNC_FLUSH, () => {
        cleanup();
        try { resolve(decodeHeaderBlock(Buffer.concat(out))); } catch (err) { reject(err as Error); }
      });
    });
  }

  close(): void { this.#inflate.destroy(); }
}
