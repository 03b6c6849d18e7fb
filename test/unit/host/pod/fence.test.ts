// Writes the replica's fence refuses (it cannot be sure it still leads the member: a late Lease renewal) are not
// failures of the pod: the sync runs again a second later, without backoff and without OffloadFailing.
import { describe, it, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { KubeError } from '../../../../src/kube/errors.ts';
import { FakeHost } from '../../fakes/host.ts';
import { FakeProvider } from '../../fakes/provider.ts';
import { NODE, startController as start, stopControllers } from '../../fakes/podcontroller.ts';
import { advanceTo, flush, mockTime, T0 } from '../../fakes/clock.ts';

const NS = 'web';
const proxy = (name: string): V1Pod => ({
  metadata: { name, namespace: NS, uid: `uid-${name}` },
  spec: { nodeName: NODE, containers: [{ name: 'app', image: 'a' }] },
  status: { phase: 'Pending' },
});
const refused = (): KubeError => new KubeError('Unavailable', 0, 'NotLeader', 'POST /api/v1/namespaces/web/pods not sent: not renewed');

/** A FakeHost whose fence refuses the first `refusals` status patches; counts every attempt. */
class RefusingHost extends FakeHost {
  refusals = 0;
  attempts = 0;
  override beforeStatusPatch = async (): Promise<void> => {
    this.attempts++;
    if (this.refusals-- > 0) throw refused();
  };
}

/** What `count()` says at each of `times` (ms after T0). */
async function countsAt(t: Parameters<typeof mockTime>[0], times: number[], count: () => number): Promise<number[]> {
  const out: number[] = [];
  for (const at of times) {
    await advanceTo(t, T0 + at);
    out.push(count());
  }
  return out;
}

afterEach(stopControllers);

describe('PodController and the fence', () => {
  it('a creation the fence refused runs again each second until it is let through, never counted as a failure', async (t) => {
    mockTime(t);
    const host = new FakeHost();
    const provider = new FakeProvider();
    provider.createErrors.push(refused(), refused(), refused());
    host.put(proxy('a'));
    const c = start(host, provider);
    await flush();
    assert.deepEqual(await countsAt(t, [0, 999, 1000, 2000, 3000], () => provider.count('create')), [1, 1, 2, 3, 4]);
    assert.ok(provider.pods.has(`${NS}/a`), 'created once let through');
    assert.equal(c.queue.failures(`${NS}/a`), 0);
    assert.equal(host.condition(NS, 'a', 'clusterlet.io/Offloaded'), undefined, 'no OffloadFailing');
  });

  it('so is a status write', async (t) => {
    mockTime(t);
    const host = new RefusingHost();
    const provider = new FakeProvider();
    host.refusals = 2;
    const p = host.put(proxy('a'));
    provider.pods.set(`${NS}/a`, { proxyUID: p.metadata!.uid!, terminating: false, phase: 'Running', status: { phase: 'Running' } });
    start(host, provider);
    await flush();
    assert.deepEqual(await countsAt(t, [0, 999, 1000, 2000], () => host.attempts), [1, 1, 2, 3]);
    assert.equal(host.get(NS, 'a')!.status!.phase, 'Running');
  });
});
