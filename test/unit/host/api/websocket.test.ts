// WebSocket on the kubelet API (src/host/api/websocket.ts, and the WebSocket halves of remotecommand.ts and
// portforward.ts), over real TLS connections to a KubeletServer with authentication, a fake runtime whose exec
// and attach go to a WebSocket server of the test (the member) and whose port-forwards go to a SPDY echo: the
// channel framing both ways, each protocol the kubelet speaks, authentication and authorisation as for SPDY, and
// sessions ending on both sides when either side goes away.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import type { V1Pod } from '@kubernetes/client-node';
import { pino } from 'pino';
import { NO_CSR_HOST } from '../../fakes/hostapi.ts';
import { Auth, type ReviewClient } from '../../../../src/host/api/auth.ts';
import type { ApiError } from '../../../../src/host/api/errors.ts';
import type { VirtualNode } from '../../../../src/host/api/nodes.ts';
import { forwardedPorts } from '../../../../src/host/api/portforward.ts';
import { KubeletServer } from '../../../../src/host/api/server.ts';
import { PodStreams } from '../../../../src/host/api/streams.ts';
import { ServingCertificate } from '../../../../src/host/api/tls.ts';
import {
  decodeChannel, encodeChannel, negotiateChannelProtocol, offeredSubprotocols, PORTFORWARD_WS_PROTOCOLS,
  REMOTECOMMAND_WS_PROTOCOLS, requireWebSocketHandshake, type ChannelProtocol,
} from '../../../../src/host/api/websocket.ts';
import type { Informer } from '../../../../src/kube/informer.ts';
import { metrics } from '../../../../src/metrics.ts';
import { ProviderError } from '../../../../src/provider/errors.ts';
import { freePort, pollUntil } from '../../../harness/net.ts';
import { echoOf, openChannelClient, openTunnel, tunnelConnection, type ChannelClient } from '../../../support/websocket.ts';
import { FakeRuntime } from '../../fakes/runtime.ts';
import { CLOSED_PORT, EchoForwardBackend } from '../../fakes/portforward.ts';
import { MemberExec, SUCCESS } from '../../fakes/memberexec.ts';

const log = pino({ level: 'silent' });
const proto = (name: string, list: readonly ChannelProtocol[] = REMOTECOMMAND_WS_PROTOCOLS): ChannelProtocol => list.find((p) => p.name === name)!;
const req = (headers: Record<string, string | string[]>, method = 'GET'): IncomingMessage => ({ method, headers } as unknown as IncomingMessage);
const status = (fn: () => unknown): number | undefined => {
  try { fn(); return undefined; } catch (err) { return (err as ApiError).status; }
};

