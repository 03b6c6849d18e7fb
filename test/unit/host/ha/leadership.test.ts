// Leadership (one elector per member plus a presence Lease per replica) with two or three replicas in one process,
// sharing an in-memory Lease API whose writes every replica's informer sees at once; mocked time (lease 15 s,
// renew deadline 10 s, retry 2 s). Who leads which member, how members are spread and handed over.
import { describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Lease } from '@kubernetes/client-node';
import { Leadership, memberLeaseName, replicaLeaseName } from '../../../../src/host/ha/leadership.ts';
import { LeaseElector } from '../../../../src/host/ha/elector.ts';
import { Informer } from '../../../../src/kube/informer.ts';
import { READY_MEMBERS_ANNOTATION } from '../../../../src/forge/keys.ts';
import { createLogger } from '../../../../src/log.ts';
import { FakeLeases } from '../../fakes/leases.ts';
import { advanceTo, flush, mockTime, T0 } from '../../fakes/clock.ts';

const TIMING = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };
const log = createLogger('silent');
const ready = () => true;
const notReady = () => false;

interface Replica {
  leadership: Leadership;
  electors: Map<string, LeaseElector>;
  /** The members this replica leads, sorted. */
  leads(): string[];
}

/** A replica `identity` electing a leader for each of `members` (its readiness for it), started. */
function replica(t: TestContext, leases: FakeLeases, identity: string, members: Record<string, () => boolean>): Replica {
  const informer = new Informer<V1Lease>(`leases-${identity}`, leases.source());
  const leadership = new Leadership(leases.api(identity), informer, { namespace: leases.namespace, identity, ...TIMING },
    log, () => Date.now());
  const electors = new Map(Object.entries(members).map(([member, r]) => [member, leadership.add(member, r)]));
  leadership.start();
  t.after(() => leadership.stop());
  return { leadership, electors, leads: () => [...electors].filter(([, e]) => e.leading).map(([m]) => m).sort() };
}

/** Replicas a and b of members eu and us, b started 3 s after a, at T0 + 10 s: each leads one. */
async function spreadOverTwo(t: TestContext, leases: FakeLeases): Promise<{ a: Replica; b: Replica }> {
  const a = replica(t, leases, 'a', { eu: ready, us: ready });
  await advanceTo(t, T0 + 3_000);
  const b = replica(t, leases, 'b', { eu: ready, us: ready });
  await advanceTo(t, T0 + 10_000);
  assert.deepEqual([a.leads().length, b.leads().length], [1, 1]);
  return { a, b };
}

/** Writes by `by` since `from` (an index in leases.writes) that named a holder (acquired or renewed, not released). */
const holdingWrites = (leases: FakeLeases, by: string, from = 0) =>
  leases.writes.slice(from).filter((w) => w.by === by && w.body.spec?.holderIdentity);

