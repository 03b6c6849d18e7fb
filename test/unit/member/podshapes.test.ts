// MemberPodShapes: the member pod informer keeps a foreign pod's shape (forge/foreign.ts), and its watch reuses that
// shape while the pod's spec bytes stay the same; a delegate is kept whole, also when an event makes a foreign pod one.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { Informer, storedSpecs } from '../../../src/kube/informer.ts';
import { listWatch } from '../../../src/kube/listwatch.ts';
import { MemberPodShapes } from '../../../src/member/podshapes.ts';
import { NODE_LABEL, ORIGIN_LABEL, PROXY_NAME_ANNOTATION, PROXY_NAMESPACE_ANNOTATION, PROXY_UID_LABEL } from '../../../src/forge/keys.ts';
import { FakeCollection } from '../fakes/listwatch.ts';

const owner = { hostName: 'host-a', node: 'vn-1' };

function pod(rv: string, opts: { cpu?: string; phase?: string; delegate?: boolean } = {}): V1Pod {
  const metadata: V1Pod['metadata'] = { namespace: 'ns', name: 'p', uid: 'u1', resourceVersion: rv,
    creationTimestamp: '2026-11-28T10:00:00Z' as unknown as Date };
  if (opts.delegate) {
    metadata.labels = { [ORIGIN_LABEL]: owner.hostName, [NODE_LABEL]: owner.node, [PROXY_UID_LABEL]: 'proxy-uid' };
    metadata.annotations = { [PROXY_NAMESPACE_ANNOTATION]: 'host-ns', [PROXY_NAME_ANNOTATION]: 'proxy' };
  }
  // Last, as kube-apiserver writes them (the watch's parse finds them there).
  metadata.managedFields = [{ manager: 'kwok', operation: 'Update' }];
  return {
    kind: 'Pod', apiVersion: 'v1', metadata,
    spec: { nodeName: 'm1', containers: [{ name: 'c', image: 'img:1', env: [{ name: 'A', value: 'a' }],
      resources: { requests: { cpu: opts.cpu ?? '100m' } } }] },
    status: { phase: opts.phase ?? 'Pending' },
  };
}

/** An informer over a fake collection with the member's shapes, and the watch that feeds it. */
async function started() {
  const fake = new FakeCollection<V1Pod>();
  const shapes = new MemberPodShapes(owner);
  const pods: Informer<V1Pod> = new Informer('member-pods', listWatch(fake.client(), fake.spec({
    cutManagedFields: true, knownSpec: shapes.knownSpec(storedSpecs(() => pods)),
    shape: (p) => shapes.shape(p),
  }))).start();
  await pods.waitSynced();
  return { pods, w: await fake.watch(1) };
}

describe('MemberPodShapes', () => {
  it('keeps a foreign pod\'s shaped spec across events whose spec is the same, and shapes a changed one anew', async () => {
    const { pods, w } = await started();
    try {
      w.send('ADDED', pod('2'));
      const first = pods.get('ns/p')!.spec!;
      assert.ok(pods.get('ns/p')!.metadata!.creationTimestamp instanceof Date, 'the shape is revived');
      assert.deepEqual(pods.get('ns/p')!.status, { phase: 'Pending' });
      assert.deepEqual(first, { nodeName: 'm1', containers: [{ name: 'c', resources: { requests: { cpu: '100m' } } }] });
      w.send('MODIFIED', pod('3', { phase: 'Running' }));
      assert.equal(pods.get('ns/p')!.metadata!.resourceVersion, '3');
      assert.equal(pods.get('ns/p')!.status!.phase, 'Running');
      assert.equal(pods.get('ns/p')!.spec, first); // the same object: not parsed and shaped again
      w.send('MODIFIED', pod('4', { phase: 'Running', cpu: '250m' }));
      assert.notEqual(pods.get('ns/p')!.spec, first);
      assert.deepEqual(pods.get('ns/p')!.spec, { nodeName: 'm1', containers: [{ name: 'c', resources: { requests: { cpu: '250m' } } }] });
      const second = pods.get('ns/p')!.spec;
      w.send('MODIFIED', pod('5', { phase: 'Succeeded', cpu: '250m' }));
      assert.equal(pods.get('ns/p')!.spec, second);
    } finally {
      pods.stop();
    }
  });

  it('keeps the whole spec once an event makes a foreign pod this host\'s delegate, the spec bytes unchanged', async () => {
    const { pods, w } = await started();
    try {
      w.send('ADDED', pod('2'));
      assert.equal(pods.get('ns/p')!.spec!.containers[0]!.image, undefined);
      w.send('MODIFIED', pod('3', { delegate: true }));
      assert.equal(pods.get('ns/p')!.metadata!.resourceVersion, '3');
      assert.deepEqual(pods.get('ns/p')!.spec, pod('3').spec);
      const whole = pods.get('ns/p')!.spec;
      w.send('MODIFIED', pod('4', { delegate: true, phase: 'Running' }));
      assert.equal(pods.get('ns/p')!.spec, whole); // a delegate's whole spec is reused too
      // And back: no longer a delegate, the same bytes: its shape, from the whole spec it had.
      w.send('MODIFIED', pod('5', { phase: 'Running' }));
      assert.deepEqual(pods.get('ns/p')!.spec, { nodeName: 'm1', containers: [{ name: 'c', resources: { requests: { cpu: '100m' } } }] });
    } finally {
      pods.stop();
    }
  });
});
