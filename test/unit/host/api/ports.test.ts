// Ports of their own for virtual nodes (KubeletServer.openPort): a node-level request straight to a port, as
// metrics-server makes to a node's daemon endpoint, is about the node of that port alone; two nodes on one port cannot
// be told apart; a closed port's connections go with it.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:https';
import { pino } from 'pino';
import type { V1Pod } from '@kubernetes/client-node';
import { NO_CSR_HOST } from '../../fakes/hostapi.ts';
import type { VirtualNode } from '../../../../src/host/api/nodes.ts';
import { KubeletServer } from '../../../../src/host/api/server.ts';
import { ServingCertificate } from '../../../../src/host/api/tls.ts';
import { freePort, pollUntil } from '../../../harness/net.ts';

const log = pino({ level: 'silent' });

/** A node whose one running pod is named after it. */
function node(name: string, port: number): VirtualNode {
  const pod: V1Pod = { metadata: { namespace: 'ns', name: `pod-of-${name}`, uid: name }, status: { phase: 'Running' } };
  return { name, port, running: () => [pod], proxies: { list: () => [pod] } } as unknown as VirtualNode;
}

function get(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false, rejectUnauthorized: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => { body += c; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

const podNames = (body: string): string[] => (JSON.parse(body) as { items: V1Pod[] }).items.map((p) => p.metadata?.name ?? '');

describe('kubelet API server: a port of its own per virtual node', () => {
  let serving: ServingCertificate;
  let server: KubeletServer;
  let shared: number;
  const nodes: VirtualNode[] = [];

  before(async () => {
    serving = new ServingCertificate({ mode: 'self-signed', nodeNames: ['a'], nodeIP: '127.0.0.1', host: NO_CSR_HOST, log });
    await serving.start();
    shared = await freePort();
    server = new KubeletServer({ ports: [shared], address: '127.0.0.1', dir: { nodes: () => nodes }, serving, log });
    server.start();
    await pollUntil('the kubelet API listening', async () => server.listening || undefined, 5000, 20);
  });
  after(() => {
    server.stop();
    serving.stop();
  });

  it('routes a node-level request by the port it came in on; two nodes on one port are refused, naming them', async () => {
    const a = await server.openPort();
    const b = await server.openPort();
    assert.notEqual(a, b);
    assert.ok(a !== shared && b !== shared);
    nodes.push(node('a', a), node('b', b), node('c', shared), node('d', shared));
    const onA = await get(a, '/pods');
    assert.equal(onA.status, 200, onA.body);
    assert.deepEqual(podNames(onA.body), ['pod-of-a']);
    assert.deepEqual(podNames((await get(b, '/pods')).body), ['pod-of-b']);
    const both = await get(shared, '/pods');
    assert.equal(both.status, 400);
    assert.match(both.body, /this port serves 2 virtual nodes \(c, d\)/);
    nodes.length = 0;
  });

  it('a closed port no longer answers', async () => {
    const p = await server.openPort();
    nodes.push(node('e', p));
    assert.equal((await get(p, '/pods')).status, 200);
    server.closePort(p);
    await assert.rejects(get(p, '/pods'), /ECONNREFUSED/);
    nodes.length = 0;
  });
});
