// listWatch against a fake collection (test/unit/fakes/listwatch.ts): LIST → SYNC, then WATCH events; a watch
// that ends, goes silent or is told 410 Gone is resumed or relisted as it should; errors are retried with backoff.
import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Subscription } from 'rxjs';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { listWatch, type ListWatchEvent, type ListWatchOptions } from '../../../src/kube/listwatch.ts';
import { KubeError } from '../../../src/kube/errors.ts';
import { metrics } from '../../../src/metrics.ts';
import { FakeCollection } from '../fakes/listwatch.ts';
import { eventually } from '../fakes/wait.ts';

function cm(name: string, rv: string, data: Record<string, string> = {}): V1ConfigMap {
  return { metadata: { namespace: 'ns', name, resourceVersion: rv }, data };
}

const gone = { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' };

let clusters = 0;
let sub: Subscription | undefined;
afterEach(() => sub?.unsubscribe());

/** A fake collection holding `items` at `rv`, and the events of a listWatch over it. */
function start(items: V1ConfigMap[], rv: string, opts: ListWatchOptions = {}) {
  const fake = new FakeCollection<V1ConfigMap>(`lw-${++clusters}`);
  fake.items = items;
  fake.resourceVersion = rv;
  const events: ListWatchEvent<V1ConfigMap>[] = [];
  sub = listWatch(fake.client(), fake.spec(), opts).subscribe((e) => events.push(e));
  return { fake, events };
}

function names(e: ListWatchEvent<V1ConfigMap> | undefined): string[] {
  if (e?.type !== 'SYNC') throw new Error(`not a SYNC: ${e?.type}`);
  return e.items.map((o) => o.metadata!.name!);
}

/** Watch restarts counted for `cluster`, by reason. */
async function restarts(cluster: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const v of (await metrics.watchRestarts.get()).values) {
    if (v.labels.cluster === cluster) out[String(v.labels.reason)] = v.value;
  }
  return out;
}

/** Watch events counted for `cluster` (clusterlet_watch_events_total), by resource. */
async function watchEvents(cluster: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const v of (await metrics.watchEvents.get()).values) {
    if (v.labels.cluster === cluster) out[`${v.labels.resource} ${v.labels.type}`] = v.value;
  }
  return out;
}

