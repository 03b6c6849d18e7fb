// The kubelet API over WebSocket, on real control planes (Kubernetes 1.36): the virtual node declares
// ExtendWebSocketsToKubelet (KEP-5328 status.declaredFeatures), so the host API server passes kubectl's exec,
// attach and port-forward WebSockets through to clusterlet instead of translating them to SPDY. Shown: exec,
// attach, cp and port-forward with kubectl through the API server, the same straight to the kubelet API with a
// WebSocket client (bearer token), SPDY still served, and that sessions interrupted by their client leave no
// member connection behind (liqo#2612, virtual-kubelet#1425) and memory where it was. (kubelet-api.test.ts's
// kubectl exec, attach and port-forward tests take the same WebSocket way since the node declares the feature.)
// The member's KWOK serves its nodes' kubelet API from files and local commands (test/harness/kwok-api.ts): exec
// runs on this machine in its directory, port 7000 is an echo. KWOK never closes a command's stdin.
import { describe, it, before, after, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { harness, namespaces, startKubeletApiClusterlet, stopAndForgetNode, type ClusterletProcess } from '../support/env.ts';
import { kubectl, kubectlRun, kubectlStream, type KubectlStream } from '../support/kubectl.ts';
import { metricSeries } from '../support/metrics.ts';
import { grantNodesProxy, serviceAccountToken } from '../support/callers.ts';
import { echoOf, openChannelClient, openTunnel, tunnelConnection, type ChannelClient } from '../support/websocket.ts';
import { attachShows } from '../support/kwok.ts';
import { runOffloadedPod } from '../support/objects.ts';
import { freePort, pollUntil } from '../harness/net.ts';
import { KWOK_ECHO_PORT } from '../harness/kwok-api.ts';
import type { ClusterClient } from '../../src/kube/client.ts';

const NODE = 'clusterlet-member';
const STDOUT = 1;
const STDERR = 2;
const ERROR = 3;

/** The API server's apiserver_websocket_streaming_requests_total, by `subresource/proxy_type`. */
async function apiserverStreaming(): Promise<Map<string, number>> {
  return metricSeries(await kubectl(harness().host, 'get', '--raw', '/metrics'), 'apiserver_websocket_streaming_requests_total',
    ['subresource', 'proxy_type']);
}

/** The TCP connections process `pid` holds to `port` (its socket inodes, looked up in its network namespace's tables). */
function connectionsTo(pid: number, port: number): number {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]);
    } catch { /* closed meanwhile */ }
  }
  let n = 0;
  for (const table of ['tcp', 'tcp6']) {
    for (const line of readFileSync(`/proc/${pid}/net/${table}`, 'utf8').split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length > 9 && parseInt(cols[2].split(':')[1], 16) === port && inodes.has(cols[9])) n++;
    }
  }
  return n;
}

/** Resident memory of process `pid`, MiB. */
function rssMiB(pid: number): number {
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) / 1024;
}

/**
 * Runs a local command with `input`; resolves with its stdout. Without input its stdin is /dev/null: a command that
 * reads none (tar cf) may be gone before a pipe is ended, which failed the write with EPIPE (seen in CI). It resolves
 * on 'close', once its stdout is read to the end ('exit' can come before the last of it).
 */
async function local(cmd: string, args: string[], input?: Buffer): Promise<Buffer> {
  const child = spawn(cmd, args, { stdio: [input ? 'pipe' : 'ignore', 'pipe', 'inherit'] });
  const out: Buffer[] = [];
  child.stdout!.on('data', (d: Buffer) => out.push(d));
  child.stdin?.end(input);
  const [code] = await once(child, 'close') as [number];
  assert.equal(code, 0, `${cmd} ${args.join(' ')}`);
  return Buffer.concat(out);
}

/** Writes `data` to a new local connection to `port` and resolves once it has all come back. */
async function echoThrough(port: number, data: Buffer): Promise<Socket> {
  const sock = connect(port, '127.0.0.1');
  let got = 0;
  await new Promise<void>((resolve, reject) => {
    sock.on('data', (d: Buffer) => { got += d.length; if (got >= data.length) resolve(); });
    sock.on('error', reject);
    sock.on('close', () => reject(new Error(`closed after ${got} of ${data.length} bytes`)));
    sock.write(data);
  });
  sock.removeAllListeners('close');
  return sock;
}

