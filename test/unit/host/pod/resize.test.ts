// In-place resize, the host side: a resize of a proxy (its containers' resources, a new generation) reaches the
// provider's updatePod, what the provider reports of it (a refusal) becomes an event, and the resize's status
// (containers' resources, PodResizePending) comes back onto the proxy and goes again.
import { describe, it, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod, V1PodSpec, V1PodStatus, V1ResourceRequirements } from '@kubernetes/client-node';
import type { PodController } from '../../../../src/host/pod/controller.ts';
import { FakeHost } from '../../fakes/host.ts';
import { FakeProvider } from '../../fakes/provider.ts';
import { NODE, startController, stopControllers } from '../../fakes/podcontroller.ts';
import { eventually } from '../../fakes/wait.ts';

const NS = 'web';
const KEY = `${NS}/a`;

const resources = (cpu: string): V1ResourceRequirements => ({ requests: { cpu }, limits: { cpu } });

function proxy(cpu: string, generation: number): V1Pod {
  return {
    metadata: { name: 'a', namespace: NS, uid: 'uid-a', generation },
    spec: { nodeName: NODE, containers: [{ name: 'app', image: 'a', resources: resources(cpu) }] },
    status: running('100m'),
  };
}

/** A running pod whose container has `cpu`, as its kubelet reports it; with `conditions` added. */
function running(cpu: string, ...conditions: V1PodStatus['conditions'] & object): V1PodStatus {
  return {
    phase: 'Running', podIP: '10.1.0.5',
    conditions: [{ type: 'Ready', status: 'True' }, ...conditions],
    containerStatuses: [{ name: 'app', image: 'a', imageID: '', ready: true, restartCount: 0, state: { running: {} },
      resources: resources(cpu), allocatedResources: { cpu } }],
  };
}

const infeasible = { type: 'PodResizePending', status: 'True', reason: 'Infeasible', message: 'member eu refused the resize: too big' };

afterEach(stopControllers);

function start(): { host: FakeHost; provider: FakeProvider; controller: PodController } {
  const host = new FakeHost();
  const provider = new FakeProvider();
  host.put(proxy('100m', 1));
  provider.pods.set(KEY, { proxyUID: 'uid-a', terminating: false, phase: 'Running', status: running('100m') });
  return { host, provider, controller: startController(host, provider) };
}

const cpuOf = (spec: unknown): string | undefined => (spec as V1PodSpec).containers[0].resources?.requests?.cpu;

describe('PodController: in-place resize', () => {
  it('hands a resized proxy to updatePod and shows what the provider says of it as events', async () => {
    const { host, provider, controller } = start();
    await eventually('first sync', () => provider.count('update') >= 1);
    await controller.queue.idle();
    provider.updateNotices = [{ type: 'Warning', reason: 'ResizeInfeasible', message: 'Pod resize Infeasible: too big' }];
    host.put(proxy('33', 2));
    await eventually('updated with the new resources',
      () => provider.calls.some((c) => c.op === 'update' && cpuOf(c.arg) === '33'));
    await eventually('the Warning on the proxy', () => host.eventReasons().includes('ResizeInfeasible'));
    const event = [...host.events.values()].find((e) => e.reason === 'ResizeInfeasible')!;
    assert.deepEqual([event.type, event.message, event.involvedObject.name], ['Warning', 'Pod resize Infeasible: too big', 'a']);
  });

  it('writes the resize\'s status onto the proxy: resources, allocation, PodResizePending, and removes it once gone', async () => {
    const { host, provider } = start();
    provider.set(KEY, { proxyUID: 'uid-a', terminating: false, phase: 'Running', status: running('100m', infeasible) });
    await eventually('PodResizePending/Infeasible on the proxy', () => host.condition(NS, 'a', 'PodResizePending')?.reason === 'Infeasible');
    assert.equal(host.condition(NS, 'a', 'PodResizePending')?.message, infeasible.message);

    provider.set(KEY, { proxyUID: 'uid-a', terminating: false, phase: 'Running', status: running('300m') });
    await eventually('the new resources on the proxy',
      () => host.get(NS, 'a')?.status?.containerStatuses?.[0].allocatedResources?.cpu === '300m');
    const status = host.get(NS, 'a')!.status!;
    assert.deepEqual(status.containerStatuses![0].resources, resources('300m'));
    assert.equal(host.condition(NS, 'a', 'PodResizePending'), undefined, 'the refusal is over: the condition goes');
  });
});
