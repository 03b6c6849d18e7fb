// Leadership.remove: a member whose ClusterProfile went away leaves the election: its Lease is written free at once,
// nothing more is written for it, and the other members are led as before. Mocked time, as leadership.test.ts.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Lease } from '@kubernetes/client-node';
import { Leadership, memberLeaseName } from '../../../../src/host/ha/leadership.ts';
import { Informer } from '../../../../src/kube/informer.ts';
import { createLogger } from '../../../../src/log.ts';
import { FakeLeases } from '../../fakes/leases.ts';
import { advanceTo, flush, mockTime, T0 } from '../../fakes/clock.ts';

describe('Leadership.remove', () => {
  it('writes the removed member\'s Lease free and no more for it; the other member stays led', async (t) => {
    mockTime(t);
    const leases = new FakeLeases();
    const leadership = new Leadership(leases.api('a'), new Informer<V1Lease>('leases', leases.source()),
      { namespace: leases.namespace, identity: 'a', leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 },
      createLogger('silent'), () => Date.now());
    const [eu, us] = [leadership.add('eu', () => true), leadership.add('us', () => true)];
    leadership.start();
    t.after(() => leadership.stop());
    await advanceTo(t, T0 + 5_000);
    assert.ok(eu.leading && us.leading);
    const changes: string[] = [];
    eu.onChange((c) => changes.push(c));

    await leadership.remove('eu');
    await flush();
    assert.equal(eu.leading, false);
    assert.deepEqual(changes, ['released']);
    assert.equal(leases.holder(memberLeaseName('eu')), '');
    const from = leases.writes.length;
    await advanceTo(t, T0 + 40_000);
    assert.deepEqual(leases.writes.slice(from).filter((w) => w.name === memberLeaseName('eu')), [], 'nothing written for eu after');
    assert.ok(us.leading, 'us is still led');
    assert.equal(leases.holder(memberLeaseName('us')), 'a');
    await leadership.remove('eu'); // a second time: nothing to do
  });
});
