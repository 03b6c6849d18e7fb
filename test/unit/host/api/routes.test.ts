// Kubelet API paths → routes (src/host/api/routes.ts), and the node a request through the API server's node
// proxy names (src/host/api/nodes.ts).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { route } from '../../../../src/host/api/routes.ts';
import { forwardedNode, nodeFor, type VirtualNode } from '../../../../src/host/api/nodes.ts';
import { ApiError } from '../../../../src/host/api/errors.ts';

describe('kubelet API routes', () => {
  it('maps the kubelet\'s paths', () => {
    assert.deepEqual(route('GET', '/containerLogs/ns/p/c'), { kind: 'containerLogs', namespace: 'ns', pod: 'p', container: 'c' });
    assert.deepEqual(route('POST', '/exec/ns/p/c'), { kind: 'exec', namespace: 'ns', pod: 'p', container: 'c' });
    assert.deepEqual(route('GET', '/attach/ns/p/uid-1/c'), { kind: 'attach', namespace: 'ns', pod: 'p', uid: 'uid-1', container: 'c' });
    assert.deepEqual(route('POST', '/portForward/ns/p'), { kind: 'portForward', namespace: 'ns', pod: 'p' });
    assert.deepEqual(route('POST', '/portForward/ns/p/uid-1'), { kind: 'portForward', namespace: 'ns', pod: 'p', uid: 'uid-1' });
    assert.deepEqual(route('GET', '/pods'), { kind: 'pods' });
    assert.deepEqual(route('GET', '/pods/'), { kind: 'pods' });
    assert.deepEqual(route('GET', '/runningpods/'), { kind: 'runningpods' });
    assert.deepEqual(route('GET', '/stats/summary'), { kind: 'statsSummary' });
    assert.deepEqual(route('GET', '/metrics/resource'), { kind: 'metricsResource' });
    assert.deepEqual(route('GET', '/containerLogs/ns/p%2Fx/c'), { kind: 'containerLogs', namespace: 'ns', pod: 'p/x', container: 'c' });
  });

  const status = (method: string, path: string): number => {
    try { route(method, path); return 200; } catch (err) { return (err as ApiError).status; }
  };

  it('404 for unknown or incomplete paths, 405 for the wrong method', () => {
    assert.equal(status('GET', '/containerLogs/ns/p'), 404);
    assert.equal(status('GET', '/containerLogs/ns//c'), 404);
    assert.equal(status('GET', '/nope'), 404);
    assert.equal(status('GET', '/metrics/cadvisor'), 404);
    assert.equal(status('POST', '/containerLogs/ns/p/c'), 405);
    assert.equal(status('DELETE', '/exec/ns/p/c'), 405);
    assert.equal(status('GET', '/containerLogs/ns/%E0%A4%A/c'), 400);
  });

  it('the node named by the API server\'s node proxy', () => {
    assert.equal(forwardedNode('/api/v1/nodes/clusterlet-eu/proxy/stats/summary'), 'clusterlet-eu');
    assert.equal(forwardedNode('/api/v1/nodes/clusterlet-eu:10250/proxy/pods'), 'clusterlet-eu');
    assert.equal(forwardedNode('/api/v1/nodes/https:clusterlet-eu:10250/proxy/pods'), 'clusterlet-eu');
    assert.equal(forwardedNode('/api/v1/nodes/clusterlet-eu/proxy'), 'clusterlet-eu');
    assert.equal(forwardedNode('/api/v1/namespaces/x/pods/y/proxy'), undefined);
    assert.equal(forwardedNode(undefined), undefined);
  });

  it('the node of a node-level request: named by the node proxy, else the only one on the port', () => {
    type Node = Pick<VirtualNode, 'name' | 'port'>;
    const node = (name: string, port: number): Node => ({ name, port });
    const dir = (...nodes: Node[]) => ({ nodes: () => nodes });
    const two = dir(node('a', 10250), node('b', 10251));
    assert.equal(nodeFor(two, 'b', 10250).name, 'b');
    assert.equal(nodeFor(two, undefined, 10251).name, 'b');
    assert.equal(nodeFor(dir(node('a', 10250)), undefined, 10250).name, 'a');
    assert.throws(() => nodeFor(dir(node('a', 10250), node('b', 10250)), undefined, 10250), /give each member its own kubeletPort/);
    assert.throws(() => nodeFor(two, 'c', 10250), (e: ApiError) => e.status === 404);
    assert.throws(() => nodeFor(dir(), undefined, 10250), (e: ApiError) => e.status === 503);
  });
});

