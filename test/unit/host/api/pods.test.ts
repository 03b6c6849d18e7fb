// /pods and /runningpods/ (src/host/api/pods.ts): the node's pods as a v1 PodList, as virtual-kubelet serves them
// (/pods every host pod bound to the node, /runningpods/ those the back end runs), in host names and UIDs,
// timestamps as Kubernetes writes them.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import type { V1Pod } from '@kubernetes/client-node';
import { podList, sendJSON, type PodListSource } from '../../../../src/host/api/pods.ts';

const pod = (ns: string, name: string, phase: string): V1Pod => ({
  metadata: { namespace: ns, name, uid: `host-${ns}-${name}`, creationTimestamp: new Date('2026-01-02T03:04:05.678Z') }, status: { phase },
});
const running = pod('b', 'x', 'Running');
const finished = pod('a', 'y', 'Succeeded');
/** Pending without a delegate: a mandatory ConfigMap is missing. */
const waiting = pod('a', 'x', 'Pending');
const node: PodListSource = {
  proxies: { list: () => [running, finished, waiting] },
  // The back end runs `running` and still has the finished pod's delegate.
  running: () => [finished, running],
};

const ids = (l: { items: V1Pod[] }): string[] => l.items.map((p) => `${p.metadata?.namespace}/${p.metadata?.name}/${p.metadata?.uid}`);

describe('pod lists', () => {
  it('/pods: every host pod of the node, sorted, with the host\'s names and UIDs', () => {
    const all = podList(node, false);
    assert.equal(all.kind, 'PodList');
    assert.deepEqual(ids(all), ['a/x/host-a-x', 'a/y/host-a-y', 'b/x/host-b-x']);
    assert.equal(all.items[0].kind, 'Pod');
  });

  it('/runningpods/: the host pods the back end runs, without the finished ones; a pod with no delegate is not there', () => {
    assert.deepEqual(ids(podList(node, true)), ['b/x/host-b-x']);
  });

  it('JSON with RFC 3339 timestamps in whole seconds', () => {
    let body = '';
    const res = { writeHead: () => res, end: (t: string) => { body = t; } } as unknown as ServerResponse;
    sendJSON(res, podList(node, false));
    assert.match(body, /"creationTimestamp":"2026-01-02T03:04:05Z"/);
  });
});
