// The member's pod runtime (src/member/runtime/): the proxy's delegate found in the delegate index, the member
// API's answers typed as ProviderErrors, and usage measured in the member given in host names — against a fake
// member API server.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type Server } from 'node:https';
import type { Duplex } from 'node:stream';
import { NEVER, Subject } from 'rxjs';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { WebSocketServer, type WebSocket } from 'ws';
import { pino } from 'pino';
import { NODE_LABEL, ORIGIN_LABEL, PROXY_NAME_ANNOTATION, PROXY_NAMESPACE_ANNOTATION, PROXY_UID_LABEL } from '../../../src/forge/keys.ts';
import { ClusterClient } from '../../../src/kube/client.ts';
import { Informer } from '../../../src/kube/informer.ts';
import { parseKubeconfig } from '../../../src/kube/kubeconfig.ts';
import type { ListWatchEvent } from '../../../src/kube/listwatch.ts';
import { DelegateIndex } from '../../../src/member/delegates.ts';
import { fromMember, statusMessage } from '../../../src/member/runtime/api.ts';
import { MemberRuntime, type RuntimeCluster } from '../../../src/member/runtime/runtime.ts';
import {
  runningDelegates, usageFromPodMetrics, usageFromResourceMetrics, type DelegateRef,
} from '../../../src/member/runtime/usage.ts';
import { isProviderError, type ProviderError, type ProviderErrorKind } from '../../../src/provider/errors.ts';
import { parsePrometheus } from '../../../src/util/prom.ts';
import { newServingKey, selfSignedCertificate } from '../../../src/host/api/x509.ts';

const log = pino({ level: 'silent' });
const OWNER = { hostName: 'host-1', node: 'vn' };

const proxy = (ns: string, name: string, uid: string, containers: string[]): V1Pod => ({
  metadata: { namespace: ns, name, uid }, spec: { containers: containers.map((c) => ({ name: c })) },
  status: { startTime: new Date('2026-01-01T00:00:00Z') },
});

/** A delegate in member namespace `${ns}-eu` of the proxy ns/name with `uid`, on member node `node`. */
const delegate = (ns: string, name: string, uid: string, node: string, phase = 'Running'): V1Pod => ({
  metadata: {
    namespace: `${ns}-eu`, name,
    labels: { [ORIGIN_LABEL]: OWNER.hostName, [NODE_LABEL]: OWNER.node, [PROXY_UID_LABEL]: uid },
    annotations: { [PROXY_NAMESPACE_ANNOTATION]: ns, [PROXY_NAME_ANNOTATION]: name },
  },
  spec: { nodeName: node, containers: [{ name: 'app' }] },
  status: { phase },
});

// Member namespace "team-a-eu" stands for host namespace "team-a".
const delegates: DelegateRef[] = [
  { memberNamespace: 'team-a-eu', memberName: 'web', memberNode: 'n1', proxy: proxy('team-a', 'web', 'uid-web', ['app', 'sidecar']) },
];

const KUBELET = `# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds
# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{container="app",namespace="team-a-eu",pod="web"} 12.5 1767225600000
container_cpu_usage_seconds_total{container="sidecar",namespace="team-a-eu",pod="web"} 0.5 1767225600000
container_cpu_usage_seconds_total{container="app",namespace="other",pod="web"} 99 1767225600000
container_cpu_usage_seconds_total{container="injected",namespace="team-a-eu",pod="web"} 1 1767225600000
container_memory_working_set_bytes{container="app",namespace="team-a-eu",pod="web"} 1.048576e+08 1767225600000
container_memory_working_set_bytes{container="sidecar",namespace="team-a-eu",pod="web"} 1048576 1767225600000
container_start_time_seconds{container="app",namespace="team-a-eu",pod="web"} 1.7672256e+09 1767225600000
pod_cpu_usage_seconds_total{namespace="team-a-eu",pod="web"} 13.25 1767225600000
pod_memory_working_set_bytes{namespace="team-a-eu",pod="web"} 1.06e+08 1767225600000
node_cpu_usage_seconds_total 1000 1767225600000
`;

