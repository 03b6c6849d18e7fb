// The kubelet API over a fake PodRuntime (src/host/api/server.ts, nodes.ts, logs.ts, stats.ts, errors.ts): which
// pod a request is about, what the runtime is asked, and how its failures reach the caller.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:https';
import type { V1Pod } from '@kubernetes/client-node';
import { pino } from 'pino';
import { NO_CSR_HOST } from '../../fakes/hostapi.ts';
import type { VirtualNode } from '../../../../src/host/api/nodes.ts';
import { KubeletServer } from '../../../../src/host/api/server.ts';
import { RuntimeStats } from '../../../../src/host/api/stats.ts';
import { PodStreams } from '../../../../src/host/api/streams.ts';
import { ServingCertificate } from '../../../../src/host/api/tls.ts';
import type { Informer } from '../../../../src/kube/informer.ts';
import { ProviderError } from '../../../../src/provider/errors.ts';
import { freePort, pollUntil } from '../../../harness/net.ts';
import { FakeRuntime } from '../../fakes/runtime.ts';

const log = pino({ level: 'silent' });

const T0 = Date.parse('2026-01-01T00:00:00Z');
const T1 = Date.parse('2026-01-01T01:00:00Z');

describe('kubelet API over a pod runtime', () => {
  const runtime = new FakeRuntime();
  const pods = new Map<string, V1Pod>([['ns/p', {
    metadata: { namespace: 'ns', name: 'p', uid: 'uid-p' }, spec: { containers: [{ name: 'main' }] }, status: { phase: 'Running' },
  }]]);
  let serving: ServingCertificate;
  let server: KubeletServer;
  let port: number;

  before(async () => {
    serving = new ServingCertificate({ mode: 'self-signed', nodeNames: ['vn'], nodeIP: '127.0.0.1', host: NO_CSR_HOST, log });
    await serving.start();
    port = await freePort();
    const proxies = { get: (k: string) => pods.get(k), list: () => [...pods.values()] } as unknown as Informer<V1Pod>;
    const node: VirtualNode = { name: 'vn', port, proxies, running: () => proxies.list(), runtime };
    server = new KubeletServer({ ports: [port], address: '127.0.0.1', dir: { nodes: () => [node] }, serving, log,
      stats: new RuntimeStats(), streams: new PodStreams(log) });
    server.start();
    await pollUntil('the kubelet API listening', async () => server.listening || undefined, 5000, 20);
  });
  after(() => {
    server.stop();
    serving.stop();
  });

  /** One request; `upgrade` asks for SPDY/3.1 as kubectl does. */
  function call(method: string, path: string, upgrade = false):
    Promise<{ status: number; body: string; contentType?: string }> {
    return new Promise((resolve, reject) => {
      const req = request({
        host: '127.0.0.1', port, path, method, rejectUnauthorized: false, agent: false,
        headers: upgrade ? { Connection: 'Upgrade', Upgrade: 'SPDY/3.1', 'X-Stream-Protocol-Version': 'v4.channel.k8s.io,portforward.k8s.io' } : {},
      }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => { body += c; });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, contentType: res.headers['content-type'] }));
      });
      req.on('upgrade', (res, socket) => { socket.destroy(); resolve({ status: res.statusCode ?? 0, body: '' }); });
      req.on('error', reject);
      req.end();
    });
  }

  it('a pod not on the node → 404; the runtime is not asked', async () => {
    const before = runtime.calls.length;
    assert.deepEqual(await call('GET', '/containerLogs/ns/absent/main'),
      { status: 404, body: 'pod ns/absent is not on a virtual node served here\n', contentType: 'text/plain; charset=utf-8' });
    assert.equal((await call('POST', '/exec/ns/absent/main?command=ls&output=1', true)).status, 404);
    assert.equal(runtime.calls.length, before);
  });

  it('a UID that is not the pod\'s → 404; the runtime is not asked', async () => {
    const before = runtime.calls.length;
    assert.deepEqual(await call('POST', '/exec/ns/p/uid-other/main?command=ls&output=1', true),
      { status: 404, body: 'pod ns/p with UID uid-other not found\n', contentType: 'text/plain; charset=utf-8' });
    assert.equal((await call('POST', '/portForward/ns/p/uid-other', true)).status, 404);
    assert.equal(runtime.calls.length, before);
  });

  it('a container not in the pod\'s spec → 404; the runtime is not asked', async () => {
    const before = runtime.calls.length;
    assert.equal((await call('GET', '/containerLogs/ns/p/sidecar')).status, 404);
    assert.equal(runtime.calls.length, before);
  });

  it('logs: streamed from the runtime, asked with the pod\'s UID and the options in API terms', async () => {
    runtime.logs.set('ns/p/main', ['line 1\n', 'line 2\n']);
    assert.deepEqual(await call('GET', '/containerLogs/ns/p/main?tail=2&follow=1'),
      { status: 200, body: 'line 1\nline 2\n', contentType: 'text/plain' });
    assert.deepEqual(runtime.calls.at(-1), { op: 'containerLogs', pod: 'ns/p/uid-p/main', options: 'follow=true&tailLines=2' });
  });

  const failures: [string, ProviderError, number][] = [
    ['NotFound', new ProviderError('NotFound', 'pod ns/p has no delegate in member m yet'), 404],
    ['InvalidInput', new ProviderError('InvalidInput', 'member m: bad options', { status: 400 }), 400],
    ['InvalidInput (409)', new ProviderError('InvalidInput', 'member m: conflict', { status: 409 }), 409],
    ['InvalidInput (no status)', new ProviderError('InvalidInput', 'bad'), 400],
    ['Forbidden', new ProviderError('Forbidden', 'member m: forbidden (check clusterlet\'s RBAC in the member)', { status: 403 }), 502],
    ['Unavailable', new ProviderError('Unavailable', 'member m: connect ECONNREFUSED'), 502],
    ['Upstream', new ProviderError('Upstream', 'member m: HTTP 500', { status: 500 }), 502],
  ];
  for (const [name, err, status] of failures) {
    it(`a runtime failure ${name} → ${status} with its message, for a request and for an upgrade`, async () => {
      runtime.fail = err;
      assert.deepEqual(await call('GET', '/containerLogs/ns/p/main'), { status, body: `${err.message}\n`, contentType: 'text/plain; charset=utf-8' });
      runtime.fail = err;
      assert.deepEqual(await call('POST', '/portForward/ns/p', true), { status, body: `${err.message}\n`, contentType: 'text/plain; charset=utf-8' });
      assert.equal(runtime.calls.at(-1)?.op, 'portForward');
    });
  }

  it('exec: the runtime\'s refusal answered before upgrading', async () => {
    runtime.fail = new ProviderError('Forbidden', 'member m: forbidden');
    assert.deepEqual(await call('POST', '/exec/ns/p/uid-p/main?command=ls&output=1', true),
      { status: 502, body: 'member m: forbidden\n', contentType: 'text/plain; charset=utf-8' });
    assert.deepEqual(runtime.calls.at(-1), { op: 'exec', pod: 'ns/p/uid-p/main', options: 'command=ls&stdout=true',
      protocols: ['v5.channel.k8s.io', 'v4.channel.k8s.io'] });
  });

  it('stats: the runtime\'s measured usage as the Summary and as resource metrics', async () => {
    runtime.measured = {
      cpuSeconds: 13, cpuCores: 0.5, memoryWorkingSetBytes: 2048, timestamp: T1,
      pods: [{ namespace: 'ns', name: 'p', uid: 'uid-p', startTime: T0, cpuSeconds: 13, cpuCores: 0.5, memoryWorkingSetBytes: 2048,
        timestamp: T1, containers: [{ name: 'main', cpuSeconds: 13, cpuCores: 0.5, memoryWorkingSetBytes: 2048, timestamp: T1 }] }],
    };
    const summary = await call('GET', '/stats/summary');
    assert.equal(summary.status, 200);
    const s = JSON.parse(summary.body) as { node: { nodeName: string; cpu: unknown }; pods: { podRef: unknown; containers: { name: string }[] }[] };
    assert.equal(s.node.nodeName, 'vn');
    assert.deepEqual(s.node.cpu, { time: '2026-01-01T01:00:00Z', usageNanoCores: 500_000_000, usageCoreNanoSeconds: 13_000_000_000 });
    assert.deepEqual(s.pods.map((p) => [p.podRef, p.containers.map((c) => c.name)]), [[{ name: 'p', namespace: 'ns', uid: 'uid-p' }, ['main']]]);
    const metrics = await call('GET', '/metrics/resource');
    assert.equal(metrics.contentType, 'text/plain; version=0.0.4; charset=utf-8');
    assert.match(metrics.body, new RegExp(`^container_memory_working_set_bytes\\{container="main",namespace="ns",pod="p"\\} 2048 ${T1}$`, 'm'));
    assert.match(metrics.body, new RegExp(`^node_cpu_usage_seconds_total 13 ${T1}$`, 'm'));
  });

  it('a runtime whose usage fails → the failure\'s status', async () => {
    runtime.fail = new ProviderError('Unavailable', 'member m: unreachable');
    assert.deepEqual(await call('GET', '/stats/summary'), { status: 502, body: 'member m: unreachable\n', contentType: 'text/plain; charset=utf-8' });
  });
});