describe('Leadership', () => {
  it('one member, two replicas: exactly one leads it, always the same', async (t) => {
    mockTime(t);
    const leases = new FakeLeases();
    const a = replica(t, leases, 'a', { eu: ready });
    const b = replica(t, leases, 'b', { eu: ready });
    await flush();
    const leader = a.leads().length ? a : b;
    for (let at = T0; at <= T0 + 40_000; at += 1_000) {
      await advanceTo(t, at);
      assert.deepEqual([a.leads(), b.leads()], leader === a ? [['eu'], []] : [[], ['eu']], `at +${at - T0} ms`);
    }
    assert.equal(a.leadership.replicas(), 2);
    assert.equal(b.leadership.replicas(), 2);
  });

  it('two members, two replicas started together: each leads one within a retry period or two, then keeps it', async (t) => {
    mockTime(t);
    const leases = new FakeLeases();
    const a = replica(t, leases, 'a', { eu: ready, us: ready });
    const b = replica(t, leases, 'b', { eu: ready, us: ready });
    await advanceTo(t, T0 + 2 * TIMING.retryPeriodMs + 100);
    assert.equal(a.leads().length, 1);
    assert.equal(b.leads().length, 1);
    const spread = [a.leads(), b.leads()];
    const changes = leases.writes.filter((w) => !w.body.spec?.holderIdentity).length;
    await advanceTo(t, T0 + 60_000);
    assert.deepEqual([a.leads(), b.leads()], spread, 'no flapping');
    assert.equal(leases.writes.filter((w) => !w.body.spec?.holderIdentity).length, changes, 'no more releases');
  });

  it('a replica that sees another live replica takes only its share of free members at once, not all in one tick', async (t) => {
    mockTime(t);
    const leases = new FakeLeases();
    // b is live (its presence Lease is renewed) but not ready for any member: a alone can lead them.
    replica(t, leases, 'b', { eu: notReady, us: notReady });
    await flush();
    const a = replica(t, leases, 'a', { eu: ready, us: ready });
    await flush();
    assert.equal(a.leads().length, 1, 'its share of 2 members over 2 live replicas');
    // Nobody else takes the other: a takes it too once it has been free for two retry periods.
    await advanceTo(t, T0 + 3 * TIMING.retryPeriodMs);
    assert.deepEqual(a.leads(), ['eu', 'us']);
  });

  it('a replica leading both members gives one to a replica that comes and is ready for it', async (t) => {
    mockTime(t);
    const leases = new FakeLeases();
    const a = replica(t, leases, 'a', { eu: ready, us: ready });
    await advanceTo(t, T0 + 5_000);
    assert.deepEqual(a.leads(), ['eu', 'us']);
    const b = replica(t, leases, 'b', { eu: notReady, us: ready });
    await flush();
    assert.equal(leases.get(replicaLeaseName('b'))?.metadata?.annotations?.[READY_MEMBERS_ANNOTATION], 'us');
    await advanceTo(t, T0 + 5_000 + 2 * TIMING.retryPeriodMs);
    assert.deepEqual(a.leads(), ['eu']);
    assert.deepEqual(b.leads(), ['us']);
    assert.equal(leases.holder(memberLeaseName('us')), 'b');
  });

  it('a replica leading both members never gives one to a replica not ready for it, until it is', async (t) => {
    mockTime(t);
    const leases = new FakeLeases();
    const a = replica(t, leases, 'a', { eu: ready, us: ready });
    await advanceTo(t, T0 + 5_000);
    let bReady = false;
    const b = replica(t, leases, 'b', { eu: notReady, us: () => bReady });
    await advanceTo(t, T0 + 60_000);
    assert.equal(a.leadership.replicas(), 2);
    assert.deepEqual(a.leads(), ['eu', 'us']);
    assert.deepEqual(b.leads(), []);
    assert.equal(leases.writes.filter((w) => !w.body.spec?.holderIdentity).length, 0, 'nothing released');
    // Ready now: announced with its next presence renewal, given at the next rebalance.
    bReady = true;
    await advanceTo(t, T0 + 60_000 + 2 * TIMING.retryPeriodMs);
    assert.deepEqual(a.leads(), ['eu']);
    assert.deepEqual(b.leads(), ['us']);
  });

  it('gives members back at most one per lease duration, so a spread never flaps', async (t) => {
    mockTime(t);
    const leases = new FakeLeases();
    const members = { m1: ready, m2: ready, m3: ready, m4: ready };
    const a = replica(t, leases, 'a', members);
    await advanceTo(t, T0 + 3_000);
    assert.equal(a.leads().length, 4);
    const b = replica(t, leases, 'b', members);
    const released = () => leases.writes.filter((w) => w.by === 'a' && w.name.startsWith('clusterlet-m') && !w.body.spec?.holderIdentity);
    await advanceTo(t, T0 + 3_000 + 2 * TIMING.retryPeriodMs);
    assert.equal(released().length, 1);
    const first = released()[0].at;
    assert.deepEqual([a.leads().length, b.leads().length], [3, 1]);
    await advanceTo(t, first + TIMING.leaseDurationMs - 1);
    assert.deepEqual([a.leads().length, b.leads().length], [3, 1], 'one release per lease duration');
    await advanceTo(t, first + TIMING.leaseDurationMs + TIMING.retryPeriodMs);
    assert.deepEqual([a.leads().length, b.leads().length], [2, 2]);
    await advanceTo(t, first + 4 * TIMING.leaseDurationMs);
    assert.deepEqual([a.leads().length, b.leads().length], [2, 2]);
    assert.equal(released().length, 2);
  });

  it('a member Lease left free for two retry periods is taken even by a replica at its share', async (t) => {
    mockTime(t);
    const leases = new FakeLeases();
    // z leads us (z is no replica); c is a live replica ready for no member: a's share is ceil(2 / 2) = 1.
    const z = new LeaseElector(memberLeaseName('us'), leases.api('z'), {
      namespace: leases.namespace, identity: 'z', labels: { 'clusterlet.io/leader-election': 'member' }, ...TIMING,
      want: ready, now: () => Date.now(),
    }, log);
    z.start();
    t.after(() => z.stop());
    replica(t, leases, 'c', {});
    await flush();
    const a = replica(t, leases, 'a', { eu: ready, us: ready });
    await advanceTo(t, T0 + 5_000);
    assert.equal(a.leadership.share(), 1);
    assert.deepEqual(a.leads(), ['eu']);
    await z.release('gone');
    z.stop();
    const freed = Date.now();
    await advanceTo(t, freed + 2 * TIMING.retryPeriodMs - 1);
    assert.deepEqual(a.leads(), ['eu'], 'at its share, it leaves a free Lease to a replica under its share for a while');
    assert.equal(leases.holder(memberLeaseName('us')), '');
    await advanceTo(t, freed + 3 * TIMING.retryPeriodMs);
    assert.deepEqual(a.leads(), ['eu', 'us']);
  });

  it('replicas() counts live presence Leases only: not an expired one, not a released one', async (t) => {
    mockTime(t);
    const leases = new FakeLeases();
    const a = replica(t, leases, 'a', { eu: ready });
    const b = replica(t, leases, 'b', { eu: ready });
    await advanceTo(t, T0 + 5_000);
    assert.equal(a.leadership.replicas(), 2);
    b.leadership.stop();
    const lastSeen = leases.writes.filter((w) => w.name === replicaLeaseName('b')).at(-1)!.at;
    await advanceTo(t, lastSeen + TIMING.leaseDurationMs - 1);
    assert.equal(a.leadership.replicas(), 2);
    await advanceTo(t, lastSeen + TIMING.leaseDurationMs);
    assert.equal(a.leadership.replicas(), 1, 'expired');
    const c = replica(t, leases, 'c', { eu: ready });
    await flush();
    assert.equal(a.leadership.replicas(), 2);
    await c.leadership.release();
    await flush();
    assert.equal(a.leadership.replicas(), 1, 'released');
  });

  it('release() frees the presence and member Leases, and the other replica takes over at once', async (t) => {
    mockTime(t);
    const leases = new FakeLeases();
    const { a, b } = await spreadOverTwo(t, leases);
    const from = leases.writes.length;
    await a.leadership.release();
    await flush();
    assert.equal(Date.now(), T0 + 10_000);
    assert.deepEqual(a.leads(), []);
    assert.deepEqual(b.leads(), ['eu', 'us']);
    assert.equal(leases.holder(replicaLeaseName('a')), '');
    assert.equal(b.leadership.replicas(), 1);
    assert.deepEqual(holdingWrites(leases, 'a', from), [], 'a wrote only releases');
    await advanceTo(t, T0 + 40_000);
    assert.deepEqual(b.leads(), ['eu', 'us']);
    assert.equal(leases.writes.slice(from).filter((w) => w.by === 'a').length, 2,
      'a released its member and its presence, and wrote nothing after');
  });

  it('release() takes back no Lease while another of its releases is still being written', async (t) => {
    mockTime(t);
    const leases = new FakeLeases();
    const a = replica(t, leases, 'a', { eu: ready, us: ready });
    await advanceTo(t, T0 + 3_000);
    assert.deepEqual(a.leads(), ['eu', 'us']);
    const from = leases.writes.length;
    leases.hold(memberLeaseName('us'));
    const released = a.leadership.release();
    await advanceTo(t, T0 + 3_000 + 3 * TIMING.retryPeriodMs);
    leases.resume();
    await released;
    await flush();
    assert.deepEqual(holdingWrites(leases, 'a', from), []);
    for (const name of [memberLeaseName('eu'), memberLeaseName('us'), replicaLeaseName('a')]) assert.equal(leases.holder(name), '', name);
  });

  it('stop() writes nothing; the other replica takes over once the Leases expire', async (t) => {
    mockTime(t);
    const leases = new FakeLeases();
    const { a, b } = await spreadOverTwo(t, leases);
    const writes = leases.writes.length;
    const lastByA = leases.writes.filter((w) => w.by === 'a').at(-1)!.at;
    a.leadership.stop();
    assert.deepEqual(a.leads(), []);
    await flush();
    assert.equal(leases.writes.length, writes, 'stop() wrote nothing');
    await advanceTo(t, lastByA + TIMING.leaseDurationMs + TIMING.retryPeriodMs);
    assert.deepEqual(b.leads(), ['eu', 'us']);
    assert.equal(leases.writes.filter((w) => w.by === 'a').at(-1)!.at, lastByA, 'nor anything after');
  });
});
