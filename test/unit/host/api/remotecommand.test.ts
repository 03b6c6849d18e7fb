// exec/attach bridging (src/host/api/remotecommand.ts): the kubelet's remote-command protocol over SPDY on one
// side, the runtime's WebSocket v5 channels on the other — here a fake runtime connecting to a WebSocket server
// of the test, so that what KWOK cannot show is checked: the end of stdin reaching the back end, and the exit
// status coming back.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer as createHttpServer, request, type IncomingMessage, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { once } from 'node:events';
import type { V1Pod } from '@kubernetes/client-node';
import { pino } from 'pino';
import { errorStreamPayload, podRemoteCommandOptions, remoteCommandOptions, serveRemoteCommand } from '../../../../src/host/api/remotecommand.ts';
import { sendUpgradeError } from '../../../../src/host/api/errors.ts';
import type { ResolvedPod, VirtualNode } from '../../../../src/host/api/nodes.ts';
import { SpdySession, type SpdyStream } from '../../../../src/host/api/spdy/session.ts';
import { ProviderError } from '../../../../src/provider/errors.ts';
import { FakeRuntime } from '../../fakes/runtime.ts';
import { MemberExec } from '../../fakes/memberexec.ts';

const log = pino({ level: 'silent' });

describe('remote command options', () => {
  it('reads the kubelet query (input/output/error/tty=1, one command per argument)', () => {
    const q = new URLSearchParams('command=sh&command=-c&command=echo+hi&input=1&output=1&error=1');
    assert.deepEqual(remoteCommandOptions(q, 'exec'), { command: ['sh', '-c', 'echo hi'], stdin: true, stdout: true, stderr: true, tty: false });
    assert.equal(remoteCommandOptions(new URLSearchParams('output=1&error=1&tty=1'), 'attach').stderr, false, 'a terminal has no stderr');
    assert.throws(() => remoteCommandOptions(new URLSearchParams('command=ls'), 'exec'), /at least 1 of stdin, stdout, stderr/);
    assert.throws(() => remoteCommandOptions(new URLSearchParams('output=1'), 'exec'), /command/);
  });

  it('asks the runtime with the API\'s own parameter names', () => {
    const o = { command: ['ls', '-l'], stdin: true, stdout: true, stderr: false, tty: true };
    assert.equal(podRemoteCommandOptions(o, 'exec').toString(), 'command=ls&command=-l&stdin=true&stdout=true&tty=true');
    assert.equal(podRemoteCommandOptions(o, 'attach').toString(), 'stdin=true&stdout=true&tty=true');
  });

  it('the error stream: the Status as is for v4/v5, its message for v1 to v3, success when the member said nothing', () => {
    const failure = Buffer.from(JSON.stringify({ status: 'Failure', message: 'command terminated with non-zero exit code', reason: 'NonZeroExitCode' }));
    assert.equal(errorStreamPayload(true, failure, 1000, '').toString(), failure.toString());
    assert.equal(errorStreamPayload(false, failure, 1000, '').toString(), 'command terminated with non-zero exit code');
    assert.equal(JSON.parse(errorStreamPayload(true, undefined, 1000, '').toString()).status, 'Success');
    assert.equal(errorStreamPayload(false, undefined, 1000, '').length, 0);
    assert.match(errorStreamPayload(true, undefined, 1006, '').toString(), /"status":"Failure".*member connection closed \(1006/);
  });
});

describe('exec through a fake runtime', () => {
  let host: Server;
  let hostPort = 0;
  const runtime = new FakeRuntime();
  const member = new MemberExec();
  const seen = member.seen;

  before(async () => {
    runtime.webSocketURL = (await member.start()).url;
    const target: ResolvedPod = {
      node: { name: 'vn', runtime } as unknown as VirtualNode,
      proxy: { metadata: { namespace: 'ns', name: 'p', uid: 'uid-p' }, spec: { containers: [{ name: 'main' }] } } as V1Pod,
      namespace: 'ns', name: 'p', uid: 'uid-p',
    };
    host = createHttpServer();
    host.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      const [, kind, , pod] = req.url!.split('/');
      if (pod !== 'p') runtime.fail = new ProviderError('NotFound', `member m: pods "${pod}" not found`, { status: 404 });
      serveRemoteCommand(kind as 'exec' | 'attach', req, socket, head, target, 'main', log)
        .catch((err: unknown) => sendUpgradeError(socket, err));
    });
    host.listen(0, '127.0.0.1');
    await once(host, 'listening');
    hostPort = (host.address() as { port: number }).port;
  });
  after(() => { host.close(); host.closeAllConnections(); member.stop(); });

  function upgrade(path: string, protocol: string): Promise<{ session?: SpdySession; status?: number; body?: string; protocol?: string }> {
    return new Promise((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: hostPort, path, method: 'POST',
        headers: { Connection: 'Upgrade', Upgrade: 'SPDY/3.1', 'X-Stream-Protocol-Version': protocol } });
      req.on('upgrade', (res, socket) => resolve({ session: new SpdySession(socket, 'client'), protocol: String(res.headers['x-stream-protocol-version']) }));
      req.on('response', (res) => {
        let body = '';
        res.on('data', (d: Buffer) => { body += d.toString(); });
        res.on('end', () => resolve({ status: res.statusCode, body }));
      });
      req.on('error', reject);
      req.end();
    });
  }

  const readAll = async (s: SpdyStream): Promise<string> => {
    let out = '';
    for await (const chunk of s) out += (chunk as Buffer).toString();
    return out;
  };

  it('carries stdin and its end to the back end, stdout back, and the exit status on the error stream (v4)', async () => {
    const r = await upgrade('/exec/ns/p/main?command=cat&input=1&output=1&error=1', 'v4.channel.k8s.io,v3.channel.k8s.io');
    assert.equal(r.protocol, 'v4.channel.k8s.io');
    assert.deepEqual(runtime.calls.at(-1), { op: 'exec', pod: 'ns/p/uid-p/main', options: 'command=cat&stdin=true&stdout=true&stderr=true',
      protocols: ['v5.channel.k8s.io', 'v4.channel.k8s.io'] });
    assert.equal(seen.url, '/exec?command=cat&stdin=true&stdout=true&stderr=true');
    const s = r.session!;
    // As client-go: the error stream first, then the others.
    const error = await s.openStream({ streamtype: ['error'] });
    const stdin = await s.openStream({ streamtype: ['stdin'] });
    const stdout = await s.openStream({ streamtype: ['stdout'] });
    const stderr = await s.openStream({ streamtype: ['stderr'] });
    stdin.end('hello\n');
    const [out, err, status] = await Promise.all([readAll(stdout), readAll(stderr), readAll(error)]);
    assert.equal(out, 'hello\n');
    assert.equal(err, '');
    assert.deepEqual(JSON.parse(status).details.causes, [{ reason: 'ExitCode', message: '3' }]);
    assert.ok(seen.messages.some((m) => m.equals(Buffer.from([255, 0]))), 'the v5 close signal for stdin');
    await s.closed;
  });

  it('v3: the failure\'s message on the error stream', async () => {
    const r = await upgrade('/exec/ns/p/main?command=cat&input=1&output=1', 'v3.channel.k8s.io');
    const s = r.session!;
    const error = await s.openStream({ streamtype: ['error'] });
    const stdin = await s.openStream({ streamtype: ['stdin'] });
    const stdout = await s.openStream({ streamtype: ['stdout'] });
    stdin.end();
    assert.equal((await Promise.all([readAll(error), readAll(stdout)]))[0], 'command terminated with non-zero exit code: exit status 3');
  });

  it('answers an HTTP error, before upgrading, when the runtime refuses or no protocol is shared', async () => {
    const missing = await upgrade('/exec/ns/gone/main?command=cat&output=1', 'v4.channel.k8s.io');
    assert.equal(missing.status, 404);
    assert.match(missing.body!, /member m: pods "gone" not found/);
    const old = await upgrade('/exec/ns/p/main?command=cat&output=1', 'channel.k8s.io');
    assert.equal(old.status, 403);
    assert.match(old.body!, /unable to negotiate protocol/);
  });

  it('attach with a terminal: stdin and resizes to the back end, its output back', async () => {
    const r = await upgrade('/attach/ns/p/main?input=1&output=1&tty=1', 'v4.channel.k8s.io');
    assert.equal(seen.url, '/attach?stdin=true&stdout=true&tty=true');
    const s = r.session!;
    const error = await s.openStream({ streamtype: ['error'] });
    const stdin = await s.openStream({ streamtype: ['stdin'] });
    const stdout = await s.openStream({ streamtype: ['stdout'] });
    const resize = await s.openStream({ streamtype: ['resize'] });
    let out = '';
    stdout.on('data', (d: Buffer) => { out += d.toString(); });
    const sawAll = new Promise<void>((resolve) => stdout.on('data', () => { if (out.includes('typed') && out.includes('"Width":80')) resolve(); }));
    resize.write(JSON.stringify({ Width: 80, Height: 24 }));
    stdin.write('typed');
    await sawAll;
    stdin.end();
    await readAll(error);
    assert.match(out, /resized \{"Width":80,"Height":24\}/);
  });
});

