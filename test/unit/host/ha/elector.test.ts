// LeaseElector against an in-memory Lease API shared by several electors ("replicas"), on mocked time (client-go's
// timing: lease 15 s, renew deadline 10 s, retry 2 s): who takes a Lease and when, when a leader stops leading,
// what it writes (holder, times as MicroTimes, transitions, labels, annotations, owner), and its release.
import { describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Lease } from '@kubernetes/client-node';
import { LeaseElector, type ElectorOptions } from '../../../../src/host/ha/elector.ts';
import { microTime } from '../../../../src/forge/objects.ts';
import { createLogger } from '../../../../src/log.ts';
import { FakeLeases } from '../../fakes/leases.ts';
import { advanceTo, flush, mockTime, T0 } from '../../fakes/clock.ts';

const NAME = 'clusterlet-eu';
const LABELS = { 'clusterlet.io/leader-election': 'member' };
const TIMING = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };
const log = createLogger('silent');

interface Replica { elector: LeaseElector; changes: string[] }

/**
 * An elector of `identity` on NAME, started. Unless `watch` is false it sees each write of the Lease as a shared
 * watch would deliver it (at once); without it, it learns only from its own calls.
 */
function replica(t: TestContext, leases: FakeLeases, identity: string,
  { watch = true, ...opts }: Partial<ElectorOptions> & { watch?: boolean } = {}): Replica {
  const elector = new LeaseElector(NAME, leases.api(identity), {
    namespace: leases.namespace, identity, labels: LABELS, ...TIMING, want: () => true, now: () => Date.now(), ...opts,
  }, log);
  const changes: string[] = [];
  elector.onChange((change, reason) => changes.push(`${change}: ${reason}`));
  if (watch) {
    const sub = leases.watch(NAME).subscribe((lease) => elector.observe(lease));
    t.after(() => sub.unsubscribe());
  }
  elector.observe(leases.get(NAME));
  elector.start();
  t.after(() => elector.stop());
  return { elector, changes };
}

const writesBy = (leases: FakeLeases, by: string) => leases.writes.filter((w) => w.by === by);
const lastWrite = (leases: FakeLeases, by: string) => writesBy(leases, by).at(-1)!;

/** Another identity takes the Lease over the version it read (as an elector of its own would). */
async function takeAs(leases: FakeLeases, identity: string): Promise<void> {
  const lease = leases.get(NAME)!;
  const t = microTime(new Date(Date.now()));
  await leases.api(identity).replace({ ...lease, spec: { ...lease.spec, holderIdentity: identity, acquireTime: t, renewTime: t } as unknown as V1Lease['spec'] });
}

