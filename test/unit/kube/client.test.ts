import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { createSecureServer, type Http2Session } from 'node:http2';
import type { TLSSocket } from 'node:tls';
import { ClusterClient, DISCARD, GROUPS, queryOf, route, verbOf } from '../../../src/kube/client.ts';
import { parseKubeconfig, type ClusterAccess } from '../../../src/kube/kubeconfig.ts';
import type { KubeError } from '../../../src/kube/errors.ts';
import { newServingKey, selfSignedCertificate } from '../../../src/host/api/x509.ts';
import { VERSION } from '../../../src/version.ts';

const H = 'https://h';

type Case = [method: string, path: string, verb: string];

function check(cases: Case[]): void {
  for (const [method, path, verb] of cases) {
    assert.equal(verbOf(method, H + path), verb, `${method} ${path}`);
  }
}

describe('verbOf', () => {
  it('labels core namespaced resources', () => {
    check([
      ['GET', '/api/v1/namespaces/ns/pods', 'list'],
      ['GET', '/api/v1/namespaces/ns/pods?labelSelector=a%3Db&limit=500', 'list'],
      ['GET', '/api/v1/namespaces/ns/pods?watch=true&resourceVersion=12', 'watch'],
      ['GET', '/api/v1/namespaces/ns/pods/p', 'get'],
      ['POST', '/api/v1/namespaces/ns/pods', 'create'],
      ['PUT', '/api/v1/namespaces/ns/pods/p', 'update'],
      ['PATCH', '/api/v1/namespaces/ns/pods/p', 'patch'],
      ['DELETE', '/api/v1/namespaces/ns/pods/p', 'delete'],
      ['DELETE', '/api/v1/namespaces/ns/pods?labelSelector=a%3Db', 'deletecollection'],
    ]);
  });

  it('labels core cluster-scoped resources', () => {
    check([
      ['GET', '/api/v1/nodes', 'list'],
      ['GET', '/api/v1/nodes?watch=true', 'watch'],
      ['GET', '/api/v1/nodes/n', 'get'],
      ['POST', '/api/v1/nodes', 'create'],
      ['PUT', '/api/v1/nodes/n', 'update'],
      ['PATCH', '/api/v1/nodes/n', 'patch'],
      ['DELETE', '/api/v1/nodes/n', 'delete'],
      ['DELETE', '/api/v1/nodes', 'deletecollection'],
    ]);
  });

  it('labels cluster-wide lists and watches of namespaced resources', () => {
    check([
      ['GET', '/api/v1/pods', 'list'],
      ['GET', '/api/v1/pods?watch=true', 'watch'],
      ['GET', '/api/v1/pods?labelSelector=clusterlet.io%2Forigin%3Dhost&watch=true&allowWatchBookmarks=true', 'watch'],
    ]);
    assert.equal(verbOf('GET', 'https://h/api/v1/pods?watch=true'), 'watch');
  });

  it('labels namespaces themselves', () => {
    check([
      ['GET', '/api/v1/namespaces', 'list'],
      ['GET', '/api/v1/namespaces?watch=true', 'watch'],
      ['GET', '/api/v1/namespaces/ns', 'get'],
      ['POST', '/api/v1/namespaces', 'create'],
      ['PUT', '/api/v1/namespaces/ns', 'update'],
      ['PATCH', '/api/v1/namespaces/ns', 'patch'],
      ['DELETE', '/api/v1/namespaces/ns', 'delete'],
    ]);
  });

  it('labels group APIs, namespaced and cluster-scoped', () => {
    check([
      ['GET', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases', 'list'],
      ['GET', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases?watch=true', 'watch'],
      ['GET', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/clusterlet-m1', 'get'],
      ['POST', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases', 'create'],
      ['PUT', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/clusterlet-m1', 'update'],
      ['PATCH', '/apis/apps/v1/namespaces/ns/deployments/d', 'patch'],
      ['DELETE', '/apis/apps/v1/namespaces/ns/deployments/d', 'delete'],
      ['DELETE', '/apis/apps/v1/namespaces/ns/deployments', 'deletecollection'],
      ['POST', '/apis/events.k8s.io/v1/namespaces/default/events', 'create'],
      ['GET', '/apis/events.k8s.io/v1/events', 'list'],
      ['GET', '/apis/rbac.authorization.k8s.io/v1/clusterroles', 'list'],
      ['GET', '/apis/rbac.authorization.k8s.io/v1/clusterroles?watch=true', 'watch'],
      ['GET', '/apis/rbac.authorization.k8s.io/v1/clusterroles/admin', 'get'],
      ['DELETE', '/apis/rbac.authorization.k8s.io/v1/clusterroles/admin', 'delete'],
      ['DELETE', '/apis/rbac.authorization.k8s.io/v1/clusterroles', 'deletecollection'],
      ['GET', '/apis/discovery.k8s.io/v1/endpointslices', 'list'],
    ]);
  });

  it('labels subresources of namespaced objects', () => {
    check([
      ['GET', '/api/v1/namespaces/ns/pods/p/status', 'get'],
      ['PATCH', '/api/v1/namespaces/ns/pods/p/status', 'patch'],
      ['PUT', '/api/v1/namespaces/ns/pods/p/status', 'update'],
      ['GET', '/api/v1/namespaces/ns/pods/p/log?container=c&follow=true', 'get'],
      ['POST', '/api/v1/namespaces/ns/pods/p/eviction', 'create'],
      ['POST', '/api/v1/namespaces/ns/pods/p/binding', 'create'],
      ['GET', '/apis/apps/v1/namespaces/ns/deployments/d/scale', 'get'],
      ['PATCH', '/apis/apps/v1/namespaces/ns/deployments/d/scale', 'patch'],
    ]);
  });

  it('labels subresources of cluster-scoped objects', () => {
    check([
      ['GET', '/api/v1/nodes/n/status', 'get'],
      ['PATCH', '/api/v1/nodes/n/status', 'patch'],
      ['PUT', '/api/v1/nodes/n/status', 'update'],
      ['GET', '/api/v1/nodes/n/proxy/metrics', 'get'],
      ['PUT', '/api/v1/namespaces/ns/finalize', 'update'],
      ['PATCH', '/api/v1/namespaces/ns/status', 'patch'],
      ['GET', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/x.example.com/status', 'get'],
    ]);
  });

  // A three-segment path under /namespaces/<name>/ is a namespaced collection, except a Namespace's own subresources.
  it('labels subresources of a Namespace object', () => {
      check([
        ['GET', '/api/v1/namespaces/ns/status', 'get'],
        ['GET', '/api/v1/namespaces/ns/finalize', 'get'],
      ]);
    });

  it('accepts any method case', () => {
    check([
      ['get', '/api/v1/nodes/n', 'get'],
      ['post', '/api/v1/nodes', 'create'],
      ['patch', '/api/v1/nodes/n/status', 'patch'],
      ['delete', '/api/v1/nodes', 'deletecollection'],
    ]);
  });

  it('does not take watch=false for a watch', () => {
    check([['GET', '/api/v1/pods?watch=false', 'list']]);
  });

  it('ignores the host and port', () => {
    assert.equal(verbOf('GET', 'https://h:6443/api/v1/namespaces/ns/pods/p'), 'get');
  });
});

describe('route', () => {
  const cases: [keyof typeof GROUPS, string, Record<string, unknown>, string][] = [
    ['core', 'createNamespacedPod', { namespace: 'ns', body: {} }, 'POST /api/v1/namespaces/ns/pods'],
    ['core', 'readNamespacedPod', { namespace: 'ns', name: 'p' }, 'GET /api/v1/namespaces/ns/pods/p'],
    ['core', 'patchNamespacedPodStatus', { namespace: 'ns', name: 'p' }, 'PATCH /api/v1/namespaces/ns/pods/p/status'],
    ['core', 'deleteNamespacedPod', { namespace: 'ns', name: 'p' }, 'DELETE /api/v1/namespaces/ns/pods/p'],
    ['core', 'deleteCollectionNamespacedPod', { namespace: 'ns' }, 'DELETE /api/v1/namespaces/ns/pods'],
    ['core', 'listPodForAllNamespaces', {}, 'GET /api/v1/pods'],
    ['core', 'listNamespacedEvent', { namespace: 'ns' }, 'GET /api/v1/namespaces/ns/events'],
    ['core', 'createNamespacedServiceAccountToken', { namespace: 'ns', name: 'sa' }, 'POST /api/v1/namespaces/ns/serviceaccounts/sa/token'],
    ['core', 'replaceNamespacedServiceAccount', { namespace: 'ns', name: 'sa' }, 'PUT /api/v1/namespaces/ns/serviceaccounts/sa'],
    ['core', 'readNode', { name: 'n' }, 'GET /api/v1/nodes/n'],
    ['core', 'patchNodeStatus', { name: 'n' }, 'PATCH /api/v1/nodes/n/status'],
    ['core', 'deleteNamespace', { name: 'ns' }, 'DELETE /api/v1/namespaces/ns'],
    ['coordination', 'patchNamespacedLease', { namespace: 'kube-node-lease', name: 'n' }, 'PATCH /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n'],
    ['certificates', 'replaceCertificateSigningRequestApproval', { name: 'c' }, 'PUT /apis/certificates.k8s.io/v1/certificatesigningrequests/c/approval'],
    ['authentication', 'createTokenReview', { body: {} }, 'POST /apis/authentication.k8s.io/v1/tokenreviews'],
    ['authorization', 'createSubjectAccessReview', { body: {} }, 'POST /apis/authorization.k8s.io/v1/subjectaccessreviews'],
  ];
  it('maps client-node method names to HTTP method and path', () => {
    for (const [group, method, param, want] of cases) {
      const r = route(GROUPS[group], method, param);
      assert.equal(`${r.method} ${r.path}`, want, method);
    }
  });

  it('names the verb the request has, as verbOf reads it from the method and path (a list asked to watch included)', () => {
    const all: [keyof typeof GROUPS, string, Record<string, unknown>][] = [...cases.map(([g, m, p]) => [g, m, p] as [keyof typeof GROUPS, string, Record<string, unknown>]),
      ['core', 'listNamespacedPod', { namespace: 'ns', watch: true }], ['core', 'listPodForAllNamespaces', { watch: 'true' }],
      ['core', 'listNode', { watch: false }]];
    for (const [group, method, param] of all) {
      const r = route(GROUPS[group], method, param);
      assert.equal(r.verb, verbOf(r.method, `https://h${r.path}${queryOf(param)}`), method);
    }
    assert.equal(route(GROUPS.core, 'listNamespacedPod', { namespace: 'ns', watch: true }).verb, 'watch');
  });

  it('encodes names', () => {
    assert.equal(route(GROUPS.core, 'readNamespacedConfigMap', { namespace: 'ns', name: 'a/b' }).path, '/api/v1/namespaces/ns/configmaps/a%2Fb');
  });

  it('refuses a kind it does not know, rather than guessing a path', () => {
    assert.throws(() => route(GROUPS.core, 'createNamespacedDeployment', { namespace: 'ns' }), /no route for createNamespacedDeployment/);
  });
});

describe('queryOf', () => {
  it('sends every parameter but the path and body ones, continue under its wire name', () => {
    assert.equal(queryOf({ namespace: 'ns', name: 'p', body: {}, labelSelector: 'a=b', limit: 500, _continue: 'tok', watch: true, x: undefined }),
      '?labelSelector=a%3Db&limit=500&continue=tok&watch=true');
  });

  it('is empty when there is nothing to send', () => {
    assert.equal(queryOf({ namespace: 'ns', name: 'p' }), '');
    assert.equal(queryOf({ namespace: 'ns', body: { a: 1 }, dryRun: undefined, pretty: null }), '');
  });
});

/** A fake API server with its own self-signed certificate: answers who asked, and holds watches open. */
interface FakeServer {
  url: string;
  ca: string;
  /** Every request: its path, bearer token, client certificate CN, the connection it came on, its HTTP version, Accept and User-Agent. */
  seen: { path: string; token?: string; cn?: string; socket: TLSSocket | Http2Session; version: string; accept?: string; userAgent?: string }[];
  /** The next watch request to arrive (or one that arrived and was not taken yet): write event lines, end it. */
  nextWatch(): Promise<ServerResponse>;
  close(): void;
}

/**
 * `http2`: the server speaks HTTP/2 and HTTPS/1.1 (as kube-apiserver), taking at most `maxStreams` streams at once
 * per connection; else HTTPS/1.1 only, refusing HTTP/2 (ALPN).
 */
async function fakeServer(name: string, opts: { token?: string; http2?: boolean; maxStreams?: number; slowMs?: number } = {}): Promise<FakeServer> {
  const k = newServingKey();
  const cert = selfSignedCertificate(k.keyObject, { subject: { commonName: name }, dns: ['localhost'], ips: ['127.0.0.1'] });
  const watches: ServerResponse[] = [];
  const waiters: ((w: ServerResponse) => void)[] = [];
  const f = { ca: cert, seen: [] as FakeServer['seen'],
    nextWatch: () => new Promise<ServerResponse>((r) => { const w = watches.shift(); if (w) r(w); else waiters.push(r); }),
  } as FakeServer;
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    // Under HTTP/2, the connection is the stream's session's socket.
    // Under HTTP/2, the connection is the stream's session (its socket, a proxy, is unbound once it closes).
    const session = (req as { stream?: { session?: Http2Session } }).stream?.session;
    const tlsSocket = (session?.socket ?? req.socket) as TLSSocket;
    const token = /^Bearer (.*)$/.exec(req.headers.authorization ?? '')?.[1];
    const cn = tlsSocket.getPeerCertificate().subject?.CN;
    f.seen.push({ path: req.url!, token, cn: typeof cn === 'string' ? cn : undefined, socket: session ?? tlsSocket, version: req.httpVersion,
      accept: req.headers.accept, userAgent: req.headers['user-agent'] });
    if (opts.slowMs && req.url!.includes('slow')) {
      setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'), opts.slowMs);
      return;
    }
    if (opts.token !== undefined && token !== opts.token) {
      res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ kind: 'Status', code: 401, reason: 'Unauthorized', message: 'Unauthorized' }));
      return;
    }
    if (req.url!.includes('hang')) return; // never answered
    res.writeHead(200, { 'content-type': 'application/json' });
    if (req.url!.includes('garbled')) { res.end('{not json'); return; }
    if (req.url!.includes('watch=true')) {
      res.flushHeaders();
      const waiter = waiters.shift();
      if (waiter) waiter(res);
      else watches.push(res);
      return;
    }
    res.end(JSON.stringify({ kind: 'NamespaceList', metadata: { resourceVersion: name }, items: [] }));
  };
  const tls = { key: k.key, cert, requestCert: true, rejectUnauthorized: false };
  const sockets = new Set<TLSSocket>();
  const server = opts.http2
    ? createSecureServer({ ...tls, allowHTTP1: true, settings: { maxConcurrentStreams: opts.maxStreams ?? 100 } },
      handler as unknown as Parameters<typeof createSecureServer>[1])
    : createHttpsServer(tls, handler);
  server.on('secureConnection', (s: TLSSocket) => { sockets.add(s); s.once('close', () => sockets.delete(s)); });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  f.url = `https://127.0.0.1:${(server.address() as { port: number }).port}`;
  f.close = () => { for (const s of sockets) s.destroy(); server.close(); };
  return f;
}

function access(server: FakeServer, user: Record<string, unknown>): ClusterAccess {
  return parseKubeconfig(JSON.stringify({
    apiVersion: 'v1', kind: 'Config', 'current-context': 'c',
    clusters: [{ name: 'c', cluster: { server: server.url, 'certificate-authority-data': Buffer.from(server.ca).toString('base64') } }],
    users: [{ name: 'u', user }], contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }],
  }), { source: 'test', baseDir: '.' });
}

