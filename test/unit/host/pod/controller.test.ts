// The pod controller against a fake host and a fake provider: status reconciliation, outages, lost delegates,
// rejections and the deletion protocol, without a cluster.
import { describe, it, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { PodController } from '../../../../src/host/pod/controller.ts';
import { createLogger } from '../../../../src/log.ts';
import { FakeHost } from '../../fakes/host.ts';
import { FakeProvider, PodRejectedError } from '../../fakes/provider.ts';

const NODE = 'clusterlet-eu';
const NS = 'web';

function proxy(name: string, opts: { restartPolicy?: string; status?: V1PodStatus } = {}): V1Pod {
  return {
    metadata: { name, namespace: NS, uid: `uid-${name}` },
    spec: { nodeName: NODE, restartPolicy: opts.restartPolicy, containers: [{ name: 'app', image: 'a' }] },
    status: opts.status ?? { phase: 'Pending' },
  };
}

const ready = (status: 'True' | 'False' = 'True'): V1PodStatus => ({
  phase: 'Running', podIP: '10.1.0.5', startTime: new Date('2026-01-01T00:00:00Z'),
  conditions: [{ type: 'Ready', status }, { type: 'ContainersReady', status }],
  containerStatuses: [{ name: 'app', image: 'a', imageID: '', ready: status === 'True', restartCount: 0, state: { running: {} } }],
});

async function eventually(what: string, check: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

let running: PodController[] = [];
function start(host: FakeHost, provider: FakeProvider): PodController {
  const c = new PodController(host.client(), provider, createLogger('silent'), { nodeName: NODE, member: 'eu', workers: 2 });
  c.start();
  running.push(c);
  return c;
}
afterEach(() => { for (const c of running.splice(0)) c.stop(); });

const isReadyOnHost = (host: FakeHost, name: string): boolean => host.condition(NS, name, 'Ready')?.status === 'True';

describe('PodController', () => {
  it('sets back a proxy status someone else changed (the node-lifecycle controller marking it NotReady)', async () => {
    const host = new FakeHost();
    const provider = new FakeProvider();
    const p = host.put(proxy('a'));
    provider.pods.set(`${NS}/a`, { proxyUID: p.metadata!.uid!, terminating: false, phase: 'Running', status: ready() });
    start(host, provider);
    await eventually('the proxy Ready', () => isReadyOnHost(host, 'a'));
    const marked = structuredClone(host.get(NS, 'a')!);
    marked.status!.conditions = marked.status!.conditions!.map((c) => c.type === 'Ready' ? { ...c, status: 'False', reason: 'NodeNotReady' } : c);
    host.put(marked);
    await eventually('Ready again', () => isReadyOnHost(host, 'a'));
  });

  it('writes no status from an unreachable back end; resync$ brings every proxy back in line', async () => {
    const host = new FakeHost();
    const provider = new FakeProvider();
    for (const n of ['a', 'b']) {
      const p = host.put(proxy(n));
      provider.pods.set(`${NS}/${n}`, { proxyUID: p.metadata!.uid!, terminating: false, phase: 'Running', status: ready() });
    }
    start(host, provider);
    await eventually('both Ready', () => isReadyOnHost(host, 'a') && isReadyOnHost(host, 'b'));
    provider.reachable = false;
    const writes = host.statusPatches.length;
    for (const n of ['a', 'b']) {
      const marked = structuredClone(host.get(NS, n)!);
      marked.status!.conditions = [{ type: 'Ready', status: 'False', reason: 'NodeNotReady' }];
      host.put(marked);
    }
    // Another proxy event goes through the queue after those: by then nothing has been written for them.
    host.put({ ...proxy('c'), metadata: { ...proxy('c').metadata, labels: { probe: 'x' } } });
    await eventually('the probe proxy seen', () => provider.calls.some((c) => c.key === `${NS}/c`));
    assert.equal(host.statusPatches.length, writes, 'no status written while the back end is unreachable');
    assert.ok(!isReadyOnHost(host, 'a'));
    provider.reachable = true;
    provider.resyncs.next();
    await eventually('both Ready again after resync$', () => isReadyOnHost(host, 'a') && isReadyOnHost(host, 'b'));
  });

  it('a delegate lost with restartPolicy Always is created again, carrying its restarts, with a DelegateLost event', async () => {
    const host = new FakeHost();
    const provider = new FakeProvider();
    const status = ready();
    status.containerStatuses![0].restartCount = 2;
    const p = host.put(proxy('a', { status }));
    provider.pods.set(`${NS}/a`, { proxyUID: p.metadata!.uid!, terminating: false, phase: 'Running', status });
    start(host, provider);
    await eventually('synced', () => provider.count('update') > 0);
    provider.lose(`${NS}/a`);
    await eventually('created again', () => provider.count('create') === 1);
    assert.deepEqual(provider.calls.find((c) => c.op === 'create')!.arg, { restarts: { app: 3 } });
    await eventually('DelegateLost event', () => host.eventReasons().includes('DelegateLost'));
    assert.equal(host.get(NS, 'a')!.status!.phase, 'Running', 'the proxy never failed');
  });

  it('the Failed phase of a delegate the member is removing is not copied when it will be recreated; with Never it is', async () => {
    const host = new FakeHost();
    const provider = new FakeProvider();
    const failed: V1PodStatus = { phase: 'Failed', conditions: [{ type: 'DisruptionTarget', status: 'True', reason: 'DeletionByPodGC' }] };
    for (const [n, policy] of [['always', 'Always'], ['never', 'Never']] as const) {
      const p = host.put(proxy(n, { restartPolicy: policy, status: ready() }));
      provider.pods.set(`${NS}/${n}`, { proxyUID: p.metadata!.uid!, terminating: false, phase: 'Running', status: ready() });
    }
    start(host, provider);
    await eventually('synced', () => provider.count('update') >= 2);
    for (const n of ['always', 'never']) {
      provider.set(`${NS}/${n}`, { proxyUID: `uid-${n}`, terminating: false, phase: 'Failed', disruption: 'DeletionByPodGC', status: failed });
    }
    await eventually('never: Failed', () => host.get(NS, 'never')!.status!.phase === 'Failed');
    assert.equal(host.get(NS, 'always')!.status!.phase, 'Running', 'always: still Running');
    assert.ok(!host.statusPatches.some((s) => s.key === `${NS}/always` && (s.body.status as V1PodStatus).phase === 'Failed'));
  });

  it('a finished proxy never keeps a live delegate', async () => {
    const host = new FakeHost();
    const provider = new FakeProvider();
    const p = host.put(proxy('a', { status: { phase: 'Failed', reason: 'Evicted' } }));
    provider.pods.set(`${NS}/a`, { proxyUID: p.metadata!.uid!, terminating: false, phase: 'Running', status: ready() });
    start(host, provider);
    await eventually('the delegate deleted', () => provider.count('delete') === 1);
    assert.equal(provider.count('create'), 0);
  });

  it('a rejection no retry can fix shows on the proxy once and is not retried', async () => {
    const host = new FakeHost();
    const provider = new FakeProvider();
    provider.createErrors.push(new PodRejectedError('NamespaceTooLong', 'host namespace "web" maps to ... at most 63', { retry: false }));
    host.put(proxy('a'));
    const c = start(host, provider);
    await eventually('Offloaded=False', () => host.condition(NS, 'a', 'clusterlet.io/Offloaded')?.reason === 'NamespaceTooLong');
    assert.ok(host.eventReasons().includes('NamespaceTooLong'), 'a Warning event');
    await c.queue.idle();
    // A failed sync would be counted and wait on a retry timer: none is.
    assert.equal(c.queue.failures(`${NS}/a`), 0, 'not retried');
    assert.equal(provider.count('create'), 1);
  });

  it('a sync that keeps failing shows OffloadFailing on the proxy after 3 attempts', async () => {
    const host = new FakeHost();
    const provider = new FakeProvider();
    for (let i = 0; i < 5; i++) provider.createErrors.push(new Error('connect ECONNREFUSED 10.0.0.1:6443'));
    host.put(proxy('a'));
    start(host, provider);
    await eventually('OffloadFailing', () => host.condition(NS, 'a', 'clusterlet.io/Offloaded')?.reason === 'OffloadFailing', 10_000);
    assert.equal(provider.count('create'), 3);
    assert.match(host.condition(NS, 'a', 'clusterlet.io/Offloaded')!.message!, /ECONNREFUSED/);
  });

  it('deletion: the delegate gets the proxy\'s grace period, and the proxy goes (grace 0) once the delegate is gone', async () => {
    const host = new FakeHost();
    const provider = new FakeProvider();
    const p = host.put(proxy('a', { status: ready() }));
    provider.pods.set(`${NS}/a`, { proxyUID: p.metadata!.uid!, terminating: false, phase: 'Running', status: ready() });
    start(host, provider);
    await eventually('synced', () => provider.count('update') > 0);
    host.put({ ...p, metadata: { ...p.metadata, deletionTimestamp: new Date(), deletionGracePeriodSeconds: 17 } });
    await eventually('delegate deleted', () => provider.count('delete') === 1);
    assert.equal(provider.calls.find((c) => c.op === 'delete')!.arg, 17);
    provider.lose(`${NS}/a`);
    await eventually('proxy removed', () => host.get(NS, 'a') === undefined);
    assert.deepEqual(host.deletes, [{ key: `${NS}/a`, grace: 0 }]);
  });
});