describe('usage from the member', () => {
  it('kubelet resource metrics → host names; other pods and containers not in the spec are left out', () => {
    const [p] = usageFromResourceMetrics(parsePrometheus(KUBELET), delegates, 0);
    assert.equal(p.namespace, 'team-a');
    assert.equal(p.uid, 'uid-web');
    assert.deepEqual(p.containers.map((c) => [c.name, c.cpuSeconds, c.memoryWorkingSetBytes]), [['app', 12.5, 104857600], ['sidecar', 0.5, 1048576]]);
    assert.equal(p.cpuSeconds, 13.25, 'the pod-level counter when there is one');
    assert.equal(p.memoryWorkingSetBytes, 1.06e8);
    assert.equal(p.containers[0].startTime, 1767225600000);
    assert.equal(p.timestamp, 1767225600000);
  });

  it('metrics API PodMetrics → host names, CPU as a rate', () => {
    const [p] = usageFromPodMetrics([{ metadata: { namespace: 'team-a-eu', name: 'web' }, timestamp: '2026-01-01T00:00:00Z',
      containers: [{ name: 'app', usage: { cpu: '250m', memory: '64Mi' } }, { name: 'other', usage: { cpu: '1' } }] }], delegates, 0);
    assert.equal(p.name, 'web');
    assert.deepEqual(p.containers.map((c) => [c.name, c.cpuCores, c.memoryWorkingSetBytes]), [['app', 0.25, 64 * 2 ** 20]]);
    assert.equal(p.cpuCores, 0.25);
  });

  it('measures only running delegates of the proxies that are there, with their UID', () => {
    const proxies = new Map([['a/run', proxy('a', 'run', 'u1', ['app'])], ['a/done', proxy('a', 'done', 'u2', ['app'])],
      ['a/new', proxy('a', 'new', 'u3-new', ['app'])]]);
    const entries: [{ namespace: string; name: string; uid: string }, V1Pod][] = [
      [{ namespace: 'a', name: 'run', uid: 'u1' }, delegate('a', 'run', 'u1', 'n1')],
      [{ namespace: 'a', name: 'done', uid: 'u2' }, delegate('a', 'done', 'u2', 'n1', 'Succeeded')],
      [{ namespace: 'a', name: 'new', uid: 'u3-old' }, delegate('a', 'new', 'u3-old', 'n1')],
      [{ namespace: 'a', name: 'gone', uid: 'u4' }, delegate('a', 'gone', 'u4', 'n1')],
    ];
    const refs = runningDelegates(entries, proxies);
    assert.deepEqual(refs.map((d) => [d.memberNamespace, d.memberName, d.memberNode, d.proxy.metadata?.uid]), [['a-eu', 'run', 'n1', 'u1']]);
  });
});