/** A client certificate (PEM pair as kubeconfig data) whose subject is `cn`. */
function clientCert(cn: string): Record<string, string> {
  const k = newServingKey();
  const cert = selfSignedCertificate(k.keyObject, { subject: { commonName: cn }, dns: [], ips: [] });
  return { 'client-certificate-data': Buffer.from(cert).toString('base64'), 'client-key-data': Buffer.from(k.key).toString('base64') };
}

const list = (c: ClusterClient) => c.request<{ metadata: { resourceVersion: string } }>('GET', '/api/v1/namespaces');

for (const http2 of [false, true]) {
const proto = http2 ? 'HTTP/2' : 'HTTPS/1.1';
describe(`ClusterClient#setAccess (${proto})`, { timeout: 10_000 }, () => {
  let a: FakeServer;
  let b: FakeServer;
  before(async () => { [a, b] = await Promise.all([fakeServer('a', { http2 }), fakeServer('b', { token: 'tok-b', http2 })]); });
  after(() => { a.close(); b.close(); });

  it('sends new requests to the new server, verified with the new CA, with the new token', async () => {
    const c = new ClusterClient(access(a, { token: 'tok-a' }), { cluster: 'm', qps: 100, burst: 100, http2 });
    assert.equal((await list(c)).metadata.resourceVersion, 'a');
    const oldSocket = a.seen.at(-1)!.socket;
    const next = access(b, { token: 'tok-b' });
    c.setAccess(next);
    assert.equal(c.access, next);
    assert.equal(c.server, b.url);
    // b's certificate is not signed by a's CA: this request verifies with b's.
    assert.equal((await list(c)).metadata.resourceVersion, 'b');
    assert.equal(b.seen.at(-1)!.token, 'tok-b');
    // The old pool is dropped: its idle connection to a is closed.
    if (!oldSocket.destroyed) await once(oldSocket, 'close');
  });

  it('on the same server, uses a new connection with the new client certificate', async () => {
    const c = new ClusterClient(access(a, clientCert('one')), { cluster: 'm', qps: 100, burst: 100, http2 });
    await list(c);
    await list(c);
    const [first, second] = a.seen.slice(-2);
    assert.equal(first.cn, 'one');
    assert.equal(second.socket, first.socket, 'keep-alive reuses the connection');
    c.setAccess(access(a, clientCert('two')));
    await list(c);
    const third = a.seen.at(-1)!;
    assert.equal(third.cn, 'two');
    assert.notEqual(third.socket, first.socket, 'a connection of the old pool is not reused');
  });

  it('lets a watch under way finish on the old access; a watch refused with 401 works again once restarted on the new one', async () => {
    const c = new ClusterClient(access(a, { token: 'tok-a' }), { cluster: 'm', qps: 100, burst: 100, http2 });
    const events: string[] = [];
    const onEvent = (type: string, o: unknown) => events.push(`${type} ${(o as { metadata: { name: string } }).metadata.name}`);
    const watching = c.watch('/api/v1/pods', {}, { onEvent, signal: new AbortController().signal, idleMs: 10_000 });
    const old = await a.nextWatch();
    c.setAccess(access(b, { token: 'wrong' }));
    // Still delivering on a's connection, and ending normally.
    old.end(`${JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'p1' } } })}\n`);
    await watching;
    assert.deepEqual(events, ['ADDED p1']);
    // The next watch goes to b with the rotated (here: wrong) token and is refused.
    await assert.rejects(c.watch('/api/v1/pods', {}, { onEvent, signal: new AbortController().signal, idleMs: 10_000 }),
      (err: KubeError) => err.kind === 'Unauthorized');
    c.setAccess(access(b, { token: 'tok-b' }));
    const again = c.watch('/api/v1/pods', {}, { onEvent, signal: new AbortController().signal, idleMs: 10_000 });
    const w = await b.nextWatch();
    assert.equal(b.seen.at(-1)!.token, 'tok-b');
    w.end(`${JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'p2' } } })}\n`);
    await again;
    assert.deepEqual(events, ['ADDED p1', 'ADDED p2']);
  });
});

describe(`ClusterClient requests (${proto})`, { timeout: 10_000 }, () => {
  let a: FakeServer;
  before(async () => { a = await fakeServer('a', { http2 }); });
  after(() => { a.close(); });

  it('gives up on a request the server does not answer within the request timeout', async () => {
    const c = new ClusterClient(access(a, { token: 't' }), { cluster: 'm', qps: 100, burst: 100, requestTimeoutMs: 50, http2 });
    const started = performance.now();
    await assert.rejects(c.request('GET', '/api/v1/namespaces/hang'), (err: KubeError) => err.kind === 'Unavailable' && /within 50 ms/.test(err.message));
    assert.ok(performance.now() - started < 5_000);
    // The client still works.
    assert.equal((await list(c)).metadata.resourceVersion, 'a');
  });

  it('with discard, resolves with nothing and does not decode the answer', async () => {
    const c = new ClusterClient(access(a, { token: 't' }), { cluster: 'm', qps: 100, burst: 100, http2 });
    await assert.rejects(c.core.readNamespace({ name: 'garbled' }), SyntaxError);
    assert.equal(await c.core.deleteNamespace({ name: 'garbled' }, { discard: true }), undefined);
  });

  it('with discard and onVersion, hands over the resourceVersion the write left, and still resolves with nothing', async () => {
    const c = new ClusterClient(access(a, { token: 't' }), { cluster: 'm', qps: 100, burst: 100, http2 });
    const versions: string[] = [];
    const onVersion = (rv: string): void => { versions.push(rv); };
    assert.equal(await c.core.patchNamespacedPodStatus({ namespace: 'ns', name: 'v', body: {} }, { ...DISCARD, onVersion }), undefined);
    assert.deepEqual(versions, ['a']);
    // An answer it cannot read gives no version, and fails nothing: the write was made.
    assert.equal(await c.core.deleteNamespace({ name: 'garbled' }, { discard: true, onVersion }), undefined);
    assert.deepEqual(versions, ['a']);
  });

  it('asks for the metadata alone where it discards the answer, for the whole object elsewhere', async () => {
    const c = new ClusterClient(access(a, { token: 't' }), { cluster: 'm', qps: 100, burst: 100, http2 });
    const from = a.seen.length;
    await c.core.patchNamespacedPodStatus({ namespace: 'ns', name: 'accept-discarded', body: {} }, DISCARD);
    await c.core.readNamespacedPod({ namespace: 'ns', name: 'accept-kept' });
    const accepts = a.seen.slice(from).map((s) => [s.path.split('?')[0], s.accept]);
    assert.deepEqual(accepts, [
      ['/api/v1/namespaces/ns/pods/accept-discarded/status', 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, application/json'],
      ['/api/v1/namespaces/ns/pods/accept-kept', 'application/json'],
    ]);
  });

  // kube-apiserver names the field manager of a write by its User-Agent up to the '/' ("unknown" without one), and
  // audit logs and its metrics name the client by it.
  it('names itself clusterlet/<version> in every request and watch, so that its writes are managed by "clusterlet"', async () => {
    const c = new ClusterClient(access(a, { token: 't' }), { cluster: 'm', qps: 100, burst: 100, http2 });
    const from = a.seen.length;
    const stop = new AbortController();
    const watching = c.watch('/api/v1/pods', {}, { onEvent: () => undefined, signal: stop.signal, idleMs: 10_000 });
    (await a.nextWatch()).end();
    await watching;
    await c.core.patchNamespacedPodStatus({ namespace: 'ns', name: 'ua', body: {} }, DISCARD);
    await c.core.readNamespacedPod({ namespace: 'ns', name: 'ua' });
    const agents = a.seen.slice(from).map((s) => s.userAgent);
    assert.equal(agents.length, 3);
    for (const ua of agents) assert.match(ua ?? '', new RegExp(`^clusterlet/${VERSION.replace(/\./g, '\\.')} \\(${process.platform}/${process.arch}\\) node/`));
  });

  it('parses pods\' watch events without managedFields where asked, others whole', async () => {
    const c = new ClusterClient(access(a, { token: 't' }), { cluster: 'm', qps: 100, burst: 100, http2 });
    const line = `${JSON.stringify({ type: 'ADDED', object: { kind: 'Pod', metadata: { name: 'p', managedFields: [{ manager: 'x' }] } } })}\n`;
    const seen = async (cutManagedFields: boolean): Promise<unknown[]> => {
      const got: unknown[] = [];
      const stop = new AbortController();
      const watching = c.watch('/api/v1/pods', {}, { onEvent: (_t, o) => got.push(o), signal: stop.signal, idleMs: 10_000, cutManagedFields });
      (await a.nextWatch()).end(line);
      await watching;
      return got;
    };
    assert.deepEqual(await seen(true), [{ kind: 'Pod', metadata: { name: 'p' } }]);
    assert.deepEqual(await seen(false), [{ kind: 'Pod', metadata: { name: 'p', managedFields: [{ manager: 'x' }] } }]);
  });

  it('hands a pod watch\'s knownSpec to the parse: a spec the same as the stored one is that one', async () => {
    const c = new ClusterClient(access(a, { token: 't' }), { cluster: 'm', qps: 100, burst: 100, http2 });
    const pod = (rv: string, phase: string) => ({ kind: 'Pod', apiVersion: 'v1',
      metadata: { namespace: 'ns', name: 'p', resourceVersion: rv, managedFields: [{ manager: 'x' }] },
      spec: { containers: [{ name: 'c' }] }, status: { phase } });
    const got: { spec: object }[] = [];
    const stop = new AbortController();
    const watching = c.watch('/api/v1/pods', {}, { onEvent: (_t, o) => got.push(o as { spec: object }), signal: stop.signal,
      idleMs: 10_000, cutManagedFields: true, knownSpec: (ns, name) => (ns === 'ns' && name === 'p' ? got.at(-1)?.spec : undefined) });
    (await a.nextWatch()).end(`${JSON.stringify({ type: 'ADDED', object: pod('1', 'Pending') })}\n`
      + `${JSON.stringify({ type: 'MODIFIED', object: pod('2', 'Running') })}\n`);
    await watching;
    assert.equal(got.length, 2);
    assert.equal(got[1]!.spec, got[0]!.spec);
  });

  it('counts a request\'s timeout from when it has a connection, not while it waits for one',
    { skip: http2 && 'HTTP/2 requests are streams: none waits for a connection' }, async () => {
    const server = await fakeServer('s', { http2, slowMs: 250 });
    try {
      const c = new ClusterClient(access(server, { token: 't' }), { cluster: 'm', qps: 100, burst: 100, maxRequestSockets: 1, requestTimeoutMs: 400, http2 });
      await list(c);
      // The second waits ~250 ms for the one connection, then is answered 250 ms later: 500 ms after it was made.
      const answers = await Promise.allSettled([c.request('GET', '/api/v1/namespaces/slow'), c.request('GET', '/api/v1/namespaces/slow')]);
      assert.deepEqual(answers.map((x) => (x.status === 'fulfilled' ? 'answered' : String(x.reason))), ['answered', 'answered']);
    } finally { server.close(); }
  });

  it('sends waiting requests by their priority, whether they wait for the rate limit or (HTTPS/1.1) for a connection', async () => {
    const server = await fakeServer('s', { http2, slowMs: 100 });
    try {
      const order = (c: ClusterClient, first: Promise<unknown>): Promise<string[]> => {
        const from = server.seen.length;
        const rest = [
          c.core.createNamespacedEvent({ namespace: 'ns', body: { metadata: {}, involvedObject: {} } }, { discard: true, priority: 'low' }),
          c.core.readNamespacedPod({ namespace: 'ns', name: 'normal' }),
          c.core.patchNamespacedPodStatus({ namespace: 'ns', name: 'high', body: {} }, { discard: true, priority: 'high' }),
        ];
        return Promise.all([first, ...rest]).then(() => server.seen.slice(from).map((x) => x.path.split('?')[0]!));
      };
      if (!http2) { // HTTP/2 requests are streams: none waits for a connection
        // One connection, held by a slow request: the others wait for it.
        const pooled = new ClusterClient(access(server, { token: 't' }), { cluster: 'm', qps: 100, burst: 100, maxRequestSockets: 1, http2 });
        await list(pooled);
        assert.deepEqual(await order(pooled, pooled.request('GET', '/api/v1/namespaces/slow')), [
          '/api/v1/namespaces/slow', '/api/v1/namespaces/ns/pods/high/status', '/api/v1/namespaces/ns/pods/normal', '/api/v1/namespaces/ns/events',
        ]);
      }
      // A burst of one: the others wait for the rate limit's next tokens.
      const limited = new ClusterClient(access(server, { token: 't' }), { cluster: 'm', qps: 20, burst: 1, http2 });
      assert.deepEqual(await order(limited, list(limited)), [
        '/api/v1/namespaces', '/api/v1/namespaces/ns/pods/high/status', '/api/v1/namespaces/ns/pods/normal', '/api/v1/namespaces/ns/events',
      ]);
    } finally { server.close(); }
  });

  it('answers requests while more watches run than the requests\' pool has connections', async () => {
    const server = await fakeServer('s', { http2 });
    const stop = new AbortController();
    try {
      const c = new ClusterClient(access(server, { token: 't' }), { cluster: 'm', qps: 100, burst: 100, maxRequestSockets: 2, http2 });
      const watching = [1, 2, 3].map(() => c.watch('/api/v1/pods', {}, { onEvent: () => undefined, signal: stop.signal, idleMs: 10_000 }));
      const open = await Promise.all(watching.map(() => server.nextWatch()));
      const answer = await Promise.race([list(c).then(() => 'answered'), new Promise((r) => { setTimeout(r, 3000, 'no connection for it'); })]);
      assert.equal(answer, 'answered');
      for (const w of open) w.end();
      await Promise.all(watching);
      assert.equal(new Set(server.seen.map((x) => x.socket)).size, 4, 'three watches and the request, each on a connection of its own');
    } finally { stop.abort(); server.close(); }
  });
});

describe(`ClusterClient fence (${proto})`, { timeout: 10_000 }, () => {
  let a: FakeServer;
  before(async () => { a = await fakeServer('a', { http2 }); });
  after(() => { a.close(); });

  it('refuses writes while the fence gives a reason, without sending them; reads go; writes go again once it clears', async () => {
    let reason: string | undefined = 'this replica does not lead member m';
    const c = new ClusterClient(access(a, { token: 't' }), { cluster: 'm', qps: 100, burst: 100, fence: () => reason, http2 });
    const sent = a.seen.length;
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      const err = await c.request(method, '/api/v1/namespaces', { body: {} }).then(() => undefined, (e: unknown) => e as KubeError);
      assert.equal(err?.kind, 'Unavailable', method);
      assert.equal(err?.reason, 'NotLeader', method);
      assert.match(err!.message, /does not lead member m/);
    }
    assert.equal(a.seen.length, sent, 'no write reached the server');
    await list(c);
    assert.equal(a.seen.length, sent + 1, 'a read is sent');
    reason = undefined;
    await c.request('POST', '/api/v1/namespaces', { body: {} });
    assert.equal(a.seen.length, sent + 2, 'the write is sent once the fence clears');
  });

  it('fenced(): a client of the same cluster, credentials and rate limit, whose writes the fence refuses', async () => {
    const first = new ClusterClient(access(a, { token: 't' }), { cluster: 'host', qps: 5, burst: 5, http2 });
    const second = first.fenced(() => 'not now');
    assert.equal(second.limiter, first.limiter);
    assert.equal(second.access, first.access);
    assert.equal(second.name, 'host');
    const err = await second.request('POST', '/api/v1/namespaces', { body: {} }).then(() => undefined, (e: unknown) => e as KubeError);
    assert.equal(err?.reason, 'NotLeader');
  });
});
}

