// The delegate index against a fake member: only this (host, node)'s delegates are indexed, by the proxy they stand
// for; a delegate that went still maps its member key for late events; changes say when the lifecycle moved.
import { describe, it, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { DelegateIndex, type DelegateChange } from '../../../src/member/delegates.ts';
import { forgeDelegatePod } from '../../../src/forge/pod.ts';
import { PROXY_UID_LABEL } from '../../../src/forge/keys.ts';
import { FakeObjects } from '../fakes/objects.ts';

const HOST = 'host-1';
const NODE = 'vnode-a';

const proxy = (name: string, uid = `uid-${name}`): V1Pod => ({
  metadata: { namespace: 'shop', name, uid },
  spec: { containers: [{ name: 'app', image: 'app:1' }] },
});

/**
 * The delegate of `p` in member namespace `memberNamespace`, made by virtual node `node` of host `host`; with `vn`, for
 * that virtual node of the member (a group's: labelled with it).
 */
function delegate(p: V1Pod, { memberNamespace = 'shop', host = HOST, node = NODE, vn = undefined as string | undefined } = {}): V1Pod {
  return forgeDelegatePod(p, { hostName: host, nodeName: node, memberNamespace, ...(vn ? { virtualNode: { name: vn } } : {}) });
}

const stops: (() => void)[] = [];
afterEach(() => { for (const s of stops.splice(0).reverse()) s(); });

/** A member's pods and this node's index of them, with every change it reported. */
function world() {
  const member = new FakeObjects();
  const pods = member.informer<V1Pod>('Pod');
  const index = new DelegateIndex(pods, { hostName: HOST, node: NODE });
  const changes: DelegateChange[] = [];
  index.changes$.subscribe((c) => changes.push(c));
  index.start();
  pods.start();
  stops.push(() => { index.stop(); pods.stop(); });
  return { member, index, changes };
}

const proxyUID = (pod: V1Pod | undefined): string | undefined => pod?.metadata?.labels?.[PROXY_UID_LABEL];

describe('DelegateIndex', () => {
  it('indexes only this host and node\'s delegates, by the proxy they stand for', async () => {
    const { member, index, changes } = world();
    await index.waitSynced();
    member.put('Pod', delegate(proxy('web')));
    member.put('Pod', delegate(proxy('web', 'uid-b'), { memberNamespace: 'shop-b', node: 'vnode-b' }));
    member.put('Pod', delegate(proxy('web', 'uid-c'), { memberNamespace: 'shop-c', host: 'host-2' }));
    member.put('Pod', { metadata: { namespace: 'shop-d', name: 'web' }, spec: { containers: [] } });
    assert.deepEqual(index.hostKeys(), ['shop/web']);
    assert.equal(index.size, 1);
    assert.equal(index.get('shop', 'web')?.metadata?.namespace, 'shop');
    assert.equal(proxyUID(index.get('shop', 'web')), 'uid-web');
    assert.deepEqual(index.hostRefOf('shop/web'), { namespace: 'shop', name: 'web', uid: 'uid-web' });
    for (const other of ['shop-b/web', 'shop-c/web', 'shop-d/web']) assert.equal(index.hostRefOf(other), undefined, other);
    assert.deepEqual([...index.entries()].map(([ref, pod]) => [ref.uid, pod.metadata?.namespace]), [['uid-web', 'shop']]);
    assert.deepEqual(changes, [{ hostKey: 'shop/web', memberKey: 'shop/web', lifecycle: true, appearedAt: '1', virtualNode: 'vnode-a' }],
      'the others\' pods are no change of this node\'s');
  });

  it('indexes the delegates the first list finds', async () => {
    const member = new FakeObjects();
    member.put('Pod', delegate(proxy('early')));
    const pods = member.informer<V1Pod>('Pod');
    const index = new DelegateIndex(pods, { hostName: HOST, node: NODE });
    // The fake lists at once when the informer starts (a real LIST answers later): the index subscribes first.
    index.start();
    pods.start();
    stops.push(() => { index.stop(); pods.stop(); });
    await index.waitSynced();
    assert.deepEqual(index.hostKeys(), ['shop/early']);
  });

  it('forProxy gives the delegate only to the proxy of its UID', () => {
    const { member, index } = world();
    member.put('Pod', delegate(proxy('web')));
    assert.equal(proxyUID(index.forProxy('shop', 'web', 'uid-web')), 'uid-web');
    assert.equal(index.forProxy('shop', 'web', 'uid-of-a-later-pod'), undefined);
    assert.equal(index.forProxy('shop', 'api', 'uid-api'), undefined);
    assert.equal(index.get('shop', 'api'), undefined);
  });

  it('a deleted delegate leaves the index; its member key still maps to the proxy, for late events', () => {
    const { member, index, changes } = world();
    member.put('Pod', delegate(proxy('web')));
    member.drop('Pod', 'shop', 'web');
    assert.equal(index.get('shop', 'web'), undefined);
    assert.deepEqual(index.hostKeys(), []);
    assert.equal(index.size, 0);
    assert.deepEqual(index.hostRefOf('shop/web'), { namespace: 'shop', name: 'web', uid: 'uid-web' });
    assert.deepEqual(changes.at(-1), { hostKey: 'shop/web', memberKey: 'shop/web', lifecycle: true, appearedAt: undefined, virtualNode: 'vnode-a' });
  });

  it('a delegate replaced by a newer one of the same name: the index holds the newer one', () => {
    const { member, index } = world();
    member.put('Pod', delegate(proxy('web', 'uid-1')));
    member.drop('Pod', 'shop', 'web');
    member.put('Pod', delegate(proxy('web', 'uid-2')));
    assert.equal(proxyUID(index.forProxy('shop', 'web', 'uid-2')), 'uid-2');
    assert.equal(index.forProxy('shop', 'web', 'uid-1'), undefined);
    assert.equal(index.hostRefOf('shop/web')?.uid, 'uid-2');
    assert.equal(index.size, 1);
  });

  it('the late deletion of an older delegate elsewhere (another member namespace) leaves the newer one indexed', () => {
    const { member, index } = world();
    member.put('Pod', delegate(proxy('web', 'uid-1'), { memberNamespace: 'old-shop' }));
    member.put('Pod', delegate(proxy('web', 'uid-2')));
    member.drop('Pod', 'old-shop', 'web');
    assert.equal(proxyUID(index.get('shop', 'web')), 'uid-2');
    assert.equal(index.get('shop', 'web')?.metadata?.namespace, 'shop');
    assert.deepEqual(index.hostKeys(), ['shop/web']);
    assert.equal(index.hostRefOf('old-shop/web')?.uid, 'uid-1', 'the old one\'s late events still map');
  });

  it('changes$ says lifecycle when a delegate appears, begins terminating or goes; not when only its status changes', () => {
    const { member, changes } = world();
    const d = member.put('Pod', delegate(proxy('web')));
    member.put('Pod', { ...d, status: { phase: 'Running' } });
    member.put('Pod', { ...d, metadata: { ...d.metadata, deletionTimestamp: new Date() }, status: { phase: 'Running' } });
    member.put('Pod', { ...d, metadata: { ...d.metadata, deletionTimestamp: new Date() }, status: { phase: 'Succeeded' } });
    member.drop('Pod', 'shop', 'web');
    assert.deepEqual(changes.map((c) => c.lifecycle), [true, false, true, false, true]);
    assert.ok(changes.every((c) => c.hostKey === 'shop/web'));
  });
});

describe('DelegateIndex: delegates per virtual node of the member', () => {
  const GPU = `${NODE}-gpu`;
  const CPU = `${NODE}-cpu`;
  const relabelled = (d: V1Pod, vn: string): V1Pod =>
    ({ ...d, metadata: { ...d.metadata, labels: { ...d.metadata!.labels, 'clusterlet.io/virtual-node': vn } } });
  const sizes = (index: DelegateIndex) => Object.fromEntries([NODE, GPU, CPU].map((n) => [n, index.sizeOf(n)]));
  const keysOf = (index: DelegateIndex, vn: string) => index.hostKeysOf(vn).sort();

  it('counts and lists each virtual node\'s delegates as they come, move and go', () => {
    const { member, index } = world();
    const web = member.put('Pod', delegate(proxy('web'), { vn: GPU }));
    member.put('Pod', delegate(proxy('db'), { vn: GPU }));
    member.put('Pod', delegate(proxy('api'), { vn: CPU }));
    member.put('Pod', delegate(proxy('legacy')));
    // Another node's and another host's, labelled with a virtual node of the same name: not this node's.
    member.put('Pod', delegate(proxy('x'), { memberNamespace: 'shop-b', node: 'vnode-b', vn: GPU }));
    member.put('Pod', delegate(proxy('y'), { memberNamespace: 'shop-c', host: 'host-2', vn: GPU }));
    assert.deepEqual(keysOf(index, GPU), ['shop/db', 'shop/web']);
    assert.deepEqual(keysOf(index, CPU), ['shop/api']);
    assert.deepEqual(keysOf(index, NODE), ['shop/legacy'], 'a delegate without the label is the member\'s own node\'s');
    assert.deepEqual(sizes(index), { [NODE]: 1, [GPU]: 2, [CPU]: 1 });
    assert.deepEqual([index.hostKeysOf('vnode-a-none'), index.sizeOf('vnode-a-none')], [[], 0]);
    assert.equal(index.size, 4);
    assert.deepEqual([index.virtualNodeOf('shop', 'web'), index.virtualNodeOf('shop', 'legacy'), index.virtualNodeOf('shop', 'nope')],
      [GPU, NODE, undefined]);

    member.put('Pod', { ...web, status: { phase: 'Running' } });
    assert.deepEqual(sizes(index), { [NODE]: 1, [GPU]: 2, [CPU]: 1 }, 'a status change moves nothing');
    member.put('Pod', relabelled(member.get<V1Pod>('Pod', 'shop', 'web')!, CPU));
    assert.deepEqual(keysOf(index, GPU), ['shop/db']);
    assert.deepEqual(keysOf(index, CPU), ['shop/api', 'shop/web'], 'moved with its label');
    assert.equal(index.virtualNodeOf('shop', 'web'), CPU);

    member.drop('Pod', 'shop', 'db');
    assert.deepEqual([index.hostKeysOf(GPU), index.sizeOf(GPU)], [[], 0]);
    member.drop('Pod', 'shop', 'legacy');
    member.drop('Pod', 'shop', 'web');
    assert.deepEqual(sizes(index), { [NODE]: 0, [GPU]: 0, [CPU]: 1 });
    assert.deepEqual(keysOf(index, CPU), ['shop/api']);
  });

  it('tells each change\'s virtual node, a deletion\'s too', () => {
    const { member, changes } = world();
    member.put('Pod', delegate(proxy('web'), { vn: GPU }));
    member.put('Pod', delegate(proxy('legacy')));
    member.drop('Pod', 'shop', 'web');
    member.drop('Pod', 'shop', 'legacy');
    assert.deepEqual(changes.map((c) => [c.hostKey, c.virtualNode]),
      [['shop/web', GPU], ['shop/legacy', NODE], ['shop/web', GPU], ['shop/legacy', NODE]]);
    assert.deepEqual(changes[2], { hostKey: 'shop/web', memberKey: 'shop/web', lifecycle: true, appearedAt: undefined, virtualNode: GPU });
  });

  it('the late deletion of an older delegate elsewhere, of another virtual node, leaves nothing counted for that node', () => {
      const { member, index } = world();
      member.put('Pod', delegate(proxy('web', 'uid-1'), { memberNamespace: 'old-shop', vn: GPU }));
      member.put('Pod', delegate(proxy('web', 'uid-2'), { vn: CPU }));
      member.drop('Pod', 'old-shop', 'web');
      assert.deepEqual(keysOf(index, CPU), ['shop/web']);
      assert.deepEqual([index.hostKeysOf(GPU), index.sizeOf(GPU)], [[], 0], 'the retired node would wait for it forever');
    });

  it('a change of an older delegate elsewhere (it terminates) while a newer one runs: the newer stays the proxy\'s', () => {
      const { member, index } = world();
      const old = member.put('Pod', delegate(proxy('web', 'uid-1'), { memberNamespace: 'old-shop' }));
      member.put('Pod', delegate(proxy('web', 'uid-2')));
      member.put('Pod', { ...old, metadata: { ...old.metadata, deletionTimestamp: new Date() } });
      member.drop('Pod', 'old-shop', 'web');
      assert.equal(proxyUID(index.get('shop', 'web')), 'uid-2');
      assert.deepEqual(index.hostKeys(), ['shop/web']);
      assert.equal(index.sizeOf(NODE), 1);
    });
});
