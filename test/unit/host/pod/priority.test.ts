// The order in which the pod controller's queues take their work when it waits: what the user waits for first (a
// pod becoming Ready, the deletion protocol), without a cluster. Workers are filled with requests held under way.
import { describe, it, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { GatedHost, GatedProvider } from '../../fakes/gated.ts';
import { NODE, startController as start, stopControllers } from '../../fakes/podcontroller.ts';
import { eventually, settle } from '../../fakes/wait.ts';

const NS = 'web';

const running = (ready: boolean, podIP = '10.1.0.5'): V1PodStatus => ({
  phase: 'Running', podIP, conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }],
});

function proxy(name: string, status: V1PodStatus = { phase: 'Pending' }): V1Pod {
  return { metadata: { name, namespace: NS, uid: `uid-${name}` }, spec: { nodeName: NODE, containers: [{ name: 'app', image: 'a' }] }, status };
}

/** Proxy `name` on the host with a delegate in the provider whose status is `status`. */
function offloaded(host: GatedHost, provider: GatedProvider, name: string, proxyStatus: V1PodStatus, status: V1PodStatus): V1Pod {
  const p = host.put(proxy(name, proxyStatus));
  provider.pods.set(`${NS}/${name}`, { proxyUID: p.metadata!.uid!, terminating: false, phase: status.phase, status });
  return p;
}

afterEach(stopControllers);

/**
 * Two status writes (x1 and x2 becoming Ready) hold both status workers of a controller with one lifecycle worker;
 * behind them, `change` changes p and r, whose proxies were in line with their delegates (Ready or not). Returns the
 * order in which the four statuses are written once the host answers.
 */
async function statusWriteOrder(ready: boolean, change: (host: GatedHost, provider: GatedProvider) => void): Promise<string[]> {
  const host = new GatedHost();
  const provider = new GatedProvider();
  for (const n of ['x1', 'x2']) offloaded(host, provider, n, running(false), running(true));
  for (const n of ['p', 'r']) offloaded(host, provider, n, running(ready), running(ready));
  start(host, provider, 1);
  await eventually('two status writes under way', () => host.patches.count === 2);
  change(host, provider);
  host.patches.open();
  await eventually('all four written', () => host.statusPatches.length === 4);
  return host.statusPatches.map((w) => w.key.slice(NS.length + 1));
}

describe('PodController priorities', () => {
  it('writes the status of a pod becoming Ready before status work queued ahead of it that changes nothing visible', async () => {
    const order = await statusWriteOrder(false, (_, provider) => {
      provider.set(`${NS}/p`, { ...provider.pods.get(`${NS}/p`)!, status: running(false, '10.1.0.6') });
      provider.set(`${NS}/r`, { ...provider.pods.get(`${NS}/r`)!, status: running(true) });
    });
    assert.deepEqual(order, ['x1', 'x2', 'r', 'p']);
  });

  it('sets back a proxy someone else marked NotReady before status work queued ahead of it that changes nothing visible', async () => {
    const order = await statusWriteOrder(true, (host, provider) => {
      provider.set(`${NS}/p`, { ...provider.pods.get(`${NS}/p`)!, status: running(true, '10.1.0.6') });
      // The node-lifecycle controller's mark.
      host.put({ ...host.get(NS, 'r')!, status: running(false) });
    });
    assert.deepEqual(order, ['x1', 'x2', 'r', 'p']);
  });

  it('mirrors a member event only once the status writes under way are done', async () => {
    const host = new GatedHost();
    const provider = new GatedProvider();
    offloaded(host, provider, 'a', running(false), running(false));
    const c = start(host, provider);
    await c.queue.idle();
    provider.set(`${NS}/a`, { ...provider.pods.get(`${NS}/a`)!, status: running(true) });
    await eventually('a status write under way', () => host.patches.count === 1);
    provider.events.next({ namespace: NS, name: 'a', id: 'ev-1', event: { type: 'Normal', reason: 'Started', message: 'started', count: 1 } });
    await settle();
    assert.deepEqual(host.eventReasons(), [], 'the event waits');
    host.patches.open();
    await eventually('the event on the proxy', () => host.eventReasons().includes('Started'));
    assert.equal(host.statusPatches.length, 1);
  });

  it('runs the deletion protocol at once while creations hold every worker, first step to last', async () => {
    const host = new GatedHost();
    const provider = new GatedProvider();
    const d = offloaded(host, provider, 'd', running(true), running(true));
    const c = start(host, provider, 1);
    await eventually('d synced', () => provider.count('update') > 0);
    await c.queue.idle();
    host.put(proxy('n1'));
    host.put(proxy('n2'));
    await eventually('the creation of n1 under way', () => provider.creates.count === 1);
    host.put({ ...d, metadata: { ...d.metadata, deletionTimestamp: new Date(), deletionGracePeriodSeconds: 30 } });
    await eventually('the delegate deleted', () => provider.count('delete') === 1);
    provider.lose(`${NS}/d`);
    await eventually('the proxy removed', () => host.get(NS, 'd') === undefined);
    assert.deepEqual([provider.count('create'), provider.creates.count], [0, 1], 'n1 still waits, n2 behind it');
    provider.creates.open();
    await eventually('both created', () => provider.count('create') === 2);
  });
});
