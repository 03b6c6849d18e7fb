import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { KubeError } from '../../../../src/kube/errors.ts';
import { conditionsWith, memberVerdict, ProfileReconciler } from '../../../../src/host/profiles/reconciler.ts';
import { createLogger } from '../../../../src/log.ts';
import { FakeMembers, FakeProfileApi, NS, SOURCE, profile } from '../../fakes/profiles.ts';
import { eventually, settle } from '../../fakes/wait.ts';

const silent = createLogger('silent');
let stops: (() => void)[] = [];
afterEach(() => { for (const s of stops.splice(0)) s(); });

/** A started reconciler over a fake watch (listed with `initial`) and a fake member set. */
function setup(initial = [profile('eu')], members = new FakeMembers()) {
  const api = new FakeProfileApi();
  const r = new ProfileReconciler(api, members, SOURCE, silent, { statusPeriodMs: 20, now: () => new Date('2026-11-23T10:00:00Z') });
  r.start();
  stops.push(() => r.stop());
  api.events.next({ type: 'SYNC', items: initial });
  return { api, members, r };
}

describe('ProfileReconciler', () => {
  it('starts a member per listed profile, named after it, through the manager; the profile says Starting', async () => {
    const { api, members, r } = setup([profile('eu'), profile('us')]);
    await eventually('both members added', () => members.running.size === 2);
    assert.ok(r.synced);
    assert.deepEqual(members.log.sort(), ['add eu clusterlet-eu', 'add us clusterlet-us']);
    const eu = members.running.get('eu')!;
    assert.deepEqual(eu.config.clusterProfile, { namespace: NS, name: 'eu' });
    assert.equal(eu.config.qps, SOURCE.qps);
    assert.equal(eu.source?.name, `ClusterProfile ${NS}/eu`);
    await eventually('condition written', () => api.offloading('eu') !== undefined);
    assert.equal(api.offloading('eu')!.status, 'Unknown');
    assert.equal(api.offloading('eu')!.reason, 'Starting');
    // The cluster manager's own condition is kept.
    assert.ok(api.patches.at(-1)!.conditions.some((c) => c.type === 'ControlPlaneHealthy'));
  });

  it('says Offloading once this replica leads the running member, and MemberUnreachable when its API server does not answer', async () => {
    const { api, members } = setup();
    await eventually('member added', () => members.has('eu'));
    members.running.get('eu')!.state = { phase: 'running', leading: true, reachable: true, nodeName: 'clusterlet-eu', replica: 'r1' };
    await eventually('Offloading', () => api.offloading('eu')?.reason === 'Offloading');
    assert.equal(api.offloading('eu')!.status, 'True');
    assert.match(api.offloading('eu')!.message, /clusterlet-eu.*replica r1/);
    members.running.get('eu')!.state = { phase: 'running', leading: true, reachable: false, reason: 'connection refused',
      nodeName: 'clusterlet-eu' };
    await eventually('MemberUnreachable', () => api.offloading('eu')?.reason === 'MemberUnreachable');
    assert.equal(api.offloading('eu')!.status, 'False');
    assert.match(api.offloading('eu')!.message, /connection refused/);
  });

  it('leaves the condition to the leader when another replica leads the member', async () => {
    const { api, members } = setup();
    await eventually('member added', () => members.has('eu'));
    await eventually('Starting written', () => api.offloading('eu')?.reason === 'Starting');
    members.running.get('eu')!.state = { phase: 'running', leading: false, reachable: true, nodeName: 'clusterlet-eu' };
    const before = api.patches.length;
    // Judged twice more with the new state: the condition stays the leader's to write.
    const asked = members.asked;
    await eventually('the profile judged again, twice', () => members.asked >= asked + 2);
    await settle();
    assert.equal(api.patches.length, before);
  });

  it('stops the member when its profile is deleted, and only that member', async () => {
    const { api, members } = setup([profile('eu'), profile('us')]);
    await eventually('both added', () => members.running.size === 2);
    api.events.next({ type: 'DELETED', object: profile('eu') });
    await eventually('eu removed', () => !members.has('eu'));
    assert.ok(members.has('us'));
    assert.deepEqual(members.log.filter((l) => l.startsWith('remove')), ['remove eu']);
  });

  it('restarts the member when the profile changes what the member is (its node name), not for a status change', async () => {
    const { api, members } = setup();
    await eventually('added', () => members.has('eu'));
    api.events.next({ type: 'MODIFIED', object: profile('eu', { rv: '2' }) });
    await settle();
    assert.deepEqual(members.log, ['add eu clusterlet-eu']);
    api.events.next({ type: 'MODIFIED', object: profile('eu', { rv: '3', annotations: { 'clusterlet.io/node-name': 'fleet-eu' } }) });
    await eventually('restarted', () => members.log.length === 3);
    assert.deepEqual(members.log, ['add eu clusterlet-eu', 'remove eu', 'add eu fleet-eu']);
  });

  it('shows a profile that cannot be a member on its condition, without starting anything', async () => {
    const long = `p${'x'.repeat(60)}`;
    const { api, members } = setup([profile('Bad_Name'), profile(long), profile('oidc', { providers: ['oidc'] })]);
    await eventually('three conditions', () => ['Bad_Name', long, 'oidc'].every((n) => api.offloading(n)));
    assert.equal(members.log.length, 0);
    assert.equal(api.offloading('Bad_Name')!.reason, 'InvalidProfile');
    assert.match(api.offloading('Bad_Name')!.message, /metadata.name.*DNS-1123/);
    assert.equal(api.offloading(long)!.reason, 'InvalidProfile');
    assert.match(api.offloading(long)!.message, /clusterlet\.io\/node-name/);
    assert.equal(api.offloading('oidc')!.reason, 'NoAccessProvider');
    assert.match(api.offloading('oidc')!.message, /\(oidc\).*kubeconfig-secretreader/);
  });

  it('stops a running member whose profile loses its usable access provider, and says why', async () => {
    const { api, members } = setup();
    await eventually('added', () => members.has('eu'));
    api.events.next({ type: 'MODIFIED', object: profile('eu', { rv: '2', providers: ['oidc'] }) });
    await eventually('removed', () => !members.has('eu'));
    await eventually('NoAccessProvider', () => api.offloading('eu')?.reason === 'NoAccessProvider');
  });

  it('refuses a profile named like a static member, and leaves that member alone', async () => {
    const { api, members } = setup([profile('eu')], new FakeMembers(['eu']));
    await eventually('NameConflict', () => api.offloading('eu')?.reason === 'NameConflict');
    assert.deepEqual(members.log, []);
    api.events.next({ type: 'DELETED', object: profile('eu') });
    await settle();
    assert.ok(members.has('eu'));
  });

  it('refuses a profile whose node (clusterlet.io/node-name) is another member\'s, static or from a profile', async () => {
    const onStatic = profile('us');
    onStatic.metadata!.annotations = { 'clusterlet.io/node-name': 'clusterlet-eu' };
    const { api, members } = setup([onStatic], new FakeMembers(['eu']));
    await eventually('NameConflict', () => api.offloading('us')?.reason === 'NameConflict');
    assert.match(api.offloading('us')!.message!, /node "clusterlet-eu" is already the node of member "eu" \(static configuration\)/);
    assert.deepEqual(members.log, [], 'nothing started on that node');
  });

  it('refuses a profile whose node a static member shown per pool can come to name, naming both members and the node', async () => {
    const statics = new FakeMembers(['eu']);
    statics.running.get('eu')!.config.nodes = { mode: 'pool', label: 'pool' };
    const { api, members } = setup([profile('eu-west')], statics);
    await eventually('NameConflict', () => api.offloading('eu-west')?.reason === 'NameConflict');
    assert.match(api.offloading('eu-west')!.message!,
      /members "eu" and "eu-west" can share node "clusterlet-eu-west".*\(static configuration\)/);
    assert.deepEqual(members.log, [], 'nothing started');
  });

  it('refuses a running profile changed onto another member\'s node: its member stops and none starts there', async () => {
    const { api, members } = setup([profile('us')], new FakeMembers(['eu']));
    await eventually('us added', () => members.has('us'));
    api.events.next({ type: 'MODIFIED', object: profile('us', { rv: '2', annotations: { 'clusterlet.io/node-name': 'clusterlet-eu' } }) });
    await eventually('NameConflict', () => api.offloading('us')?.reason === 'NameConflict');
    assert.match(api.offloading('us')!.message, /node "clusterlet-eu" is already the node of member "eu"/);
    assert.deepEqual(members.log, ['add us clusterlet-us', 'remove us']);
    assert.ok(members.has('eu'));
  });

  it('tries again on the next pass when the status patch conflicts', async () => {
    const { api, members } = setup([]);
    api.failNext = new KubeError('Conflict', 409, 'Conflict', 'the object has been modified');
    api.events.next({ type: 'ADDED', object: profile('eu') });
    await eventually('added', () => members.has('eu'));
    await eventually('written after the conflict', () => api.offloading('eu') !== undefined);
  });
});

