// Informer: the store kept from a list-watch stream, its change events (with the previous object), waitSynced
// and stop(); a relist diffed against the store, also through a real listWatch over a fake collection.
import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Observable, Subject } from 'rxjs';
import type { V1ConfigMap, V1Pod } from '@kubernetes/client-node';
import { Informer, objectKey, splitKey, storedSpecs, type StoreEvent } from '../../../src/kube/informer.ts';
import { listWatch, type ListWatchEvent } from '../../../src/kube/listwatch.ts';
import { FakeCollection } from '../fakes/listwatch.ts';

type Event = ListWatchEvent<V1ConfigMap>;

function cm(name: string, rv: string, data: Record<string, string> = {}, namespace = 'ns'): V1ConfigMap {
  return { metadata: { namespace, name, resourceVersion: rv }, data };
}

/** "TYPE key rv (old rv)" per event: what changed, and what the informer says it was before. */
function summary(events: StoreEvent<V1ConfigMap>[]): string[] {
  return events.map((e) => `${e.type} ${e.key} ${e.object.metadata!.resourceVersion}`
    + (e.old ? ` (was ${e.old.metadata!.resourceVersion})` : ''));
}

let informer: Informer<V1ConfigMap> | undefined;
afterEach(() => informer?.stop());

/** An informer over a source the test feeds by hand, and the events it has emitted. */
function fed() {
  const source = new Subject<Event>();
  informer = new Informer('test', source).start();
  const events: StoreEvent<V1ConfigMap>[] = [];
  informer.events$.subscribe((e) => events.push(e));
  return { source, informer, events };
}

describe('Informer', () => {
  it('waitSynced resolves only once the first SYNC is applied', async () => {
    const { source, informer } = fed();
    let synced = false;
    const waiting = informer.waitSynced().then(() => { synced = true; });
    source.next({ type: 'ADDED', object: cm('a', '1') });
    await new Promise((r) => setImmediate(r));
    assert.equal(synced, false);
    assert.equal(informer.hasSynced, false);
    source.next({ type: 'SYNC', items: [cm('a', '1')] });
    await waiting;
    assert.equal(informer.hasSynced, true);
    await informer.waitSynced(); // and at once afterwards
  });

  it('get, list, keys and size reflect the store; cluster-scoped objects are keyed by name', () => {
    const { source, informer } = fed();
    source.next({ type: 'SYNC', items: [cm('a', '1'), cm('b', '2', {}, 'other')] });
    source.next({ type: 'ADDED', object: { metadata: { name: 'global', resourceVersion: '3' } } });
    assert.equal(informer.size, 3);
    assert.deepEqual([...informer.keys()].sort(), ['global', 'ns/a', 'other/b']);
    assert.deepEqual(informer.list().map((o) => o.metadata!.name).sort(), ['a', 'b', 'global']);
    assert.equal(informer.get('other/b')?.metadata?.resourceVersion, '2');
    assert.equal(informer.get('ns/b'), undefined);
    source.next({ type: 'DELETED', object: cm('a', '4') });
    assert.equal(informer.get('ns/a'), undefined);
    assert.equal(informer.size, 2);
  });

  it('events carry the previous object (old) and come after the store has the change', () => {
    const { source, informer, events } = fed();
    const stored: (string | undefined)[] = [];
    informer.events$.subscribe((e) => stored.push(informer.get(e.key)?.metadata?.resourceVersion));
    source.next({ type: 'SYNC', items: [] });
    source.next({ type: 'ADDED', object: cm('a', '1', { v: '1' }) });
    source.next({ type: 'MODIFIED', object: cm('a', '2', { v: '2' }) });
    source.next({ type: 'DELETED', object: cm('a', '3', { v: '2' }) });
    assert.deepEqual(summary(events), ['ADDED ns/a 1', 'MODIFIED ns/a 2 (was 1)', 'DELETED ns/a 3 (was 2)']);
    assert.deepEqual(events[1].old?.data, { v: '1' });
    assert.deepEqual(stored, ['1', '2', undefined]);
  });

  it('does not repeat an object whose resourceVersion it already has', () => {
    const { source, events } = fed();
    source.next({ type: 'SYNC', items: [cm('a', '1')] });
    source.next({ type: 'MODIFIED', object: cm('a', '1') });
    source.next({ type: 'SYNC', items: [cm('a', '1')] });
    assert.deepEqual(summary(events), ['ADDED ns/a 1']);
  });

  it('diffs a relist against the store: missing → DELETED, changed → MODIFIED, new → ADDED', () => {
    const { source, informer, events } = fed();
    source.next({ type: 'SYNC', items: [cm('keep', '1'), cm('change', '1'), cm('gone', '1')] });
    events.length = 0;
    source.next({ type: 'SYNC', items: [cm('keep', '1'), cm('change', '5'), cm('new', '6')] });
    assert.deepEqual(summary(events).sort(), [
      'ADDED ns/new 6', 'DELETED ns/gone 1 (was 1)', 'MODIFIED ns/change 5 (was 1)',
    ]);
    assert.deepEqual([...informer.keys()].sort(), ['ns/change', 'ns/keep', 'ns/new']);
  });

  it('drops managedFields from what it stores', () => {
    const { source, informer } = fed();
    const obj = cm('a', '1');
    obj.metadata!.managedFields = [{ manager: 'kubectl', operation: 'Update' }];
    source.next({ type: 'SYNC', items: [obj] });
    assert.equal(informer.get('ns/a')?.metadata?.managedFields, undefined);
  });

  it('start() subscribes once; stop() unsubscribes from the source and completes events$', () => {
    let subscriptions = 0;
    let active = 0;
    const source = new Observable<Event>(() => {
      subscriptions++;
      active++;
      return () => { active--; };
    });
    informer = new Informer('test', source);
    let completed = false;
    informer.events$.subscribe({ complete: () => { completed = true; } });
    informer.start().start();
    assert.equal(subscriptions, 1);
    informer.stop();
    assert.equal(active, 0);
    assert.equal(completed, true);
  });

  it('surfaces an error of its source on events$', () => {
    const source = new Subject<Event>();
    informer = new Informer('test', source).start();
    let failed: unknown;
    informer.events$.subscribe({ error: (err: unknown) => { failed = err; } });
    source.error(new Error('boom'));
    assert.equal((failed as Error).message, 'boom');
  });

  it('objectKey and splitKey are inverse for namespaced and cluster-scoped objects', () => {
    assert.equal(objectKey(cm('a', '1')), 'ns/a');
    assert.equal(objectKey({ metadata: { name: 'n1' } }), 'n1');
    assert.deepEqual(splitKey('ns/a'), { namespace: 'ns', name: 'a' });
    assert.deepEqual(splitKey('n1'), { namespace: '', name: 'n1' });
  });
});

