// The shared host cache: only objects someone wants are kept and reported; a miss is read once and kept.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { HostObjects } from '../../../../src/host/reflection/caches.ts';
import type { StoreEvent } from '../../../../src/kube/informer.ts';
import { FakeObjects } from '../../fakes/objects.ts';

function setup() {
  const host = new FakeObjects();
  host.put('ConfigMap', { metadata: { namespace: 'ns', name: 'wanted' }, data: { v: '1' } });
  host.put('ConfigMap', { metadata: { namespace: 'ns', name: 'other' }, data: { v: '1' } });
  const cache = new HostObjects<V1ConfigMap>('host-cm', host.watch('ConfigMap'), (ns, name) => host.read('ConfigMap', ns, name));
  const events: StoreEvent<V1ConfigMap>[] = [];
  cache.events$.subscribe((e) => events.push(e));
  cache.start();
  const reads = () => host.calls.filter((c) => c.verb === 'read').length;
  return { host, cache, events, reads };
}

describe('HostObjects', () => {
  it('reads a wanted object once on a miss, then serves it from the store and follows its changes', async () => {
    const { host, cache, events, reads } = setup();
    cache.want('ns/wanted');
    assert.equal((await cache.lookup('ns/wanted'))?.data?.v, '1');
    assert.equal((await cache.lookup('ns/wanted'))?.data?.v, '1');
    assert.equal(reads(), 1, 'read once, then kept');
    host.put('ConfigMap', { metadata: { namespace: 'ns', name: 'wanted' }, data: { v: '2' } });
    host.put('ConfigMap', { metadata: { namespace: 'ns', name: 'other' }, data: { v: '2' } });
    assert.equal((await cache.lookup('ns/wanted'))?.data?.v, '2');
    assert.equal(reads(), 1);
    assert.deepEqual(events.map((e) => `${e.type} ${e.key}`), ['MODIFIED ns/wanted'], 'nothing about unwanted objects');
  });

  it('an object wanted while missing is reported when it appears; a missing one looks up as undefined', async () => {
    const { host, cache, events } = setup();
    cache.want('ns/later');
    assert.equal(await cache.lookup('ns/later'), undefined);
    host.put('ConfigMap', { metadata: { namespace: 'ns', name: 'later' }, data: {} });
    assert.deepEqual(events.map((e) => `${e.type} ${e.key}`), ['ADDED ns/later']);
  });

  it('counts interest: kept until the last interested party releases it, then forgotten', async () => {
    const { host, cache, events, reads } = setup();
    cache.want('ns/wanted');
    cache.want('ns/wanted');
    await cache.lookup('ns/wanted');
    cache.release('ns/wanted');
    await cache.lookup('ns/wanted');
    assert.equal(reads(), 1, 'still kept for the other party');
    cache.release('ns/wanted');
    host.put('ConfigMap', { metadata: { namespace: 'ns', name: 'wanted' }, data: { v: '3' } });
    assert.equal(events.length, 0, 'no longer reported');
    assert.equal((await cache.lookup('ns/wanted'))?.data?.v, '3', 'read again');
    assert.equal(reads(), 2);
  });

  it('an object nobody wants is read but not kept', async () => {
    const { cache, reads } = setup();
    await cache.lookup('ns/other');
    await cache.lookup('ns/other');
    assert.equal(reads(), 2);
  });
});
