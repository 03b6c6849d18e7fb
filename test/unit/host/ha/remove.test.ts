// What the ClusterProfile members need of Leadership. remove: a member whose profile went away leaves the election
// (its Lease written free at once, nothing more written for it, the other members led as before). heldElsewhere:
// whether another replica leads a member, for a replica that has not set it up. Mocked time, as leadership.test.ts.
import { describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Lease } from '@kubernetes/client-node';
import { Leadership, memberLeaseName } from '../../../../src/host/ha/leadership.ts';
import { Informer } from '../../../../src/kube/informer.ts';
import { createLogger } from '../../../../src/log.ts';
import { FakeLeases } from '../../fakes/leases.ts';
import { advanceTo, flush, mockTime, T0 } from '../../fakes/clock.ts';

/** Replica `identity`'s Leadership over `leases` (start it). */
function replica(t: TestContext, leases: FakeLeases, identity: string): Leadership {
  const leadership = new Leadership(leases.api(identity), new Informer<V1Lease>(`leases-${identity}`, leases.source()),
    { namespace: leases.namespace, identity, leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 },
    createLogger('silent'), () => Date.now());
  t.after(() => leadership.stop());
  return leadership;
}

describe('Leadership.remove', () => {
  it('writes the removed member\'s Lease free and no more for it; the other member stays led', async (t) => {
    mockTime(t);
    const leases = new FakeLeases();
    const leadership = replica(t, leases, 'a');
    const [eu, us] = [leadership.add('eu', () => true), leadership.add('us', () => true)];
    leadership.start();
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

describe('Leadership.heldElsewhere', () => {
  it('true while another replica holds the member\'s Lease, false for its own, a free one, or one expired', async (t) => {
    mockTime(t);
    const leases = new FakeLeases();
    const a = replica(t, leases, 'a');
    a.add('eu', () => true);
    a.start();
    const b = replica(t, leases, 'b');
    b.start();
    await advanceTo(t, T0 + 3_000);
    assert.equal(leases.holder(memberLeaseName('eu')), 'a');
    assert.deepEqual([b.heldElsewhere('eu'), a.heldElsewhere('eu'), b.heldElsewhere('us')], [true, false, false]);
    a.stop(); // no release: the Lease expires 15 s after its last renewal
    await advanceTo(t, T0 + 12_000);
    assert.equal(b.heldElsewhere('eu'), true);
    await advanceTo(t, T0 + 20_000);
    assert.equal(b.heldElsewhere('eu'), false);
  });
});
