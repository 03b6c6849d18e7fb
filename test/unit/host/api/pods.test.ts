// /pods and /runningpods/ (src/host/api/pods.ts): the node's pods as a v1 PodList, timestamps as Kubernetes writes them.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import type { V1Pod } from '@kubernetes/client-node';
import { podList, sendJSON } from '../../../../src/host/api/pods.ts';
import type { VirtualNode } from '../../../../src/host/api/nodes.ts';

const pod = (ns: string, name: string, phase: string): V1Pod => ({
  metadata: { namespace: ns, name, creationTimestamp: new Date('2026-01-02T03:04:05.678Z') }, status: { phase },
});
const node = { proxies: { list: () => [pod('b', 'x', 'Running'), pod('a', 'y', 'Succeeded'), pod('a', 'x', 'Pending')] } } as unknown as VirtualNode;

describe('pod lists', () => {
  it('/pods: every pod of the node, sorted; /runningpods/: without the finished ones', () => {
    const all = podList(node, false);
    assert.equal(all.kind, 'PodList');
    assert.deepEqual(all.items.map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`), ['a/x', 'a/y', 'b/x']);
    assert.equal(all.items[0].kind, 'Pod');
    assert.deepEqual(podList(node, true).items.map((p) => p.metadata?.name), ['x', 'x']);
  });

  it('JSON with RFC 3339 timestamps in whole seconds', () => {
    let body = '';
    const res = { writeHead: () => res, end: (t: string) => { body = t; } } as unknown as ServerResponse;
    sendJSON(res, podList(node, false));
    assert.match(body, /"creationTimestamp":"2026-01-02T03:04:05Z"/);
  });
});