describe('conditionsWith', () => {
  const now = new Date('2026-11-23T10:00:00.123Z');
  it('adds the condition, keeps its transition time while the status stays, and writes nothing when nothing changes', () => {
    const p = profile('eu');
    const first = conditionsWith(p, { status: 'Unknown', reason: 'Starting', message: 'm' }, now)!;
    const ours = first.find((c) => c.type === 'clusterlet.io/Offloading')!;
    assert.deepEqual(ours, { type: 'clusterlet.io/Offloading', status: 'Unknown', reason: 'Starting', message: 'm',
      lastTransitionTime: '2026-11-23T10:00:00Z', observedGeneration: 1 });
    p.status!.conditions = first;
    assert.equal(conditionsWith(p, { status: 'Unknown', reason: 'Starting', message: 'm' }, new Date()), undefined);
    const later = new Date('2026-11-23T11:00:00Z');
    const same = conditionsWith(p, { status: 'Unknown', reason: 'Other', message: 'm2' }, later)!;
    assert.equal(same.find((c) => c.type === 'clusterlet.io/Offloading')!.lastTransitionTime, '2026-11-23T10:00:00Z');
    const moved = conditionsWith(p, { status: 'True', reason: 'Offloading', message: 'm3' }, later)!;
    assert.equal(moved.find((c) => c.type === 'clusterlet.io/Offloading')!.lastTransitionTime, '2026-11-23T11:00:00Z');
    assert.equal(moved.length, 2);
  });
});

