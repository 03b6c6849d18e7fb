// SPDY/3.1 framing and sessions (src/host/api/spdy/): frames and header blocks both ways, header compression
// read by zlib and readable from Go's spdystream bytes, and two sessions talking over a real socket.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, connect, type Socket } from 'node:net';
import { once } from 'node:events';
import { inflateSync } from 'node:zlib';
import {
  FLAG_FIN, FrameParser, FrameType, HeaderCompressor, HeaderDecompressor, RstStatus, decodeControl, decodeHeaderBlock,
  encodeData, encodeGoAway, encodeHeaderBlock, encodePing, encodeRstStream, encodeSynReply, encodeSynStream, headerBlockOffset,
  type RawFrame,
} from '../../../../src/host/api/spdy/framing.ts';
import { SPDY_DICTIONARY } from '../../../../src/host/api/spdy/dictionary.ts';
import { SpdySession, type SpdyStream } from '../../../../src/host/api/spdy/session.ts';

// Four SYN_STREAMs as Go's spdystream framer writes them (github.com/moby/spdystream v0.5.1, the
// Kubernetes client): streamType error/stdout/stderr/stdin, port 8080, ids 1, 3, 5, 7; one zlib stream.
const GO_SYN_STREAMS = Buffer.from('80030001000000310000000100000000000078f9e3c6a7c202e50e703a2b294a4dcc851625aca9a0808614cb45e01c6061606100000000ffff'
  + '800300010000001c00000003000000000000c2aa94adb824251f5c66a3a805000000ffff800300010000001700000005000000000000c2a936b508c35c00000000ffff'
  + '800300010000001a00000007000000000000c2ee84e29294cc3c74a500000000ffff', 'hex');

const control = (f: RawFrame): Extract<RawFrame, { control: true }> => {
  assert.ok(f.control);
  return f;
};

describe('SPDY framing', () => {
  it('the dictionary is the SPDY/3 one (1423 bytes)', () => {
    assert.equal(SPDY_DICTIONARY.length, 1423);
    assert.ok(SPDY_DICTIONARY.subarray(0, 11).equals(Buffer.from('\0\0\0\x07options')));
  });

  it('reads the header blocks Go\'s spdystream writes (one zlib stream across frames), even split anywhere', async () => {
    for (const split of [1, 7, 50, GO_SYN_STREAMS.length]) {
      const parser = new FrameParser();
      const frames: RawFrame[] = [];
      for (let o = 0; o < GO_SYN_STREAMS.length; o += split) frames.push(...parser.push(GO_SYN_STREAMS.subarray(o, o + split)));
      assert.equal(frames.length, 4);
      const d = new HeaderDecompressor();
      const decoded = [];
      for (const f of frames) {
        const c = control(f);
        decoded.push(decodeControl(c, await d.decompress(c.payload.subarray(headerBlockOffset(c.type)!))));
      }
      d.close();
      assert.deepEqual(decoded.map((f) => f.type === 'syn_stream' && [f.streamId, f.headers.streamtype[0], f.headers.port[0]]),
        [[1, 'error', '8080'], [3, 'stdout', '8080'], [5, 'stderr', '8080'], [7, 'stdin', '8080']]);
    }
  });

  it('writes header blocks as one zlib stream with the dictionary, each ending with a sync-flush marker', () => {
    const c = new HeaderCompressor();
    const a = c.compress({ streamtype: ['data'], port: ['80'] });
    const b = c.compress({});
    assert.equal(a[0], 0x78);
    assert.equal(((a[0] << 8) | a[1]) % 31, 0, 'zlib header check bits');
    assert.ok(a[1] & 0x20, 'FDICT');
    assert.ok(a.subarray(-5).equals(Buffer.from([0, 0, 0, 0xff, 0xff])), 'sync marker (Go\'s inflater needs it)');
    assert.ok(b.subarray(-5).equals(Buffer.from([0, 0, 0, 0xff, 0xff])));
    const plain = inflateSync(Buffer.concat([a, b]), { dictionary: SPDY_DICTIONARY, finishFlush: 2 /* Z_SYNC_FLUSH */ });
    assert.deepEqual(decodeHeaderBlock(plain.subarray(0, plain.length - 4)), { streamtype: ['data'], port: ['80'] });
  });

  it('round-trips every frame it writes', async () => {
    const c = new HeaderCompressor();
    const bytes = Buffer.concat([
      encodeSynStream(1, FLAG_FIN, c.compress({ streamtype: ['error'], a: ['1', '2'] }), 3),
      encodeSynReply(1, 0, c.compress({})),
      encodeData(1, 0, Buffer.from('hello')),
      encodeData(1, FLAG_FIN, Buffer.alloc(0)),
      encodeRstStream(3, RstStatus.CANCEL),
      encodePing(7),
      encodeGoAway(5, 0),
    ]);
    const frames = new FrameParser().push(bytes);
    const d = new HeaderDecompressor();
    const out = [];
    for (const f of frames) {
      if (!f.control) { out.push({ type: 'data', id: f.streamId, fin: (f.flags & FLAG_FIN) !== 0, data: f.data.toString() }); continue; }
      const off = headerBlockOffset(f.type);
      out.push(decodeControl(f, off !== undefined ? await d.decompress(f.payload.subarray(off)) : undefined));
    }
    d.close();
    assert.deepEqual(out, [
      { type: 'syn_stream', streamId: 1, associatedId: 0, priority: 3, flags: FLAG_FIN, headers: { streamtype: ['error'], a: ['1', '2'] } },
      { type: 'syn_reply', streamId: 1, flags: 0, headers: {} },
      { type: 'data', id: 1, fin: false, data: 'hello' },
      { type: 'data', id: 1, fin: true, data: '' },
      { type: 'rst_stream', streamId: 3, status: RstStatus.CANCEL },
      { type: 'ping', id: 7 },
      { type: 'goaway', lastGoodStreamId: 5, status: 0 },
    ]);
    assert.equal(control(frames[0]).version, 3);
    assert.equal(control(frames[0]).type, FrameType.SYN_STREAM);
  });

  it('header blocks: lower-case names, several values NUL-separated; truncated blocks are errors', () => {
    const block = encodeHeaderBlock({ StreamType: ['stdout'], multi: ['a', 'b'] });
    assert.deepEqual(decodeHeaderBlock(block), { streamtype: ['stdout'], multi: ['a', 'b'] });
    assert.throws(() => decodeHeaderBlock(block.subarray(0, block.length - 1)), /truncated/);
  });

  it('refuses frames larger than its limit', () => {
    assert.throws(() => new FrameParser(16).push(encodeData(1, 0, Buffer.alloc(17))), /too large/);
  });
});