describe('ClusterClient over HTTP/2', { timeout: 10_000 }, () => {
  it('speaks HTTP/2 to a server that does, and HTTPS/1.1 to one that does not', async () => {
    const [two, one] = await Promise.all([fakeServer('two', { http2: true }), fakeServer('one')]);
    try {
      for (const [server, version] of [[two, '2.0'], [one, '1.1']] as const) {
        const c = new ClusterClient(access(server, { token: 't' }), { cluster: 'm', qps: 100, burst: 100, http2: true });
        assert.equal((await list(c)).metadata.resourceVersion, server === two ? 'two' : 'one');
        assert.equal((await list(c)).metadata.resourceVersion, server === two ? 'two' : 'one');
        assert.deepEqual(server.seen.map((x) => x.version), [version, version]);
        if (server === two) assert.equal(server.seen[1].socket, server.seen[0].socket, 'one connection');
      }
    } finally { two.close(); one.close(); }
  });

  it('keeps watches on HTTPS/1.1 connections of their own, beside the requests\' HTTP/2 streams', async () => {
    const server = await fakeServer('s', { http2: true });
    try {
      const c = new ClusterClient(access(server, { token: 't' }), { cluster: 'm', qps: 100, burst: 100, http2: true });
      await list(c);
      const events: string[] = [];
      const watching = c.watch('/api/v1/pods', {}, { onEvent: (type) => events.push(type), signal: new AbortController().signal, idleMs: 10_000 });
      const w = await server.nextWatch();
      await list(c);
      w.end(`${JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'p' } } })}\n`);
      await watching;
      assert.deepEqual(events, ['ADDED']);
      assert.deepEqual(server.seen.map((x) => x.version), ['2.0', '1.1', '2.0'], 'list, watch, list');
      assert.equal(server.seen[2].socket, server.seen[0].socket, 'the requests share one connection');
    } finally { server.close(); }
  });

  it('opens another connection rather than exceed the streams the server takes at once', async () => {
    const server = await fakeServer('s', { http2: true, maxStreams: 2, slowMs: 100 });
    try {
      const c = new ClusterClient(access(server, { token: 't' }), { cluster: 'm', qps: 100, burst: 100, http2: true });
      await list(c); // the server's SETTINGS are known from here on
      const answers = await Promise.allSettled(Array.from({ length: 7 }, () => c.request('GET', '/api/v1/namespaces/slow')));
      assert.deepEqual(answers.map((x) => x.status === 'fulfilled' ? x.status : String(x.reason)), Array(7).fill('fulfilled'));
      assert.equal(new Set(server.seen.slice(1).map((x) => x.socket)).size, 4, '7 streams, 2 at most per connection');
    } finally { server.close(); }
  });
});