describe('kubelet API over WebSocket', () => {
  let cl: ClusterletProcess;
  let host: ClusterClient;
  let member: ClusterClient;
  let port: number;
  let healthPort: number;
  let nodeIP: string;

  before(async () => {
    healthPort = await freePort();
    ({ host, member, cl, port, nodeIP } = await startKubeletApiClusterlet(['--health-port', String(healthPort)]));
  });
  after(() => stopAndForgetNode(cl, host, NODE));

  /** clusterlet_kubelet_api_streams by `endpoint/transport` (open sessions). */
  async function openSessions(): Promise<Map<string, number>> {
    const text = await (await fetch(`http://127.0.0.1:${healthPort}/metrics`)).text();
    return metricSeries(text, 'clusterlet_kubelet_api_streams', ['endpoint', 'transport']);
  }
  const totalOpen = async (): Promise<number> => [...(await openSessions()).values()].reduce((a, b) => a + b, 0);
  const waitOpen = (key: string, n: number): Promise<true> =>
    pollUntil(`${n} ${key} session(s) open in clusterlet_kubelet_api_streams`, async () => ((await openSessions()).get(key) ?? 0) === n || undefined, 30_000, 100);

  async function runningPod(t: TestContext, prefix: string, name: string): Promise<string> {
    const ns = await namespaces(t, prefix, [host]);
    await runOffloadedPod(host, member, ns, name, {}, NODE);
    return ns;
  }

  /** A bearer token allowed `get nodes/proxy` (what a WebSocket handshake, a GET, is authorised as). */
  async function callerToken(t: TestContext, ns: string): Promise<string> {
    await grantNodesProxy(t, host, ns, 'ws-client', NODE);
    return serviceAccountToken(host, ns, 'ws-client');
  }

  const kubeletURL = (path: string): string => `wss://${nodeIP}:${port}${path}`;
  const execPath = (ns: string, pod: string, command: string[], flags = 'output=1&error=1'): string =>
    `/exec/${ns}/${pod}/main?${command.map((c) => `command=${encodeURIComponent(c)}`).join('&')}&${flags}`;

  it('the node declares ExtendWebSocketsToKubelet, and the API server passes kubectl\'s WebSockets through to it', async (t) => {
    const node = await host.core.readNode({ name: NODE });
    assert.deepEqual(node.status?.declaredFeatures, ['ExtendWebSocketsToKubelet']);
    const ns = await runningPod(t, 'ws-pass', 'shell');
    const before = await apiserverStreaming();
    const ok = await kubectlRun(['exec', '-n', ns, 'shell', '--', 'sh', '-c', 'echo out; echo err >&2']);
    assert.deepEqual(ok, { code: 0, stdout: 'out\n', stderr: 'err\n' });
    const failed = await kubectlRun(['exec', '-n', ns, 'shell', '--', 'sh', '-c', 'echo before; exit 3']);
    // KWOK reports a command's exit status as an InternalError naming it (a kubelet sends NonZeroExitCode).
    assert.equal(failed.stdout, 'before\n');
    assert.notEqual(failed.code, 0);
    assert.match(failed.stderr, /exit status 3/);
    const after = await apiserverStreaming();
    const delta = (k: string): number => (after.get(k) ?? 0) - (before.get(k) ?? 0);
    // One each: a WebSocket that failed would have made kubectl fall back to SPDY, a second request.
    assert.equal(delta('exec/proxied_to_kubelet'), 2, `the API server proxied the execs to the node: ${JSON.stringify([...after])}`);
    assert.equal(delta('exec/translated_at_apiserver'), 0, 'nothing translated to SPDY at the API server');
    // While a session is open, clusterlet counts it as a WebSocket one.
    const session = kubectlStream(['exec', '-i', '-n', ns, 'shell', '--', 'sh', '-c', 'echo ready; exec cat']);
    try {
      await session.waitFor(/ready\n/);
      await waitOpen('exec/websocket', 1);
      session.child.stdin!.write('typed\n');
      await session.waitFor(/typed\n/);
    } finally {
      session.child.kill('SIGKILL');
    }
    await waitOpen('exec/websocket', 0);
  });

  it('kubectl attach streams the container\'s output (WebSocket through the API server)', async (t) => {
    const ns = await runningPod(t, 'ws-attach', 'attached');
    await writeFile(harness().member.kwok.attach('main'), '');
    const a = kubectlStream(['attach', '-n', ns, 'attached', '-c', 'main']);
    try {
      await attachShows(a.out);
      await waitOpen('attach/websocket', 1);
    } finally {
      a.child.kill('SIGKILL');
    }
    await waitOpen('attach/websocket', 0);
  });

  it('kubectl cp out of and into an offloaded pod (WebSocket through the API server)', async (t) => {
    const ns = await runningPod(t, 'ws-cp', 'files');
    // KWOK runs the pod's commands on this machine: the pod's files are under its directory.
    const podDir = join(harness().member.kwok.dir, `cp-${randomBytes(3).toString('hex')}`);
    await mkdir(podDir);
    const here = await mkdtemp(join(harness().dir, 'ws-cp-'));
    const out = randomBytes(50_000);
    await writeFile(join(podDir, 'out.bin'), out);
    const got = await kubectlRun(['cp', '-c', 'main', `${ns}/files:${podDir}/out.bin`, join(here, 'out.bin')]);
    assert.equal(got.code, 0, got.stderr);
    assert.ok((await readFile(join(here, 'out.bin'))).equals(out), 'the pod\'s file, byte for byte');
    // kubectl cp sends a tar archive to `tar -xmf -`. GNU tar reads a pipe in 10240-byte records and waits for a full
    // one or the end of input, which KWOK never gives: a file of 17 blocks makes the archive (header, 17 blocks,
    // 2-block trailer) exactly one record, so tar reads its end and exits as it would at the end of input.
    const into = randomBytes(17 * 512);
    await writeFile(join(here, 'in.bin'), into);
    const put = await kubectlRun(['cp', '-c', 'main', join(here, 'in.bin'), `${ns}/files:${podDir}/in.bin`]);
    assert.equal(put.code, 0, put.stderr);
    assert.ok((await readFile(join(podDir, 'in.bin'))).equals(into), 'the file in the pod, byte for byte');
  });

  it('kubectl port-forward carries bytes both ways (WebSocket SPDY tunnel through the API server)', async (t) => {
    const ns = await runningPod(t, 'ws-pf', 'echo');
    const before = await apiserverStreaming();
    const localPort = await freePort();
    const pf = kubectlStream(['port-forward', '-n', ns, 'pod/echo', `${localPort}:${KWOK_ECHO_PORT}`, '--address', '127.0.0.1']);
    try {
      await pf.waitFor(new RegExp(`Forwarding from 127.0.0.1:${localPort}`));
      (await echoThrough(localPort, Buffer.from('ping\n'))).destroy();
      (await echoThrough(localPort, Buffer.from('a second connection\n'))).destroy();
      (await echoThrough(localPort, Buffer.alloc(512 * 1024, 'x'))).destroy();
      await waitOpen('portForward/websocket', 1);
    } finally {
      pf.child.kill('SIGKILL');
    }
    await waitOpen('portForward/websocket', 0);
    const after = await apiserverStreaming();
    assert.ok((after.get('portforward/proxied_to_kubelet') ?? 0) > (before.get('portforward/proxied_to_kubelet') ?? 0));
  });

  it('kubectl still works over SPDY (KUBECTL_*_WEBSOCKETS=false): exec and port-forward', async (t) => {
    const ns = await runningPod(t, 'ws-spdy', 'shell');
    const spdy = { KUBECTL_REMOTE_COMMAND_WEBSOCKETS: 'false', KUBECTL_PORT_FORWARD_WEBSOCKETS: 'false' };
    const session = kubectlStream(['exec', '-i', '-n', ns, 'shell', '--', 'sh', '-c', 'echo ready; exec cat'], spdy);
    try {
      await session.waitFor(/ready\n/);
      await waitOpen('exec/spdy', 1);
    } finally {
      session.child.kill('SIGKILL');
    }
    const ok = await kubectlRun(['exec', '-n', ns, 'shell', '--', 'sh', '-c', 'echo over spdy; exit 3'], undefined, 30_000, spdy);
    assert.equal(ok.stdout, 'over spdy\n');
    assert.notEqual(ok.code, 0);
    assert.match(ok.stderr, /exit status 3/);
    const localPort = await freePort();
    const pf = kubectlStream(['port-forward', '-n', ns, 'pod/shell', `${localPort}:${KWOK_ECHO_PORT}`, '--address', '127.0.0.1'], spdy);
    try {
      await pf.waitFor(new RegExp(`Forwarding from 127.0.0.1:${localPort}`));
      (await echoThrough(localPort, Buffer.from('spdy\n'))).destroy();
      await waitOpen('portForward/spdy', 1);
    } finally {
      pf.child.kill('SIGKILL');
    }
    await pollUntil('every session closed', async () => await totalOpen() === 0 || undefined, 30_000);
  });

  it('straight to the kubelet API with a WebSocket client and a bearer token: exec, attach, cp, port-forward', async (t) => {
    const ns = await runningPod(t, 'ws-direct', 'shell');
    const token = await callerToken(t, ns);

    // exec, v5 (kubectl's, the JavaScript client's first choice): stdout, stderr, and the exit status as a Status
    // (KWOK's: an InternalError naming it).
    const exec = await openChannelClient(kubeletURL(execPath(ns, 'shell', ['sh', '-c', 'echo out; echo err >&2; exit 3'])),
      ['v5.channel.k8s.io', 'v4.channel.k8s.io'], { token });
    assert.equal(exec.ws.protocol, 'v5.channel.k8s.io');
    assert.equal((await exec.closed).code, 1000);
    assert.equal(exec.text(STDOUT), 'out\n');
    assert.equal(exec.text(STDERR), 'err\n');
    const status = JSON.parse(exec.text(ERROR)) as { status: string; message: string };
    assert.equal(status.status, 'Failure');
    assert.match(status.message, /exit status 3/);

    // v4 in base64 text, as older browser clients.
    const b64 = await openChannelClient(kubeletURL(execPath(ns, 'shell', ['echo', 'über'], 'output=1')), ['v4.base64.channel.k8s.io'], { token });
    await b64.closed;
    assert.equal(b64.text(STDOUT), 'über\n');
    assert.equal(JSON.parse(b64.text(ERROR)).status, 'Success');

    // stdin, with the token as a subprotocol (how browsers, which cannot set headers, authenticate).
    const inProtocol = `base64url.bearer.authorization.k8s.io.${Buffer.from(token).toString('base64url')}`;
    const stdin = await openChannelClient(kubeletURL(execPath(ns, 'shell', ['sh', '-c', 'head -n 1; echo done'], 'input=1&output=1')),
      [inProtocol, 'v5.channel.k8s.io']);
    stdin.send(0, 'from stdin\n');
    await stdin.closed;
    assert.equal(stdin.text(STDOUT), 'from stdin\ndone\n');

    // attach.
    await writeFile(harness().member.kwok.attach('main'), '');
    const attach = await openChannelClient(kubeletURL(`/attach/${ns}/shell/main?output=1`), ['v5.channel.k8s.io'], { token });
    await attachShows(() => attach.text(STDOUT));
    attach.ws.close();

    // cp out (tar to stdout) and in (a tar archive on stdin, padded to a full record: see the kubectl cp test).
    const podDir = join(harness().member.kwok.dir, `cpws-${randomBytes(3).toString('hex')}`);
    await mkdir(podDir);
    const here = await mkdtemp(join(harness().dir, 'cpws-'));
    const content = randomBytes(30_000);
    await writeFile(join(podDir, 'out.bin'), content);
    const out = await openChannelClient(kubeletURL(execPath(ns, 'shell', ['tar', 'cf', '-', '-C', podDir, 'out.bin'], 'output=1')),
      ['v5.channel.k8s.io'], { token });
    await out.closed;
    await local('tar', ['xf', '-', '-C', here], Buffer.concat(out.received.filter((r) => r.channel === STDOUT).map((r) => r.data)));
    assert.ok((await readFile(join(here, 'out.bin'))).equals(content), 'copied out, byte for byte');
    await writeFile(join(here, 'in.bin'), content);
    const archive = await local('tar', ['cf', '-', '-b', '20', '-C', here, 'in.bin']);
    const into = await openChannelClient(kubeletURL(execPath(ns, 'shell', ['tar', '-xmf', '-', '-C', podDir], 'input=1&output=1&error=1')),
      ['v5.channel.k8s.io'], { token });
    for (let o = 0; o < archive.length; o += 32 * 1024) into.send(0, archive.subarray(o, o + 32 * 1024));
    into.ws.send(Buffer.from([255, 0]));
    assert.equal((await into.closed).code, 1000);
    assert.equal(JSON.parse(into.text(ERROR)).status, 'Success', into.text(ERROR));
    assert.ok((await readFile(join(podDir, 'in.bin'))).equals(content), 'copied in, byte for byte');

    // port-forward, channels (the JavaScript and Python clients' way): the port announced, bytes echoed.
    const pf = await openChannelClient(kubeletURL(`/portForward/${ns}/shell?port=${KWOK_ECHO_PORT}`), ['v4.channel.k8s.io'], { token });
    await pf.until('the port announced', () => pf.received.length >= 2);
    assert.equal(pf.received[0].data.readUInt16LE(), KWOK_ECHO_PORT);
    pf.send(0, 'over channels\n');
    await pf.until('the echo', () => pf.text(0).endsWith('over channels\n'));
    pf.ws.close();

    // port-forward, SPDY tunnelled in WebSocket messages (kubectl's way), straight to the kubelet API.
    const tunnel = await openTunnel(kubeletURL(`/portForward/${ns}/shell`), { token });
    assert.equal(tunnel.protocol, 'SPDY/3.1+portforward.k8s.io');
    const { spdy, data } = await tunnelConnection(tunnel.ws, KWOK_ECHO_PORT);
    assert.equal(await echoOf(data, 'through the tunnel\n', 15_000), 'through the tunnel\n');
    spdy.close();

    // The same authentication and authorisation as every kubelet API request.
    const refused = (p: Promise<unknown>): Promise<number> => p.then(() => 0, (e: { status: number }) => e.status);
    assert.equal(await refused(openChannelClient(kubeletURL(execPath(ns, 'shell', ['true'])), ['v5.channel.k8s.io'])), 401);
    const stranger = await serviceAccountToken(host, ns, 'stranger');
    assert.equal(await refused(openChannelClient(kubeletURL(execPath(ns, 'shell', ['true'])), ['v5.channel.k8s.io'], { token: stranger })), 403);
    await pollUntil('every session closed', async () => await totalOpen() === 0 || undefined, 30_000);
  });

  it('50 sessions interrupted by their client leave no member connection, no open session, and memory where it was', async (t) => {
    const ns = await runningPod(t, 'ws-leak', 'shell');
    const token = await callerToken(t, ns);
    const pid = cl.child.pid!;
    const memberPort = Number(new URL(harness().member.server).port);

    type Session = { kind: string; stop(): void };
    const directExec = async (): Promise<Session> => {
      const c = await openChannelClient(kubeletURL(execPath(ns, 'shell', ['sh', '-c', 'echo ready; exec sleep 120'], 'input=1&output=1')),
        ['v5.channel.k8s.io'], { token });
      await c.until('ready', () => c.text(STDOUT).includes('ready'), 30_000);
      // Gone without a close frame, as a client that crashed or lost its network.
      return { kind: 'exec (WebSocket)', stop: () => c.ws.terminate() };
    };
    const directForward = async (): Promise<Session> => {
      const c: ChannelClient = await openChannelClient(kubeletURL(`/portForward/${ns}/shell?port=${KWOK_ECHO_PORT}`), ['v4.channel.k8s.io'], { token });
      await c.until('the port announced', () => c.received.length >= 2, 30_000);
      c.send(0, 'x');
      await c.until('the echo', () => c.text(0).endsWith('x'), 30_000);
      return { kind: 'port-forward (WebSocket)', stop: () => c.ws.terminate() };
    };
    const kubectlExec = async (): Promise<Session> => {
      const s: KubectlStream = kubectlStream(['exec', '-i', '-n', ns, 'shell', '--', 'sh', '-c', 'echo ready; exec cat']);
      await s.waitFor(/ready\n/);
      return { kind: 'kubectl exec', stop: () => s.child.kill('SIGKILL') };
    };
    const kubectlForward = async (): Promise<Session> => {
      const localPort = await freePort();
      const s = kubectlStream(['port-forward', '-n', ns, 'pod/shell', `${localPort}:${KWOK_ECHO_PORT}`, '--address', '127.0.0.1']);
      await s.waitFor(new RegExp(`Forwarding from 127.0.0.1:${localPort}`));
      const sock = await echoThrough(localPort, Buffer.from('x'));
      return { kind: 'kubectl port-forward', stop: () => { s.child.kill('SIGKILL'); sock.destroy(); } };
    };
    /** One batch of 10: 4 direct exec, 4 direct port-forward, one kubectl exec and one kubectl port-forward. */
    const batch = (): Promise<Session>[] => [
      ...Array.from({ length: 4 }, directExec), ...Array.from({ length: 4 }, directForward), kubectlExec(), kubectlForward()];
    const settled = async (what: string, baseline: number): Promise<number> => {
      const started = Date.now();
      await pollUntil(what, async () => await totalOpen() === 0 && connectionsTo(pid, memberPort) <= baseline || undefined, 60_000, 100);
      return Date.now() - started;
    };

    // Warm up (first sessions load code and fill caches), then measure where things rest.
    for (const s of await Promise.all(batch())) s.stop();
    await settled('the warm-up sessions closed', Infinity);
    await pollUntil('member connections steady', async () => {
      const a = connectionsTo(pid, memberPort);
      await new Promise((r) => setTimeout(r, 2000));
      return connectionsTo(pid, memberPort) === a || undefined;
    }, 30_000, 0);
    const baseline = { connections: connectionsTo(pid, memberPort), rss: rssMiB(pid) };

    let peak = { connections: 0, sessions: 0 };
    let longest = 0;
    for (let b = 0; b < 5; b++) {
      const sessions = await Promise.all(batch());
      const open = { connections: connectionsTo(pid, memberPort), sessions: await totalOpen() };
      if (open.connections > peak.connections) peak = open;
      assert.ok(open.sessions >= 10, `batch ${b}: the 10 sessions counted open (${open.sessions})`);
      assert.ok(open.connections >= baseline.connections + 8, `batch ${b}: each session holds a member connection `
        + `(${open.connections}, baseline ${baseline.connections}): the count sees them`);
      for (const s of sessions) s.stop();
      longest = Math.max(longest, await settled(`batch ${b}'s sessions closed on the member side`, baseline.connections));
    }
    const end = { connections: connectionsTo(pid, memberPort), rss: rssMiB(pid), sessions: await totalOpen() };
    const report = `member connections: ${baseline.connections} at rest, ${peak.connections} with 10 sessions open, ${end.connections} after 50 `
      + `interrupted; slowest batch closed on both sides in ${longest} ms; RSS ${baseline.rss.toFixed(1)} MiB at rest, `
      + `${end.rss.toFixed(1)} MiB after (${(end.rss - baseline.rss).toFixed(1)} MiB)`;
    t.diagnostic(report);
    console.log(`websocket leak test: ${report}`);
    assert.equal(end.sessions, 0);
    assert.ok(end.connections <= baseline.connections, report);
    assert.ok(end.rss - baseline.rss < 30, `RSS within 30 MiB of where it rested: ${report}`);
  });
});
