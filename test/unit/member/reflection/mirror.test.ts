// The host → member mirror against fake host and member APIs: what a delegate refers to is copied before it is
// created, follows the host, is set back when someone changes it, and goes with the last delegate of this host
// that uses it; what is not clusterlet's is never touched; missing objects reject the pod and wake it later.
import { describe, it, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import type { KubernetesObject, V1ConfigMap, V1Pod, V1PodSpec, V1Secret } from '@kubernetes/client-node';
import { ObjectMirror, type MirrorOptions, type Prepared } from '../../../../src/member/reflection/mirror.ts';
import { HostObjects } from '../../../../src/host/reflection/caches.ts';
import type { HostCaches } from '../../../../src/provider/reflection.ts';
import { rejection } from '../../../../src/member/pod/provider.ts';
import { forgeDelegatePod } from '../../../../src/forge/pod.ts';
import type { Informer } from '../../../../src/kube/informer.ts';
import { createLogger } from '../../../../src/log.ts';
import { FakeObjects, labelled } from '../../fakes/objects.ts';
import { eventually, settle } from '../../fakes/wait.ts';

const HOST = 'host-1';
const NS = 'shop';
const SA_TOKEN = 'kubernetes.io/service-account-token';
const log = createLogger('silent');

const proxy = (name: string, spec: Partial<V1PodSpec>): V1Pod => ({
  metadata: { namespace: NS, name, uid: `uid-${name}` },
  spec: { containers: [{ name: 'app', image: 'app:1' }], ...spec },
});
const mounting = (name: string, configMap: string, optional?: boolean): V1Pod =>
  proxy(name, { volumes: [{ name: 'c', configMap: { name: configMap, optional } }] });
const usingSecret = (name: string, secret: string, optional?: boolean): V1Pod =>
  proxy(name, { containers: [{ name: 'app', image: 'app:1', env: [{ name: 'K', valueFrom: { secretKeyRef: { name: secret, key: 'k', optional } } }] }] });


const stops: (() => void)[] = [];
afterEach(() => { for (const s of stops.splice(0).reverse()) s(); });

/** A host and a member, the host's shared caches, and virtual nodes of that host on that member. */
function world() {
  const host = new FakeObjects();
  const member = new FakeObjects();
  const configMaps = new HostObjects<V1ConfigMap>('host-cm', host.watch('ConfigMap'), (ns, name) => host.read('ConfigMap', ns, name));
  const secrets = new HostObjects<V1Secret>('host-secrets', host.watch('Secret', (s) => (s as V1Secret).type !== SA_TOKEN),
    (ns, name) => host.read('Secret', ns, name));
  const caches: HostCaches = { configMaps, secrets };
  configMaps.start();
  secrets.start();
  stops.push(() => { configMaps.stop(); secrets.stop(); });

  /** The mirror of virtual node `nodeName`; `run` does what the provider does to create a delegate. */
  function node(nodeName: string, opts: MirrorOptions = {}, { startMirror = true } = {}) {
    const pods: Informer<V1Pod> = member.informer('Pod');
    const origin = labelled(`clusterlet.io/origin=${HOST}`);
    const mirror = new ObjectMirror(
      { pods, owner: { hostName: HOST, node: nodeName }, config: { name: 'm1', namespaceMapping: { template: '{namespace}', overrides: {} } } },
      { ConfigMap: member.target('ConfigMap', origin), Secret: member.target('Secret', origin), ServiceAccount: member.target('ServiceAccount', origin) },
      caches, log, opts);
    const woken: string[] = [];
    mirror.wake$.subscribe((k) => woken.push(k));
    pods.start();
    if (startMirror) mirror.start();
    const stop = (): void => { mirror.stop(); pods.stop(); };
    stops.push(stop);
    const delegate = (p: V1Pod): void => { member.put('Pod', forgeDelegatePod(p, { hostName: HOST, nodeName, memberNamespace: NS })); };
    return {
      mirror, woken, delegate, stop, pods,
      /** Prepares the proxy and, unless it is rejected, creates its delegate. */
      async run(p: V1Pod): Promise<Prepared> {
        const prepared = await mirror.prepare(p, NS);
        const ok = !prepared.missing.length && !prepared.conflicts.length;
        if (ok) delegate(p);
        prepared.release(ok);
        return prepared;
      },
    };
  }
  const copy = <T extends KubernetesObject>(kind: string, name: string): T | undefined => member.get<T>(kind, NS, name);
  return { host, member, caches, node, copy };
}

describe('ObjectMirror', () => {
  it('copies what a pod refers to before its delegate is created, labelled for the host and node', async () => {
    const { host, node, copy } = world();
    host.put('ConfigMap', { metadata: { namespace: NS, name: 'cfg', labels: { team: 'a' } }, data: { 'app.yaml': 'mode: fast' } });
    host.put('Secret', { metadata: { namespace: NS, name: 'creds' }, type: 'Opaque', data: { k: 'czNjcjN0' } });
    const a = node('vnode-a');
    const p = proxy('web', { volumes: [{ name: 'c', configMap: { name: 'cfg' } }, { name: 's', secret: { secretName: 'creds' } }] });
    const prepared = await a.mirror.prepare(p, NS);
    assert.deepEqual([prepared.missing, prepared.conflicts, prepared.notices], [[], [], []]);
    const cm = copy<V1ConfigMap>('ConfigMap', 'cfg');
    assert.deepEqual(cm?.data, { 'app.yaml': 'mode: fast' });
    assert.deepEqual(cm?.metadata?.labels, { team: 'a', 'clusterlet.io/origin': HOST, 'clusterlet.io/node': 'vnode-a' });
    assert.equal(cm?.metadata?.annotations?.['clusterlet.io/proxy-namespace'], NS);
    assert.deepEqual(copy<V1Secret>('Secret', 'creds')?.data, { k: 'czNjcjN0' });
    assert.equal(copy('ServiceAccount', 'default')?.metadata?.labels?.['clusterlet.io/origin'], HOST, 'the pod\'s ServiceAccount exists');
    prepared.release(false);
  });

  it('follows an update on the host', async () => {
    const { host, node, copy } = world();
    host.put('ConfigMap', { metadata: { namespace: NS, name: 'cfg' }, data: { v: '1' } });
    await node('vnode-a').run(mounting('web', 'cfg'));
    host.put('ConfigMap', { metadata: { namespace: NS, name: 'cfg' }, data: { v: '2' } });
    await eventually('the copy updated', () => copy<V1ConfigMap>('ConfigMap', 'cfg')?.data?.v === '2');
  });

  it('sets back a copy someone changed, and makes again one someone deleted', async () => {
    const { host, member, node, copy } = world();
    host.put('ConfigMap', { metadata: { namespace: NS, name: 'cfg' }, data: { v: '1' } });
    await node('vnode-a').run(mounting('web', 'cfg'));
    member.put('ConfigMap', { ...copy<V1ConfigMap>('ConfigMap', 'cfg'), data: { v: 'tampered' } });
    await eventually('set back', () => copy<V1ConfigMap>('ConfigMap', 'cfg')?.data?.v === '1');
    member.drop('ConfigMap', NS, 'cfg');
    await eventually('made again', () => copy<V1ConfigMap>('ConfigMap', 'cfg')?.data?.v === '1');
  });

  it('removes a copy with the last delegate that uses it', async () => {
    const { host, member, node, copy } = world();
    host.put('ConfigMap', { metadata: { namespace: NS, name: 'cfg' }, data: { v: '1' } });
    const a = node('vnode-a');
    await a.run(mounting('one', 'cfg'));
    await a.run(mounting('two', 'cfg'));
    member.drop('Pod', NS, 'one');
    await settle();
    assert.ok(copy('ConfigMap', 'cfg'), 'pod "two" still uses it');
    member.drop('Pod', NS, 'two');
    await eventually('removed', () => copy('ConfigMap', 'cfg') === undefined);
    assert.ok(copy('ServiceAccount', 'default'), 'a "default" ServiceAccount stays (the member makes its own anyway)');
  });

  it('keeps a copy while a delegate of another virtual node of the same host uses it; only its owner removes it', async () => {
    const { host, member, node, copy } = world();
    host.put('ConfigMap', { metadata: { namespace: NS, name: 'cfg' }, data: { v: '1' } });
    const a = node('vnode-a');
    const b = node('vnode-b');
    await a.run(mounting('on-a', 'cfg'));
    await b.run(mounting('on-b', 'cfg'));
    assert.equal(copy('ConfigMap', 'cfg')?.metadata?.labels?.['clusterlet.io/node'], 'vnode-a', 'the copy keeps its owner');
    member.drop('Pod', NS, 'on-a');
    await settle();
    assert.ok(copy('ConfigMap', 'cfg'), 'vnode-b\'s delegate still uses it');
    member.drop('Pod', NS, 'on-b');
    await eventually('removed by its owner', () => copy('ConfigMap', 'cfg') === undefined);
    assert.equal(member.writes('delete', 'ConfigMap').length, 1);
  });

  it('never touches a same-named member object that is not clusterlet\'s: a conflict, with the provider\'s message', async () => {
    const { host, member, node, copy } = world();
    member.put('ConfigMap', { metadata: { namespace: NS, name: 'settings' }, data: { owner: 'member-team' } });
    host.put('ConfigMap', { metadata: { namespace: NS, name: 'settings' }, data: { owner: 'host-team' } });
    const prepared = await node('vnode-a').run(mounting('clash', 'settings'));
    assert.deepEqual(prepared.conflicts,
      ['configmap shop/settings exists in member m1 and was not created by clusterlet; it is left untouched: delete or rename it, or map the namespace elsewhere (namespaceMapping)']);
    const rejected = rejection(prepared, NS);
    assert.equal(rejected?.reason, 'MemberObjectConflict');
    assert.equal(rejected?.message, prepared.conflicts[0]);
    await settle();
    assert.deepEqual(copy<V1ConfigMap>('ConfigMap', 'settings')?.data, { owner: 'member-team' });
    assert.deepEqual(member.writes('replace').concat(member.writes('delete')), []);
  });

  it('a missing mandatory object rejects the pod with its reason; the pod is woken once when it appears', async () => {
    const { host, member, node, copy } = world();
    const a = node('vnode-a');
    const p = usingSecret('strict', 'later');
    const prepared = await a.run(p);
    assert.deepEqual(prepared.missing, [{ kind: 'Secret', name: 'later', optional: false }]);
    const rejected = rejection(prepared, NS);
    assert.equal(rejected?.reason, 'MandatorySecretNotFound');
    assert.equal(rejected?.message, 'secret "later" not found in namespace shop; the pod starts once it exists');
    assert.equal(member.get('Pod', NS, 'strict'), undefined);
    assert.deepEqual(a.woken, []);
    host.put('Secret', { metadata: { namespace: NS, name: 'later' }, type: 'Opaque', data: { k: 'dg==' } });
    assert.deepEqual(a.woken, ['shop/strict']);
    host.put('Secret', { metadata: { namespace: NS, name: 'later' }, type: 'Opaque', data: { k: 'dzI=' } });
    assert.deepEqual(a.woken, ['shop/strict'], 'woken once: a pod still missing something waits again');
    const again = await a.run(p);
    assert.deepEqual(again.missing, []);
    assert.deepEqual(copy<V1Secret>('Secret', 'later')?.data, { k: 'dzI=' });
  });

  it('lists every missing mandatory object in the message, named by the first one\'s kind', async () => {
    const { node } = world();
    const p = proxy('two', { volumes: [{ name: 'c', configMap: { name: 'cfg' } }, { name: 's', secret: { secretName: 'creds' } }] });
    const rejected = rejection(await node('vnode-a').run(p), NS);
    assert.equal(rejected?.reason, 'MandatoryConfigMapNotFound');
    assert.equal(rejected?.message,
      'configmap "cfg" not found in namespace shop; secret "creds" not found in namespace shop; the pod starts once it exists');
  });

  it('forgets a waiting pod after a while (one deleted while it waited is not woken later)', async () => {
    const { host, node } = world();
    const a = node('vnode-a', { waitMs: 5 });
    await a.run(usingSecret('gone', 'later'));
    await settle();
    host.put('Secret', { metadata: { namespace: NS, name: 'later' }, type: 'Opaque', data: {} });
    assert.deepEqual(a.woken, []);
  });

  it('an optional missing object is a notice, and the pod runs', async () => {
    const { member, node } = world();
    const prepared = await node('vnode-a').run(mounting('relaxed', 'maybe', true));
    assert.deepEqual(prepared.missing, []);
    assert.deepEqual(prepared.notices, [{ type: 'Warning', reason: 'OptionalConfigMapNotFound',
      message: 'optional configmap "maybe" not found; the pod runs without it' }]);
    assert.ok(member.get('Pod', NS, 'relaxed'));
  });

  it('never copies a service-account token Secret: missing when mandatory, a notice when optional', async () => {
    const { host, node, copy } = world();
    host.put('Secret', { metadata: { namespace: NS, name: 'tok' }, type: SA_TOKEN, data: { token: 'dA==' } });
    const a = node('vnode-a');
    const strict = await a.run(usingSecret('strict', 'tok'));
    assert.equal(rejection(strict, NS)?.reason, 'MandatorySecretNotFound');
    const relaxed = await a.run(usingSecret('relaxed', 'tok', true));
    assert.deepEqual(relaxed.notices, [{ type: 'Warning', reason: 'OptionalSecretNotFound',
      message: 'optional secret "tok" is a host credential and is not copied; the pod runs without it' }]);
    await settle();
    assert.equal(copy('Secret', 'tok'), undefined);
  });

  it('what a rejected pod had copied goes again', async () => {
    const { host, node, copy } = world();
    host.put('ConfigMap', { metadata: { namespace: NS, name: 'cfg' }, data: { v: '1' } });
    const p = proxy('half', { volumes: [{ name: 'c', configMap: { name: 'cfg' } }, { name: 's', secret: { secretName: 'later' } }] });
    await node('vnode-a').run(p);
    await eventually('removed', () => copy('ConfigMap', 'cfg') === undefined);
  });

  it('a delegate created but never seen holds its copies for a while only', async () => {
    const { host, node, copy } = world();
    host.put('ConfigMap', { metadata: { namespace: NS, name: 'cfg' }, data: { v: '1' } });
    const a = node('vnode-a', { createHoldMs: 5 });
    (await a.mirror.prepare(mounting('lost', 'cfg'), NS)).release(true);
    assert.ok(copy('ConfigMap', 'cfg'));
    await eventually('removed once the hold ends', () => copy('ConfigMap', 'cfg') === undefined);
  });

  it('once its delegate is seen, the delegate\'s spec holds the copies: they go with it, not after the hold', async () => {
    const { host, member, node, copy } = world();
    host.put('ConfigMap', { metadata: { namespace: NS, name: 'cfg' }, data: { v: '1' } });
    const a = node('vnode-a', { createHoldMs: 60_000 });
    const p = mounting('web', 'cfg');
    (await a.mirror.prepare(p, NS)).release(true);
    a.delegate(p);
    await settle();
    assert.ok(copy('ConfigMap', 'cfg'));
    member.drop('Pod', NS, 'web');
    await eventually('removed with the delegate', () => copy('ConfigMap', 'cfg') === undefined);
  });

  it('removes at start a copy of its own that no delegate uses any more', async () => {
    const { member, node, copy } = world();
    member.put('ConfigMap', { metadata: { namespace: NS, name: 'stale', annotations: { 'clusterlet.io/proxy-namespace': NS },
      labels: { 'clusterlet.io/origin': HOST, 'clusterlet.io/node': 'vnode-a' } }, data: {} });
    member.put('ConfigMap', { metadata: { namespace: NS, name: 'others', annotations: { 'clusterlet.io/proxy-namespace': NS },
      labels: { 'clusterlet.io/origin': HOST, 'clusterlet.io/node': 'vnode-z' } }, data: {} });
    node('vnode-a');
    await eventually('the stale copy removed', () => copy('ConfigMap', 'stale') === undefined);
    await settle();
    assert.ok(copy('ConfigMap', 'others'), 'another node\'s copy is its own business');
  });

  it('started over a member pod cache that has synced already (a replica taking over), keeps the copies in use', async () => {
    const { host, node, copy } = world();
    host.put('ConfigMap', { metadata: { namespace: NS, name: 'cfg' }, data: { v: '1' } });
    const before = node('vnode-a');
    await before.run(mounting('one', 'cfg'));
    before.mirror.stop();
    // The next leader's mirror: its pod cache is warm (listed, every ADDED event gone) before the mirror starts.
    const next = node('vnode-a', {}, { startMirror: false });
    await next.pods.waitSynced();
    next.mirror.start();
    // The start-up pass over the copies has run once the caches it waits on have synced.
    await settle();
    await settle();
    assert.ok(copy('ConfigMap', 'cfg'), 'the delegate "one" still uses it');
  });

  it('stopped, it leaves no interest behind in the host caches it shares', async () => {
    const { host, caches, node } = world();
    host.put('ConfigMap', { metadata: { namespace: NS, name: 'cfg' }, data: { v: '1' } });
    const a = node('vnode-a');
    await a.run(mounting('web', 'cfg'));
    await a.run(usingSecret('strict', 'later'));
    const reported: string[] = [];
    caches.configMaps.events$.subscribe((e) => reported.push(e.key));
    caches.secrets.events$.subscribe((e) => reported.push(e.key));
    a.stop();
    host.put('ConfigMap', { metadata: { namespace: NS, name: 'cfg' }, data: { v: '2' } });
    host.put('Secret', { metadata: { namespace: NS, name: 'later' }, data: {} });
    assert.deepEqual(reported, []);
  });
});
