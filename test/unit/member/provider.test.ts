// The member pod provider against a fake member and host: it creates the member namespace and the delegate (what the
// pod refers to copied first), refuses what cannot work with the reason the proxy shows, deletes and updates the
// delegate, reports it in host coordinates, maps member events onto proxies once each, and asks for a resync when
// the member answers again.
import { describe, it, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { Observable, Subject } from 'rxjs';
import type { CoreV1Event, V1Namespace, V1Pod, V1PodSpec, V1Secret } from '@kubernetes/client-node';
import { MemberPodProvider, type MemberPodProviderOptions } from '../../../src/member/pod/provider.ts';
import type { MemberConfig } from '../../../src/config.ts';
import { checkMemberNamespace } from '../../../src/forge/namespace.ts';
import { forgeDelegatePod } from '../../../src/forge/pod.ts';
import { KubeError } from '../../../src/kube/errors.ts';
import type { ListWatchEvent } from '../../../src/kube/listwatch.ts';
import { PodNotReadyError, PodRejectedError } from '../../../src/provider/errors.ts';
import type { PodChange, PodEvent } from '../../../src/provider/pod.ts';
import { createLogger } from '../../../src/log.ts';
import { eventually, settle } from '../fakes/wait.ts';
import type { FitAnswer } from '../../../src/forge/fit.ts';
import { DelegateTokens, type DelegateTokensOptions } from '../../../src/member/pod/tokens.ts';
import type { IssuedToken, TokenRequestFor } from '../../../src/provider/tokens.ts';
import { tokenMount, tokenVolume } from '../forge/fixtures.ts';
import { fakeFitGate, providerWorld } from '../fakes/providerworld.ts';
import { FakeMember } from '../fakes/member.ts';
import { pino } from 'pino';
import { Writable } from 'node:stream';

const HOST = 'host-1';
const NODE = 'vnode-a';
const HOST_IP = '10.1.2.3';
const log = createLogger('silent');

const config: MemberConfig = {
  name: 'm1', nodeName: NODE, labels: { zone: 'z1' }, taints: [], qps: 50, burst: 100,
  storage: { className: 'clusterlet-m1', reclaimPolicy: 'Delete' },
  namespaceMapping: { template: 'h-{namespace}', overrides: { legacy: 'shared', other: 'shared', bad: 'Not_A_Label' } },
};

const proxy = (name: string, spec: Partial<V1PodSpec> = {}, namespace = 'shop'): V1Pod => ({
  metadata: { namespace, name, uid: `uid-${name}` },
  spec: { containers: [{ name: 'app', image: 'app:1' }], ...spec },
});

/** What the provider should create for `p` in member namespace `memberNamespace`. */
const forged = (p: V1Pod, memberNamespace = 'h-shop', restarts?: Record<string, number>): V1Pod =>
  forgeDelegatePod(p, { hostName: HOST, nodeName: NODE, nodeLabels: config.labels, memberNamespace, restarts });

type PodWatchVia = (w: Observable<ListWatchEvent<V1Pod>>) => Observable<ListWatchEvent<V1Pod>>;

/** A pod watch the test can hold back, as a slow informer: what comes while held is delivered on release, in order. */
function holdable() {
  let held = false;
  const queue: ListWatchEvent<V1Pod>[] = [];
  const out = new Subject<ListWatchEvent<V1Pod>>();
  const via: PodWatchVia = (w) => new Observable((sub) => {
    const s = out.subscribe(sub);
    s.add(w.subscribe((ev) => { if (held) queue.push(ev); else out.next(ev); }));
    return s;
  });
  return { via, hold: () => { held = true; }, release: () => { held = false; for (const ev of queue.splice(0)) out.next(ev); } };
}

const stops: (() => void)[] = [];
afterEach(() => { for (const s of stops.splice(0).reverse()) s(); });

/** A member and a host, and the provider of virtual node NODE over them; the member answers (`reachable`). */
function world(opts: Partial<MemberPodProviderOptions> = {}, podWatch: PodWatchVia = (w) => w) {
  const w = providerWorld({ config, hostName: HOST, node: NODE, hostIP: HOST_IP, log, stops, provider: opts, podWatch });
  const changes: PodChange[] = [];
  w.provider.podChanges$.subscribe(({ virtualNode: _, ...c }) => changes.push(c));
  w.start();
  const memberPod = (namespace: string, name: string): V1Pod | undefined => w.member.objects.get<V1Pod>('Pod', namespace, name);
  return { member: w.member, host: w.host, provider: w.provider, probe$: w.probe$, pods: w.pods, changes, memberPod };
}

describe('MemberPodProvider.createPod', () => {
  it('creates the member namespace once, then the delegate in the mapped namespace', async () => {
    const { member, provider, memberPod } = world();
    const web = proxy('web', { nodeSelector: { zone: 'z1', disk: 'ssd' } });
    assert.deepEqual(await provider.createPod(web, { restarts: { app: 2 } }), []);
    const ns = member.objects.get<V1Namespace>('Namespace', '', 'h-shop');
    assert.deepEqual(ns?.metadata?.labels, { 'clusterlet.io/origin': HOST, 'clusterlet.io/node': NODE });
    assert.deepEqual(ns?.metadata?.annotations, { 'clusterlet.io/proxy-namespace': 'shop' });
    const d = memberPod('h-shop', 'web');
    const want = forged(web, 'h-shop', { app: 2 });
    assert.deepEqual([d?.metadata?.labels, d?.metadata?.annotations, d?.spec], [want.metadata?.labels, want.metadata?.annotations, want.spec]);
    assert.equal(d?.metadata?.labels?.['clusterlet.io/proxy-uid'], 'uid-web');
    assert.deepEqual(d?.spec?.nodeSelector, { disk: 'ssd' }, 'what selected the virtual node (its labels) is not asked of the member');
    await provider.createPod(proxy('api'));
    assert.deepEqual(member.calls.filter((c) => c.endsWith('Namespace')), ['createNamespace'], 'the namespace is known to exist');
    assert.deepEqual(provider.listPodKeys().sort(), ['shop/api', 'shop/web']);
    assert.equal(provider.podCount(), 2);
  });

  it('a burst of pods into a new namespace creates it once; a failed creation is tried again by the next pod', async () => {
    const { member, provider, memberPod } = world();
    const namespaceCalls = () => member.calls.filter((c) => c.endsWith('Namespace'));
    member.failNext('createNamespace', new KubeError('Unavailable', 503, 'ServiceUnavailable', 'etcd is away'));
    await assert.rejects(Promise.all(Array.from({ length: 5 }, (_, i) => provider.createPod(proxy(`early-${i}`)))),
      { kind: 'Unavailable' }, 'those waiting for the failed creation fail with it');
    assert.deepEqual(namespaceCalls(), ['createNamespace'], 'one creation tried for the five');
    const names = Array.from({ length: 20 }, (_, i) => `web-${i}`);
    await Promise.all(names.map((n) => provider.createPod(proxy(n))));
    assert.deepEqual(namespaceCalls(), ['createNamespace', 'createNamespace'], 'the failure was not kept: one more, for the twenty');
    for (const n of names) assert.ok(memberPod('h-shop', n), n);
  });

  it('uses a member namespace of the member\'s own (or another host\'s) that is there already', async () => {
    const { member, provider, memberPod } = world();
    member.objects.put('Namespace', { metadata: { name: 'h-shop' } });
    member.objects.put('Namespace', { metadata: { name: 'shared', labels: { 'clusterlet.io/origin': 'host-2' },
      annotations: { 'clusterlet.io/proxy-namespace': 'legacy' } } });
    await provider.createPod(proxy('web'));
    await provider.createPod(proxy('api', {}, 'other'));
    assert.ok(memberPod('h-shop', 'web'));
    assert.ok(memberPod('shared', 'api'));
    assert.deepEqual(member.objects.writes('create', 'Namespace'), []);
  });

  it('rejects for good a pod whose host namespace maps to a member namespace that cannot exist', async () => {
    const { member, provider } = world();
    const long = 'n'.repeat(62);
    for (const [namespace, reason] of [['bad', 'InvalidNamespace'], [long, 'NamespaceTooLong']]) {
      const { error } = checkMemberNamespace(config.namespaceMapping, namespace);
      await assert.rejects(provider.createPod(proxy('web', {}, namespace)),
        { name: 'PodRejectedError', reason, message: error, retry: false });
    }
    assert.deepEqual(member.objects.writes(), []);
  });

  it('rejects for good a pod whose member namespace holds another host namespace', async () => {
    const { member, provider, memberPod } = world();
    await provider.createPod(proxy('first', {}, 'legacy'));
    assert.equal(member.objects.get<V1Namespace>('Namespace', '', 'shared')?.metadata?.annotations?.['clusterlet.io/proxy-namespace'], 'legacy');
    await assert.rejects(provider.createPod(proxy('second', {}, 'other')), {
      name: 'PodRejectedError', reason: 'MemberNamespaceConflict', retry: false,
      message: 'host namespace "other" maps to member namespace "shared" (namespace mapping of member m1), which already '
        + 'holds host namespace "legacy": two host namespaces cannot share one; give one of them its own member namespace '
        + '(namespaceMapping.overrides) and restart clusterlet',
    });
    assert.equal(memberPod('shared', 'second'), undefined);
  });

  it('after a restart, learns from the member which host namespace a member namespace of its host holds', async () => {
    const { member, provider, memberPod } = world();
    member.objects.put('Namespace', { metadata: { name: 'shared', labels: { 'clusterlet.io/origin': HOST },
      annotations: { 'clusterlet.io/proxy-namespace': 'legacy' } } });
    await assert.rejects(provider.createPod(proxy('second', {}, 'other')), { reason: 'MemberNamespaceConflict', retry: false });
    await provider.createPod(proxy('first', {}, 'legacy'));
    assert.ok(memberPod('shared', 'first'));
  });

  it('the delegate of another proxy in a shared member namespace is a DelegateConflict, and left untouched', async () => {
    // Two host namespaces map to member namespace "shared" (the member's own): after a restart, "other" claimed it first.
    const { member, provider, memberPod } = world();
    member.objects.put('Namespace', { metadata: { name: 'shared' } });
    const legacy = forged(proxy('web', {}, 'legacy'), 'shared');
    member.objects.put('Pod', legacy);
    await assert.rejects(provider.createPod(proxy('web', {}, 'other')), {
      name: 'PodRejectedError', reason: 'DelegateConflict',
      message: 'member m1 already has a pod shared/web that runs proxy legacy/web; it is left untouched: two host namespaces map to one member namespace (namespaceMapping)',
    });
    assert.deepEqual(memberPod('shared', 'web')?.metadata?.labels, legacy.metadata?.labels);
    assert.equal(provider.creating('other', 'web'), false);
  });

  it('a pod of that name that clusterlet did not create is a DelegateConflict, and left untouched', async () => {
    const { member, provider, memberPod } = world();
    member.objects.put('Namespace', { metadata: { name: 'h-shop' } });
    member.objects.put('Pod', { metadata: { namespace: 'h-shop', name: 'web', labels: { team: 'member' } }, spec: { containers: [] } });
    await assert.rejects(provider.createPod(proxy('web')), {
      name: 'PodRejectedError', reason: 'DelegateConflict',
      message: 'member m1 already has a pod h-shop/web that clusterlet did not create; it is left untouched: delete or rename it, or map the namespace elsewhere (namespaceMapping)',
    });
    assert.deepEqual(memberPod('h-shop', 'web')?.metadata?.labels, { team: 'member' });
    assert.deepEqual(member.objects.writes('create', 'Pod').concat(member.objects.writes('replace'), member.objects.writes('delete')), []);
  });

  it('a delegate of its own already there (this proxy\'s or an earlier one\'s) is no error', async () => {
    const { member, provider } = world();
    member.objects.put('Namespace', { metadata: { name: 'h-shop' } });
    member.objects.put('Pod', forged(proxy('web')));
    assert.deepEqual(await provider.createPod(proxy('web')), []);
    member.objects.put('Pod', forged({ ...proxy('api'), metadata: { ...proxy('api').metadata, uid: 'uid-earlier' } }));
    assert.deepEqual(await provider.createPod(proxy('api')), []);
    assert.deepEqual(member.objects.writes('create', 'Pod'), []);
  });

  it('the member refusing the delegate (Forbidden, Invalid, BadRequest) rejects the pod with the member\'s reason', async () => {
    const { member, provider, memberPod } = world();
    const refusals = [
      new KubeError('Forbidden', 403, 'Forbidden', 'pods "web" is forbidden: exceeded quota: pods'),
      new KubeError('Invalid', 422, 'Invalid', 'Pod "web" is invalid: spec.containers[0].image: Required value'),
      new KubeError('BadRequest', 400, '', 'the body is not a pod'),
    ];
    for (const err of refusals) {
      member.failNext('createNamespacedPod', err);
      await assert.rejects(provider.createPod(proxy('web')),
        { name: 'PodRejectedError', reason: err.reason || err.kind, message: err.message, retry: true });
    }
    member.failNext('createNamespacedPod', new KubeError('Unavailable', 503, 'ServiceUnavailable', 'etcd is away'));
    await assert.rejects(provider.createPod(proxy('web')), (err: unknown) =>
      !(err instanceof PodRejectedError) && (err as KubeError).kind === 'Unavailable', 'a failure of the member is no rejection');
    assert.equal(memberPod('h-shop', 'web'), undefined);
  });

  it('a missing mandatory ConfigMap rejects the pod as rejection() says; it is woken when the ConfigMap appears', async () => {
    const { host, member, provider, changes, memberPod } = world();
    const web = proxy('web', { volumes: [{ name: 'c', configMap: { name: 'cfg' } }] });
    await assert.rejects(provider.createPod(web), {
      name: 'PodRejectedError', reason: 'MandatoryConfigMapNotFound', retry: true,
      message: 'configmap "cfg" not found in namespace shop; the pod starts once it exists',
    });
    assert.equal(memberPod('h-shop', 'web'), undefined);
    host.put('ConfigMap', { metadata: { namespace: 'shop', name: 'cfg' }, data: { v: '1' } });
    assert.deepEqual(changes, [{ key: 'shop/web', lifecycle: true }]);
    await provider.createPod(web);
    assert.ok(memberPod('h-shop', 'web'));
    assert.deepEqual(member.objects.get('ConfigMap', 'h-shop', 'cfg')?.metadata?.labels,
      { 'clusterlet.io/origin': HOST, 'clusterlet.io/node': NODE }, 'copied before the delegate');
  });

  it('a missing ConfigMap or Secret has virtual-kubelet\'s reason: Mandatory… rejects the pod, Optional… is a Warning notice', async () => {
    const { provider, memberPod } = world();
    const envFrom = (ref: 'configMapRef' | 'secretRef', optional?: boolean): Partial<V1PodSpec> =>
      ({ containers: [{ name: 'app', image: 'app:1', envFrom: [{ [ref]: { name: 'absent', optional } }] }] });
    await assert.rejects(provider.createPod(proxy('cm', envFrom('configMapRef'))),
      { name: 'PodRejectedError', reason: 'MandatoryConfigMapNotFound', message: /^configmap "absent" not found/ });
    await assert.rejects(provider.createPod(proxy('secret', envFrom('secretRef'))),
      { name: 'PodRejectedError', reason: 'MandatorySecretNotFound', message: /^secret "absent" not found/ });
    assert.equal(memberPod('h-shop', 'cm') ?? memberPod('h-shop', 'secret'), undefined, 'no delegate without a mandatory object');
    const [cm] = await provider.createPod(proxy('cm-opt', envFrom('configMapRef', true)));
    assert.equal(cm.type, 'Warning');
    assert.equal(cm.reason, 'OptionalConfigMapNotFound');
    assert.match(cm.message, /configmap "absent" not found/);
    const [secret] = await provider.createPod(proxy('secret-opt', envFrom('secretRef', true)));
    assert.equal(secret.type, 'Warning');
    assert.equal(secret.reason, 'OptionalSecretNotFound');
    assert.match(secret.message, /secret "absent" not found/);
    assert.ok(memberPod('h-shop', 'cm-opt') && memberPod('h-shop', 'secret-opt'), 'created without the optional object');
  });

  it('a pod whose claims have no volume in the member is rejected as the volumes say: no namespace, no delegate', async () => {
    const asked: string[] = [];
    const { member, provider } = world({ volumes: { podRejection: async (p) => {
      asked.push(p.metadata!.name!);
      return p.metadata!.name === 'db' ? new PodRejectedError('VolumeNotInMember', 'claim of another class', { retry: false }) : undefined;
    } } });
    const err = await provider.createPod(proxy('db')).then(() => undefined, (e: unknown) => e);
    assert.ok(err instanceof PodRejectedError);
    assert.equal(err.reason, 'VolumeNotInMember');
    assert.equal(err.retry, false);
    assert.deepEqual(member.objects.writes(), []);
    await provider.createPod(proxy('web'));
    assert.deepEqual(asked, ['db', 'web']);
    assert.equal(member.objects.writes('create', 'Pod').length, 1);
  });

  it('makes the member namespace again when it went away under the provider, or is going (tried again soon)', async () => {
    const { member, provider, memberPod } = world();
    await provider.createPod(proxy('web'));
    const terminating = { name: 'PodRejectedError', reason: 'MemberNamespaceTerminating', retry: true, retryAfterMs: 2000 };
    member.objects.drop('Namespace', '', 'h-shop');
    await assert.rejects(provider.createPod(proxy('api')), terminating);
    await provider.createPod(proxy('api'));
    assert.ok(memberPod('h-shop', 'api'));
    assert.equal(member.objects.writes('create', 'Namespace').length, 2);
    // Being deleted: the delegate's create is refused, and the namespace is not taken for there until it is gone.
    const ns = member.objects.get<V1Namespace>('Namespace', '', 'h-shop');
    member.objects.put('Namespace', { ...ns, metadata: { ...ns?.metadata, deletionTimestamp: new Date() } });
    await assert.rejects(provider.createPod(proxy('db')), terminating);
    await assert.rejects(provider.createPod(proxy('db')), terminating);
    member.objects.drop('Namespace', '', 'h-shop');
    await provider.createPod(proxy('db'));
    assert.ok(memberPod('h-shop', 'db'));
  });
});

describe('MemberPodProvider: delete, update, read', () => {
  it('deletes the delegate with its UID as precondition and the grace period; one gone already is no error', async () => {
    const { member, provider, memberPod } = world();
    await provider.createPod(proxy('web'));
    const uid = memberPod('h-shop', 'web')?.metadata?.uid;
    await provider.deletePod('shop', 'web', 7);
    assert.deepEqual(member.deletes, [{ namespace: 'h-shop', name: 'web', gracePeriodSeconds: 7,
      body: { gracePeriodSeconds: 7, preconditions: { uid } } }]);
    assert.equal(memberPod('h-shop', 'web'), undefined);
    await provider.deletePod('shop', 'web', 7);
    assert.equal(member.deletes.length, 1, 'no delegate: nothing to ask');
    await provider.createPod(proxy('api'));
    member.failNext('deleteNamespacedPod', new KubeError('NotFound', 404, 'NotFound', 'pods "api" not found'));
    await provider.deletePod('shop', 'api', 0);
    member.failNext('deleteNamespacedPod', new KubeError('Conflict', 409, 'Conflict', 'Precondition failed: UID in precondition'));
    await provider.deletePod('shop', 'api', 0);
    member.failNext('deleteNamespacedPod', new KubeError('Forbidden', 403, 'Forbidden', 'pods "api" is forbidden'));
    await assert.rejects(provider.deletePod('shop', 'api', 0), { kind: 'Forbidden' });
  });

  it('replaces the delegate only when the proxy\'s mutable fields differ from it, and never a terminating one', async () => {
    const { member, provider, memberPod } = world();
    await provider.createPod(proxy('web'));
    await provider.updatePod(proxy('web'));
    assert.deepEqual(member.objects.writes('replace'), []);
    const newer = proxy('web', { containers: [{ name: 'app', image: 'app:2' }] });
    await provider.updatePod(newer);
    assert.equal(memberPod('h-shop', 'web')?.spec?.containers[0].image, 'app:2');
    await provider.updatePod(newer);
    assert.equal(member.objects.writes('replace').length, 1);
    const d = memberPod('h-shop', 'web')!;
    member.objects.put('Pod', { ...d, metadata: { ...d.metadata, deletionTimestamp: new Date() } });
    await provider.updatePod(proxy('web', { containers: [{ name: 'app', image: 'app:3' }] }));
    await provider.updatePod(proxy('api'));
    assert.equal(member.objects.writes('replace').length, 1);
  });

  it('kubectl debug: adds the proxy\'s new ephemeral containers to the delegate through its subresource, once, never a replace', async () => {
    const { member, provider, memberPod } = world();
    const dbg = { name: 'debugger-x', image: 'busybox', targetContainerName: 'app', stdin: true, tty: true, env: [{ name: 'A', value: '1' }] };
    await provider.createPod(proxy('web'));
    const uid = memberPod('h-shop', 'web')!.metadata!.uid;
    await provider.updatePod(proxy('web', { ephemeralContainers: [dbg] }));
    assert.deepEqual(memberPod('h-shop', 'web')?.spec?.ephemeralContainers, [dbg]);
    assert.equal(memberPod('h-shop', 'web')?.metadata?.uid, uid, 'the same delegate');
    await provider.updatePod(proxy('web', { ephemeralContainers: [dbg] }));
    const second = { name: 'debugger-y', image: 'registry.example/tools:1', command: ['sh'] };
    await provider.updatePod(proxy('web', { ephemeralContainers: [dbg, second], containers: [{ name: 'app', image: 'app:2' }] }));
    const d = memberPod('h-shop', 'web')!;
    assert.deepEqual(d.spec?.ephemeralContainers, [dbg, second]);
    assert.equal(d.spec?.containers[0].image, 'app:2', 'the image update still goes through the pod');
    assert.deepEqual(member.calls.filter((c) => c.startsWith('patch') || c.startsWith('replace')),
      ['patchNamespacedPodEphemeralcontainers', 'replaceNamespacedPod', 'patchNamespacedPodEphemeralcontainers'],
      'one patch per new container; nothing when the delegate has them');
  });

  it('kubectl debug: a failed patch fails the update, for the controller to retry', async () => {
    const { member, provider, memberPod } = world();
    const dbg = { name: 'debugger-x', image: 'busybox' };
    await provider.createPod(proxy('web'));
    member.failNext('patchNamespacedPodEphemeralcontainers', new KubeError('Forbidden', 403, 'Forbidden', 'pods "web" is forbidden'));
    await assert.rejects(provider.updatePod(proxy('web', { ephemeralContainers: [dbg] })), { kind: 'Forbidden' });
    assert.equal(memberPod('h-shop', 'web')?.spec?.ephemeralContainers, undefined);
    await provider.updatePod(proxy('web', { ephemeralContainers: [dbg] }));
    assert.deepEqual(memberPod('h-shop', 'web')?.spec?.ephemeralContainers, [dbg], 'added when retried');
  });

  it('reports the delegate and its status in host coordinates, with the virtual node\'s hostIP', async () => {
    const { member, provider, changes, memberPod } = world();
    await provider.createPod(proxy('web'));
    const d = memberPod('h-shop', 'web')!;
    member.objects.put('Pod', { ...d, spec: { ...d.spec!, nodeName: 'worker-1' }, status: {
      phase: 'Running', hostIP: '192.168.0.9', podIP: '10.244.0.5', podIPs: [{ ip: '10.244.0.5' }],
      conditions: [{ type: 'DisruptionTarget', status: 'True', reason: 'EvictionByEvictionAPI' }],
    } });
    assert.deepEqual(provider.getPod('shop', 'web'), { proxyUID: 'uid-web', terminating: false, phase: 'Running',
      ready: false, scheduled: true, reason: undefined, message: undefined, disruption: 'EvictionByEvictionAPI' });
    const status = provider.getPodStatus('shop', 'web');
    assert.deepEqual([status?.phase, status?.hostIP, status?.hostIPs, status?.podIP],
      ['Running', HOST_IP, [{ ip: HOST_IP }], '10.244.0.5']);
    assert.deepEqual(changes, [{ key: 'shop/web', lifecycle: true }, { key: 'shop/web', lifecycle: false }]);
    assert.equal(provider.getPod('h-shop', 'web'), undefined, 'member coordinates are not host keys');
    assert.equal(provider.getPodStatus('shop', 'api'), undefined);
    const now = memberPod('h-shop', 'web')!;
    member.objects.put('Pod', { ...now, metadata: { ...now.metadata, deletionTimestamp: new Date() } });
    assert.equal(provider.getPod('shop', 'web')?.terminating, true);
  });

  it('tells a delegate appearing as its create left it (created); not its later changes', async () => {
    const pods = holdable();
    const { member, provider, changes, memberPod } = world({}, pods.via);
    pods.hold();
    await provider.createPod(proxy('web'));
    assert.equal(provider.creating('shop', 'web'), true, 'created, not shown yet');
    assert.equal(provider.getPod('shop', 'web'), undefined);
    pods.release();
    assert.equal(provider.creating('shop', 'web'), false, 'shown');
    assert.deepEqual(changes, [{ key: 'shop/web', lifecycle: true, created: true }], 'its ADDED, at the version the create answered with');
    const d = memberPod('h-shop', 'web')!;
    member.objects.put('Pod', { ...d, metadata: { ...d.metadata, deletionTimestamp: new Date() } });
    await member.objects.delete('Pod', 'h-shop', 'web');
    assert.deepEqual(changes.slice(1), [{ key: 'shop/web', lifecycle: true }, { key: 'shop/web', lifecycle: true }]);
  });

  it('waits a while only for a delegate it created to show', async () => {
    const pods = holdable();
    const { provider } = world({ appearanceWaitMs: 30 }, pods.via);
    pods.hold();
    await provider.createPod(proxy('web'));
    assert.equal(provider.creating('shop', 'web'), true);
    await eventually('no longer awaited', () => !provider.creating('shop', 'web'), 2_000);
  });

  it('tells no creation where the delegate showed before the create answered, even when it goes at that version', async () => {
    const { member, provider, changes } = world();
    await provider.createPod(proxy('web'));
    assert.equal(provider.creating('shop', 'web'), false, 'shown before the answer');
    // Gone at the version it was created at (as a relist tells a delete it missed): an end, to be synced.
    await member.objects.delete('Pod', 'h-shop', 'web');
    assert.deepEqual(changes, [{ key: 'shop/web', lifecycle: true }, { key: 'shop/web', lifecycle: true }]);
  });

  it('awaits nothing for a create that failed or found a pod not its own', async () => {
    const { member, provider } = world();
    member.failNext('createNamespacedPod', new KubeError('Unavailable', 503, 'ServiceUnavailable', 'etcd is away'));
    await assert.rejects(provider.createPod(proxy('web')), { kind: 'Unavailable' });
    assert.equal(provider.creating('shop', 'web'), false, 'not created: a deletion of its proxy need not wait');
    member.failNext('createNamespacedPod', new KubeError('Forbidden', 403, 'Forbidden', 'pods "web" is forbidden'));
    await assert.rejects(provider.createPod(proxy('web')), { name: 'PodRejectedError' });
    assert.equal(provider.creating('shop', 'web'), false, 'refused');
    member.objects.put('Pod', { metadata: { namespace: 'h-shop', name: 'theirs' } });
    await assert.rejects(provider.createPod(proxy('theirs')), { reason: 'DelegateConflict' });
    assert.equal(provider.creating('shop', 'theirs'), false, 'the member\'s own pod');
  });

  it('a delegate that shows while it is asked for again is no creation of its own, and is then awaited no more', async () => {
    const pods = holdable();
    let asked = 0;
    // The second ask's first step (the claims' check) is where the first create's delegate shows.
    const volumes = { podRejection: async () => { if (++asked === 2) pods.release(); return undefined; } };
    const { provider, changes } = world({ volumes }, pods.via);
    pods.hold();
    await provider.createPod(proxy('web'));
    assert.deepEqual(await provider.createPod(proxy('web', { containers: [{ name: 'app', image: 'app:2' }] })), [], 'it exists');
    assert.deepEqual(changes, [{ key: 'shop/web', lifecycle: true }], 'the proxy changed since the first create: its sync must run');
    assert.equal(provider.creating('shop', 'web'), false, 'shown');
  });

  it('a delegate created again before it showed, or with ephemeral containers to add, appears as a lifecycle change', async () => {
    const pods = holdable();
    const { provider, changes } = world({}, pods.via);
    pods.hold();
    // The proxy changed before its delegate showed: the second create finds it, and the sync after it shows must run.
    await provider.createPod(proxy('web'));
    assert.deepEqual(await provider.createPod(proxy('web', { containers: [{ name: 'app', image: 'app:2' }] })), []);
    // Ephemeral containers cannot be created with a pod: the sync after it shows adds them.
    await provider.createPod(proxy('debugged', { ephemeralContainers: [{ name: 'dbg', image: 'busybox' }] }));
    pods.release();
    assert.deepEqual(changes, [{ key: 'shop/web', lifecycle: true }, { key: 'shop/debugged', lifecycle: true }]);
  });
});

describe('MemberPodProvider: in-place resize', () => {
  const resources = (cpu: string, cpuLimit: string) => ({ requests: { cpu, memory: '64Mi' }, limits: { cpu: cpuLimit, memory: '128Mi' } });
  const sized = (cpu: string, cpuLimit: string): V1Pod => proxy('web', { containers: [{ name: 'app', image: 'app:1', resources: resources(cpu, cpuLimit) }] });
  const nodeCapacity = () => new KubeError('Forbidden', 403, 'Forbidden',
    'pods "web" is forbidden: node didn\'t have enough allocatable resources: cpu, requested: 33000, allocatable: 32000');
  const pending = (status: ReturnType<MemberPodProvider['getPodStatus']>) => status?.conditions?.find((c) => c.type === 'PodResizePending');

  it('applies a resize of the proxy to the delegate through its resize subresource, once', async () => {
    const { member, provider, memberPod } = world();
    await provider.createPod(sized('100m', '200m'));
    assert.deepEqual(await provider.updatePod(sized('100m', '200m')), []);
    assert.ok(!member.calls.includes('patchNamespacedPodResize'), 'nothing resized, nothing asked');
    assert.deepEqual(await provider.updatePod(sized('300m', '500m')), []);
    const d = memberPod('h-shop', 'web')!;
    assert.deepEqual(d.spec?.containers[0].resources, resources('300m', '500m'));
    assert.equal(d.metadata?.generation, 2, 'through the resize subresource');
    assert.deepEqual(member.objects.writes('replace'), [], 'not by replacing the pod');
    await provider.updatePod(sized('0.3', '0.5'));
    assert.equal(member.calls.filter((c) => c === 'patchNamespacedPodResize').length, 1, 'the same quantities: no second resize');
  });

  it('shows a resize the member refuses as PodResizePending/Infeasible with a Warning once, until the proxy changes', async () => {
    const { member, provider, changes, memberPod } = world();
    await provider.createPod(sized('100m', '200m'));
    changes.length = 0;
    member.failNext('patchNamespacedPodResize', nodeCapacity());
    const notices = await provider.updatePod(sized('33', '33'));
    assert.equal(notices.length, 1);
    assert.deepEqual([notices[0].type, notices[0].reason], ['Warning', 'ResizeInfeasible']);
    assert.match(notices[0].message, /^Pod resize Infeasible: member m1 refused the resize: .*enough allocatable resources: cpu/);
    assert.deepEqual(changes, [{ key: 'shop/web', lifecycle: false }], 'the proxy\'s status is to be written');
    const condition = pending(provider.getPodStatus('shop', 'web'));
    assert.deepEqual([condition?.status, condition?.reason], ['True', 'Infeasible']);
    assert.match(condition?.message ?? '', /member m1 refused the resize: pods "web" is forbidden: node didn't have enough/);
    assert.deepEqual(memberPod('h-shop', 'web')?.spec?.containers[0].resources, resources('100m', '200m'), 'the delegate keeps its resources');

    member.failNext('patchNamespacedPodResize', nodeCapacity());
    assert.deepEqual(await provider.updatePod(sized('33', '33')), [], 'refused again (a resync): no news, no second event');
    assert.equal(changes.length, 1);
    assert.equal(pending(provider.getPodStatus('shop', 'web'))?.reason, 'Infeasible');

    assert.deepEqual(await provider.updatePod(sized('100m', '200m')), [], 'the proxy resized back to what the delegate has');
    assert.equal(pending(provider.getPodStatus('shop', 'web')), undefined);
    assert.deepEqual(changes, [{ key: 'shop/web', lifecycle: false }, { key: 'shop/web', lifecycle: false }]);
  });

  it('a resize the member then accepts clears the refusal; a delegate made anew never shows its predecessor\'s', async () => {
    const { member, provider, memberPod } = world();
    await provider.createPod(sized('100m', '200m'));
    member.failNext('patchNamespacedPodResize', nodeCapacity());
    await provider.updatePod(sized('33', '33'));
    await provider.updatePod(sized('33', '33'));
    assert.equal(pending(provider.getPodStatus('shop', 'web')), undefined, 'retried, and accepted this time');
    assert.equal(memberPod('h-shop', 'web')?.spec?.containers[0].resources?.requests?.cpu, '33');

    member.failNext('patchNamespacedPodResize', nodeCapacity());
    await provider.updatePod(sized('40', '40'));
    assert.equal(pending(provider.getPodStatus('shop', 'web'))?.reason, 'Infeasible');
    member.objects.drop('Pod', 'h-shop', 'web');
    await provider.createPod(sized('100m', '200m'));
    assert.equal(pending(provider.getPodStatus('shop', 'web')), undefined);
  });

  it('an error that is not a refusal fails the update (the queue retries it) and shows nothing', async () => {
    const { member, provider } = world();
    await provider.createPod(sized('100m', '200m'));
    member.failNext('patchNamespacedPodResize', new KubeError('Unavailable', 503, 'ServiceUnavailable', 'etcd is away'));
    await assert.rejects(provider.updatePod(sized('300m', '500m')), { kind: 'Unavailable' });
    assert.equal(pending(provider.getPodStatus('shop', 'web')), undefined);
    member.failNext('patchNamespacedPodResize', new KubeError('NotFound', 404, 'NotFound', 'pods "web" not found'));
    assert.deepEqual(await provider.updatePod(sized('300m', '500m')), [], 'gone meanwhile: its delete event requeues the proxy');
  });
});

describe('MemberPodProvider.podEvents$', () => {
  /** A member event about pod `pod` of member namespace h-shop, last seen `agoMs` ago. */
  const event = (uid: string, resourceVersion: string, pod: { name: string; uid?: string }, agoMs = 1000, count = 1): CoreV1Event => ({
    metadata: { namespace: 'h-shop', name: `${pod.name}.${uid}`, uid, resourceVersion },
    involvedObject: { kind: 'Pod', namespace: 'h-shop', name: pod.name, uid: pod.uid },
    type: 'Warning', reason: 'BackOff', message: 'Back-off restarting failed container', count,
    firstTimestamp: new Date(Date.now() - agoMs - 5000), lastTimestamp: new Date(Date.now() - agoMs),
    source: { component: 'kubelet', host: 'worker-1' },
  });

  /** A world with the delegate of proxy shop/web, and the events its provider passes on (subscribed now). */
  async function watching(before: (web: { name: string; uid?: string }) => CoreV1Event[] = () => [], podWatch?: PodWatchVia) {
    const w = world({ eventReplayWindowMs: 60_000 }, podWatch);
    await w.provider.createPod(proxy('web'));
    const web = { name: 'web', uid: w.memberPod('h-shop', 'web')?.metadata?.uid };
    w.member.events.items = before(web);
    const seen: PodEvent[] = [];
    const sub = w.provider.podEvents$.subscribe((e) => seen.push(e));
    stops.push(() => sub.unsubscribe());
    const watch = await w.member.events.watch(1);
    return { ...w, web, seen, watch };
  }

  it('maps an event about a delegate onto its proxy', async () => {
    const { member, web, seen, watch } = await watching();
    assert.equal(member.events.lists[0].fieldSelector, 'involvedObject.kind=Pod');
    const e = event('ev-1', '10', web);
    watch.send('ADDED', e);
    assert.deepEqual(seen, [{ namespace: 'shop', name: 'web', id: 'ev-1', event: {
      type: 'Warning', reason: 'BackOff', message: 'Back-off restarting failed container', count: 1,
      firstTimestamp: e.firstTimestamp, lastTimestamp: e.lastTimestamp, source: { component: 'kubelet', host: 'worker-1' },
    } }]);
  });

  it('passes each version of an event once, a relist repeating none of them', async () => {
    const { member, web, seen, watch } = await watching((web) => [event('listed', '5', web)]);
    watch.send('ADDED', event('ev-1', '10', web));
    watch.send('MODIFIED', event('ev-1', '10', web));
    watch.send('MODIFIED', event('ev-1', '11', web, 0, 2));
    watch.send('DELETED', event('ev-1', '12', web, 0, 2));
    member.events.items = [event('listed', '5', web), event('ev-1', '11', web, 0, 2), event('ev-2', '13', web)];
    watch.send('ERROR', { code: 410, message: 'too old resource version' });
    await member.events.watch(2);
    assert.deepEqual(seen.map((e) => [e.id, e.event.count]), [['listed', 1], ['ev-1', 1], ['ev-1', 2], ['ev-2', 1]]);
  });

  it('drops events about pods that are not delegates, and about an earlier pod of the delegate\'s name', async () => {
    const { seen, watch } = await watching();
    watch.send('ADDED', event('theirs', '10', { name: 'theirs' }));
    watch.send('ADDED', event('earlier', '11', { name: 'web', uid: 'uid-of-an-earlier-delegate' }));
    assert.deepEqual(seen, []);
  });

  it('holds an event that comes before the pod informer shows its delegate, and passes it on once it does', async () => {
    // The member's scheduler can report on a new delegate (FailedScheduling) before clusterlet's informer shows it.
    const pods = holdable();
    const { provider, seen, watch, memberPod } = await watching(undefined, pods.via);
    pods.hold();
    await provider.createPod(proxy('greedy'));
    const greedy = { name: 'greedy', uid: memberPod('h-shop', 'greedy')?.metadata?.uid };
    watch.send('ADDED', event('ev-early', '20', greedy));
    watch.send('ADDED', event('theirs', '21', { name: 'theirs' }));
    assert.equal(seen.length, 0, 'not mapped before the informer shows the delegate');
    pods.release();
    assert.deepEqual(seen.map((e) => [e.namespace, e.name, e.id]), [['shop', 'greedy', 'ev-early']]);
  });

  it('holds the events of a delegate whose create got no answer, in case it was made; not of one refused', async () => {
    const pods = holdable();
    const { member, provider, seen, watch } = await watching(undefined, pods.via);
    pods.hold();
    for (const [name, err] of [['lost', new KubeError('Unavailable', 0, '', 'socket hang up')],
      ['refused', new KubeError('Forbidden', 403, 'Forbidden', 'pods "refused" is forbidden: exceeded quota')]] as const) {
      member.failNext('createNamespacedPod', err);
      await assert.rejects(provider.createPod(proxy(name)));
      assert.equal(provider.creating('shop', name), false, `${name}: no answer says it exists`);
      // It was made after all (the answer lost), or by a retry: the member's scheduler reports on it first.
      member.objects.put('Pod', forged(proxy(name)));
      watch.send('ADDED', event(`ev-${name}`, `3${seen.length}`, { name, uid: member.objects.get<V1Pod>('Pod', 'h-shop', name)?.metadata?.uid }));
    }
    assert.equal(seen.length, 0, 'not mapped before the informer shows the delegate');
    pods.release();
    assert.deepEqual(seen.map((e) => [e.name, e.id]), [['lost', 'ev-lost']], 'the refused one\'s event was never held');
  });

  it('on the first list, passes on only the events of the replay window', async () => {
    const { seen } = await watching((web) => [event('old', '5', web, 10 * 60_000), event('recent', '6', web, 1000)]);
    assert.deepEqual(seen.map((e) => e.id), ['recent']);
  });

  it('maps an event that comes after its delegate is gone', async () => {
    const { member, web, seen, watch } = await watching();
    member.objects.drop('Pod', 'h-shop', 'web');
    watch.send('ADDED', event('late', '10', web));
    assert.deepEqual(seen.map((e) => [e.namespace, e.name, e.id]), [['shop', 'web', 'late']]);
  });
});

describe('MemberPodProvider.resync$', () => {
  it('asks for a resync when the member answers: at its first answer and after an outage, not on every probe', () => {
    const { provider, probe$ } = world();
    let resyncs = 0;
    provider.resync$.subscribe(() => resyncs++);
    const probe = (reachable: boolean): void => probe$.next({ reachable, at: Date.now(), failures: reachable ? 0 : 3 });
    probe(false);
    assert.equal(resyncs, 0, 'not before the member ever answered');
    probe(true);
    assert.equal(resyncs, 1);
    probe(true);
    probe(true);
    assert.equal(resyncs, 1);
    probe(false);
    probe(false);
    probe(true);
    probe(true);
    assert.equal(resyncs, 2);
  });
});

describe('MemberPodProvider: API access of delegates (host, member, none)', () => {
  const ENDPOINT = { host: '203.0.113.10', port: 6443 };

  /** The host's TokenRequest API: tokens numbered in order, living `lifeMs`; refuses while `refuse` is set. */
  function fakeHostApi(lifeMs = 3600_000, { endpoint }: { endpoint?: typeof ENDPOINT } = { endpoint: ENDPOINT }) {
    const requests: TokenRequestFor[] = [];
    const api = {
      refuse: undefined as Error | undefined,
      requests,
      endpoint, unavailable: endpoint ? undefined : 'no hostAPI.server', ca: 'HOST-CA',
      async request(r: TokenRequestFor): Promise<IssuedToken> {
        requests.push(r);
        if (api.refuse) throw api.refuse;
        const issuedAt = new Date();
        return { token: `token-${requests.length}`, issuedAt, expiresAt: new Date(issuedAt.getTime() + lifeMs) };
      },
    };
    return api;
  }
  const tokenPod = (name: string, annotations: Record<string, string> = {}): V1Pod => ({
    metadata: { namespace: 'shop', name, uid: `uid-${name}`, annotations },
    spec: { serviceAccountName: 'builder', containers: [{ name: 'app', image: 'app:1', volumeMounts: [tokenMount] }], volumes: [tokenVolume] },
  });
  const secretOf = (member: FakeMember, name: string) => member.objects.get<V1Secret>('Secret', 'h-shop', `${name}.clusterlet-token`);
  const decoded = (s: V1Secret | undefined, key: string) => Buffer.from(s?.data?.[key] ?? '', 'base64').toString('utf8');

  it('host: a token bound to the proxy, written with the host CA and namespace before the delegate, which mounts it', async () => {
    const hostApi = fakeHostApi();
    const { member, provider, memberPod } = world({ apiAccess: { mode: 'host', host: hostApi } });
    assert.deepEqual(await provider.createPod(tokenPod('job')), []);
    assert.deepEqual(hostApi.requests, [{ namespace: 'shop', serviceAccount: 'builder', pod: { name: 'job', uid: 'uid-job' },
      audience: undefined, expirationSeconds: 3607 }]);
    const calls = member.calls.filter((c) => c === 'createNamespacedSecret' || c === 'createNamespacedPod');
    assert.deepEqual(calls, ['createNamespacedSecret', 'createNamespacedPod'], 'the Secret first: the delegate finds it when it starts');
    const secret = secretOf(member, 'job');
    assert.equal(decoded(secret, 'token-kube-api-access-7xk2p-0'), 'token-1');
    assert.equal(decoded(secret, 'ca.crt'), 'HOST-CA');
    assert.equal(decoded(secret, 'namespace'), 'shop', 'the host namespace, not the member\'s h-shop');
    const d = memberPod('h-shop', 'job');
    assert.equal(d?.spec?.volumes?.[0].projected?.sources?.[0].secret?.name, 'job.clusterlet-token');
    assert.equal(d?.spec?.automountServiceAccountToken, false);
    assert.equal(d?.spec?.containers[0].env?.find((e) => e.name === 'KUBERNETES_SERVICE_HOST')?.value, '203.0.113.10');
  });

  it('member and none by annotation: no token asked, no Secret; a bad annotation refuses the pod for good, naming it', async () => {
    const hostApi = fakeHostApi();
    const { member, provider, memberPod } = world({ apiAccess: { mode: 'host', host: hostApi } });
    await provider.createPod(tokenPod('m', { 'clusterlet.io/api-access': 'member' }));
    await provider.createPod(tokenPod('n', { 'clusterlet.io/api-access': 'none' }));
    assert.deepEqual(hostApi.requests, []);
    assert.deepEqual(member.objects.list('Secret'), []);
    assert.equal(memberPod('h-shop', 'm')?.spec?.volumes, undefined, 'member: the member mounts its own token');
    assert.equal(memberPod('h-shop', 'm')?.spec?.automountServiceAccountToken, undefined);
    assert.equal(memberPod('h-shop', 'n')?.spec?.automountServiceAccountToken, false);
    await assert.rejects(provider.createPod(tokenPod('bad', { 'clusterlet.io/api-access': 'cluster' })),
      (err: unknown) => err instanceof PodRejectedError && err.reason === 'InvalidAPIAccess' && !err.retry
        && /"cluster" is not one of host, member, none/.test(err.message));
  });

  it('host without a known endpoint: the member\'s token, and a Warning saying why', async () => {
    const { provider, memberPod } = world({ apiAccess: { mode: 'host', host: fakeHostApi(3600_000, { endpoint: undefined }) } });
    const notices = await provider.createPod(tokenPod('job'));
    assert.deepEqual(notices.map((n) => [n.type, n.reason]), [['Warning', 'HostAPIAccessUnavailable']]);
    assert.match(notices[0].message, /no hostAPI\.server/);
    assert.equal(memberPod('h-shop', 'job')?.spec?.automountServiceAccountToken, undefined);
  });

  it('a token the host refuses: no delegate, the reason on the proxy (RBAC named); retried', async () => {
    const hostApi = fakeHostApi();
    const { provider, memberPod } = world({ apiAccess: { mode: 'host', host: hostApi } });
    hostApi.refuse = new KubeError('Forbidden', 403, 'Forbidden', 'cannot create resource "serviceaccounts/token"');
    await assert.rejects(provider.createPod(tokenPod('job')), (err: unknown) => err instanceof PodRejectedError
      && err.reason === 'HostTokenForbidden' && err.retry && /serviceaccounts\/token/.test(err.message));
    assert.equal(memberPod('h-shop', 'job'), undefined);
    hostApi.refuse = undefined;
    await provider.createPod(tokenPod('job'));
    assert.ok(memberPod('h-shop', 'job'));
  });

  it('a token the host\'s admission refuses (its TokenRequest policy): its message on the proxy, not an RBAC hint', async () => {
    const hostApi = fakeHostApi();
    const { provider } = world({ apiAccess: { mode: 'host', host: hostApi } });
    hostApi.refuse = new KubeError('Forbidden', 403, 'Forbidden', 'serviceaccounts "default" is forbidden: ValidatingAdmissionPolicy '
      + '\'clusterlet-token-requests\' with binding \'clusterlet-token-requests\' denied request: clusterlet requests no token for a ServiceAccount of kube-system');
    await assert.rejects(provider.createPod(tokenPod('job')), (err: unknown) => err instanceof PodRejectedError
      && err.reason === 'HostTokenForbidden' && err.retry && /^the host's admission refused .*denied request: clusterlet requests no token/.test(err.message)
      && /set clusterlet.io\/api-access: member/.test(err.message) && !/grant it/.test(err.message));
  });

  it('a Secret of that name that is not ours is left alone and the pod refused', async () => {
    const { member, provider } = world({ apiAccess: { mode: 'host', host: fakeHostApi() } });
    member.objects.put('Secret', { metadata: { namespace: 'h-shop', name: 'job.clusterlet-token' }, data: { mine: 'eA==' } });
    await assert.rejects(provider.createPod(tokenPod('job')), { reason: 'MemberObjectConflict' });
    assert.deepEqual(secretOf(member, 'job')?.data, { mine: 'eA==' });
  });

  it('refreshed at 80 % of the lifetime; a failed refresh is a Warning on the proxy, retried; deleting the delegate deletes the Secret', async () => {
    const hostApi = fakeHostApi(400);
    const { member, provider } = world({ apiAccess: { mode: 'host', host: hostApi, tokens: { checkPeriodMs: 10 } } });
    const events: PodEvent[] = [];
    provider.podEvents$.subscribe((e) => events.push(e));
    provider.tokens?.start();
    stops.push(() => provider.tokens?.stop());
    await provider.createPod(tokenPod('job'));
    await eventually('a refreshed token', () => decoded(secretOf(member, 'job'), 'token-kube-api-access-7xk2p-0') === 'token-2');
    hostApi.refuse = new KubeError('Unavailable', 503, 'ServiceUnavailable', 'host API down');
    await eventually('a Warning on the proxy', () => events.some((e) => e.event.reason === 'HostTokenRefreshFailed'));
    const warning = events.find((e) => e.event.reason === 'HostTokenRefreshFailed');
    assert.deepEqual([warning?.namespace, warning?.name, warning?.event.type], ['shop', 'job', 'Warning']);
    assert.match(warning?.event.message ?? '', /could not refresh the host ServiceAccount token.*host API down/);
    const refused = hostApi.requests.length;
    hostApi.refuse = undefined;
    await eventually('a token after the failure', () => hostApi.requests.length > refused
      && decoded(secretOf(member, 'job'), 'token-kube-api-access-7xk2p-0') === `token-${hostApi.requests.length}`);
    await provider.deletePod('shop', 'job', 0);
    assert.equal(secretOf(member, 'job'), undefined);
  });

  /** A token keeper of a restarted process over `member`, with the host proxies `proxies` (host keys → pods). */
  function restarted(member: FakeMember, hostApi: ReturnType<typeof fakeHostApi>, proxies: V1Pod[],
    opts: DelegateTokensOptions = {}, logger = log) {
    const keeper = new DelegateTokens({ client: member.client(), owner: { hostName: HOST, node: NODE } }, hostApi, logger, {
      checkPeriodMs: 10, orphanGraceMs: 0, memberNamespace: (ns) => `h-${ns}`, ...opts },
    { get: (namespace, name) => proxies.find((p) => p.metadata?.namespace === namespace && p.metadata.name === name) });
    keeper.start();
    stops.push(() => keeper.stop());
    return keeper;
  }

  /** A first process that wrote the token Secret of proxy "job", and left it in the member. */
  async function writtenBefore() {
    const hostApi = fakeHostApi();
    const first = world({ apiAccess: { mode: 'host', host: hostApi } });
    const job = tokenPod('job');
    await first.provider.createPod(job);
    const secret = secretOf(first.member, 'job');
    assert.ok(secret);
    /** Another Secret like it, as the member holds it: of another name, `labels` and `annotations` over its own. */
    const copy = (name: string, labels: Record<string, string>, annotations: Record<string, string>): void => {
      first.member.objects.put('Secret', { ...secret, metadata: { ...secret.metadata, name, uid: undefined,
        labels: { ...secret.metadata?.labels, ...labels }, annotations } });
    };
    return { hostApi, member: first.member, job, secret, copy };
  }

  it('a restarted process refreshes the Secrets an earlier one wrote, matched to their proxies; a Secret whose delegate is gone goes', async () => {
    const { hostApi, member, job, secret, copy } = await writtenBefore();
    // The Secret says it is due; a second Secret's delegate is gone.
    member.objects.put('Secret', { ...secret, metadata: { ...secret.metadata,
      annotations: { ...secret.metadata?.annotations, 'clusterlet.io/refresh-at': new Date(0).toISOString() } } });
    copy('gone.clusterlet-token', { 'clusterlet.io/proxy-uid': 'uid-gone' }, { ...secret.metadata?.annotations, 'clusterlet.io/proxy-name': 'gone' });
    restarted(member, hostApi, [job], { alive: (p) => `${p.namespace}/${p.name}` === 'shop/job' });
    await eventually('the due token refreshed', () => decoded(secretOf(member, 'job'), 'token-kube-api-access-7xk2p-0') === 'token-2');
    await eventually('the orphan removed', () => secretOf(member, 'gone') === undefined);
    assert.equal(hostApi.requests.at(-1)?.pod.uid, 'uid-job', 'bound to the same proxy');
  });

  it('recovery trusts the host only: a Secret\'s edited annotations change no token; one naming a proxy the host does not bind here gets none', async () => {
    const { hostApi, member, job, secret, copy } = await writtenBefore();
    // A member admin asks for a cloud audience, a year, another ServiceAccount, and a refresh far away.
    const edited = { ...secret.metadata?.annotations, 'clusterlet.io/service-account': 'admin',
      'clusterlet.io/tokens': JSON.stringify([{ key: 'token-kube-api-access-7xk2p-0', audience: 'sts.amazonaws.com', expirationSeconds: 31_536_000 }]),
      'clusterlet.io/refresh-at': new Date(Date.now() + 10 * 365 * 86_400_000).toISOString() };
    member.objects.put('Secret', { ...secret, metadata: { ...secret.metadata, annotations: edited } });
    // And a Secret of its own making, naming a host pod that is not this member's proxy.
    copy('vault.clusterlet-token', { 'clusterlet.io/proxy-uid': 'uid-vault' }, { ...edited, 'clusterlet.io/proxy-name': 'vault' });
    const before = hostApi.requests.length;
    restarted(member, hostApi, [job]);
    await eventually('the edited Secret rewritten at once', () => hostApi.requests.length > before);
    await settle();
    assert.deepEqual(hostApi.requests.slice(before), [{ namespace: 'shop', serviceAccount: 'builder', pod: { name: 'job', uid: 'uid-job' },
      audience: undefined, expirationSeconds: 3607 }], 'the proxy\'s own ServiceAccount, audience and lifetime; nothing for the vault pod');
    const rewritten = secretOf(member, 'job');
    assert.equal(rewritten?.metadata?.annotations?.['clusterlet.io/service-account'], 'builder');
    assert.match(rewritten?.metadata?.annotations?.['clusterlet.io/tokens'] ?? '', /"expirationSeconds":3607/);
  });

  it('recovery mints nothing for a proxy whose delegate gets no host token (its mode member or none): the Secret found for it goes', async () => {
    const { hostApi, member, job, secret } = await writtenBefore();
    // Due now: a keeper that took it would mint at once.
    member.objects.put('Secret', { ...secret, metadata: { ...secret.metadata,
      annotations: { ...secret.metadata?.annotations, 'clusterlet.io/refresh-at': new Date(0).toISOString() } } });
    const before = hostApi.requests.length;
    restarted(member, hostApi, [job], { hostMode: () => false });
    await eventually('the Secret removed', () => secretOf(member, 'job') === undefined);
    await settle();
    assert.equal(hostApi.requests.length, before, 'no host token minted');
  });

  it('a slow member pod list: no Secret is judged an orphan before it comes, however long the grace has run', async () => {
    const { hostApi, member, job } = await writtenBefore();
    let synced = false;
    let asked = 0;
    // The pod list has not come: alive says no for every proxy. Each tick asks it of the Secret's proxy.
    restarted(member, hostApi, [job], { alive: () => { asked++; return synced; }, synced: () => synced });
    await eventually('five ticks past the grace (0 ms)', () => asked >= 5);
    assert.ok(secretOf(member, 'job'), 'kept while the member\'s pod list has not come, past the grace');
    synced = true;
    const then = asked;
    await eventually('five ticks more', () => asked >= then + 5);
    assert.ok(secretOf(member, 'job'), 'kept: its delegate runs');
  });

  it('an unparseable Secret of ours is removed, with a log line', async () => {
    const { hostApi, member, job, copy } = await writtenBefore();
    copy('junk.clusterlet-token', {}, { 'clusterlet.io/proxy-name': 'junk' });
    const lines: { msg?: string; secret?: string }[] = [];
    const logger = pino({ level: 'info' }, new Writable({ write(chunk: Buffer, _enc, done) { lines.push(JSON.parse(chunk.toString()) as { msg?: string }); done(); } }));
    restarted(member, hostApi, [job], {}, logger);
    await eventually('the unparseable Secret removed', () => secretOf(member, 'junk') === undefined);
    assert.ok(lines.some((l) => l.msg === 'deleting a host-token Secret' && l.secret === 'h-shop/junk.clusterlet-token'), 'with a log line');
    assert.ok(secretOf(member, 'job'));
  });

  describe('no token Secret outlives a failed creation', () => {
    /** No Secret of ours in the member, and the tokens minted so far. */
    const noSecret = (member: FakeMember): void => {
      assert.deepEqual(member.objects.list<V1Secret>('Secret').filter((x) => x.metadata?.labels?.['clusterlet.io/role'] === 'host-token')
        .map((x) => x.metadata?.name), []);
    };

    it('a mandatory ConfigMap missing: no Secret; the retry mints no new token', async () => {
      const hostApi = fakeHostApi();
      const { member, provider } = world({ apiAccess: { mode: 'host', host: hostApi } });
      const pod = tokenPod('job');
      pod.spec!.volumes = [...pod.spec!.volumes ?? [], { name: 'cfg', configMap: { name: 'settings' } }];
      await assert.rejects(provider.createPod(pod), { reason: 'MandatoryConfigMapNotFound' });
      noSecret(member);
      await assert.rejects(provider.createPod(pod), { reason: 'MandatoryConfigMapNotFound' });
      noSecret(member);
      assert.equal(hostApi.requests.length, 1, 'one token for both tries');
    });

    it('a pod of that name not ours (DelegateConflict): no Secret', async () => {
      const { member, provider } = world({ apiAccess: { mode: 'host', host: fakeHostApi() } });
      await provider.createPod(tokenPod('other'));
      member.objects.put('Pod', { metadata: { namespace: 'h-shop', name: 'job' }, spec: { containers: [{ name: 'x', image: 'x' }] } });
      await assert.rejects(provider.createPod(tokenPod('job')), { reason: 'DelegateConflict' });
      assert.equal(secretOf(member, 'job'), undefined);
    });

    it('a pod of that name not ours, in the member\'s cache: refused before any host token is minted or written', async () => {
      const hostApi = fakeHostApi();
      const { member, provider, pods } = world({ apiAccess: { mode: 'host', host: hostApi } });
      await provider.createPod(tokenPod('other'));
      const minted = hostApi.requests.length;
      member.objects.put('Pod', { metadata: { namespace: 'h-shop', name: 'job' }, spec: { containers: [{ name: 'x', image: 'x' }] } });
      await eventually('the pod in the member\'s cache', () => pods.get('h-shop/job') !== undefined);
      const writes = member.calls.filter((c) => c === 'createNamespacedSecret').length;
      await assert.rejects(provider.createPod(tokenPod('job')), { reason: 'DelegateConflict' });
      assert.equal(hostApi.requests.length, minted, 'no token minted');
      assert.equal(member.calls.filter((c) => c === 'createNamespacedSecret').length, writes, 'no Secret written');
    });

    it('another proxy\'s delegate of that name and its Secret: both left as they are', async () => {
      const { member, provider } = world({ apiAccess: { mode: 'host', host: fakeHostApi() } });
      const theirs = { ...tokenPod('job'), metadata: { namespace: 'shop', name: 'job', uid: 'uid-theirs' } };
      await provider.createPod(theirs);
      const secret = secretOf(member, 'job');
      await assert.rejects(provider.createPod(tokenPod('job')), { reason: 'DelegateConflict' });
      assert.deepEqual(secretOf(member, 'job'), secret, 'its Secret untouched');
    });

    for (const [what, err] of [
      ['Forbidden (a quota)', new KubeError('Forbidden', 403, 'Forbidden', 'exceeded quota: pods')],
      ['Invalid', new KubeError('Invalid', 422, 'Invalid', 'spec.containers[0].image: Required value')],
      ['a transient error (429)', new KubeError('TooManyRequests', 429, 'TooManyRequests', 'slow down')],
    ] as const) {
      it(`the delegate's create refused, ${what}: no Secret; the retry mints no new token`, async () => {
        const hostApi = fakeHostApi();
        const { member, provider, memberPod } = world({ apiAccess: { mode: 'host', host: hostApi } });
        member.failNext('createNamespacedPod', err);
        await assert.rejects(provider.createPod(tokenPod('job')));
        noSecret(member);
        await provider.createPod(tokenPod('job'));
        assert.ok(memberPod('h-shop', 'job'));
        assert.equal(decoded(secretOf(member, 'job'), 'token-kube-api-access-7xk2p-0'), 'token-1');
        assert.equal(hostApi.requests.length, 1);
      });
    }

    it('no answer to the create (it may have been made): the Secret stays, and goes once no delegate shows', async () => {
      const { member, provider } = world({ apiAccess: { mode: 'host', host: fakeHostApi(), tokens: { checkPeriodMs: 10, orphanGraceMs: 50 } } });
      provider.tokens?.start();
      stops.push(() => provider.tokens?.stop());
      member.failNext('createNamespacedPod', new KubeError('Unavailable', 0, 'ECONNRESET', 'socket hang up'));
      await assert.rejects(provider.createPod(tokenPod('job')));
      assert.ok(secretOf(member, 'job'), 'kept for the delegate that may have been made');
      await eventually('the orphan removed', () => secretOf(member, 'job') === undefined);
    });
  });

  it('a member namespace deleted by hand: the next creation makes it again, whatever it writes first', async () => {
    const { member, provider, memberPod } = world({ apiAccess: { mode: 'host', host: fakeHostApi() } });
    await provider.createPod(tokenPod('job'));
    // Deleted: terminating first (its pods and Secrets going), then gone.
    const ns = member.objects.get<V1Namespace>('Namespace', '', 'h-shop');
    member.objects.put('Namespace', { ...ns, metadata: { ...ns?.metadata, deletionTimestamp: new Date() } });
    assert.ok(member.objects.get('ServiceAccount', 'h-shop', 'builder'), 'the pod\'s ServiceAccount copied');
    member.objects.drop('Pod', 'h-shop', 'job');
    member.objects.drop('Secret', 'h-shop', 'job.clusterlet-token');
    member.objects.drop('ServiceAccount', 'h-shop', 'builder');
    await assert.rejects(provider.createPod(tokenPod('job')), { reason: 'MemberNamespaceTerminating' });
    await assert.rejects(provider.createPod(tokenPod('job')), { reason: 'MemberNamespaceTerminating' });
    member.objects.drop('Namespace', '', 'h-shop');
    await provider.createPod(tokenPod('job'));
    assert.ok(member.objects.get('Namespace', '', 'h-shop'), 'made again');
    assert.ok(member.objects.get('ServiceAccount', 'h-shop', 'builder'), 'its ServiceAccount copied again');
    assert.ok(secretOf(member, 'job'));
    assert.ok(memberPod('h-shop', 'job'));
  });
});

describe('MemberPodProvider: a delegate that fits no member node', () => {
  it('is refused with NoMemberNodeFits (retried), not created; room in the member wakes the proxy, which then runs', async () => {
    const room$ = new Subject<void>();
    let answer: FitAnswer = { fits: false, candidates: 3, requests: { cpu: '40' }, largestFree: { cpu: '15' } };
    const seen: V1Pod[] = [];
    const { provider, changes, memberPod } = world({ fit: fakeFitGate((p) => { seen.push(p); return answer; }, room$) });
    const big = proxy('big', { containers: [{ name: 'app', image: 'app:1', resources: { requests: { cpu: '40' } } }] });
    await assert.rejects(provider.createPod(big), (err: unknown) => err instanceof PodRejectedError && err.reason === 'NoMemberNodeFits'
      && err.retry && /member m1 has room for its requests \(cpu 40\).*free is cpu 15/.test(err.message));
    assert.equal(memberPod('h-shop', 'big'), undefined);
    assert.equal(seen[0]?.metadata?.namespace, 'h-shop', 'judged as the delegate it would create');
    room$.next();
    await eventually('the proxy woken', () => changes.some((c) => c.key === 'shop/big' && c.lifecycle));
    answer = { fits: true, node: 'n1' };
    await provider.createPod(big);
    assert.ok(memberPod('h-shop', 'big'));
    changes.length = 0;
    room$.next();
    await settle();
    assert.deepEqual(changes.filter((c) => c.key === 'shop/big'), [], 'no longer waiting for room');
  });
});

describe('MemberPodProvider: the fit judged on what the member admits, and per member', () => {
  const unfit: FitAnswer = { fits: false, candidates: 0, requests: { cpu: '1' }, largestFree: { cpu: '0' } };
  /** Fits only where the pod tolerates the member's dedicated taint, as the member's admission adds it. */
  const tolerated = (p: V1Pod): FitAnswer => (p.spec?.tolerations?.some((t) => t.key === 'dedicated') ? { fits: true, node: 'n1' } : unfit);

  it('a delegate that looks unfit as forged is created when the member would store it fitting; the member asked once per proxy generation', async () => {
    const w = world({ fit: fakeFitGate(tolerated, new Subject<void>()) });
    let asked = 0;
    w.member.admit = (p) => { asked++; return { ...p, spec: { ...p.spec!, tolerations: [...p.spec?.tolerations ?? [], { key: 'dedicated', operator: 'Exists' }] } }; };
    await w.provider.createPod(proxy('web'));
    assert.ok(w.memberPod('h-shop', 'web'), 'created');
    assert.equal(asked, 1, 'one dry run');

    // Unfit even as admitted: refused, and a later try of the same proxy generation asks the member no more.
    const never = world({ fit: fakeFitGate(() => unfit, new Subject<void>()) });
    let dryRuns = 0;
    never.member.admit = (p) => { dryRuns++; return p; };
    const big = { ...proxy('big'), metadata: { ...proxy('big').metadata, generation: 1 } };
    for (let i = 0; i < 3; i++) await assert.rejects(never.provider.createPod(big), (err: unknown) => (err as PodRejectedError).reason === 'NoMemberNodeFits');
    assert.equal(dryRuns, 1, 'asked once for its generation');
    await assert.rejects(never.provider.createPod({ ...big, metadata: { ...big.metadata, generation: 2 } }));
    assert.equal(dryRuns, 2, 'asked again for a new generation');
  });

  it('a dry run refused (the member\'s ServiceAccount admission: the pod\'s ServiceAccount not copied yet) is asked again once what the pod refers to is prepared', async () => {
    const w = world({ fit: fakeFitGate(tolerated, new Subject<void>()) });
    const asked: boolean[] = [];
    w.member.admit = (p) => {
      const sa = w.member.objects.get('ServiceAccount', 'h-shop', 'runner') !== undefined;
      asked.push(sa);
      if (!sa) throw new KubeError('Forbidden', 403, 'Forbidden', 'error looking up service account h-shop/runner: serviceaccount "runner" not found');
      return { ...p, spec: { ...p.spec!, tolerations: [{ key: 'dedicated', operator: 'Exists' }] } };
    };
    w.host.put('ServiceAccount', { metadata: { namespace: 'shop', name: 'runner' } });
    await w.provider.createPod(proxy('web', { serviceAccountName: 'runner' }));
    assert.deepEqual(asked, [false, true], 'asked again with its ServiceAccount there');
    assert.ok(w.memberPod('h-shop', 'web'), 'created');
  });

  it('a delegate that fits as forged costs no dry run', async () => {
    const w = world({ fit: fakeFitGate(() => ({ fits: true, node: 'n1' }), new Subject<void>()) });
    let asked = 0;
    w.member.admit = (p) => { asked++; return p; };
    await w.provider.createPod(proxy('web'));
    assert.equal(asked, 0);
  });

  it('advisory, or auto where the member adds nodes: created all the same, to wait (WaitingForMemberScaleUp); its binding is a lifecycle change', async () => {
    for (const over of [{ mode: 'advisory' as const }, { mode: 'auto' as const, growth: () => 'it has Karpenter NodePools' }]) {
      const w = world({ fit: fakeFitGate(() => unfit, new Subject<void>(), over) });
      const notices = await w.provider.createPod(proxy('gpu'));
      assert.ok(w.memberPod('h-shop', 'gpu'), `${over.mode}: created`);
      assert.deepEqual(notices.map((n) => [n.type, n.reason, n.offloaded]), [['Normal', 'WaitingForMemberScaleUp', true]]);
      assert.match(notices[0].message, /waits Pending in the member for it to add a node/);
      const d = w.memberPod('h-shop', 'gpu')!;
      await eventually('shown', () => w.provider.getPod('shop', 'gpu') !== undefined);
      assert.equal(w.provider.getPod('shop', 'gpu')?.scheduled, false);
      w.changes.length = 0;
      w.member.objects.put('Pod', { ...d, spec: { ...d.spec!, nodeName: 'scaled-1' } });
      await eventually('the binding told as a lifecycle change', () => w.changes.some((c) => c.key === 'shop/gpu' && c.lifecycle));
      assert.equal(w.provider.getPod('shop', 'gpu')?.scheduled, true);
    }
    const enforce = world({ fit: fakeFitGate(() => unfit, new Subject<void>(), { mode: 'auto' }) });
    await assert.rejects(enforce.provider.createPod(proxy('gpu')), (err: unknown) => (err as PodRejectedError).reason === 'NoMemberNodeFits',
      'auto, nothing showing the member adds nodes: refused');
  });

  it('shown per member node, a delegate pinned to its node is refused in auto and advisory too: no node the member adds can take it', async () => {
    for (const over of [{ mode: 'advisory' as const }, { mode: 'auto' as const, growth: () => 'it has Karpenter NodePools' }]) {
      const w = world({ fit: fakeFitGate(() => unfit, new Subject<void>(), over) });
      await assert.rejects(w.provider.createPod(proxy('pinned'), {}, { name: 'vn-n1', group: { kind: 'node', node: 'n1' } }),
        (err: unknown) => (err as PodRejectedError).reason === 'NoMemberNodeFits', over.mode);
      assert.equal(w.memberPod('h-shop', 'pinned'), undefined, `${over.mode}: not created`);
      const pooled = await w.provider.createPod(proxy('pooled'), {}, { name: 'vn-gpu', group: { kind: 'pool', label: 'pool', value: 'gpu' } });
      assert.equal(pooled[0]?.reason, 'WaitingForMemberScaleUp', `${over.mode}: per pool, it waits for a node`);
    }
  });

  it('no verdict before the member\'s nodes are listed: the pod is tried again soon, nothing shown; the provider is synced all the same', async () => {
    let ready = false;
    const w = world({ fit: fakeFitGate(() => unfit, new Subject<void>(), { ready: () => ready }) });
    await w.provider.waitSynced();
    assert.equal(w.provider.hasSynced(), true, 'deletions, status and sweeps are not held back by the fit');
    await assert.rejects(w.provider.createPod(proxy('early')), (err: unknown) => err instanceof PodNotReadyError && err.retryAfterMs > 0);
    assert.equal(w.memberPod('h-shop', 'early'), undefined);
    ready = true;
    await assert.rejects(w.provider.createPod(proxy('early')), (err: unknown) => (err as PodRejectedError).reason === 'NoMemberNodeFits');
  });

  it('a dry run the member does not answer (a webhook that refuses dry runs, a timeout) is judged as forged and not asked again before its backoff', async (t) => {
    for (const failure of [new KubeError('BadRequest', 400, 'BadRequest', 'admission webhook "x.example.com" does not support dry run'),
      new KubeError('Unavailable', 504, 'Timeout', 'the server was unable to return a response in the time allotted')]) {
      let now = Date.now();
      t.mock.method(Date, 'now', () => now);
      const w = world({ fit: fakeFitGate(() => unfit, new Subject<void>()) });
      let dryRuns = 0;
      w.member.admit = () => { dryRuns++; throw failure; };
      for (let i = 0; i < 5; i++) {
        await assert.rejects(w.provider.createPod(proxy('big')), (err: unknown) => (err as PodRejectedError).reason === 'NoMemberNodeFits');
      }
      assert.equal(dryRuns, 1, `${failure.reason}: asked once within its backoff`);
      now += 11_000;
      await assert.rejects(w.provider.createPod(proxy('big')));
      assert.equal(dryRuns, 2, `${failure.reason}: asked again once the backoff ended`);
      now += 11_000;
      await assert.rejects(w.provider.createPod(proxy('big')));
      assert.equal(dryRuns, 2, `${failure.reason}: the backoff doubled`);
      t.mock.restoreAll();
    }
  });

  it('a refusal other than a missing ServiceAccount (a quota) is what the proxy shows, with the member\'s message; asked once per backoff, nothing copied', async () => {
    const w = world({ fit: fakeFitGate(tolerated, new Subject<void>()) });
    let dryRuns = 0;
    w.member.admit = () => {
      dryRuns++;
      throw new KubeError('Forbidden', 403, 'Forbidden', 'pods "web" is forbidden: exceeded quota: compute, requested: requests.cpu=1, used: requests.cpu=4, limited: requests.cpu=4');
    };
    w.host.put('ServiceAccount', { metadata: { namespace: 'shop', name: 'runner' } });
    let copies = 0;
    const sa = w.member.objects.watch('ServiceAccount').subscribe((ev) => { if (ev.type === 'ADDED') copies++; });
    stops.push(() => sa.unsubscribe());
    for (let i = 0; i < 3; i++) {
      await assert.rejects(w.provider.createPod(proxy('web', { serviceAccountName: 'runner' })), (err: unknown) => err instanceof PodRejectedError
        && err.reason === 'Forbidden' && err.retry && /exceeded quota: compute/.test(err.message));
    }
    assert.equal(dryRuns, 1, 'asked once');
    assert.equal(copies, 0, 'its ServiceAccount was not copied for it');
    assert.equal(w.memberPod('h-shop', 'web'), undefined);
  });

  it('what the member answered is kept only while the proxy is tried: unused for 15 minutes (a proxy deleted before it got a delegate), it goes', async (t) => {
    let now = Date.now();
    t.mock.method(Date, 'now', () => now);
    const w = world({ fit: fakeFitGate(() => unfit, new Subject<void>()) });
    let dryRuns = 0;
    w.member.admit = (p) => { dryRuns++; return p; };
    await assert.rejects(w.provider.createPod(proxy('gone')));
    now += 14 * 60_000;
    await assert.rejects(w.provider.createPod(proxy('kept')));
    assert.equal(dryRuns, 2);
    now += 2 * 60_000;
    // A try of another proxy drops the entry of the one not tried for 16 minutes; trying that one again asks again.
    await assert.rejects(w.provider.createPod(proxy('kept')));
    assert.equal(dryRuns, 2, 'kept: used 2 minutes ago');
    await assert.rejects(w.provider.createPod(proxy('gone')));
    assert.equal(dryRuns, 3, 'gone: dropped, asked again');
  });
});

describe('podEvents$ with several subscribers (one per virtual node view)', () => {
  const event = (uid: string, resourceVersion: string, pod: { name: string; uid?: string }): CoreV1Event => ({
    metadata: { namespace: 'h-shop', name: `${pod.name}.${uid}`, uid, resourceVersion },
    involvedObject: { kind: 'Pod', namespace: 'h-shop', name: pod.name, uid: pod.uid },
    type: 'Warning', reason: 'BackOff', message: 'Back-off', count: 1,
    firstTimestamp: new Date(Date.now() - 6000), lastTimestamp: new Date(Date.now() - 1000),
    source: { component: 'kubelet', host: 'worker-1' },
  });

  it('passes each member event to every subscriber (each VirtualNodePods view subscribes the provider once)', async () => {
    const w = world({ eventReplayWindowMs: 60_000 });
    await w.provider.createPod(proxy('web'));
    const web = { name: 'web', uid: w.memberPod('h-shop', 'web')?.metadata?.uid };
    const first: PodEvent[] = [];
    const second: PodEvent[] = [];
    const s1 = w.provider.podEvents$.subscribe((e) => first.push(e));
    const s2 = w.provider.podEvents$.subscribe((e) => second.push(e));
    stops.push(() => { s1.unsubscribe(); s2.unsubscribe(); });
    const watch = await w.member.events.watch(1);
    watch.send('ADDED', event('ev-1', '10', web));
    assert.equal(first.length, 1, 'the first subscriber sees it');
    assert.equal(second.length, 1, 'the second subscriber (the view of the node that has the proxy) sees it too');
  });
});
