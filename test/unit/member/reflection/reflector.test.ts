// The generic per-kind reflector against a fake API: create, update only what is ours and differs, never touch
// what is not ours, replace an immutable object, delete by UID, and run a policy's keys through its queue.
import { describe, it, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { Reflector, type ReflectorMetrics, type UpdateRule } from '../../../../src/member/reflection/reflector.ts';
import { objectKey } from '../../../../src/kube/informer.ts';
import { createLogger } from '../../../../src/log.ts';
import { metrics } from '../../../../src/metrics.ts';
import { FakeObjects, labelled } from '../../fakes/objects.ts';
import { eventually, settle } from '../../fakes/wait.ts';

const OURS = { 'example.io/by': 'me' };
const cm = (name: string, data: Record<string, string>, labels: Record<string, string> = OURS, immutable?: boolean): V1ConfigMap =>
  ({ metadata: { namespace: 'ns', name, labels }, data, immutable });
const rule: UpdateRule<V1ConfigMap> = {
  ours: (o) => o.metadata?.labels?.['example.io/by'] === 'me',
  matches: (d, a) => JSON.stringify(d.data) === JSON.stringify(a.data),
};

let running: Reflector<V1ConfigMap>[] = [];
afterEach(() => { for (const r of running.splice(0)) r.stop(); });

function setup(opts: { update?: UpdateRule<V1ConfigMap>; sync?: (key: string) => Promise<void>; metrics?: ReflectorMetrics<V1ConfigMap> } = {}) {
  const api = new FakeObjects();
  const r = new Reflector<V1ConfigMap>({
    name: 'test', workers: 2, target: api.target('ConfigMap', labelled('example.io/by=me')), log: createLogger('silent'),
    update: 'update' in opts ? opts.update : rule, sync: opts.sync ?? (async () => undefined), keyOf: objectKey, metrics: opts.metrics,
  });
  r.start();
  running.push(r);
  return { api, r };
}

describe('Reflector.apply', () => {
  it('creates a missing object, then leaves it alone while it matches', async () => {
    const { api, r } = setup();
    assert.equal(await r.apply('ns', 'a', () => cm('a', { v: '1' })), 'created');
    assert.equal(r.store.get('ns/a')?.data?.v, '1', 'the store sees it');
    assert.equal(await r.apply('ns', 'a', () => cm('a', { v: '1' })), 'unchanged');
    assert.deepEqual(api.writes().map((w) => w.verb), ['create']);
  });

  it('updates its own object that differs, on the version it saw', async () => {
    const { api, r } = setup();
    await r.apply('ns', 'a', () => cm('a', { v: '1' }));
    const seen: (V1ConfigMap | undefined)[] = [];
    assert.equal(await r.apply('ns', 'a', (existing) => { seen.push(existing); return cm('a', { v: '2' }); }), 'updated');
    assert.equal(seen[0]?.data?.v, '1', 'the desired object is forged from the existing one');
    assert.equal(api.get<V1ConfigMap>('ConfigMap', 'ns', 'a')?.data?.v, '2');
  });

  it('never touches an object of that name that is not its own: a conflict', async () => {
    const { api, r } = setup();
    api.put('ConfigMap', cm('a', { owner: 'someone' }, { team: 'x' }));
    assert.equal(await r.apply('ns', 'a', () => cm('a', { v: '1' })), 'conflict');
    assert.deepEqual(api.get<V1ConfigMap>('ConfigMap', 'ns', 'a')?.data, { owner: 'someone' });
    assert.deepEqual(api.writes(), []);
  });

  it('reads an object of its own the store has not seen yet, and updates it', async () => {
    const { api, r } = setup();
    r.stop(); // the store stops following: it is behind from here on
    api.put('ConfigMap', cm('a', { v: '1' }));
    assert.equal(await r.apply('ns', 'a', () => cm('a', { v: '2' })), 'updated');
    assert.equal(api.get<V1ConfigMap>('ConfigMap', 'ns', 'a')?.data?.v, '2');
  });

  it('without an update rule any object of the name will do, unread', async () => {
    const { api, r } = setup({ update: undefined });
    api.put('ConfigMap', cm('a', { owner: 'someone' }, {}));
    assert.equal(await r.apply('ns', 'a', () => cm('a', { v: '1' })), 'unchanged');
    assert.deepEqual(api.calls, [], 'neither written nor read');
  });

  it('replaces an immutable object that must change', async () => {
    const { api, r } = setup();
    await r.apply('ns', 'a', () => cm('a', { v: '1' }, OURS, true));
    const before = api.get<V1ConfigMap>('ConfigMap', 'ns', 'a')!.metadata!.uid;
    assert.equal(await r.apply('ns', 'a', () => cm('a', { v: '2' }, OURS, true)), 'updated');
    const after = api.get<V1ConfigMap>('ConfigMap', 'ns', 'a')!;
    assert.equal(after.data?.v, '2');
    assert.notEqual(after.metadata!.uid, before, 'a new object');
  });
});

describe('Reflector.apply, recreating', () => {
  it('deletes and creates again an object its rule says cannot become the desired one by an update', async () => {
    const { api, r } = setup({ update: { ...rule, recreate: (d, a) => d.data?.kind !== a.data?.kind } });
    await r.apply('ns', 'a', () => cm('a', { kind: 'x', v: '1' }));
    const before = api.get<V1ConfigMap>('ConfigMap', 'ns', 'a')!.metadata!.uid;
    assert.equal(await r.apply('ns', 'a', () => cm('a', { kind: 'x', v: '2' })), 'updated');
    assert.equal(api.get<V1ConfigMap>('ConfigMap', 'ns', 'a')!.metadata!.uid, before, 'updated in place');
    assert.equal(await r.apply('ns', 'a', () => cm('a', { kind: 'y', v: '2' })), 'updated');
    const after = api.get<V1ConfigMap>('ConfigMap', 'ns', 'a')!;
    assert.deepEqual(after.data, { kind: 'y', v: '2' });
    assert.notEqual(after.metadata!.uid, before, 'a new object');
    assert.deepEqual(api.writes().map((w) => w.verb), ['create', 'replace', 'delete', 'create']);
  });
});

describe('Reflector.remove', () => {
  it('deletes that very object: a newer one of the same name stays', async () => {
    const { api, r } = setup();
    await r.apply('ns', 'a', () => cm('a', { v: '1' }));
    const old = r.store.get('ns/a')!;
    api.drop('ConfigMap', 'ns', 'a');
    api.put('ConfigMap', cm('a', { v: 'new' }));
    await r.remove(old);
    assert.equal(api.get<V1ConfigMap>('ConfigMap', 'ns', 'a')?.data?.v, 'new');
    await r.remove(r.store.get('ns/a')!);
    assert.equal(api.get('ConfigMap', 'ns', 'a'), undefined);
    await r.remove(old); // gone already: fine
  });
});

describe('Reflector queue', () => {
  it('runs the policy for the keys added', async () => {
    const runs: string[] = [];
    const { r } = setup({ sync: async (key) => { runs.push(key); } });
    r.add('ns/a');
    r.add('ns/b');
    await eventually('both run', () => runs.length === 2);
    assert.deepEqual(runs.sort(), ['ns/a', 'ns/b']);
  });
});

describe('Reflector start', () => {
  it('hands the policy no key before the caches it reads have synced, then every stored object\'s and its start keys', async () => {
    const api = new FakeObjects();
    api.put('ConfigMap', cm('stored', { v: '1' }));
    let synced!: () => void;
    const read = { waitSynced: () => new Promise<void>((resolve) => { synced = resolve; }) };
    const runs: string[] = [];
    const r = new Reflector<V1ConfigMap>({
      name: 'test', workers: 2, target: api.target('ConfigMap', labelled('example.io/by=me')), log: createLogger('silent'),
      update: rule, sync: async (key) => { runs.push(key); }, keyOf: objectKey, reads: [read], startKeys: () => ['ns/start'],
    });
    r.start();
    running.push(r);
    r.add('ns/early');
    await settle();
    assert.deepEqual(runs, [], 'nothing while a cache it reads has not synced');
    synced();
    await eventually('the keys handled', () => runs.length === 3);
    assert.deepEqual(runs.sort(), ['ns/early', 'ns/start', 'ns/stored'], 'the key added meanwhile, the start key, the stored object\'s, once each');
    api.put('ConfigMap', cm('stored', { v: 'changed by someone' }));
    await eventually('the changed object\'s key handled again', () => runs.length === 4);
    assert.equal(runs[3], 'ns/stored');
  });
});

describe('Reflector metrics', () => {
  const labels = { member: 'm-test', kind: 'ConfigMap', direction: 'to-member' } as const;
  const gauge = async (): Promise<number | undefined> => (await metrics.objectsReflected.get()).values
    .find((v) => v.labels.member === labels.member && v.labels.kind === labels.kind)?.value;
  const errors = async (): Promise<number> => (await metrics.reflectionErrors.get()).values
    .find((v) => v.labels.member === labels.member && v.labels.kind === labels.kind)?.value ?? 0;

  it('counts the objects it keeps written (those its metrics count), and its failed syncs', async () => {
    let fail = true;
    const { api, r } = setup({
      metrics: { ...labels, counts: (o) => o.metadata?.name !== 'not-counted' },
      sync: async () => { if (fail) { fail = false; throw new Error('boom'); } },
    });
    const errorsBefore = await errors();
    await r.apply('ns', 'a', () => cm('a', { v: '1' }));
    await r.apply('ns', 'b', () => cm('b', { v: '1' }));
    await r.apply('ns', 'not-counted', () => cm('not-counted', { v: '1' }));
    assert.equal(await gauge(), 2);
    api.drop('ConfigMap', 'ns', 'a');
    assert.equal(await gauge(), 1);
    r.add('ns/x');
    await eventually('the sync run', () => fail === false);
    await settle();
    assert.equal(await errors(), errorsBefore + 1);
    r.stop();
    assert.equal(await gauge(), undefined, 'a stopped reflector reports nothing');
  });
});