describe('ClusterClient#watch', { timeout: 10_000 }, () => {
  it('delivers each event whole, however its bytes are split: across chunks, inside a character, two in a chunk, blank lines between', async () => {
    const server = await fakeServer('s');
    try {
      const c = new ClusterClient(access(server, { token: 't' }), { cluster: 'm', qps: 100, burst: 100 });
      const names = ['p-é', 'p-€€', 'p-😀', 'plain'];
      const bytes = Buffer.from(`${names.map((name, i) => JSON.stringify({ type: 'ADDED', object: { metadata: { name }, i } })).join('\n\n')}\n`);
      const events: string[] = [];
      const watching = c.watch('/api/v1/pods', {}, {
        onEvent: (type, o) => events.push(`${type} ${(o as { metadata: { name: string } }).metadata.name}`),
        signal: new AbortController().signal, idleMs: 10_000,
      });
      const w = await server.nextWatch();
      // Pieces of 1 to 9 bytes: many end inside a multi-byte character, some hold a line's end and the next's start.
      for (let at = 0, n = 1; at < bytes.length; at += n, n = (n % 9) + 1) w.write(bytes.subarray(at, at + n));
      w.end();
      await watching;
      assert.deepEqual(events, names.map((n) => `ADDED ${n}`));
    } finally { server.close(); }
  });
});