describe('WebSocket channel framing and handshake', () => {
  it('binary: channel byte + payload; base64: an ASCII digit + base64 text', () => {
    assert.deepEqual(encodeChannel(proto('v4.channel.k8s.io'), 1, Buffer.from('hi')), Buffer.from([1, 0x68, 0x69]));
    assert.equal(encodeChannel(proto('v4.base64.channel.k8s.io'), 2, Buffer.from('hi')), '2aGk=');
    assert.deepEqual(decodeChannel(proto('channel.k8s.io'), Buffer.from([0, 0x61])), { channel: 0, data: Buffer.from('a') });
    assert.deepEqual(decodeChannel(proto('base64.channel.k8s.io'), Buffer.from('4eyJXaWR0aCI6ODB9')), { channel: 4, data: Buffer.from('{"Width":80}') });
    assert.equal(decodeChannel(proto('v4.channel.k8s.io'), Buffer.alloc(0)), undefined, 'empty messages are skipped');
  });

  it('the v5 close signal decodes as channel 255 whatever the protocol (heeded from v5 clients only: see the v1 test)', () => {
    assert.deepEqual(decodeChannel(proto('v5.channel.k8s.io'), Buffer.from([255, 0])), { channel: 255, data: Buffer.from([0]) });
    assert.deepEqual(decodeChannel(proto('v4.channel.k8s.io'), Buffer.from([255, 0])), { channel: 255, data: Buffer.from([0]) },
      'to a v4 reader it is just an unknown channel');
  });

  it('subprotocols: every header, split at commas, "/" allowed; the first the client offers that is supported', () => {
    const offered = offeredSubprotocols(req({ 'sec-websocket-protocol': 'SPDY/3.1+portforward.k8s.io, v4.channel.k8s.io,x' }));
    assert.deepEqual(offered, ['SPDY/3.1+portforward.k8s.io', 'v4.channel.k8s.io', 'x']);
    assert.equal(negotiateChannelProtocol(['x', 'v4.base64.channel.k8s.io', 'v5.channel.k8s.io'], REMOTECOMMAND_WS_PROTOCOLS).name,
      'v4.base64.channel.k8s.io');
    assert.equal(negotiateChannelProtocol([], REMOTECOMMAND_WS_PROTOCOLS).name, '', 'none offered: v1, binary');
    assert.equal(status(() => negotiateChannelProtocol(['v5.channel.k8s.io'], PORTFORWARD_WS_PROTOCOLS)), 403);
    assert.throws(() => negotiateChannelProtocol(['v9'], PORTFORWARD_WS_PROTOCOLS), /requested protocol\(s\) are not supported: \[v9\]/);
  });

  it('a handshake `ws` would refuse is refused before the member is asked (400)', () => {
    const ok = { 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==', 'sec-websocket-version': '13' };
    assert.equal(status(() => requireWebSocketHandshake(req(ok))), undefined);
    assert.equal(status(() => requireWebSocketHandshake(req(ok, 'POST'))), 400);
    assert.equal(status(() => requireWebSocketHandshake(req({ ...ok, 'sec-websocket-key': 'short' }))), 400);
    assert.equal(status(() => requireWebSocketHandshake(req({ ...ok, 'sec-websocket-version': '12' }))), 400);
  });

  it('port-forward ports: repeated and comma-separated, each a port', () => {
    assert.deepEqual(forwardedPorts(new URLSearchParams('port=80,443&port=7000')), [80, 443, 7000]);
    for (const bad of ['', 'port=', 'port=x', 'port=0', 'port=65536', 'port=80,']) {
      assert.equal(status(() => forwardedPorts(new URLSearchParams(bad))), 400, bad);
    }
  });
});

/** The HTTP answer of a refused handshake (fails the test if it was accepted). */
const refused = async (p: Promise<unknown>): Promise<{ status: number; body: string }> =>
  p.then(() => assert.fail('accepted'), (err: { status: number; body: string }) => err);

async function openStreams(): Promise<number> {
  return (await metrics.kubeletApiStreams.get()).values.reduce((n, v) => n + v.value, 0);
}

describe('exec, attach and port-forward over WebSocket', () => {
  const runtime = new FakeRuntime();
  const pods = new Map<string, V1Pod>([['ns/p', {
    metadata: { namespace: 'ns', name: 'p', uid: 'uid-p' }, spec: { containers: [{ name: 'main' }] }, status: { phase: 'Running' },
  }]]);
  const memberExec = new MemberExec();
  const seen = memberExec.seen;
  const reviews: string[] = [];
  let forward: EchoForwardBackend;
  let serving: ServingCertificate;
  let server: KubeletServer;
  let base = '';

  before(async () => {
    runtime.webSocketURL = (await memberExec.start()).url;
    forward = await new EchoForwardBackend().start();
    runtime.forward = forward.connect;

    // "good" is alice, allowed nodes/proxy; "nobody" is bob, allowed nothing.
    const client: ReviewClient = {
      async tokenReview(token) {
        const username = token === 'good' ? 'alice' : token === 'nobody' ? 'bob' : undefined;
        return { spec: { token }, status: username ? { authenticated: true, user: { username, groups: [] } } : { authenticated: false } };
      },
      async subjectAccessReview(r) {
        const a = r.spec!.resourceAttributes!;
        reviews.push(`${r.spec!.user} ${a.verb} nodes/${a.subresource}`);
        return { ...r, status: { allowed: r.spec!.user === 'alice' && a.subresource === 'proxy' } };
      },
    };
    serving = new ServingCertificate({ mode: 'self-signed', nodeNames: ['vn'], nodeIP: '127.0.0.1', host: NO_CSR_HOST, log });
    await serving.start();
    const port = await freePort();
    const proxies = { get: (k: string) => pods.get(k), list: () => [...pods.values()] } as unknown as Informer<V1Pod>;
    const node: VirtualNode = { name: 'vn', port, proxies, running: () => proxies.list(), runtime };
    server = new KubeletServer({ ports: [port], address: '127.0.0.1', dir: { nodes: () => [node] }, serving, log,
      auth: new Auth(client), streams: new PodStreams(log) });
    server.start();
    await pollUntil('the kubelet API listening', async () => server.listening || undefined, 5000, 20);
    base = `wss://127.0.0.1:${port}`;
  });
  after(() => {
    server.stop();
    serving.stop();
    forward.stop();
    memberExec.stop();
  });

  /** Every session over: none counted open, and the member has no exec or port-forward connection left. */
  async function allClosed(): Promise<void> {
    await pollUntil('every session closed on both sides', async () =>
      await openStreams() === 0 && memberExec.openSessions === 0 && forward.openConnections === 0 ? true : undefined, 5000, 10);
  }

  const exec = (q: string, protocols: string[], token = 'good'): Promise<ChannelClient> =>
    openChannelClient(`${base}/exec/ns/p/main?${q}`, protocols, { token });

  it('v5: stdin and its end reach the member, stdout and the exit status come back, then both sides close', async () => {
    const c = await exec('command=cat&input=1&output=1&error=1', ['v5.channel.k8s.io', 'v4.channel.k8s.io']);
    assert.equal(c.ws.protocol, 'v5.channel.k8s.io');
    assert.deepEqual(runtime.calls.at(-1), { op: 'exec', pod: 'ns/p/uid-p/main', options: 'command=cat&stdin=true&stdout=true&stderr=true',
      protocols: ['v5.channel.k8s.io', 'v4.channel.k8s.io'] });
    assert.equal(reviews.at(-1), 'alice get nodes/proxy', 'a WebSocket handshake is a GET: authorised as get, as the kubelet does');
    await c.until('the empty first stdout message', () => c.received.length > 0);
    assert.deepEqual(c.received[0], { channel: 1, data: Buffer.alloc(0) });
    c.send(0, 'hello\n');
    await c.until('the echo', () => c.text(1) === 'hello\n');
    c.ws.send(Buffer.from([255, 0]));
    assert.deepEqual(await c.closed, { code: 1000, reason: '' });
    assert.deepEqual(JSON.parse(c.text(3)).details.causes, [{ reason: 'ExitCode', message: '3' }]);
    assert.ok(c.received.some((r) => r.channel === 255 && r.data.equals(Buffer.from([1]))), 'the member\'s close signal reaches a v5 client');
    assert.ok(seen.messages.some((m) => m.equals(Buffer.from([255, 0]))), 'the end of stdin reached the member');
    await allClosed();
  });

  it('v4 base64: text messages both ways; the Status as is', async () => {
    const c = await exec('command=cat&input=1&output=1', ['v4.base64.channel.k8s.io']);
    assert.equal(c.ws.protocol, 'v4.base64.channel.k8s.io');
    c.send(0, 'über');
    await c.until('the echo', () => c.text(1) === 'über');
    c.ws.close();
    await c.closed;
    await allClosed();
    const ok = await exec('command=ok&output=1', ['v4.base64.channel.k8s.io']);
    await ok.closed;
    assert.equal(ok.text(1), 'done');
    assert.deepEqual(JSON.parse(ok.text(3)), JSON.parse(SUCCESS));
    await allClosed();
  });

  it('v1 (channel.k8s.io, or no subprotocol): a failure as its message, a success as nothing', async () => {
    const c = await exec('command=cat&input=1&output=1', ['channel.k8s.io']);
    const signals = (): number => seen.messages.filter((m) => m.equals(Buffer.from([255, 0]))).length;
    const before = signals();
    c.send(0, 'x');
    c.ws.send(Buffer.from([255, 0]));
    c.send(0, 'y');
    await c.until('the echo', () => c.text(1) === 'xy');
    assert.equal(signals(), before, 'a close signal is not read from a v1 client');
    c.ws.close();
    await c.closed;
    const ok = await exec('command=ok&output=1', []);
    assert.equal(ok.ws.protocol, '');
    await ok.closed;
    assert.equal(ok.text(1), 'done');
    assert.equal(ok.text(3), '');
    await allClosed();
  });

  it('attach with a terminal: resizes reach the member', async () => {
    const c = await openChannelClient(`${base}/attach/ns/p/main?input=1&output=1&tty=1`, ['v5.channel.k8s.io'], { token: 'good' });
    assert.equal(runtime.calls.at(-1)?.options, 'stdin=true&stdout=true&tty=true');
    c.send(4, JSON.stringify({ Width: 80, Height: 24 }));
    await c.until('the resize acknowledged', () => c.text(1).includes('resized {"Width":80,"Height":24}'));
    c.ws.close();
    await allClosed();
  });

  it('authentication and authorisation as for SPDY; the token may come as a subprotocol, and is not echoed', async () => {
    assert.equal((await refused(exec('command=cat&output=1', ['v5.channel.k8s.io'], ''))).status, 401);
    const denied = await refused(exec('command=cat&output=1', ['v5.channel.k8s.io'], 'nobody'));
    assert.equal(denied.status, 403);
    assert.match(denied.body, /Forbidden \(user=bob, verb=get, resource=nodes, subresource\(s\)=\[proxy\]\)/);
    const inProtocol = `base64url.bearer.authorization.k8s.io.${Buffer.from('good').toString('base64url')}`;
    const c = await openChannelClient(`${base}/exec/ns/p/main?command=ok&output=1`, [inProtocol, 'v5.channel.k8s.io']);
    assert.equal(c.ws.protocol, 'v5.channel.k8s.io');
    await c.closed;
    assert.equal(c.text(1), 'done');
    const bad = `base64url.bearer.authorization.k8s.io.${Buffer.from('bad').toString('base64url')}`;
    assert.equal((await refused(openChannelClient(`${base}/exec/ns/p/main?command=ok&output=1`, [bad, 'v5.channel.k8s.io']))).status, 401);
    await allClosed();
  });

  it('refusals come as HTTP answers, before any upgrade: protocol, pod, container, options, the runtime', async () => {
    const v9 = await refused(exec('command=cat&output=1', ['v9.channel.k8s.io']));
    assert.equal(v9.status, 403);
    assert.match(v9.body, /not supported: \[v9.channel.k8s.io\]/);
    assert.equal((await refused(openChannelClient(`${base}/exec/ns/gone/main?command=ls&output=1`, ['v5.channel.k8s.io'], { token: 'good' }))).status, 404);
    assert.equal((await refused(openChannelClient(`${base}/exec/ns/p/nope?command=ls&output=1`, ['v5.channel.k8s.io'], { token: 'good' }))).status, 404);
    assert.equal((await refused(exec('command=ls', ['v5.channel.k8s.io']))).status, 400, 'no stream asked for');
    runtime.fail = new ProviderError('NotFound', 'member m: pods "p-x" not found', { status: 404 });
    const gone = await refused(exec('command=ls&output=1', ['v5.channel.k8s.io']));
    assert.equal(gone.status, 404);
    assert.match(gone.body, /member m: pods "p-x" not found/);
    const pf = await refused(openChannelClient(`${base}/portForward/ns/p`, ['v4.channel.k8s.io'], { token: 'good' }));
    assert.equal(pf.status, 400);
    assert.match(pf.body, /"port" is required/);
    await allClosed();
  });

  it('the client going away closes the member connection', async () => {
    const c = await exec('command=hang&output=1', ['v5.channel.k8s.io']);
    await c.until('the session up', () => c.received.length > 0);
    assert.equal(memberExec.openSessions, 1);
    assert.equal(await openStreams(), 1);
    c.ws.terminate();
    await allClosed();
    assert.equal(seen.closes.at(-1), 1000, 'closed with a close frame');
  });

  it('the member going away ends the session with a Failure status and 1011', async () => {
    const c = await exec('command=crash&output=1', ['v5.channel.k8s.io']);
    const { code } = await c.closed;
    assert.equal(code, 1011);
    const s = JSON.parse(c.text(3)) as { status: string; message: string };
    assert.equal(s.status, 'Failure');
    assert.match(s.message, /member connection closed \(1006/);
    await allClosed();
  });

  it('port-forward channels: each port announced on its data and error channel, data echoed, errors told', async () => {
    const c = await openChannelClient(`${base}/portForward/ns/p?port=7000&port=${CLOSED_PORT}`, ['v4.channel.k8s.io'], { token: 'good' });
    assert.equal(c.ws.protocol, 'v4.channel.k8s.io');
    const le = (p: number): Buffer => Buffer.from([p & 0xff, p >> 8]);
    await c.until('the port prefixes', () => c.received.length >= 4);
    assert.deepEqual(c.received.slice(0, 4), [
      { channel: 0, data: le(7000) }, { channel: 1, data: le(7000) }, { channel: 2, data: le(CLOSED_PORT) }, { channel: 3, data: le(CLOSED_PORT) }]);
    c.send(0, 'ping');
    await c.until('the echo', () => c.text(0).endsWith('ping'));
    await c.until('the closed port\'s error', () => c.text(3).includes(`nothing listens on port ${CLOSED_PORT}`));
    const opened = forward.streams.slice(-4).map((h) => `${h.streamtype}/${h.port}/${h.requestid}`);
    assert.deepEqual([...opened].sort(), ['data/7000/0', `data/${CLOSED_PORT}/1`, 'error/7000/0', `error/${CLOSED_PORT}/1`]);
    assert.ok(opened.indexOf('error/7000/0') < opened.indexOf('data/7000/0'), 'each port\'s error stream first, as client-go');
    assert.equal(c.ws.readyState, c.ws.OPEN, 'open while a port still forwards');
    c.ws.close();
    await allClosed();
  });

  it('port-forward channels: once every port\'s connection has ended the WebSocket closes; base64 framing', async () => {
    const c = await openChannelClient(`${base}/portForward/ns/p?port=${CLOSED_PORT}`, ['v4.base64.channel.k8s.io'], { token: 'good' });
    assert.equal((await c.closed).code, 1000);
    assert.match(c.text(1), /nothing listens on port 9$/);
    await allClosed();
  });

  it('port-forward\'s SPDY tunnel: streams mirrored on the member, bytes both ways', async () => {
    const { ws, protocol } = await openTunnel(`${base}/portForward/ns/p`, { token: 'good' });
    assert.equal(protocol, 'SPDY/3.1+portforward.k8s.io');
    const { spdy, data } = await tunnelConnection(ws, 7000);
    assert.equal(await echoOf(data, 'through the tunnel', 5000), 'through the tunnel');
    assert.deepEqual(forward.streams.slice(-2).map((h) => h.streamtype[0]), ['error', 'data']);
    assert.equal(await openStreams(), 1);
    spdy.close();
    await allClosed();
  });

  it('port-forward\'s tunnel refuses a protocol it does not serve (403)', async () => {
    const err = await openTunnel(`${base}/portForward/ns/p`, { token: 'good', headers: { 'Sec-WebSocket-Protocol': 'SPDY/3.1+other.k8s.io' } })
      .then(() => assert.fail('accepted'), (e: { status: number }) => e);
    assert.equal(err.status, 403);
  });

  it('50 sessions dropped by the client (exec and port-forward) leave no member connection and no open session', async () => {
    const sessions = await Promise.all(Array.from({ length: 50 }, async (_, i) => {
      const c = i % 2 === 0
        ? await exec('command=hang&input=1&output=1', ['v5.channel.k8s.io'])
        : await openChannelClient(`${base}/portForward/ns/p?port=7000`, ['v4.channel.k8s.io'], { token: 'good' });
      await c.until('the session up', () => c.received.length > 0);
      return c;
    }));
    assert.equal(await openStreams(), 50);
    assert.equal(memberExec.openSessions + forward.openConnections, 50);
    for (const c of sessions) c.ws.terminate();
    await allClosed();
  });
});
