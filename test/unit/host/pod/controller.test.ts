// The pod controller against a fake host and a fake provider: status reconciliation, outages, lost delegates,
// rejections and the deletion protocol, without a cluster.
import { describe, it, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { Subject } from 'rxjs';
import type { PodController, PodControllerOptions } from '../../../../src/host/pod/controller.ts';
import { FakeHost } from '../../fakes/host.ts';
import { GatedHost, GatedProvider } from '../../fakes/gated.ts';
import { forgetMember, metrics, registry } from '../../../../src/metrics.ts';
import { FakeProvider, PodRejectedError, type FakePod } from '../../fakes/provider.ts';
import { PodNotReadyError } from '../../../../src/provider/errors.ts';
import { NODE, startController as start, stopControllers } from '../../fakes/podcontroller.ts';
import { eventually } from '../../fakes/wait.ts';

const NS = 'web';

function proxy(name: string, opts: { restartPolicy?: string; status?: V1PodStatus; uid?: string; daemonSet?: boolean } = {}): V1Pod {
  return {
    metadata: { name, namespace: NS, uid: opts.uid ?? `uid-${name}`,
      ...(opts.daemonSet ? { ownerReferences: [{ apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'ds', uid: 'ds', controller: true }] } : {}) },
    spec: { nodeName: NODE, restartPolicy: opts.restartPolicy, containers: [{ name: 'app', image: 'a' }] },
    status: opts.status ?? { phase: 'Pending' },
  };
}

const ready = (status: 'True' | 'False' = 'True'): V1PodStatus => ({
  phase: 'Running', podIP: '10.1.0.5', startTime: new Date('2026-01-01T00:00:00Z'),
  conditions: [{ type: 'Ready', status }, { type: 'ContainersReady', status }],
  containerStatuses: [{ name: 'app', image: 'a', imageID: '', ready: status === 'True', restartCount: 0, state: { running: {} } }],
});

afterEach(stopControllers);

/** Proxy `a` with a running delegate, its first sync done: and how many updates that took. */
async function runningAndSynced(): Promise<{ host: FakeHost; provider: FakeProvider; c: PodController; updates: number }> {
  const host = new FakeHost();
  const provider = new FakeProvider();
  const p = host.put(proxy('a', { status: ready() }));
  provider.pods.set(`${NS}/a`, { proxyUID: p.metadata!.uid!, terminating: false, phase: 'Running', status: ready() });
  const c = start(host, provider);
  await eventually('first sync', () => provider.count('update') >= 1);
  await c.queue.idle();
  return { host, provider, c, updates: provider.count('update') };
}

/** Proxy `a` (Pending), its delegate running and Ready: once the controller has set the proxy Ready and is idle. */
async function madeReady(opts: Partial<PodControllerOptions> = {}): Promise<{ host: FakeHost; provider: FakeProvider; p: V1Pod; c: PodController }> {
  const host = new FakeHost();
  const provider = new FakeProvider();
  const p = host.put(proxy('a'));
  provider.pods.set(`${NS}/a`, { proxyUID: p.metadata!.uid!, terminating: false, phase: 'Running', status: ready() });
  const c = start(host, provider, 2, opts);
  await eventually('the proxy Ready', () => isReadyOnHost(host, 'a'));
  await c.idle();
  return { host, provider, p, c };
}

/** Proxies `a` and `b`, their delegates running and Ready, and the proxies Ready. */
async function twoReady(): Promise<{ host: FakeHost; provider: FakeProvider }> {
  const host = new FakeHost();
  const provider = new FakeProvider();
  for (const n of ['a', 'b']) {
    const p = host.put(proxy(n));
    provider.pods.set(`${NS}/${n}`, { proxyUID: p.metadata!.uid!, terminating: false, phase: 'Running', status: ready() });
  }
  start(host, provider);
  await eventually('both Ready', () => isReadyOnHost(host, 'a') && isReadyOnHost(host, 'b'));
  return { host, provider };
}

/** Proxy `a`, its delegate created. */
async function created(): Promise<{ host: FakeHost; provider: FakeProvider }> {
  const host = new FakeHost();
  const provider = new FakeProvider();
  host.put(proxy('a'));
  start(host, provider);
  await eventually('created', () => provider.count('create') === 1);
  return { host, provider };
}

const isReadyOnHost = (host: FakeHost, name: string): boolean => host.condition(NS, name, 'Ready')?.status === 'True';

/** Runs of a queue so far (each key a worker took: clusterlet_queue_wait_seconds' count, every priority). */
async function queueRuns(queue: string): Promise<number> {
  return (await metrics.queueWait.get()).values
    .filter((v) => v.metricName === 'clusterlet_queue_wait_seconds_count' && v.labels.queue === queue)
    .reduce((sum, v) => sum + v.value, 0);
}
const statusRuns = (): Promise<number> => queueRuns(`pod-status-${NODE}`);
const lifecycleRuns = (): Promise<number> => queueRuns(`pods-${NODE}`);

/** Proxy `a`, its delegate running and Ready, set Ready by a controller whose periodic resync the test ticks. */
async function readyWithResync(opts: Partial<PodControllerOptions>) {
  const resync = new Subject<void>();
  // No recheck of every proxy after the start: only the ticks queue anything.
  return { ...await madeReady({ resyncTicks: resync, statusRecheckMs: [], ...opts }), resync };
}

describe('PodController: the periodic resync', () => {
  it('syncs again a key not synced within its period, and sets right what no event told', async () => {
    // A period of 0: every key was last synced before it began.
    const { host, provider, p, c, resync } = await readyWithResync({ resyncMs: 0 });
    const [lifecycle, status] = [await lifecycleRuns(), await statusRuns()];
    // The delegate changed, and no change was told (a notification lost).
    provider.pods.set(`${NS}/a`, { proxyUID: p.metadata!.uid!, terminating: false, phase: 'Running', status: { ...ready(), podIP: '10.1.0.6' } });
    resync.next();
    await eventually('the new IP', () => host.get(NS, 'a')!.status!.podIP === '10.1.0.6');
    await c.idle();
    assert.deepEqual([await lifecycleRuns() - lifecycle, await statusRuns() - status], [1, 1], 'each once (not again for its delegate)');
  });

  it('syncs a quiet key at every tick of its period, also one that comes a little early', async () => {
    let now = 0;
    const { c, resync } = await readyWithResync({ resyncMs: 1000, now: () => now });
    const runs = async () => [await lifecycleRuns(), await statusRuns()];
    const tick = async (at: number) => {
      now = at;
      const before = await runs();
      resync.next();
      await c.idle();
      return (await runs()).map((n, i) => n - before[i]!);
    };
    assert.deepEqual(await tick(500), [0, 0], 'synced half a period ago');
    assert.deepEqual(await tick(1000), [1, 1], 'a period after');
    assert.deepEqual(await tick(1990), [1, 1], 'the next tick, 10 ms early: synced by the last one, not since');
  });

  it('leaves out a key synced within its period, unless its proxy visibly differs from its delegate', async () => {
    const { host, provider, p, c, resync } = await readyWithResync({ resyncMs: 60_000 });
    const [lifecycle, status] = [await lifecycleRuns(), await statusRuns()];
    resync.next();
    await c.idle();
    assert.deepEqual([await lifecycleRuns() - lifecycle, await statusRuns() - status], [0, 0], 'synced moments ago: nothing to look at');
    // The delegate stopped being Ready, and no change was told: the proxy visibly differs from it.
    provider.pods.set(`${NS}/a`, { proxyUID: p.metadata!.uid!, terminating: false, phase: 'Running', status: ready('False') });
    resync.next();
    await eventually('the proxy NotReady', () => host.condition(NS, 'a', 'Ready')?.status === 'False');
    await c.idle();
    assert.deepEqual([await lifecycleRuns() - lifecycle, await statusRuns() - status], [0, 1], 'its status only');
  });
});

describe('PodController', () => {
  it('sets back a proxy status someone else changed (the node-lifecycle controller marking it NotReady)', async () => {
    const { host } = await madeReady();
    const marked = structuredClone(host.get(NS, 'a')!);
    marked.status!.conditions = marked.status!.conditions!.map((c) => c.type === 'Ready' ? { ...c, status: 'False', reason: 'NodeNotReady' } : c);
    host.put(marked);
    await eventually('Ready again', () => isReadyOnHost(host, 'a'));
  });

  it('queues no status check for the watch event of its own status write, nor for a delegate gone', async () => {
    const before = await statusRuns();
    const { host, provider, p, c } = await madeReady();
    assert.equal(host.statusPatches.length, 1);
    assert.equal(await statusRuns() - before, 1, 'the first sync wrote the status; its own watch event asked for no second look');
    provider.set(`${NS}/a`, { proxyUID: p.metadata!.uid!, terminating: false, phase: 'Running', status: { ...ready(), podIP: '10.1.0.6' } });
    await eventually('the new IP', () => host.get(NS, 'a')!.status!.podIP === '10.1.0.6');
    await c.idle();
    assert.equal(await statusRuns() - before, 2, 'one run for the delegate\'s change, none for the write it made');
    provider.lose(`${NS}/a`);
    await eventually('created again', () => provider.count('create') === 1);
    await c.idle();
    assert.equal(await statusRuns() - before, 2, 'a delegate gone has no status to mirror');
  });

  it('sets back another writer\'s change that a relist shows in one event with its own write before it', async () => {
    const { host, provider, p, c } = await madeReady();
    // The watch is down: clusterlet writes a change of the delegate's, then the node-lifecycle controller marks the
    // proxy NotReady; the relist brings both as one change, at the version of the second.
    host.dropEvents = true;
    provider.set(`${NS}/a`, { proxyUID: p.metadata!.uid!, terminating: false, phase: 'Running', status: { ...ready(), podIP: '10.1.0.6' } });
    await eventually('the IP written', () => host.get(NS, 'a')!.status!.podIP === '10.1.0.6');
    const marked = structuredClone(host.get(NS, 'a')!);
    marked.status!.conditions = marked.status!.conditions!.map((cd) => cd.type === 'Ready' ? { ...cd, status: 'False', reason: 'NodeNotReady' } : cd);
    const rv = host.put(marked).metadata!.resourceVersion;
    host.dropEvents = false;
    host.expireWatches();
    await eventually('the relist seen', () => c.proxies.get(`${NS}/a`)?.metadata?.resourceVersion === rv);
    await c.idle();
    // Set back by the check that change queued (not by the recheck of every proxy a few seconds after the start).
    assert.ok(isReadyOnHost(host, 'a'));
  });

  it('checks its own write\'s version again after a relist, which may fold another writer\'s earlier change into it', async () => {
    const { host, provider, p, c } = await madeReady();
    // The watch is down: another writer sets a reason on the proxy, then clusterlet writes a change of the delegate's
    // from its older view (no reason there to remove); the relist brings both as one change, at our write's version.
    host.dropEvents = true;
    const lost = structuredClone(host.get(NS, 'a')!);
    lost.status = { ...lost.status, reason: 'NodeLost', message: 'the node stopped answering' };
    host.put(lost);
    provider.set(`${NS}/a`, { proxyUID: p.metadata!.uid!, terminating: false, phase: 'Running', status: { ...ready(), podIP: '10.1.0.6' } });
    await eventually('the IP written', () => host.get(NS, 'a')!.status!.podIP === '10.1.0.6');
    const rv = host.get(NS, 'a')!.metadata!.resourceVersion;
    assert.equal(host.get(NS, 'a')!.status!.reason, 'NodeLost');
    host.dropEvents = false;
    host.expireWatches();
    await eventually('the relist seen', () => c.proxies.get(`${NS}/a`)?.metadata?.resourceVersion === rv);
    await c.idle();
    assert.equal(host.get(NS, 'a')!.status!.reason, undefined, 'the delegate has no reason: the check cleared it');
  });

  it('writes no status from an unreachable back end; resync$ brings every proxy back in line', async () => {
    const { host, provider } = await twoReady();
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

  it('marks every proxy NotReady when the back end stops answering, whoever sets it Ready meanwhile, until resync$', async () => {
    const { host, provider } = await twoReady();
    provider.reachable = false;
    provider.unreachables.next();
    await eventually('both NotReady while the back end does not answer', () => !isReadyOnHost(host, 'a') && !isReadyOnHost(host, 'b'));
    assert.equal(host.get(NS, 'a')!.status!.phase, 'Running', 'only the Ready condition changes');
    const set = structuredClone(host.get(NS, 'a')!);
    set.status!.conditions = set.status!.conditions!.map((c) => c.type === 'Ready' ? { ...c, status: 'True' } : c);
    host.put(set);
    await eventually('NotReady again after someone set it Ready', () => !isReadyOnHost(host, 'a'));
    provider.reachable = true;
    provider.resyncs.next();
    await eventually('both Ready again after resync$', () => isReadyOnHost(host, 'a') && isReadyOnHost(host, 'b'));
  });

  /** Proxy `a` running, Ready, 2 restarts so far, its delegate too; once synced. */
  async function runningWithRestarts(): Promise<{ host: FakeHost; provider: FakeProvider }> {
    const host = new FakeHost();
    const provider = new FakeProvider();
    const status = ready();
    status.containerStatuses![0].restartCount = 2;
    const p = host.put(proxy('a', { status }));
    provider.pods.set(`${NS}/a`, { proxyUID: p.metadata!.uid!, terminating: false, phase: 'Running', status });
    start(host, provider);
    await eventually('synced', () => provider.count('update') > 0);
    return { host, provider };
  }

  it('a delegate lost with restartPolicy Always is created again, carrying its restarts, with a DelegateLost event', async () => {
    const { host, provider } = await runningWithRestarts();
    provider.lose(`${NS}/a`);
    await eventually('created again', () => provider.count('create') === 1);
    assert.deepEqual(provider.calls.find((c) => c.op === 'create')!.arg, { restarts: { app: 3 } });
    await eventually('DelegateLost event', () => host.eventReasons().includes('DelegateLost'));
    assert.equal(host.get(NS, 'a')!.status!.phase, 'Running', 'the proxy never failed');
  });

  it('a lost delegate whose recreation keeps failing: the proxy stops showing Running and Ready at once, its restarts counted once', async () => {
    const { host, provider } = await runningWithRestarts();
    // The member namespace is gone, say: every creation fails.
    const gone = (): Error => new Error('namespaces "web" not found');
    provider.createErrors.push(gone(), gone(), gone(), gone());
    provider.lose(`${NS}/a`);
    await eventually('tried again', () => provider.count('create') >= 3);
    const shown = host.get(NS, 'a')!.status!;
    assert.equal(shown.phase, 'Running', 'a kubelet restarting its containers: Running');
    assert.equal(shown.conditions?.find((c) => c.type === 'Ready')?.status, 'False');
    const app = shown.containerStatuses?.[0];
    assert.deepEqual([app?.ready, app?.state?.waiting?.reason, app?.state?.running, app?.restartCount, app?.lastState?.terminated?.reason],
      [false, 'ContainerCreating', undefined, 3, 'DelegateLost'], 'kubectl shows ContainerCreating, 0/1, 3 restarts');
    assert.deepEqual(provider.calls.filter((c) => c.op === 'create').map((c) => c.arg),
      provider.calls.filter((c) => c.op === 'create').map(() => ({ restarts: { app: 3 } })), 'the loss counted once, whatever the retries');
    assert.deepEqual([...host.events.values()].filter((e) => e.reason === 'DelegateLost').map((e) => e.count ?? 1), [1],
      'one DelegateLost event, not one a retry');
  });

  it('a rejection that says when to try again (its member namespace being deleted) is tried then, without backoff', async () => {
    const host = new FakeHost();
    const provider = new FakeProvider();
    host.put(proxy('a'));
    const terminating = (): Error => new PodRejectedError('MemberNamespaceTerminating', 'member namespace web is being deleted', { retryAfterMs: 20 });
    provider.createErrors.push(...Array.from({ length: 6 }, terminating));
    start(host, provider);
    // With backoff (0.5 s doubling), the seventh try would come after half a minute.
    await eventually('created after six quick tries', () => provider.count('create') === 7 && provider.pods.has(`${NS}/a`));
    assert.equal(host.condition(NS, 'a', 'clusterlet.io/Offloaded')?.status, 'True');
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

  it('deletion: a delegate beginning to terminate and the events of the proxy\'s own removal queue no lifecycle sync', async () => {
    const { host, provider, p, c } = await madeReady();
    const before = await lifecycleRuns();
    host.put({ ...host.get(NS, 'a')!, metadata: { ...p.metadata, deletionTimestamp: new Date(), deletionGracePeriodSeconds: 30 } });
    await eventually('delegate deleted', () => provider.count('delete') === 1);
    await c.idle();
    assert.equal(await lifecycleRuns() - before, 1, 'the proxy\'s deletion: one run, which deletes the delegate');
    // The member marks the delegate terminating (its deletion's own event), later it is gone.
    provider.set(`${NS}/a`, { ...provider.pods.get(`${NS}/a`)!, terminating: true }, true);
    await c.idle();
    assert.equal(await lifecycleRuns() - before, 1, 'a delegate terminating asks nothing of the lifecycle');
    provider.lose(`${NS}/a`);
    await eventually('proxy removed', () => host.get(NS, 'a') === undefined);
    await eventually('the informer saw it go', () => c.proxies.get(`${NS}/a`) === undefined);
    await c.idle();
    assert.deepEqual(host.deletes, [{ key: `${NS}/a`, grace: 0 }]);
    assert.equal(await lifecycleRuns() - before, 2, 'the delegate gone: one run, which removes the proxy; its MODIFIED (grace 0) and DELETED none');
  });

  it('removes a proxy the host refused to delete once: the removal is tried again', async () => {
    const { host, provider, p, c } = await madeReady();
    host.failDeletes = 1;
    host.put({ ...host.get(NS, 'a')!, metadata: { ...p.metadata, deletionTimestamp: new Date(), deletionGracePeriodSeconds: 0 } });
    await eventually('delegate deleted', () => provider.count('delete') === 1);
    provider.lose(`${NS}/a`);
    await eventually('proxy removed, on the second try', () => host.get(NS, 'a') === undefined);
    await c.idle();
    assert.equal(host.deleteRequests, 2);
  });

  it('removes a proxy once: another sync before the watch shows it gone sends no second delete', async () => {
    const host = new FakeHost();
    const provider = new FakeProvider();
    const p = host.put(proxy('a', { status: ready() }));
    provider.pods.set(`${NS}/a`, { proxyUID: p.metadata!.uid!, terminating: false, phase: 'Running', status: ready() });
    const c = start(host, provider);
    await eventually('synced', () => provider.count('update') > 0);
    host.holdDeletes = true;
    host.put({ ...p, metadata: { ...p.metadata, deletionTimestamp: new Date(), deletionGracePeriodSeconds: 0 } });
    await eventually('delegate deleted', () => provider.count('delete') === 1);
    provider.lose(`${NS}/a`);
    await eventually('proxy removed', () => host.get(NS, 'a') === undefined);
    await c.idle();
    // The member says more about the pod (its events, a late change) while the host's watch still shows the proxy.
    provider.changes.next({ key: `${NS}/a`, lifecycle: true });
    await c.idle();
    assert.equal(host.deleteRequests, 1);
    host.releaseDeletes();
    await eventually('the informer saw it go', () => c.proxies.get(`${NS}/a`) === undefined);
    // A new pod of the same name is removed in its turn (it comes deleted: no delegate made for it in between).
    const q = proxy('a', { uid: 'uid-a2', status: ready() });
    host.put({ ...q, metadata: { ...q.metadata, deletionTimestamp: new Date(), deletionGracePeriodSeconds: 0 } });
    await eventually('the new proxy removed', () => host.get(NS, 'a') === undefined);
    assert.equal(host.deleteRequests, 2);
  });

  it('creates one delegate per bound proxy and shows the provider\'s notices as events on it', async () => {
    const host = new FakeHost();
    const provider = new FakeProvider();
    provider.notices = [{ type: 'Warning', reason: 'OptionalConfigMapNotFound', message: 'configmap "extra" not found' }];
    host.put(proxy('a'));
    const c = start(host, provider);
    await eventually('created', () => provider.count('create') === 1);
    await eventually('the notice as an event', () => host.eventReasons().includes('OptionalConfigMapNotFound'));
    await c.queue.idle();
    assert.equal(provider.count('create'), 1, 'created once');
  });

  it('brings a running delegate in line when the proxy changes (updatePod), not on its own status writes', async () => {
    const { host, provider, c, updates } = await runningAndSynced();
    // A status-only change is no business of the lifecycle.
    host.put({ ...host.get(NS, 'a')!, status: { ...ready(), message: 'someone wrote this' } });
    await eventually('status set back', () => host.get(NS, 'a')!.status!.message === undefined);
    await c.queue.idle();
    assert.equal(provider.count('update'), updates, 'a status change does not update the delegate');
    host.put({ ...host.get(NS, 'a')!, metadata: { ...host.get(NS, 'a')!.metadata, labels: { tier: 'gold' } } });
    await eventually('updated after a label change', () => provider.count('update') === updates + 1);
  });

  it('kubectl debug: an ephemeral container added to the proxy reaches updatePod; its status comes back to the proxy', async () => {
    const { host, provider, updates } = await runningAndSynced();
    // What the API server does on the ephemeralcontainers subresource: the spec changes, nothing else.
    const debugged = structuredClone(host.get(NS, 'a')!);
    debugged.spec!.ephemeralContainers = [{ name: 'debugger-x', image: 'busybox', targetContainerName: 'app' }];
    host.put(debugged);
    await eventually('the delegate brought in line', () => provider.count('update') === updates + 1);
    const dbg = { name: 'debugger-x', image: 'busybox', imageID: '', ready: false, restartCount: 0, state: { running: {} } };
    provider.set(`${NS}/a`, { ...provider.pods.get(`${NS}/a`)!, status: { ...ready(), ephemeralContainerStatuses: [dbg] } });
    await eventually('the ephemeral container\'s status on the proxy',
      () => host.get(NS, 'a')!.status!.ephemeralContainerStatuses?.[0]?.name === 'debugger-x');
    assert.deepEqual(host.get(NS, 'a')!.status!.ephemeralContainerStatuses, [dbg]);
  });

  it('a proxy force-deleted on the host (gone at once) has its delegate deleted', async () => {
    const host = new FakeHost();
    const provider = new FakeProvider();
    const p = host.put(proxy('a', { status: ready() }));
    provider.pods.set(`${NS}/a`, { proxyUID: p.metadata!.uid!, terminating: false, phase: 'Running', status: ready() });
    start(host, provider);
    await eventually('synced', () => provider.count('update') >= 1);
    await host.client().core.deleteNamespacedPod({ namespace: NS, name: 'a', gracePeriodSeconds: 0 });
    await eventually('delegate deleted', () => provider.count('delete') === 1);
    assert.equal(provider.calls.find((x) => x.op === 'delete')!.arg, undefined, 'with its own default grace');
  });

  it('a delegate of an earlier pod of the same name is replaced: deleted at once (grace 0), then created for the new proxy', async () => {
    const host = new FakeHost();
    const provider = new FakeProvider();
    host.put(proxy('web-0', { uid: 'uid-new' }));
    provider.pods.set(`${NS}/web-0`, { proxyUID: 'uid-old', terminating: false, phase: 'Running', status: ready() });
    start(host, provider);
    await eventually('old delegate deleted', () => provider.count('delete') === 1);
    assert.equal(provider.calls.find((x) => x.op === 'delete')!.arg, 0);
    assert.equal(provider.count('create'), 0, 'not created while the old one runs');
    provider.lose(`${NS}/web-0`);
    await eventually('created for the new proxy', () => provider.count('create') === 1);
    assert.equal(provider.pods.get(`${NS}/web-0`)!.proxyUID, 'uid-new');
  });

  it('never offloads a DaemonSet pod: Offloaded=False with the reason, and a Warning event', async () => {
    const host = new FakeHost();
    const provider = new FakeProvider();
    host.put(proxy('ds-a', { daemonSet: true }));
    const c = start(host, provider);
    await eventually('Offloaded=False', () => host.condition(NS, 'ds-a', 'clusterlet.io/Offloaded')?.reason === 'DaemonSetPodNotOffloaded');
    assert.ok(host.eventReasons().includes('DaemonSetPodNotOffloaded'));
    await c.queue.idle();
    assert.equal(provider.count('create'), 0);
  });

  it('collects orphans (delegates with no proxy) only once both caches have synced', async () => {
    const host = new FakeHost();
    const provider = new FakeProvider();
    provider.synced = false;
    provider.pods.set(`${NS}/orphan`, { proxyUID: 'uid-gone', terminating: false, phase: 'Running', status: ready() });
    const c = start(host, provider);
    // Lifecycle changes before the sync are seen but not acted on.
    provider.changes.next({ key: `${NS}/orphan`, lifecycle: true });
    await c.queue.idle();
    assert.equal(provider.count('delete'), 0, 'nothing judged on a half-synced view');
    provider.markSynced();
    await eventually('orphan deleted', () => provider.count('delete') === 1);
    assert.equal(provider.calls.find((x) => x.op === 'delete')!.key, `${NS}/orphan`);
  });

  it('a delegate lost with restartPolicy Never fails the proxy (DelegateLost) and nothing is created', async () => {
    const host = new FakeHost();
    const provider = new FakeProvider();
    const p = host.put(proxy('a', { restartPolicy: 'Never', status: ready() }));
    provider.pods.set(`${NS}/a`, { proxyUID: p.metadata!.uid!, terminating: false, phase: 'Running', status: ready() });
    const c = start(host, provider);
    await eventually('synced', () => provider.count('update') >= 1);
    provider.lose(`${NS}/a`);
    await eventually('proxy Failed', () => host.get(NS, 'a')!.status!.phase === 'Failed');
    assert.equal(host.get(NS, 'a')!.status!.reason, 'DelegateLost');
    assert.equal(host.get(NS, 'a')!.status!.containerStatuses![0].state!.terminated!.exitCode, 137);
    await eventually('DelegateLost event', () => host.eventReasons().includes('DelegateLost'));
    await c.queue.idle();
    assert.equal(provider.count('create'), 0);
  });

  it('a delegate appearing as created for its live proxy queues no lifecycle sync; for a proxy gone meanwhile, it goes', async () => {
    const host = new FakeHost();
    const provider = new FakeProvider();
    host.put(proxy('a'));
    const c = start(host, provider);
    await eventually('created', () => provider.count('create') === 1);
    await c.idle();
    const before = await lifecycleRuns();
    provider.changes.next({ key: `${NS}/a`, lifecycle: true, created: true });
    await c.idle();
    assert.equal(await lifecycleRuns() - before, 0, 'the sync that created it has had its answer');
    // The proxy goes while its delegate's create is under way: the delegate shows after the proxy's DELETED.
    const delegate = provider.pods.get(`${NS}/a`)!;
    provider.pods.delete(`${NS}/a`);
    await host.client().core.deleteNamespacedPod({ namespace: NS, name: 'a', gracePeriodSeconds: 0 });
    await eventually('the informer saw it go', () => c.proxies.get(`${NS}/a`) === undefined);
    await c.idle();
    provider.pods.set(`${NS}/a`, delegate);
    provider.changes.next({ key: `${NS}/a`, lifecycle: true, created: true });
    await eventually('the orphan deleted', () => provider.count('delete') === 1);
  });

  /** Proxy `a`, its delegate created but not shown by the provider (a member's watch behind), then the proxy deleted. */
  async function deletedUnshown(): Promise<{ host: FakeHost; provider: FakeProvider; c: PodController; delegate: FakePod }> {
    const host = new FakeHost();
    const provider = new FakeProvider();
    const p = host.put(proxy('a'));
    const c = start(host, provider, 2, { unshownRetryMs: 50 });
    await eventually('created', () => provider.count('create') === 1);
    await c.idle();
    const delegate = provider.pods.get(`${NS}/a`)!;
    provider.pods.delete(`${NS}/a`);
    provider.unshown.add(`${NS}/a`);
    host.put({ ...host.get(NS, 'a')!, metadata: { ...p.metadata, deletionTimestamp: new Date(), deletionGracePeriodSeconds: 30 } });
    await c.idle();
    assert.deepEqual(host.deletes, [], 'not removed while its delegate may run');
    return { host, provider, c, delegate };
  }

  it('a proxy deleted while its new delegate has not shown is removed only once that delegate is gone', async () => {
    const { host, provider, delegate } = await deletedUnshown();
    provider.unshown.delete(`${NS}/a`);
    provider.set(`${NS}/a`, delegate, true);
    await eventually('delegate deleted', () => provider.count('delete') === 1);
    provider.lose(`${NS}/a`);
    await eventually('proxy removed', () => host.get(NS, 'a') === undefined);
  });

  it('a proxy deleted while its new delegate has not shown is removed once the provider stops waiting for it', async () => {
    // The delegate was deleted during a gap of the member's watch, which a relist folded away: it never shows.
    const { host, provider } = await deletedUnshown();
    provider.unshown.delete(`${NS}/a`); // the provider's wait for it is over, with no change to tell
    await eventually('proxy removed', () => host.get(NS, 'a') === undefined);
  });

  it('sets Offloaded=True on creating the delegate even where the proxy read does not show its False yet', async () => {
    const host = new FakeHost();
    const provider = new FakeProvider();
    provider.createErrors.push(new PodRejectedError('MandatoryConfigMapNotFound', 'configmap "cfg" not found'));
    host.put(proxy('a'));
    // The host's watch lags: the proxy's status writes do not come back before the retry.
    host.dropEvents = true;
    const c = start(host, provider);
    await eventually('Offloaded=False', () => host.condition(NS, 'a', 'clusterlet.io/Offloaded')?.status === 'False');
    await eventually('created on retry', () => provider.count('create') === 2, 10_000);
    await c.idle();
    assert.equal(host.condition(NS, 'a', 'clusterlet.io/Offloaded')?.reason, 'DelegateCreated');
  });

  it('a rejection whose message alone changes with the member (NoMemberNodeFits\' free room) is not written again at each retry; a new reason is', async () => {
    const host = new FakeHost();
    const provider = new FakeProvider();
    const noFit = (free: number): PodRejectedError => new PodRejectedError('NoMemberNodeFits', `the most one has free is cpu ${free}`, { changing: true });
    provider.createErrors.push(noFit(15), noFit(14), noFit(13), new PodRejectedError('MandatoryConfigMapNotFound', 'configmap "cfg" not found'));
    host.put(proxy('a'));
    const c = start(host, provider);
    await eventually('the fourth try', () => provider.count('create') >= 4, 20_000);
    await eventually('the new reason written', () => host.condition(NS, 'a', 'clusterlet.io/Offloaded')?.reason === 'MandatoryConfigMapNotFound');
    await c.idle();
    const warnings = [...host.events.values()].filter((e) => e.reason === 'NoMemberNodeFits');
    assert.deepEqual(warnings.map((e) => [e.count ?? 1, e.message]), [[1, 'member eu rejected the pod: the most one has free is cpu 15 (retried with backoff)']],
      'one NoMemberNodeFits event, of the first message');
  });

  it('a back end not ready to judge the pod (PodNotReadyError: the member\'s nodes not listed yet): tried again after its delay, nothing shown', async () => {
    const host = new FakeHost();
    const provider = new FakeProvider();
    for (let i = 0; i < 4; i++) provider.createErrors.push(new PodNotReadyError('member eu: its nodes are not listed yet', 5));
    host.put(proxy('a'));
    const c = start(host, provider);
    await eventually('created once ready', () => provider.count('create') === 5, 10_000);
    await c.idle();
    assert.equal(host.condition(NS, 'a', 'clusterlet.io/Offloaded'), undefined, 'no condition: never refused, nor failing');
    assert.deepEqual([...host.events.values()].map((e) => e.reason), [], 'no event');
  });

  it('a transient rejection is retried; once created the proxy shows Offloaded=True (DelegateCreated)', async () => {
    const host = new FakeHost();
    const provider = new FakeProvider();
    provider.createErrors.push(new PodRejectedError('MandatoryConfigMapNotFound', 'configmap "cfg" not found'));
    host.put(proxy('a'));
    const c = start(host, provider);
    await eventually('Offloaded=False', () => host.condition(NS, 'a', 'clusterlet.io/Offloaded')?.status === 'False');
    await eventually('created on retry', () => provider.count('create') === 2, 10_000);
    // By the sync that created it: the delegate's appearance queues none (PodChange.lifecycle).
    await eventually('Offloaded=True', () => host.condition(NS, 'a', 'clusterlet.io/Offloaded')?.reason === 'DelegateCreated');
    await c.queue.idle();
    assert.equal(provider.count('create'), 2);
  });

  it('writes no metric for its member once stopped, not even as a sync under way at the stop ends', async () => {
    const host = new FakeHost();
    const provider = new GatedProvider();
    host.put(proxy('a'));
    const c = start(host, provider, 1, { member: 'removed-eu' });
    await eventually('a delegate create under way', () => provider.creates.count === 1);
    c.stop();
    await forgetMember('removed-eu');
    provider.creates.open();
    await c.idle();
    assert.equal(provider.count('create'), 1, 'the create went on');
    assert.doesNotMatch(await registry.metrics(), /member="removed-eu"/);
  });

  it('mirrors the back end\'s events onto the proxy, naming the member in the source', async () => {
    const { host, provider } = await created();
    provider.events.next({ namespace: NS, name: 'a', id: 'ev-1', event: { type: 'Normal', reason: 'Pulled', message: 'image pulled', count: 1,
      source: { component: 'kubelet' } } });
    await eventually('event on the proxy', () => host.eventReasons().includes('Pulled'));
    const ev = [...host.events.values()].find((e) => e.reason === 'Pulled')!;
    assert.equal(ev.involvedObject.uid, 'uid-a');
    assert.equal(ev.source?.component, 'kubelet (member eu)');
  });

  it('asks the host to send its status writes before other waiting requests, and its event writes after them', async () => {
    const { host, provider } = await created();
    provider.pods.set(`${NS}/a`, { ...provider.pods.get(`${NS}/a`)!, phase: 'Running', status: { ...ready(), phase: 'Running' } });
    provider.changes.next({ key: `${NS}/a`, lifecycle: false });
    provider.events.next({ namespace: NS, name: 'a', id: 'ev-1', event: { type: 'Normal', reason: 'Pulled', message: 'image pulled', count: 1,
      source: { component: 'kubelet' } } });
    await eventually('the proxy Ready, the event on it', () => isReadyOnHost(host, 'a') && host.eventReasons().includes('Pulled'));
    const asked = (method: string) => [...new Set(host.priorities.filter((x) => x.method === method).map((x) => x.priority))];
    assert.deepEqual(asked('patchNamespacedPodStatus'), ['high']);
    assert.deepEqual(asked('createNamespacedEvent'), ['low']);
  });

  it('shows the delegates it has as clusterlet_pods_offloaded when scraped, until it stops', async () => {
    const { provider } = await created();
    const shown = async (): Promise<number | undefined> => (await metrics.podsOffloaded.get()).values.find((v) => v.labels.member === 'eu')?.value;
    provider.pods.set(`${NS}/x`, { proxyUID: 'uid-x', terminating: false, phase: 'Running', status: ready() });
    const n = provider.podCount();
    assert.ok(n >= 1);
    assert.equal(await shown(), n, 'read at the scrape, with no sync since');
    stopControllers();
    provider.pods.set(`${NS}/y`, { proxyUID: 'uid-y', terminating: false, phase: 'Running', status: ready() });
    assert.equal(await shown(), n, 'stopped: the last value read stays');
    await forgetMember('eu');
    assert.equal(await shown(), undefined, 'dropped with the member');
  });

  it('counts each member event by what became of it: written, or skipped when its proxy is gone by its turn', async () => {
    const { host, provider } = await created();
    const count = async (result: string): Promise<number> => (await metrics.mirroredEvents.get()).values
      .find((v) => v.labels.member === 'eu' && v.labels.result === result)?.value ?? 0;
    const [written, skipped] = [await count('written'), await count('skipped')];
    provider.events.next({ namespace: NS, name: 'a', id: 'ev-1', event: { type: 'Normal', reason: 'Pulled', message: 'image pulled', count: 1,
      source: { component: 'kubelet' } } });
    provider.events.next({ namespace: NS, name: 'gone', id: 'ev-2', event: { type: 'Normal', reason: 'Killing', message: 'stopping', count: 1,
      source: { component: 'kubelet' } } });
    await eventually('both events counted', async () => (await count('written')) === written + 1 && (await count('skipped')) === skipped + 1);
    assert.deepEqual(host.eventReasons().filter((r) => r === 'Pulled' || r === 'Killing'), ['Pulled'], 'nothing written for the pod without a proxy');
  });

  it('mirrors an event the host first refused (away for a moment): the write is tried again', async () => {
    const { host, provider } = await created();
    host.failEventCreates = 1;
    provider.events.next({ namespace: NS, name: 'a', id: 'ev-1', event: { type: 'Warning', reason: 'FailedScheduling',
      message: '0/3 nodes are available', count: 1, source: { component: 'default-scheduler' } } });
    await eventually('event on the proxy', () => host.eventReasons().includes('FailedScheduling'), 5_000);
    assert.equal(host.failEventCreates, 0, 'the first write was refused');
  });

  /** Proxy `a` with a running delegate whose status write the host holds (slow): a status queue that does not drain. */
  async function statusWriteHeld(eventYieldMs: number): Promise<{ host: GatedHost; provider: FakeProvider }> {
    const host = new GatedHost();
    const provider = new FakeProvider();
    const p = host.put(proxy('a'));
    provider.pods.set(`${NS}/a`, { proxyUID: p.metadata!.uid!, terminating: false, phase: 'Running', status: { ...ready(), phase: 'Running' } });
    start(host, provider, 2, { eventYieldMs });
    await eventually('a status write under way (the host is slow)', () => host.patches.count > 0);
    provider.changes.next({ key: `${NS}/a`, lifecycle: false });
    return { host, provider };
  }

  const started = (i: number) => ({ namespace: NS, name: 'a', id: `ev-${i}`,
    event: { type: 'Normal', reason: `Started${i}`, message: 'started', count: 1, source: { component: 'kubelet' } } });

  it('a mirrored event gives way to the status writes under way, for a while only', async () => {
    const { host, provider } = await statusWriteHeld(100);
    provider.events.next(started(1));
    await eventually('the event on the proxy while the status write still waits', () => host.eventReasons().includes('Started1'), 2_000);
    assert.ok(host.patches.count > 0);
    host.patches.open();
    await eventually('the status written', () => isReadyOnHost(host, 'a'));
  });

  it('that while counts from each event\'s arrival: a burst waits it once, not once per round of event writers', async () => {
    const yieldMs = 1_000;
    const { host, provider } = await statusWriteHeld(yieldMs);
    const sent = performance.now();
    for (let i = 0; i < 12; i++) provider.events.next(started(i));
    await eventually('the 12 events on the proxy', () => host.eventReasons().filter((r) => r.startsWith('Started')).length === 12, 5_000);
    const took = performance.now() - sent;
    // Four writers: waiting on each writer's own turn, the third round would go after 3 × 1 s.
    assert.ok(took >= yieldMs - 50 && took < 2 * yieldMs, `the burst mirrored after ${took.toFixed(0)} ms`);
    assert.ok(host.patches.count > 0, 'the status write still waits');
  });

  it('does not write a Pending status that says nothing new, and writes the first informative one', async () => {
    const host = new FakeHost();
    const provider = new FakeProvider();
    const p = host.put(proxy('a'));
    provider.pods.set(`${NS}/a`, { proxyUID: p.metadata!.uid!, terminating: false, phase: 'Pending', status: { phase: 'Pending' } });
    const c = start(host, provider);
    await eventually('synced', () => provider.count('update') >= 1);
    await c.queue.idle();
    assert.equal(host.statusPatches.length, 0, 'nothing worth writing');
    provider.set(`${NS}/a`, { proxyUID: p.metadata!.uid!, terminating: false, phase: 'Pending', status: { phase: 'Pending',
      containerStatuses: [{ name: 'app', image: 'a', imageID: '', ready: false, restartCount: 0, state: { waiting: { reason: 'ErrImagePull' } } }] } });
    await eventually('ErrImagePull shown', () => host.get(NS, 'a')!.status!.containerStatuses?.[0].state?.waiting?.reason === 'ErrImagePull');
  });
});