describe('listWatch', () => {
  it('counts the watch events it hands on (not bookmarks, not the list), added up when scraped', async () => {
    const { fake } = start([cm('a', '3')], '10');
    const w = await fake.watch(1);
    w.send('ADDED', cm('c', '11'));
    w.send('BOOKMARK', { kind: 'ConfigMap', metadata: { resourceVersion: '12' } } as V1ConfigMap);
    w.send('MODIFIED', cm('c', '13', { k: 'v' }));
    w.send('MODIFIED', cm('c', '15', { k: 'w' }));
    assert.deepEqual(await watchEvents(fake.name), { 'configmaps added': 1, 'configmaps modified': 2 });
    w.send('DELETED', cm('c', '16'));
    assert.deepEqual(await watchEvents(fake.name), { 'configmaps added': 1, 'configmaps modified': 2, 'configmaps deleted': 1 },
      'a scrape adds what came since the last one');
  });

  it('lists, emits one SYNC with every item, then watches from the list\'s resourceVersion', async () => {
    const { fake, events } = start([cm('a', '3'), cm('b', '7')], '10');
    const w = await fake.watch(1);
    assert.deepEqual(names(events[0]), ['a', 'b']);
    assert.equal(w.path, '/api/v1/configmaps');
    assert.equal(w.resourceVersion, '10');
    assert.equal(w.query.allowWatchBookmarks, true);
    assert.equal(w.idleMs, 90_000, 'default silence');

    w.send('ADDED', cm('c', '11'));
    w.send('MODIFIED', cm('a', '12', { k: 'v' }));
    w.send('DELETED', cm('b', '13'));
    assert.deepEqual(events.slice(1).map((e) => e.type === 'SYNC' ? 'SYNC' : `${e.type} ${e.object.metadata!.name}`),
      ['ADDED c', 'MODIFIED a', 'DELETED b']);
    assert.deepEqual((events[2] as { object: V1ConfigMap }).object.data, { k: 'v' });
  });

  it('passes the selectors to LIST and WATCH and reads a paged LIST into one SYNC', async () => {
    const fake = new FakeCollection<V1ConfigMap>();
    fake.items = ['a', 'b', 'c', 'd', 'e'].map((n) => cm(n, '1'));
    const events: ListWatchEvent<V1ConfigMap>[] = [];
    sub = listWatch(fake.client(), fake.spec({ labelSelector: 'app=x', fieldSelector: 'metadata.name!=z' }),
      { pageSize: 2 }).subscribe((e) => events.push(e));
    const w = await fake.watch(1);
    assert.deepEqual(fake.lists.map((p) => [p.limit, p._continue, p.labelSelector, p.fieldSelector]), [
      [2, undefined, 'app=x', 'metadata.name!=z'],
      [2, '2', 'app=x', 'metadata.name!=z'],
      [2, '4', 'app=x', 'metadata.name!=z'],
    ]);
    assert.equal(events.length, 1);
    assert.deepEqual(names(events[0]), ['a', 'b', 'c', 'd', 'e']);
    assert.equal(w.query.labelSelector, 'app=x');
    assert.equal(w.query.fieldSelector, 'metadata.name!=z');
  });

  it('revives watched objects: timestamps become Dates', async () => {
    const { fake, events } = start([], '1');
    const w = await fake.watch(1);
    w.send('ADDED', { metadata: { name: 'a', resourceVersion: '2', creationTimestamp: '2024-01-02T03:04:05Z' } });
    const created = (events[1] as { object: V1ConfigMap }).object.metadata!.creationTimestamp;
    assert.ok(created instanceof Date);
    assert.equal(created.toISOString(), '2024-01-02T03:04:05.000Z');
  });

  it('hands on the shape of each object: listed ones as they come, watched ones before they are revived', async () => {
    const fake = new FakeCollection<V1ConfigMap>();
    fake.items = [cm('a', '1', { k: 'v', big: 'x' })];
    const seen: string[] = [];
    const shape = (o: V1ConfigMap): V1ConfigMap => {
      seen.push(`${o.metadata!.name} ${typeof o.metadata!.creationTimestamp}`);
      const { name, resourceVersion, creationTimestamp } = o.metadata!;
      return { metadata: { name, resourceVersion, creationTimestamp }, data: { k: o.data!.k! } };
    };
    const events: ListWatchEvent<V1ConfigMap>[] = [];
    sub = listWatch(fake.client(), fake.spec({ shape }), {}).subscribe((e) => events.push(e));
    const w = await fake.watch(1);
    assert.deepEqual((events[0] as { items: V1ConfigMap[] }).items, [{ metadata: { name: 'a', resourceVersion: '1', creationTimestamp: undefined }, data: { k: 'v' } }]);
    w.send('ADDED', { metadata: { name: 'b', resourceVersion: '2', creationTimestamp: '2024-01-02T03:04:05Z' }, data: { k: 'w', big: 'y' } });
    const b = (events[1] as { object: V1ConfigMap }).object;
    assert.deepEqual(b.data, { k: 'w' });
    assert.ok(b.metadata!.creationTimestamp instanceof Date, 'the shape is revived');
    assert.deepEqual(seen, ['a undefined', 'b string'], 'a watched object is shaped before it is revived');
  });

  it('hands on only the objects wanted, listed or watched, and shapes only those; an unwanted one still moves the resume point', async () => {
    const fake = new FakeCollection<V1ConfigMap>();
    fake.items = [cm('a', '1'), cm('skip-b', '1')];
    fake.resourceVersion = '5';
    const shaped: string[] = [];
    const events: ListWatchEvent<V1ConfigMap>[] = [];
    sub = listWatch(fake.client(), fake.spec({
      wanted: (o) => !o.metadata!.name!.startsWith('skip'),
      shape: (o) => { shaped.push(o.metadata!.name!); return o; },
    }), {}).subscribe((e) => events.push(e));
    const w = await fake.watch(1);
    assert.deepEqual(names(events[0]), ['a']);
    w.send('ADDED', cm('skip-c', '6'));
    w.send('ADDED', cm('d', '7'));
    w.send('MODIFIED', cm('skip-b', '8'));
    assert.deepEqual(events.slice(1).map((e) => e.type === 'SYNC' ? 'SYNC' : `${e.type} ${e.object.metadata!.name}`), ['ADDED d']);
    assert.deepEqual(shaped, ['a', 'd']);
    w.end();
    assert.equal((await fake.watch(2)).resourceVersion, '8');
  });

  it('asks wanted of listed objects once the list is whole: what the consumer wants may fill in while it pages', async () => {
    const fake = new FakeCollection<V1ConfigMap>();
    fake.items = [cm('a', '1'), cm('b', '1')];
    const want = new Set<string>(['b']);
    const base = fake.spec({ wanted: (o) => want.has(o.metadata!.name!) });
    // The consumer comes to want a while the list pages: by the second page, it wants the first page's object too.
    const spec = { ...base, list: (p: Parameters<typeof base.list>[0]) => {
      if (p._continue) want.add('a');
      return base.list(p);
    } };
    const events: ListWatchEvent<V1ConfigMap>[] = [];
    sub = listWatch(fake.client(), spec, { pageSize: 1 }).subscribe((e) => events.push(e));
    await fake.watch(1);
    assert.deepEqual(names(events[0]), ['a', 'b']);
  });

  it('resumes a watch that ends from the last resourceVersion seen, without relisting', async () => {
    const { fake, events } = start([cm('a', '3')], '10');
    const w1 = await fake.watch(1);
    w1.send('MODIFIED', cm('a', '11'));
    w1.send('ADDED', cm('b', '12'));
    w1.end();
    const w2 = await fake.watch(2);
    assert.equal(w2.resourceVersion, '12');
    w2.send('DELETED', cm('b', '13'));
    assert.equal(fake.lists.length, 1);
    assert.deepEqual(events.map((e) => e.type), ['SYNC', 'MODIFIED', 'ADDED', 'DELETED']);
    assert.deepEqual(await restarts(fake.name), { ended: 1 });
  });

  it('takes the resume point from bookmarks, which it does not emit', async () => {
    const { fake, events } = start([], '10');
    const w1 = await fake.watch(1);
    w1.send('BOOKMARK', { kind: 'ConfigMap', metadata: { resourceVersion: '25' } });
    w1.end();
    const w2 = await fake.watch(2);
    assert.equal(w2.resourceVersion, '25');
    assert.deepEqual(events.map((e) => e.type), ['SYNC']);
  });

  it('restarts a watch silent for silenceMs from the last resourceVersion, without relisting', async () => {
    const { fake, events } = start([], '10', { silenceMs: 50 });
    const w1 = await fake.watch(1);
    assert.equal(w1.idleMs, 50);
    w1.send('ADDED', cm('a', '11'));
    const w2 = await fake.watch(2);
    assert.equal(w2.resourceVersion, '11');
    assert.equal(fake.lists.length, 1);
    assert.deepEqual(events.map((e) => e.type), ['SYNC', 'ADDED']);
    // At least: the new watch goes silent too, every 50 ms. A silent watch is one restart, not also an 'ended' one.
    const counted = await restarts(fake.name);
    assert.ok(counted.silent >= 1);
    assert.equal(counted.ended ?? 0, 0);
  });

  it('relists on 410 Gone (an ERROR event) and watches from the new list', async () => {
    const { fake, events } = start([cm('a', '3'), cm('b', '4')], '10');
    const w1 = await fake.watch(1);
    fake.items = [cm('a', '30'), cm('c', '31')];
    fake.resourceVersion = '40';
    w1.send('ERROR', gone);
    const w2 = await fake.watch(2);
    assert.ok(w1.aborted, 'the expired watch is closed');
    assert.equal(fake.lists.length, 2);
    assert.equal(w2.resourceVersion, '40');
    assert.deepEqual(events.map((e) => e.type), ['SYNC', 'SYNC']);
    assert.deepEqual(names(events[1]), ['a', 'c']);
    assert.deepEqual(await restarts(fake.name), { gone: 1 });
  });

  it('relists on 410 Gone when the watch request itself is refused with it', async () => {
    const { fake, events } = start([], '10');
    const w1 = await fake.watch(1);
    fake.resourceVersion = '50';
    w1.fail(new KubeError('Gone', 410, 'Expired', 'too old resource version'));
    const w2 = await fake.watch(2);
    assert.equal(w2.resourceVersion, '50');
    assert.deepEqual(events.map((e) => e.type), ['SYNC', 'SYNC']);
  });

  it('restarts the whole list-watch after a backoff when the watch fails otherwise', async () => {
    const { fake, events } = start([cm('a', '3')], '10', { minBackoffMs: 1 });
    const w1 = await fake.watch(1);
    w1.send('ERROR', { kind: 'Status', code: 500, message: 'etcd unhappy' });
    const w2 = await fake.watch(2);
    w2.fail(new KubeError('Unavailable', 0, 'ECONNRESET', 'socket hang up'));
    await fake.watch(3);
    assert.equal(fake.lists.length, 3);
    assert.deepEqual(events.map((e) => e.type), ['SYNC', 'SYNC', 'SYNC']);
    assert.deepEqual(await restarts(fake.name), { error: 2 });
  });

  it('retries a failing LIST with doubling backoff, never erroring the stream', async () => {
    const fake = new FakeCollection<V1ConfigMap>();
    fake.items = [cm('a', '3')];
    fake.failLists(new KubeError('Unavailable', 503, '', 'down'), new KubeError('Forbidden', 403, 'Forbidden', 'no'));
    const events: ListWatchEvent<V1ConfigMap>[] = [];
    let failed: unknown;
    sub = listWatch(fake.client(), fake.spec(), { minBackoffMs: 20 })
      .subscribe({ next: (e) => events.push(e), error: (err: unknown) => { failed = err; } });
    await fake.watch(1);
    assert.equal(failed, undefined);
    assert.equal(fake.lists.length, 3);
    assert.deepEqual(events.map((e) => e.type), ['SYNC']);
    // 20 ms then 40 ms, each ±20 % (a millisecond of timer rounding allowed).
    const [first, second, third] = fake.lists.map((l) => l.at);
    assert.ok(second - first >= 15, `first retry after ${second - first} ms`);
    assert.ok(third - second >= 31, `second retry after ${third - second} ms`);
  });

  it('unsubscribing aborts the watch and stops the cycle', async () => {
    const { fake } = start([], '10', { minBackoffMs: 1 });
    const w1 = await fake.watch(1);
    sub!.unsubscribe();
    assert.ok(w1.aborted);
    await new Promise((r) => setTimeout(r, 5));
    assert.equal(fake.watches.length, 1);
    assert.equal(fake.lists.length, 1);
  });

  it('a LIST still paging when unsubscribed emits nothing and watches nothing', async () => {
    const fake = new FakeCollection<V1ConfigMap>();
    fake.items = [cm('a', '1'), cm('b', '1')];
    const events: ListWatchEvent<V1ConfigMap>[] = [];
    const spec = fake.spec();
    const list = spec.list;
    let release!: () => void;
    const held = new Promise<void>((r) => { release = r; });
    spec.list = async (p) => { const page = await list(p); await held; return page; };
    sub = listWatch(fake.client(), spec, { pageSize: 1 }).subscribe((e) => events.push(e));
    await eventually('the first page', () => fake.lists.length === 1);
    sub.unsubscribe();
    release();
    await new Promise((r) => setTimeout(r, 5));
    assert.equal(fake.lists.length, 1, 'no further page');
    assert.deepEqual(events, []);
    assert.equal(fake.watches.length, 0);
  });
});