describe('Informer over listWatch', () => {
  it('after 410 Gone, surfaces what it missed: deletions as DELETED and changes as MODIFIED', async () => {
    const fake = new FakeCollection<V1ConfigMap>();
    fake.items = [cm('a', '1'), cm('b', '2'), cm('c', '3')];
    fake.resourceVersion = '3';
    informer = new Informer('configmaps', listWatch(fake.client(), fake.spec())).start();
    const events: StoreEvent<V1ConfigMap>[] = [];
    informer.events$.subscribe((e) => events.push(e));
    await informer.waitSynced();
    assert.deepEqual(summary(events), ['ADDED ns/a 1', 'ADDED ns/b 2', 'ADDED ns/c 3']);
    const w1 = await fake.watch(1);
    events.length = 0;

    // Meanwhile, unseen by the watch: a changed, b deleted, d created; then the watch has expired.
    fake.items = [cm('a', '10', { v: 'new' }), cm('c', '3'), cm('d', '11')];
    fake.resourceVersion = '11';
    w1.send('ERROR', { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' });
    const w2 = await fake.watch(2);
    assert.deepEqual(summary(events).sort(), ['ADDED ns/d 11', 'DELETED ns/b 2 (was 2)', 'MODIFIED ns/a 10 (was 1)']);
    assert.equal(w2.resourceVersion, '11');
    assert.equal(informer.size, 3);

    informer.stop();
    assert.ok(w2.aborted, 'stop() closes the watch');
    await new Promise((r) => setTimeout(r, 5));
    assert.equal(fake.watches.length, 2);
  });
});

describe('storedSpecs: a pod watch reuses the spec its store has', () => {
  const pod = (rv: string, image: string, phase: string): V1Pod => ({
    kind: 'Pod', apiVersion: 'v1',
    metadata: { namespace: 'ns', name: 'p', resourceVersion: rv, managedFields: [{ manager: 'kwok', operation: 'Update' }] },
    spec: { containers: [{ name: 'c', image }], nodeName: 'n' }, status: { phase },
  });

  it('keeps the stored spec when an event changes only the status, and takes the new one when the spec changed', async () => {
    const fake = new FakeCollection<V1Pod>();
    const pods: Informer<V1Pod> = new Informer('pods', listWatch(fake.client(), fake.spec({
      cutManagedFields: true, knownSpec: storedSpecs(() => pods) }))).start();
    try {
      await pods.waitSynced();
      const w = await fake.watch(1);
      w.send('ADDED', pod('2', 'i:1', 'Pending'));
      assert.equal(pods.get('ns/p')?.metadata?.resourceVersion, '2'); // the watch's events reach the store at once
      const first = pods.get('ns/p')!;
      w.send('MODIFIED', pod('3', 'i:1', 'Running'));
      assert.equal(pods.get('ns/p')?.metadata?.resourceVersion, '3');
      assert.equal(pods.get('ns/p')!.spec, first.spec);
      assert.equal(pods.get('ns/p')!.status!.phase, 'Running');
      w.send('MODIFIED', pod('4', 'i:2', 'Running'));
      assert.equal(pods.get('ns/p')?.metadata?.resourceVersion, '4');
      assert.notEqual(pods.get('ns/p')!.spec, first.spec);
      assert.equal(pods.get('ns/p')!.spec!.containers[0]!.image, 'i:2');
      assert.equal(storedSpecs(() => pods)('ns', 'p', {}), pods.get('ns/p')!.spec);
      assert.equal(storedSpecs(() => pods)('ns', 'other', {}), undefined);
    } finally {
      pods.stop();
    }
  });
});