async function socketPair(): Promise<[Socket, Socket]> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  const accepted = once(server, 'connection');
  const a = connect(port, '127.0.0.1');
  const [b] = await accepted as [Socket];
  server.close();
  return [a, b];
}

/** 'close', whatever came before it (events.once would reject on the 'error' of a reset). */
const closed = (s: SpdyStream): Promise<void> => new Promise((resolve) => { if (s.destroyed) resolve(); else s.once('close', () => resolve()); });

const readAll = async (s: SpdyStream): Promise<string> => {
  let out = '';
  for await (const chunk of s) out += (chunk as Buffer).toString();
  return out;
};

describe('SPDY sessions', () => {
  it('a client opens streams, the server replies; data and half-closes go both ways', async () => {
    const [ca, sa] = await socketPair();
    const accepted: SpdyStream[] = [];
    const server = new SpdySession(sa, 'server', { onStream: (s) => { s.reply(); accepted.push(s); } });
    const client = new SpdySession(ca, 'client');
    const [x, y] = await Promise.all([client.openStream({ streamtype: ['stdin'] }), client.openStream({ streamtype: ['stdout'] })]);
    assert.deepEqual([x.id, y.id], [1, 3]);
    assert.deepEqual(accepted.map((s) => s.header('streamType')), ['stdin', 'stdout']);
    x.end('to the server');
    assert.equal(await readAll(accepted[0]), 'to the server', 'the FIN ends the server\'s reading');
    accepted[1].end(Buffer.alloc(100_000, 'y'));
    assert.equal((await readAll(y)).length, 100_000, 'large writes are cut into frames and arrive whole');
    client.close();
    await server.closed;
  });

  it('a reset reaches the other side; a stream the peer does not accept is refused', async () => {
    const [ca, sa] = await socketPair();
    let onServer: SpdyStream | undefined;
    const server = new SpdySession(sa, 'server', { onStream: (s) => {
      if (s.header('streamtype') === 'nope') { s.reset(RstStatus.REFUSED_STREAM); return; }
      s.reply();
      onServer = s;
    } });
    const client = new SpdySession(ca, 'client');
    await assert.rejects(client.openStream({ streamtype: ['nope'] }), /reset by the peer \(status 3\)/);
    const s = await client.openStream({ streamtype: ['data'] });
    const gone = closed(onServer!);
    s.reset();
    await gone;
    assert.ok(onServer!.destroyed);
    server.destroy();
    await client.closed;
  });

  it('answers the peer\'s pings', async () => {
    const [ca, sa] = await socketPair();
    const server = new SpdySession(sa, 'server');
    const frames: RawFrame[] = [];
    const parser = new FrameParser();
    ca.on('data', (d: Buffer) => frames.push(...parser.push(d)));
    ca.write(encodePing(1));
    await once(ca, 'data');
    assert.deepEqual(decodeControl(control(frames[0])), { type: 'ping', id: 1 });
    server.destroy();
    ca.destroy();
  });

  it('the end of the transport ends every stream', async () => {
    const [ca, sa] = await socketPair();
    const server = new SpdySession(sa, 'server', { onStream: (s) => s.reply() });
    const client = new SpdySession(ca, 'client');
    const s = await client.openStream({ streamtype: ['data'] });
    const gone = closed(s);
    server.destroy();
    await gone;
    assert.equal(client.isClosed, true);
  });
});
