// H1Pool (src/kube/h1.ts) against a server whose bytes the test writes: bodies by length, chunked (split anywhere)
// and to the close, keep-alive reuse, the limit on connections, timeouts, aborts, and connections that fail.
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { EventEmitter, once } from 'node:events';
import tls, { createSecureContext, type TLSSocket } from 'node:tls';
import { syncBuiltinESMExports } from 'node:module';
import { H1Pool } from '../../../src/kube/h1.ts';
import { newServingKey, selfSignedCertificate } from '../../../src/host/api/x509.ts';
import type { Body, Exchange } from '../../../src/kube/h2.ts';

interface RawServer {
  port: number;
  server: Server;
  conns: Set<Socket>;
  heads: string[];
  /** Resolves once `cond` holds, checked as requests arrive and connections close. */
  until(cond: () => boolean): Promise<void>;
}

/** A server that hands each request (its head, as text) to `answer` with the connection to write to. */
async function rawServer(answer: (head: string, s: Socket, n: number) => void): Promise<RawServer> {
  const conns = new Set<Socket>();
  const heads: string[] = [];
  const changed = new EventEmitter();
  const server = createServer((s) => {
    conns.add(s);
    s.on('close', () => { conns.delete(s); changed.emit('change'); });
    let buf = '';
    s.on('data', (d) => {
      buf += d.toString('latin1');
      let i: number;
      while ((i = buf.indexOf('\r\n\r\n')) >= 0) {
        const head = buf.slice(0, i);
        const len = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
        if (buf.length < i + 4 + len) return;
        buf = buf.slice(i + 4 + len);
        heads.push(head);
        answer(head, s, heads.length);
        changed.emit('change');
      }
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const until = async (cond: () => boolean): Promise<void> => { while (!cond()) await once(changed, 'change'); };
  return { port: (server.address() as { port: number }).port, server, conns, heads, until };
}

function text(b: Body): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    b.on('data', (c) => parts.push(c));
    b.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    b.on('error', reject);
  });
}

const get = (pool: H1Pool, path = '/x', extra: Partial<Parameters<H1Pool['request']>[0]> = {}): Promise<Exchange> =>
  pool.request({ method: 'GET', path, headers: { accept: 'application/json' }, ...extra });

const pools: H1Pool[] = [];
const servers: Server[] = [];
after(() => {
  for (const p of pools) p.close();
  for (const s of servers) s.close();
});

async function setup(answer: Parameters<typeof rawServer>[0],
  opts: { maxSockets?: number; idleMs?: number; onWaited?: (ms: number, priority: string) => void } = {}) {
  const srv = await rawServer(answer);
  servers.push(srv.server);
  const pool = new H1Pool({ secure: false, hostname: '127.0.0.1', port: srv.port },
    { idleMs: opts.idleMs ?? 5_000, maxSockets: opts.maxSockets, onWaited: opts.onWaited });
  pools.push(pool);
  return { ...srv, pool };
}

describe('H1Pool', { timeout: 10_000 }, () => {
  test('a body by Content-Length, then the same connection for the next request; the head carries host and headers', async () => {
    const { pool, heads, conns } = await setup((_h, s) => s.write('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{"a":1}'));
    for (let i = 0; i < 3; i++) {
      const ex = await get(pool);
      assert.equal(ex.status, 200);
      assert.equal(ex.contentType, 'application/json');
      assert.equal(await text(ex.body), '{"a":1}');
    }
    assert.equal(heads.length, 3);
    assert.equal(conns.size, 1, 'one keep-alive connection served all three');
    assert.match(heads[0]!, /^GET \/x HTTP\/1\.1\r\nhost: 127\.0\.0\.1:\d+\r\naccept: application\/json$/);
  });

  test('a request body goes with its length', async () => {
    const { pool, heads } = await setup((_h, s) => s.write('HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n'));
    const ex = await pool.request({ method: 'POST', path: '/p', headers: { 'content-type': 'application/json' }, body: '{"é":1}' });
    assert.equal(ex.status, 201);
    assert.equal(await text(ex.body), '');
    assert.match(heads[0]!, /content-length: 8/);
  });

  test('a chunked body split at every byte, with a chunk extension and a trailer', async () => {
    const wire = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nX-T: 1\r\n\r\n';
    const { pool } = await setup((_h, s) => {
      let i = 0;
      const next = (): void => { if (i < wire.length) { s.write(wire[i++]!); setImmediate(next); } };
      next();
    });
    const ex = await get(pool);
    assert.equal(await text(ex.body), 'hello, world');
    // And the connection is clean for the next answer.
    const again = await get(pool);
    assert.equal(await text(again.body), 'hello, world');
  });

  test('a watch: each chunk as it comes, the end when the server ends the stream', async () => {
    let sock: Socket | undefined;
    const { pool } = await setup((_h, s) => { sock = s; s.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n'); });
    const ex = await get(pool, '/w?watch=true');
    const got: string[] = [];
    let chunk = (): void => undefined;
    ex.body.on('data', (c) => { got.push(c.toString()); chunk(); });
    const ended = new Promise<void>((r) => ex.body.on('end', r));
    const line = '{"type":"ADDED"}\n';
    const first = new Promise<void>((r) => { chunk = r; });
    sock!.write(`${line.length.toString(16)}\r\n${line}\r\n`);
    await first;
    assert.deepEqual(got, [line], 'the first event came before the stream went on');
    sock!.write(`${line.length.toString(16)}\r\n${line}\r\n0\r\n\r\n`);
    await ended;
    assert.deepEqual(got, [line, line]);
  });

  test('a body to the close (no length, not chunked) ends with the connection, which is not reused', async () => {
    const { pool, conns, until } = await setup((_h, s) => { s.end('HTTP/1.1 200 OK\r\n\r\nuntil the end'); });
    assert.equal(await text((await get(pool)).body), 'until the end');
    assert.equal(await text((await get(pool)).body), 'until the end');
    assert.equal(pool.size, 0);
    await until(() => conns.size === 0);
  });

  test('Connection: close is honoured; 204 has no body', async () => {
    const { pool, conns, until } = await setup((_h, s, n) => {
      if (n === 1) s.write('HTTP/1.1 204 No Content\r\n\r\n');
      else s.write('HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok');
    });
    assert.equal(await text((await get(pool)).body), '');
    assert.equal(await text((await get(pool)).body), 'ok');
    assert.equal(pool.size, 0, 'the connection was closed once its answer ended');
    await until(() => conns.size === 0);
  });

  test('at most maxSockets connections; the others wait for one', async () => {
    const waiting: Socket[] = [];
    const { pool, conns, until } = await setup((_h, s) => { waiting.push(s); }, { maxSockets: 2 });
    const answers = [get(pool), get(pool), get(pool), get(pool)];
    await until(() => waiting.length === 2);
    assert.equal(conns.size, 2);
    const reply = (): void => { waiting.shift()!.write('HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n1'); };
    reply(); reply();
    await until(() => waiting.length === 2);
    reply(); reply();
    for (const a of answers) assert.equal(await text((await a).body), '1');
    assert.equal(conns.size, 2, 'the waiting requests went on the same two connections');
  });

  test('a request that waited for a connection says how long; one that did not, nothing', async () => {
    const waited: number[] = [];
    const held: Socket[] = [];
    const { pool, until } = await setup((_h, s) => { held.push(s); }, { maxSockets: 1, onWaited: (ms) => waited.push(ms) });
    const first = get(pool);
    const t0 = performance.now();
    const second = get(pool); // the one connection is the first's: this one waits from here
    const queued = performance.now();
    await until(() => held.length === 1); // the first request reached the server; the second still waits
    const least = performance.now() - queued;
    held.shift()!.write('HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n1');
    assert.equal(await text((await first).body), '1');
    await until(() => held.length === 1);
    const most = performance.now() - t0;
    held.shift()!.write('HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n2');
    assert.equal(await text((await second).body), '2');
    assert.equal(waited.length, 1, 'only the second request waited');
    assert.ok(waited[0]! >= least && waited[0]! <= most, `waited ${waited[0]} ms, between ${least} and ${most} ms`);
  });

  test('requests waiting for a connection: high priority first, then normal, low last; first come first within one', async () => {
    const held: Socket[] = [];
    const lanes: string[] = [];
    const { pool, heads, until } = await setup((_h, s) => { held.push(s); }, { maxSockets: 1, onWaited: (_ms, p) => lanes.push(p) });
    const paths = ['/busy', '/low', '/n1', '/high', '/n2', '/gone'];
    const gone = new AbortController();
    const prio: Record<string, 'high' | 'normal' | 'low' | undefined> = { '/low': 'low', '/high': 'high', '/n2': 'normal', '/gone': 'high' };
    const answers = paths.map((p) => get(pool, p, { priority: prio[p], signal: p === '/gone' ? gone.signal : undefined }));
    gone.abort(); // a waiting request taken out of its lane is never sent
    await assert.rejects(answers.pop()!, (err: Error) => err.name === 'AbortError');
    for (let i = 0; i < 5; i++) {
      await until(() => held.length === 1);
      held.shift()!.write('HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n1');
    }
    for (const a of answers) assert.equal(await text((await a).body), '1');
    assert.deepEqual(heads.map((h) => h.split(' ')[1]), ['/busy', '/high', '/n1', '/n2', '/low']);
    assert.deepEqual(lanes, ['high', 'normal', 'normal', 'low'], 'each wait reported with its priority');
  });

  test('a request with no answer in time fails with a TimeoutError; the pool goes on', async () => {
    const { pool } = await setup((h, s) => { if (!h.includes('/hang')) s.write('HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n1'); });
    await assert.rejects(get(pool, '/hang', { timeoutMs: 50 }), (err: Error) => err.name === 'TimeoutError');
    assert.equal(await text((await get(pool)).body), '1');
  });

  test('a watch silent for longer than onIdle says is told so', async () => {
    const { pool } = await setup((_h, s) => s.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n'));
    const ex = await get(pool, '/w?watch=true');
    const silent = new Promise<void>((r) => ex.onIdle(50, r));
    const failed = new Promise<Error>((r) => ex.onError(r));
    await silent;
    ex.destroy(new Error('silent'));
    assert.equal((await failed).message, 'silent');
  });

  test('aborting: a request waiting for a connection, and one under way', async () => {
    const { pool } = await setup(() => undefined, { maxSockets: 1 });
    const first = new AbortController();
    const second = new AbortController();
    const a = get(pool, '/a', { signal: first.signal });
    const b = get(pool, '/b', { signal: second.signal });
    second.abort();
    await assert.rejects(b, (err: Error) => err.name === 'AbortError');
    first.abort();
    await assert.rejects(a, (err: Error) => err.name === 'AbortError');
  });

  test('a connection that closes mid-body fails the body; one refused fails the request', async () => {
    const { pool } = await setup((_h, s) => { s.end('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort'); });
    const ex = await get(pool);
    await assert.rejects(text(ex.body), (err: Error & { code?: string }) => err.code === 'ECONNRESET');
    const closed = await rawServer(() => undefined);
    closed.server.close();
    await once(closed.server, 'close');
    const dead = new H1Pool({ secure: false, hostname: '127.0.0.1', port: closed.port }, { idleMs: 1000 });
    await assert.rejects(get(dead), (err: Error & { code?: string }) => err.code === 'ECONNREFUSED');
  });

  test('a kept connection the server closed is not used again', async () => {
    const { pool, conns } = await setup((_h, s) => s.write('HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n1'));
    assert.equal(await text((await get(pool)).body), '1');
    for (const s of conns) s.destroy();
    // The pool learns of the close from its own socket, which no event of the server's orders: its size is polled.
    await waitFor(() => pool.size === 0);
    assert.equal(await text((await get(pool)).body), '1');
  });

  test('unused connections close after idleMs; close() ends the pool', async () => {
    const { pool, conns, until } = await setup((_h, s) => s.write('HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n1'), { idleMs: 50 });
    assert.equal(await text((await get(pool)).body), '1');
    assert.equal(pool.size, 1, 'kept for reuse');
    // The pool closes it on its idle timeout (and forgets it then), before the server sees the close.
    await until(() => conns.size === 0);
    assert.equal(pool.size, 0);
    pool.close();
    await assert.rejects(get(pool), /closed/);
  });

  test('closing the pool fails none of the requests already waiting for a connection: they go as before', async () => {
    const { pool } = await setup((_h, s) => s.write('HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n1'), { maxSockets: 1 });
    const answers = [get(pool, '/a'), get(pool, '/b'), get(pool, '/c')];
    pool.close();
    for (const a of answers) assert.equal(await text((await a).body), '1');
    await assert.rejects(get(pool), /closed/, 'a new request is refused');
    assert.equal(pool.size, 0, 'its connection closed once it had served them');
  });

  test('a header or path with a line break is refused before anything is sent', async () => {
    const { pool, heads } = await setup((_h, s) => s.write('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n'));
    await assert.rejects(pool.request({ method: 'GET', path: '/x', headers: { authorization: 'Bearer abc\n' } }),
      (err: Error & { code?: string }) => err.code === 'ERR_INVALID_CHAR');
    await assert.rejects(get(pool, '/x\r\nX-Evil: 1'), (err: Error & { code?: string }) => err.code === 'ERR_INVALID_CHAR');
    assert.equal(await text((await get(pool)).body), '');
    assert.equal(heads.length, 1, 'only the good request reached the server');
  });

  test('bytes after an answer: the connection is dropped, and the request waiting for it goes on a new one', async () => {
    const { pool, heads } = await setup((_h, s, n) => s.write(`HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n${n}${n === 1 ? 'XX' : ''}`), { maxSockets: 1 });
    const first = get(pool, '/a');
    const second = get(pool, '/b');
    assert.equal(await text((await first).body), '1');
    assert.equal(await text((await second).body), '2');
    assert.equal(heads.length, 2);
  });

  test('a Content-Length that is not a number fails the request', async () => {
    const { pool } = await setup((_h, s) => s.write('HTTP/1.1 200 OK\r\nContent-Length: 1.5\r\n\r\nab'));
    await assert.rejects(get(pool), /bad Content-Length/);
  });

  test('an answer that is not HTTP fails the request', async () => {
    const { pool } = await setup((_h, s) => s.write('SSH-2.0-OpenSSH\r\n\r\n'));
    await assert.rejects(get(pool), /not an HTTP\/1\.1 response/);
  });
});

// Node cuts small Buffers from a shared pool (64 KiB slabs on Node 24); a slice that lives as long as a connection keeps
// its whole slab alive, and a process with many long-lived watch connections pinned a slab or two for each.
describe('H1Pool over TLS', { timeout: 10_000 }, () => {
  test('a connection keeps no slice of node\'s Buffer pool: not its ALPN list, not the session it resumed from', async (t) => {
    const key = newServingKey();
    const cert = selfSignedCertificate(key.keyObject, { subject: { commonName: 'localhost' }, dns: ['localhost'], ips: ['127.0.0.1'] });
    // The server prefers h2: the pool still gets HTTP/1.1, and each answer closes its connection, so that the next
    // request opens a connection that resumes the session the first one was given.
    const server = tls.createServer({ key: key.key, cert, ALPNProtocols: ['h2', 'http/1.1'] }, (s) => {
      s.on('data', () => s.end('HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok'));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    t.after(() => server.close());
    // Every socket the pool opens, as tls.connect made it.
    const sockets: TLSSocket[] = [];
    const resumed: boolean[] = [];
    const connect = tls.connect;
    tls.connect = ((...args: Parameters<typeof connect>) => {
      const s = connect(...args);
      s.once('secureConnect', () => resumed.push(s.isSessionReused()));
      sockets.push(s);
      return s;
    }) as typeof connect;
    syncBuiltinESMExports();
    t.after(() => { tls.connect = connect; syncBuiltinESMExports(); });
    const pool = new H1Pool({ secure: true, hostname: '127.0.0.1', port: (server.address() as { port: number }).port,
      secureContext: createSecureContext({ ca: cert }), servername: 'localhost' }, { idleMs: 5_000 });
    pools.push(pool);
    for (let i = 0; i < 3; i++) assert.equal(await text((await get(pool)).body), 'ok');
    assert.equal(sockets.length, 3, 'one connection per request');
    for (const [i, s] of sockets.entries()) {
      assert.equal(s.alpnProtocol, 'http/1.1', `connection ${i}: the protocol agreed`);
      // What the socket keeps of its options for its lifetime (node's own field: if it is renamed, look again).
      const kept = (s as unknown as { _tlsOptions?: Record<string, unknown> })._tlsOptions;
      assert.ok(kept, 'node keeps a TLS socket\'s options as _tlsOptions');
      const buffers = Object.entries(kept).filter((e): e is [string, ArrayBufferView] => ArrayBuffer.isView(e[1]));
      // Both are there to check (were node to keep them elsewhere, this test would check nothing: look again).
      assert.deepEqual(buffers.map(([name]) => name).sort(), i === 0 ? ['ALPNProtocols'] : ['ALPNProtocols', 'session'],
        `connection ${i}: the buffers its options keep`);
      for (const [name, v] of buffers) {
        // (node keeps the session after a header of its own, a subarray of the session given: a few bytes, not a slab)
        assert.ok(v.buffer.byteLength - v.byteLength < 1024,
          `connection ${i}: ${name} (${v.byteLength} bytes) keeps a ${v.buffer.byteLength}-byte buffer alive`);
      }
    }
    assert.deepEqual(resumed, [false, true, true], 'the later connections resumed the session (the copy is one)');
  });
});

async function waitFor(cond: () => boolean, ms = 5_000): Promise<void> {
  const until = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}