describe('memberVerdict', () => {
  it('leaves a member another replica leads to that replica, even while this one sets it up or fails to', () => {
    assert.equal(memberVerdict({ phase: 'starting', ledElsewhere: true }), undefined);
    assert.equal(memberVerdict({ phase: 'failed', error: 'x', ledElsewhere: true }), undefined);
    assert.equal(memberVerdict({ phase: 'running', leading: false, nodeName: 'n' }), undefined);
    assert.equal(memberVerdict({ phase: 'starting', ledElsewhere: false })?.reason, 'Starting');
  });

  it('turns a setup failure into SetupFailed with the error', () => {
    assert.deepEqual(memberVerdict({ phase: 'failed', error: 'Secret fleet/eu-kubeconfig has no key "value"' }),
      { status: 'False', reason: 'SetupFailed', message: 'cannot set up this member (retrying): Secret fleet/eu-kubeconfig has no key "value"' });
  });

  it('keeps an exec plugin\'s stderr out of the condition (it stays in the log)', () => {
    const v = memberVerdict({ phase: 'failed', error: 'kubeconfig x: users[0].exec: exec plugin "p" exited with code 1; stderr: token=abc\nmore' });
    assert.equal(v?.message, 'cannot set up this member (retrying): kubeconfig x: users[0].exec: exec plugin "p" exited with code 1; '
      + 'its stderr is in clusterlet\'s log');
  });
});
