// StoreIndex: an informer's keys grouped by a value of their objects, seeded from the store and kept by its
// events (an object that moves to another value, a deletion, a relist that drops what went).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Subject } from 'rxjs';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { Informer } from '../../../src/kube/informer.ts';
import type { ListWatchEvent } from '../../../src/kube/listwatch.ts';
import { byNamespace, StoreIndex } from '../../../src/kube/storeindex.ts';

const cm = (namespace: string, name: string, rv: string, group?: string): V1ConfigMap =>
  ({ metadata: { namespace, name, resourceVersion: rv, labels: group ? { group } : {} } });

describe('StoreIndex', () => {
  it('indexes what the store held before it started, then follows additions and deletions', () => {
    const source = new Subject<ListWatchEvent<V1ConfigMap>>();
    const informer = new Informer('test', source).start();
    source.next({ type: 'SYNC', items: [cm('a', 'x', '1'), cm('b', 'y', '1')] });
    const index = new StoreIndex(informer, byNamespace);
    index.start();
    assert.deepEqual(index.keys('a'), ['a/x']);
    source.next({ type: 'ADDED', object: cm('a', 'z', '2') });
    assert.deepEqual(index.keys('a').sort(), ['a/x', 'a/z']);
    assert.deepEqual(index.list('a').map((o) => o.metadata!.name).sort(), ['x', 'z']);
    source.next({ type: 'DELETED', object: cm('a', 'x', '3') });
    assert.deepEqual(index.keys('a'), ['a/z']);
    // A relist without b/y: the informer reports its deletion.
    source.next({ type: 'SYNC', items: [cm('a', 'z', '2')] });
    assert.deepEqual(index.keys('b'), []);
    index.stop();
    informer.stop();
  });

  it('moves an object whose value changed, and leaves out one without a value', () => {
    const source = new Subject<ListWatchEvent<V1ConfigMap>>();
    const informer = new Informer('test', source).start();
    const index = new StoreIndex(informer, (o) => o.metadata?.labels?.group);
    index.start();
    source.next({ type: 'ADDED', object: cm('a', 'x', '1', 'g1') });
    source.next({ type: 'ADDED', object: cm('a', 'y', '1') });
    assert.deepEqual(index.keys('g1'), ['a/x']);
    source.next({ type: 'MODIFIED', object: cm('a', 'x', '2', 'g2') });
    assert.deepEqual(index.keys('g1'), []);
    assert.deepEqual(index.keys('g2'), ['a/x']);
    source.next({ type: 'MODIFIED', object: cm('a', 'x', '3') });
    assert.deepEqual(index.keys('g2'), []);
    index.stop();
    informer.stop();
  });
});
