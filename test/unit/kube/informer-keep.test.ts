// The Informer's store narrowed to some keys (keep / forget / seed): what a shared cache of a few objects among
// many builds on.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Subject } from 'rxjs';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { Informer, type StoreEvent } from '../../../src/kube/informer.ts';
import type { ListWatchEvent } from '../../../src/kube/listwatch.ts';

const cm = (name: string, rv: string, data: Record<string, string> = {}): V1ConfigMap =>
  ({ metadata: { namespace: 'ns', name, resourceVersion: rv, managedFields: [{ manager: 'x' }] }, data });

function setup(kept: Set<string>) {
  const source = new Subject<ListWatchEvent<V1ConfigMap>>();
  const inf = new Informer('test', source, { keep: (key) => kept.has(key) }).start();
  const events: StoreEvent<V1ConfigMap>[] = [];
  inf.events$.subscribe((e) => events.push(e));
  return { source, inf, events };
}

describe('Informer keep', () => {
  it('stores and reports only kept keys, from the list and the watch alike', () => {
    const { source, inf, events } = setup(new Set(['ns/a']));
    source.next({ type: 'SYNC', items: [cm('a', '1'), cm('b', '1')] });
    assert.deepEqual([...inf.keys()], ['ns/a']);
    source.next({ type: 'MODIFIED', object: cm('b', '2') });
    source.next({ type: 'MODIFIED', object: cm('a', '2') });
    source.next({ type: 'DELETED', object: cm('b', '2') });
    assert.deepEqual(events.map((e) => `${e.type} ${e.key}`), ['ADDED ns/a', 'MODIFIED ns/a']);
    assert.equal(inf.get('ns/a')?.metadata?.managedFields, undefined, 'slimmed');
  });

  it('a key kept later is stored from its next change on; forget drops it without an event', () => {
    const kept = new Set<string>();
    const { source, inf, events } = setup(kept);
    source.next({ type: 'SYNC', items: [cm('a', '1')] });
    kept.add('ns/a');
    assert.equal(inf.get('ns/a'), undefined, 'not stored while it was not kept');
    source.next({ type: 'MODIFIED', object: cm('a', '2') });
    assert.equal(inf.get('ns/a')?.metadata?.resourceVersion, '2');
    assert.deepEqual(events.map((e) => e.type), ['ADDED'], 'new to the store: ADDED');
    kept.delete('ns/a');
    inf.forget('ns/a');
    assert.equal(inf.get('ns/a'), undefined);
    assert.equal(events.length, 1, 'no event: the object did not change');
  });

  it('seed stores an object read elsewhere, silently, unless the store has the key or does not keep it', () => {
    const kept = new Set(['ns/a']);
    const { source, inf, events } = setup(kept);
    source.next({ type: 'SYNC', items: [] });
    inf.seed(cm('a', '5'));
    inf.seed(cm('b', '5'));
    assert.equal(inf.get('ns/a')?.metadata?.resourceVersion, '5');
    assert.equal(inf.get('ns/b'), undefined, 'not kept');
    source.next({ type: 'MODIFIED', object: cm('a', '6') });
    inf.seed(cm('a', '5'));
    assert.equal(inf.get('ns/a')?.metadata?.resourceVersion, '6', 'the watch\'s version stays');
    assert.deepEqual(events.map((e) => e.type), ['MODIFIED']);
    // A relist without it: deleted while the watch was away.
    source.next({ type: 'SYNC', items: [] });
    assert.deepEqual(events.map((e) => `${e.type} ${e.key}`), ['MODIFIED ns/a', 'DELETED ns/a']);
  });

  it('keeps everything by default', () => {
    const source = new Subject<ListWatchEvent<V1ConfigMap>>();
    const inf = new Informer('all', source).start();
    source.next({ type: 'SYNC', items: [cm('a', '1'), cm('b', '1')] });
    assert.equal(inf.size, 2);
  });
});

describe('Informer transform', () => {
  it('stores and reports the transformed object, from the list, the watch, a relist and a seed alike', () => {
    const source = new Subject<ListWatchEvent<V1ConfigMap>>();
    const shape = (o: V1ConfigMap): V1ConfigMap => ({ metadata: o.metadata, data: { size: String(Object.keys(o.data ?? {}).length) } });
    const inf = new Informer('test', source, { transform: shape }).start();
    const events: StoreEvent<V1ConfigMap>[] = [];
    inf.events$.subscribe((e) => events.push(e));
    source.next({ type: 'SYNC', items: [cm('a', '1', { x: '1', y: '2' })] });
    source.next({ type: 'MODIFIED', object: cm('a', '2', { x: '1' }) });
    source.next({ type: 'ADDED', object: cm('b', '1', { x: '1', y: '2', z: '3' }) });
    inf.seed(cm('c', '1', {}));
    source.next({ type: 'SYNC', items: [cm('a', '2', { x: '1' })] });
    assert.deepEqual(events.map((e) => [e.type, e.key, e.object.data?.size, e.old?.data?.size]), [
      ['ADDED', 'ns/a', '2', undefined], ['MODIFIED', 'ns/a', '1', '2'], ['ADDED', 'ns/b', '3', undefined],
      ['DELETED', 'ns/b', '3', '3'], ['DELETED', 'ns/c', '0', '0'],
    ]);
    assert.deepEqual(inf.get('ns/a')?.data, { size: '1' });
    assert.equal(inf.get('ns/a')?.metadata?.managedFields, undefined, 'slimmed as well');
  });
});