describe('member API answers as ProviderErrors', () => {
  const cases: [number, ProviderErrorKind, RegExp][] = [
    [404, 'NotFound', /^member m: pods "x" not found$/],
    [400, 'InvalidInput', /^member m: pods "x" not found$/],
    [409, 'InvalidInput', /^member m: pods "x" not found$/],
    [401, 'Forbidden', /check clusterlet's RBAC in the member/],
    [403, 'Forbidden', /check clusterlet's RBAC in the member/],
    [500, 'Upstream', /^member m: pods "x" not found$/],
  ];
  for (const [status, kind, message] of cases) {
    it(`${status} → ${kind}, the member's status kept`, () => {
      const e = fromMember('m', status, 'pods "x" not found');
      assert.equal(e.kind, kind);
      assert.equal(e.status, status);
      assert.match(e.message, message);
    });
  }

  it('the message of a Status body, else the body; HTTP <status> when there is none', () => {
    assert.equal(statusMessage('{"kind":"Status","message":"nope"}'), 'nope');
    assert.equal(statusMessage(' plain \n'), 'plain');
    assert.equal(fromMember('m', 502, '').message, 'member m: HTTP 502');
  });
});

describe('the member runtime against a fake member', () => {
  let member: Server;
  let wss: WebSocketServer;
  let url = '';
  const seen: string[] = [];
  /** Answers per member node's kubelet resource metrics; a node without one fails (500). */
  const kubelets = new Map<string, string>([['n1', KUBELET]]);
  const podMetrics = { items: [{ metadata: { namespace: 'team-b-eu', name: 'api' }, timestamp: '2026-01-01T00:00:00Z',
    containers: [{ name: 'app', usage: { cpu: '500m', memory: '32Mi' } }] }] };
  const pods = new Subject<ListWatchEvent<V1Pod>>();
  const informer = new Informer<V1Pod>('member-pods', pods);
  const index = new DelegateIndex(informer, OWNER);
  const proxies = new Map([
    ['team-a/web', proxy('team-a', 'web', 'uid-web', ['app', 'sidecar'])],
    ['team-b/api', proxy('team-b', 'api', 'uid-api', ['app'])],
  ]);
  let runtime: MemberRuntime;

  const client = (server: string): ClusterClient => new ClusterClient(parseKubeconfig(JSON.stringify({
    apiVersion: 'v1', kind: 'Config', 'current-context': 'm',
    clusters: [{ name: 'm', cluster: { server, 'insecure-skip-tls-verify': true } }],
    users: [{ name: 'u', user: { token: 't' } }], contexts: [{ name: 'm', context: { cluster: 'm', user: 'u' } }],
  }), { source: 'test', baseDir: '.' }), { cluster: 'm', qps: 1000, burst: 1000 });
  const cluster = (server: string): RuntimeCluster => ({
    config: { name: 'm' }, client: client(server), owner: OWNER, delegates: index,
    // No member node known: each is scraped at the kubelet's default path.
    nodes: new Informer<V1Node>('member-nodes', NEVER),
  });

  const status = (res: ServerResponse, code: number, message: string): void => {
    res.writeHead(code, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ kind: 'Status', message }));
  };

  before(async () => {
    const k = newServingKey();
    member = createHttpsServer({ key: k.key, cert: selfSignedCertificate(k.keyObject, { subject: { commonName: 'member' }, dns: ['localhost'], ips: ['127.0.0.1'] }) });
    member.on('request', (req: IncomingMessage, res: ServerResponse) => {
      seen.push(`${req.method} ${req.url}`);
      const u = new URL(req.url!, 'https://member');
      const node = /^\/api\/v1\/nodes\/([^/]+)\/proxy\/metrics\/resource$/.exec(u.pathname);
      if (node) {
        const text = kubelets.get(node[1]);
        if (text) res.end(text); else status(res, 500, 'no kubelet');
      } else if (u.pathname === '/apis/metrics.k8s.io/v1beta1/pods') {
        res.end(JSON.stringify(podMetrics));
      } else if (u.pathname.endsWith('/log')) {
        const c = u.searchParams.get('container');
        if (c === 'gone') status(res, 404, 'container "gone" not found');
        else if (c === 'denied') status(res, 403, 'forbidden: User "clusterlet" cannot get pods/log');
        else if (c === 'bad') status(res, 400, 'bad options');
        else { res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8' }); res.end(`log of ${c}\n`); }
      } else if (u.pathname.endsWith('/portforward')) {
        status(res, 404, 'not upgraded');
      } else {
        status(res, 404, 'no such path');
      }
    });
    wss = new WebSocketServer({ noServer: true, handleProtocols: (ps) => ps.has('v5.channel.k8s.io') ? 'v5.channel.k8s.io' : false });
    member.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      seen.push(`${req.method} ${req.url} ${req.headers.upgrade}`);
      // The delegate of team-b/api may not be exec'd into or port-forwarded to: the upgrade is refused.
      if (req.url!.includes('/pods/api/')) {
        const body = JSON.stringify({ kind: 'Status', message: 'forbidden: User "clusterlet" cannot create pods/exec' });
        socket.end(`HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
        return;
      }
      if (req.url!.endsWith('/portforward')) {
        // A member that answers with another protocol than asked.
        socket.end('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: other\r\n\r\n');
        return;
      }
      wss.handleUpgrade(req, socket, head, (ws: WebSocket) => ws.close(1000));
    });
    member.listen(0, '127.0.0.1');
    await once(member, 'listening');
    url = `https://127.0.0.1:${(member.address() as { port: number }).port}`;
    index.start();
    informer.start();
    pods.next({ type: 'SYNC', items: [delegate('team-a', 'web', 'uid-web', 'n1'), delegate('team-b', 'api', 'uid-api', 'n2'),
      delegate('team-a', 'old', 'uid-old-1', 'n1')] });
    runtime = new MemberRuntime(cluster(url), proxies, { log, cacheMs: 60_000 });
  });
  after(() => {
    wss.close();
    member.close();
    member.closeAllConnections();
    index.stop();
    informer.stop();
  });

  const rejects = async (p: Promise<unknown>, kind: ProviderErrorKind, message: RegExp): Promise<ProviderError> => {
    let caught: unknown;
    await p.catch((err: unknown) => { caught = err; });
    assert.ok(isProviderError(caught, kind), `expected ${kind}, got ${String(caught)}`);
    assert.match(caught.message, message);
    return caught;
  };

  it('logs: the delegate\'s pods/log in the member namespace, the container first, the content type as the member gives it', async () => {
    const logs = await runtime.containerLogs('team-a', 'web', 'uid-web', 'app', new URLSearchParams('follow=true&tailLines=5'),
      new AbortController().signal);
    assert.equal(seen.at(-1), 'GET /api/v1/namespaces/team-a-eu/pods/web/log?container=app&follow=true&tailLines=5');
    assert.equal(logs.contentType, 'text/plain; charset=utf-8');
    let text = '';
    for await (const chunk of logs.stream) text += String(chunk);
    assert.equal(text, 'log of app\n');
  });

  it('NotFound without asking the member while the proxy has no delegate, or only one of an earlier pod of that name', async () => {
    const before = seen.length;
    const signal = new AbortController().signal;
    await rejects(runtime.containerLogs('team-a', 'nope', 'uid-nope', 'app', new URLSearchParams(), signal),
      'NotFound', /^pod team-a\/nope has no delegate in member m yet$/);
    await rejects(runtime.containerLogs('team-a', 'old', 'uid-old-2', 'app', new URLSearchParams(), signal),
      'NotFound', /^pod team-a\/old has no delegate in member m yet$/);
    await rejects(runtime.remoteCommand('exec', 'team-a', 'nope', 'u', 'app', new URLSearchParams(), ['v5.channel.k8s.io']),
      'NotFound', /no delegate/);
    await rejects(runtime.portForward('team-a', 'nope', 'u', ['portforward.k8s.io']), 'NotFound', /no delegate/);
    assert.equal(seen.length, before);
  });

  it('the member\'s refusals keep their meaning and status', async () => {
    const logs = (container: string): Promise<unknown> =>
      runtime.containerLogs('team-a', 'web', 'uid-web', container, new URLSearchParams(), new AbortController().signal);
    assert.equal((await rejects(logs('gone'), 'NotFound', /^member m: container "gone" not found$/)).status, 404);
    assert.equal((await rejects(logs('denied'), 'Forbidden', /cannot get pods\/log \(check clusterlet's RBAC in the member\)$/)).status, 403);
    assert.equal((await rejects(logs('bad'), 'InvalidInput', /^member m: bad options$/)).status, 400);
  });

  it('an upgrade the member refuses (exec, port-forward) keeps its meaning and status', async () => {
    const exec = await rejects(runtime.remoteCommand('exec', 'team-b', 'api', 'uid-api', 'app', new URLSearchParams(), ['v5.channel.k8s.io']),
      'Forbidden', /^member m: forbidden: User "clusterlet" cannot create pods\/exec \(check clusterlet's RBAC in the member\)$/);
    assert.equal(exec.status, 403);
    const forward = await rejects(runtime.portForward('team-b', 'api', 'uid-api', ['portforward.k8s.io']),
      'Forbidden', /^member m: forbidden: User "clusterlet" cannot create pods\/exec/);
    assert.equal(forward.status, 403);
  });

  it('an unreachable member → Unavailable', async () => {
    const closed = createHttpsServer();
    closed.listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const port = (closed.address() as { port: number }).port;
    closed.close();
    await once(closed, 'close');
    const away = new MemberRuntime(cluster(`https://127.0.0.1:${port}`), proxies, { log });
    await rejects(away.containerLogs('team-a', 'web', 'uid-web', 'app', new URLSearchParams(), new AbortController().signal),
      'Unavailable', /^member m: .*ECONNREFUSED/);
    await rejects(away.remoteCommand('attach', 'team-a', 'web', 'uid-web', 'app', new URLSearchParams('stdin=true'), ['v5.channel.k8s.io']),
      'Unavailable', /ECONNREFUSED/);
  });

  it('exec: a WebSocket to the delegate\'s pods/exec with the container first, in a protocol asked for', async () => {
    const ws = await runtime.remoteCommand('exec', 'team-a', 'web', 'uid-web', 'app', new URLSearchParams('command=ls&stdout=true'),
      ['v5.channel.k8s.io', 'v4.channel.k8s.io']);
    assert.equal(ws.protocol, 'v5.channel.k8s.io');
    assert.equal(seen.at(-1), 'GET /api/v1/namespaces/team-a-eu/pods/web/exec?container=app&command=ls&stdout=true websocket');
    ws.terminate();
  });

  it('port-forward: a member that answers in another protocol → Upstream', async () => {
    await rejects(runtime.portForward('team-a', 'web', 'uid-web', ['portforward.k8s.io']),
      'Upstream', /^member m answered port-forward with protocol "other"$/);
    assert.equal(seen.at(-1), 'POST /api/v1/namespaces/team-a-eu/pods/web/portforward SPDY/3.1');
  });

  it('usage: the member kubelets\' resource metrics, else the metrics API, in host names; reused while fresh', async () => {
    const u = await runtime.usage();
    assert.deepEqual(u.pods.map((p) => [p.namespace, p.name, p.uid, p.containers.map((c) => c.name)]),
      [['team-a', 'web', 'uid-web', ['app', 'sidecar']], ['team-b', 'api', 'uid-api', ['app']]]);
    assert.ok(seen.includes('GET /api/v1/nodes/n1/proxy/metrics/resource'));
    assert.ok(seen.includes('GET /api/v1/nodes/n2/proxy/metrics/resource'));
    assert.ok(seen.includes(`GET /apis/metrics.k8s.io/v1beta1/pods?labelSelector=${encodeURIComponent('clusterlet.io/node=vn')}`),
      'n2\'s kubelet failed: its delegates from the metrics API');
    assert.equal(u.pods[1].cpuCores, 0.5);
    assert.equal(u.memoryWorkingSetBytes, 1.06e8 + 32 * 2 ** 20);
    assert.equal(u.cpuSeconds, 13.25, 'the metrics API\'s first reading integrates to 0 s');
    const asked = seen.length;
    assert.deepEqual(await runtime.usage(), u);
    assert.equal(seen.length, asked, 'a fresh reading is reused');
  });
});