describe('LeaseElector', () => {
  it('creates a missing Lease and leads: holder, duration in seconds, labels, owner, annotations, MicroTimes', async (t) => {
    mockTime(t);
    const leases = new FakeLeases();
    const owner = { apiVersion: 'v1', kind: 'Pod', name: 'clusterlet-0', uid: 'u-0' };
    const a = replica(t, leases, 'a', { ownerReferences: [owner], annotations: () => ({ 'clusterlet.io/ready-members': 'eu' }) });
    await flush();
    assert.equal(a.elector.leading, true);
    assert.deepEqual(a.changes, ['acquired: acquired']);
    const [create] = leases.writes;
    assert.equal(leases.writes.length, 1);
    assert.equal(create.verb, 'create');
    assert.deepEqual(create.body.metadata, {
      name: NAME, namespace: 'clusterlet', labels: LABELS, ownerReferences: [owner],
      annotations: { 'clusterlet.io/ready-members': 'eu' },
    });
    const spec = create.body.spec as unknown as Record<string, unknown>;
    assert.deepEqual(spec, {
      holderIdentity: 'a', leaseDurationSeconds: 15, acquireTime: '2025-06-01T12:00:00.000000Z',
      renewTime: '2025-06-01T12:00:00.000000Z', leaseTransitions: 0,
    });
    assert.equal(leases.holder(NAME), 'a');
    assert.equal(a.elector.holder, 'a');
  });

  it('writes a lease duration of whole seconds, rounded up', async (t) => {
    mockTime(t);
    const leases = new FakeLeases();
    replica(t, leases, 'a', { leaseDurationMs: 1_500, renewDeadlineMs: 1_000, retryPeriodMs: 200 });
    await flush();
    assert.equal(leases.get(NAME)?.spec?.leaseDurationSeconds, 2);
  });

  it('renews every retry period with MicroTime strings, keeping acquireTime, labels and owner', async (t) => {
    mockTime(t);
    const leases = new FakeLeases();
    const owner = { apiVersion: 'v1', kind: 'Pod', name: 'clusterlet-0', uid: 'u-0' };
    const a = replica(t, leases, 'a', { ownerReferences: [owner] });
    await advanceTo(t, T0 + 10_000);
    assert.equal(a.elector.leading, true);
    // The create, then one renewal per retry period (not one per watch event of its own writes).
    assert.deepEqual(leases.writes.map((w) => [w.verb, w.at - T0]),
      [['create', 0], ['replace', 2_000], ['replace', 4_000], ['replace', 6_000], ['replace', 8_000], ['replace', 10_000]]);
    for (const w of leases.writes) {
      assert.equal(w.body.spec?.acquireTime, '2025-06-01T12:00:00.000000Z' as unknown as Date);
      assert.equal(w.body.spec?.renewTime, microTime(new Date(w.at)) as unknown as Date);
      assert.match(String(w.body.spec?.renewTime), /\.\d{6}Z$/);
    }
    const last = leases.get(NAME)!;
    assert.deepEqual(last.metadata?.labels, LABELS);
    assert.deepEqual(last.metadata?.ownerReferences, [owner]);
    assert.equal(last.spec?.leaseTransitions, 0);
  });

  it('writes the current annotations() with every renewal', async (t) => {
    mockTime(t);
    const leases = new FakeLeases();
    let ready = 'eu';
    replica(t, leases, 'a', { annotations: () => ({ 'clusterlet.io/ready-members': ready }) });
    await advanceTo(t, T0 + 1_000);
    ready = 'eu,us';
    await advanceTo(t, T0 + 2_000);
    assert.deepEqual(leases.writes.map((w) => w.body.metadata?.annotations?.['clusterlet.io/ready-members']), ['eu', 'eu,us']);
    assert.equal(leases.get(NAME)?.metadata?.annotations?.['clusterlet.io/ready-members'], 'eu,us');
  });

  it('two electors racing for a missing Lease: exactly one leads, and the other writes nothing more', async (t) => {
    mockTime(t);
    const leases = new FakeLeases();
    leases.hold();
    const a = replica(t, leases, 'a');
    const b = replica(t, leases, 'b');
    await flush();
    assert.deepEqual(leases.writes.map((w) => `${w.verb} by ${w.by}`), ['create by a', 'create by b']);
    leases.resume();
    for (let at = T0; at <= T0 + 40_000; at += 1_000) {
      await advanceTo(t, at);
      assert.deepEqual([a.elector.leading, b.elector.leading], [true, false], `at +${at - T0} ms`);
    }
    assert.equal(writesBy(leases, 'b').length, 1);
    assert.equal(b.elector.holder, 'a');
  });

  it('a follower takes the Lease once the leader stops renewing, a lease duration after it last saw it change', async (t) => {
    mockTime(t);
    const leases = new FakeLeases();
    const a = replica(t, leases, 'a');
    await flush();
    const b = replica(t, leases, 'b');
    await advanceTo(t, T0 + 31_000);
    assert.equal(writesBy(leases, 'b').length, 0, 'no write while the leader renews');
    a.elector.stop();
    const lastSeen = lastWrite(leases, 'a').at;
    assert.equal(lastSeen, T0 + 30_000);
    await advanceTo(t, lastSeen + TIMING.leaseDurationMs - 1);
    assert.equal(b.elector.leading, false);
    assert.equal(writesBy(leases, 'b').length, 0);
    await advanceTo(t, lastSeen + TIMING.leaseDurationMs + 100);
    assert.equal(b.elector.leading, true);
    assert.equal(leases.holder(NAME), 'b');
    assert.equal(leases.get(NAME)?.spec?.leaseTransitions, 1);
  });

  it('an elector started on a Lease its holder no longer renews takes it the moment it expires', async (t) => {
    mockTime(t);
    const leases = new FakeLeases();
    const z = replica(t, leases, 'z');
    await advanceTo(t, T0 + 1_000);
    z.elector.stop();
    const a = replica(t, leases, 'a');
    await advanceTo(t, T0 + 1_000 + TIMING.leaseDurationMs - 1);
    assert.equal(a.elector.leading, false);
    // Not at its next retry (T0 + 17 s): it saw the Lease at T0 + 1 s, and it expires at T0 + 16 s.
    await advanceTo(t, T0 + 1_000 + TIMING.leaseDurationMs + 100);
    assert.equal(a.elector.leading, true);
  });

  it('a released Lease (holderIdentity empty) is taken at once', async (t) => {
    mockTime(t);
    const leases = new FakeLeases();
    const a = replica(t, leases, 'a');
    await flush();
    const b = replica(t, leases, 'b');
    await advanceTo(t, T0 + 5_000);
    await a.elector.release('test');
    await flush();
    assert.equal(Date.now(), T0 + 5_000);
    const release = lastWrite(leases, 'a');
    assert.equal(release.body.spec?.holderIdentity, '');
    assert.equal(release.body.spec?.leaseDurationSeconds, 1);
    assert.match(String(release.body.spec?.renewTime), /\.\d{6}Z$/);
    assert.equal(b.elector.leading, true);
    assert.equal(leases.holder(NAME), 'b');
    assert.deepEqual(a.changes, ['acquired: acquired', 'released: test']);
    // And the one that released it does not take it back.
    await advanceTo(t, T0 + 20_000);
    assert.equal(a.elector.leading, false);
    assert.equal(leases.holder(NAME), 'b');
  });

  it('release() stops leading before its write is sent, and no attempt takes the Lease back while it is sent', async (t) => {
    mockTime(t);
    const leases = new FakeLeases();
    const a = replica(t, leases, 'a');
    await flush();
    let writesWhenStopped: number | undefined;
    a.elector.leading$.subscribe((leading) => { if (!leading && writesWhenStopped === undefined) writesWhenStopped = leases.writes.length; });
    leases.hold();
    const released = a.elector.release('stopping');
    assert.equal(a.elector.leading, false);
    assert.equal(writesWhenStopped, 1, 'leading$ turned false when only the create had been sent');
    await flush();
    assert.equal(leases.writes.length, 2, 'then the release was sent');
    assert.equal(leases.writes[1].body.spec?.holderIdentity, '');
    // Retry periods pass while the release is unanswered: no attempt writes.
    await advanceTo(t, T0 + 5_000);
    assert.equal(leases.writes.length, 2);
    leases.resume();
    await released;
    await flush();
    assert.equal(leases.holder(NAME), '');
    assert.equal(a.elector.leading, false);
    assert.equal(leases.writes.length, 2);
  });

  it('release() during a renewal still being sent waits for it and frees the Lease', async (t) => {
    mockTime(t);
    const leases = new FakeLeases();
    const a = replica(t, leases, 'a');
    await flush();
    leases.hold();
    await advanceTo(t, T0 + 2_000);
    assert.equal(leases.writes.length, 2, 'the renewal was sent');
    const released = a.elector.release('stopping');
    assert.equal(a.elector.leading, false);
    leases.resume();
    await released;
    await flush();
    assert.equal(leases.holder(NAME), '', 'the Lease was written free');
  });

  for (const [what, outage] of [
    ['fails', (l: FakeLeases) => l.fail()],
    ['does not answer', (l: FakeLeases) => l.hold()],
  ] as const) {
    it(`a leader whose host ${what} stops leading once the renew deadline has passed, not before`, async (t) => {
      mockTime(t);
      const leases = new FakeLeases();
      const a = replica(t, leases, 'a');
      await flush();
      assert.equal(a.elector.leading, true);
      outage(leases);
      await advanceTo(t, T0 + TIMING.renewDeadlineMs);
      assert.equal(a.elector.leading, true, 'still leading at the deadline');
      // Checked every retry period: it stops at the first check past the deadline, well before the Lease expires.
      await advanceTo(t, T0 + TIMING.renewDeadlineMs + TIMING.retryPeriodMs);
      assert.equal(a.elector.leading, false);
      assert.deepEqual(a.changes, ['acquired: acquired', 'lost: not renewed within the renew deadline (10000 ms)']);
    });
  }

  it('mayWrite(): while leading and renewed within the renew deadline on the clock of now, even before any timer has run', async (t) => {
    mockTime(t);
    const leases = new FakeLeases();
    const a = replica(t, leases, 'a');
    const b = replica(t, leases, 'b');
    await flush();
    assert.equal(a.elector.mayWrite(), true);
    assert.equal(b.elector.mayWrite(), false, 'a follower never');
    // The process is frozen past the deadline: the clock moves, no timer of its has run yet (a SIGSTOP, a long GC).
    t.mock.timers.setTime(T0 + TIMING.renewDeadlineMs + 1);
    assert.equal(a.elector.leading, true, 'it has not found out yet');
    assert.equal(a.elector.mayWrite(), false, 'but may not write');
  });

  it('a leader whose Lease another identity took stops leading at its next renewal (Conflict), without writing over it', async (t) => {
    mockTime(t);
    const leases = new FakeLeases();
    const a = replica(t, leases, 'a', { watch: false });
    await advanceTo(t, T0 + 2_500);
    await takeAs(leases, 'z');
    await advanceTo(t, T0 + 3_999);
    assert.equal(a.elector.leading, true, 'it has not heard of it yet');
    await advanceTo(t, T0 + 4_000);
    assert.equal(a.elector.leading, false);
    assert.deepEqual(a.changes, ['acquired: acquired', 'lost: taken by z']);
    assert.equal(leases.holder(NAME), 'z');
    await advanceTo(t, T0 + 12_000);
    assert.equal(leases.holder(NAME), 'z');
    assert.equal(writesBy(leases, 'a').length, 3, 'create, a renewal, the renewal refused; then nothing');
  });

  it('a leader that sees a newer version of its Lease held by another identity stops leading at once', async (t) => {
    mockTime(t);
    const leases = new FakeLeases();
    const a = replica(t, leases, 'a');
    await advanceTo(t, T0 + 2_500);
    const writes = leases.writes.length;
    await takeAs(leases, 'z');
    await flush();
    assert.equal(Date.now(), T0 + 2_500);
    assert.equal(a.elector.leading, false);
    assert.deepEqual(a.changes, ['acquired: acquired', 'lost: taken by z']);
    assert.equal(leases.writes.length, writes + 1, 'only the taker wrote');
  });

  it('an older version held by another, delivered late by the watch, does not make a leader give up', async (t) => {
    mockTime(t);
    const leases = new FakeLeases();
    const z = replica(t, leases, 'z');
    await flush();
    const zs = leases.get(NAME)!;
    z.elector.stop();
    const a = replica(t, leases, 'a');
    await advanceTo(t, T0 + TIMING.leaseDurationMs + TIMING.retryPeriodMs);
    assert.equal(a.elector.leading, true);
    a.elector.observe(zs);
    await advanceTo(t, T0 + TIMING.leaseDurationMs + 3 * TIMING.retryPeriodMs);
    assert.equal(a.elector.leading, true);
    assert.equal(leases.holder(NAME), 'a');
    assert.deepEqual(a.changes, ['acquired: acquired']);
  });

  it('the same identity restarted takes its own Lease back at once, keeping acquireTime and leaseTransitions', async (t) => {
    mockTime(t);
    const leases = new FakeLeases();
    const a = replica(t, leases, 'a');
    await advanceTo(t, T0 + 4_000);
    a.elector.stop();
    const before = leases.get(NAME)!;
    const again = replica(t, leases, 'a');
    await flush();
    assert.equal(Date.now(), T0 + 4_000);
    assert.equal(again.elector.leading, true);
    const after = leases.get(NAME)!;
    assert.equal(after.spec?.holderIdentity, 'a');
    assert.deepEqual(after.spec?.acquireTime, before.spec?.acquireTime);
    assert.equal(after.spec?.leaseTransitions, 0);
  });

  it('leaseTransitions counts changes of holder only', async (t) => {
    mockTime(t);
    const leases = new FakeLeases();
    const transitions = () => leases.get(NAME)?.spec?.leaseTransitions;
    const a = replica(t, leases, 'a');
    await advanceTo(t, T0 + 6_000);
    assert.equal(transitions(), 0, 'created, renewed');
    const b = replica(t, leases, 'b');
    await a.elector.release('hand-over');
    await flush();
    assert.equal(leases.holder(NAME), 'b');
    assert.equal(transitions(), 1, 'handed over a → b');
    await advanceTo(t, T0 + 12_000);
    assert.equal(transitions(), 1, 'renewed by b');
    b.elector.stop();
    const a2 = replica(t, leases, 'a');
    await advanceTo(t, T0 + 30_000);
    assert.equal(a2.elector.leading, true);
    assert.equal(transitions(), 2, 'b expired, taken by a');
    a2.elector.stop();
    const a3 = replica(t, leases, 'a');
    await flush();
    assert.equal(a3.elector.leading, true);
    assert.equal(transitions(), 2, 'a restarted');
  });

  it('takes a Lease only when want() allows it', async (t) => {
    mockTime(t);
    const leases = new FakeLeases();
    let want = false;
    const a = replica(t, leases, 'a', { want: () => want });
    await advanceTo(t, T0 + 4_000);
    assert.equal(leases.writes.length, 0);
    want = true;
    await advanceTo(t, T0 + 6_000);
    assert.equal(a.elector.leading, true);
  });
});
