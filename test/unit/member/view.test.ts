// A member shown as several virtual nodes has one pod provider; each virtual node's pod controller sees it through a
// VirtualNodePods view: only the delegates of its own proxies (listed, read, updated, deleted), only their changes
// (and the changes that name no virtual node), and the delegates it creates labelled with it and kept in its group.
import { describe, it, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { Subject } from 'rxjs';
import type { V1Pod, V1PodSpec } from '@kubernetes/client-node';
import type { MemberPodProviderOptions } from '../../../src/member/pod/provider.ts';
import { VirtualNodePods } from '../../../src/member/pod/view.ts';
import type { MemberConfig } from '../../../src/config.ts';
import { forgeDelegatePod } from '../../../src/forge/pod.ts';
import { PodRejectedError } from '../../../src/provider/errors.ts';
import type { PodChange } from '../../../src/provider/pod.ts';
import type { FitAnswer } from '../../../src/forge/fit.ts';
import type { NodeGroup } from '../../../src/forge/groups.ts';
import { createLogger } from '../../../src/log.ts';
import { fakeFitGate, providerWorld } from '../fakes/providerworld.ts';
import { eventually, settle } from '../fakes/wait.ts';

const HOST = 'host-1';
const NODE = 'vnode-a';
const POOL = 'example.com/pool';
const GPU = `${NODE}-gpu`;
const CPU = `${NODE}-cpu`;
const log = createLogger('silent');

const config: MemberConfig = {
  name: 'm1', nodeName: NODE, labels: {}, taints: [], qps: 50, burst: 100,
  storage: { className: 'clusterlet-m1', reclaimPolicy: 'Delete' },
  namespaceMapping: { template: 'h-{namespace}', overrides: {} },
};

const pool = (value: string): NodeGroup => ({ kind: 'pool', label: POOL, value });

const proxy = (name: string, spec: Partial<V1PodSpec> = {}): V1Pod => ({
  metadata: { namespace: 'shop', name, uid: `uid-${name}` },
  spec: { containers: [{ name: 'app', image: 'app:1' }], ...spec },
});

const stops: (() => void)[] = [];
afterEach(() => { for (const s of stops.splice(0).reverse()) s(); });

/**
 * A member and a host, the provider of the member's node NODE over them, and three views of it: the pools gpu and cpu,
 * and the member's own node; each view's changes recorded.
 */
function world(opts: Partial<MemberPodProviderOptions> = {}) {
  const { member, provider, delegates, start } = providerWorld({ config, hostName: HOST, node: NODE, hostIP: '10.1.2.3', log, stops, provider: opts });
  const view = (name: string, group: NodeGroup) => {
    // The proxies the view's controller has (host keys): a lifecycle change of one of them reaches the view whatever
    // virtual node the delegate was of.
    const held = new Set<string>();
    const v = new VirtualNodePods(provider, delegates, { name, group }, { get: (key) => (held.has(key) ? {} : undefined) });
    const changes: PodChange[] = [];
    const sub = v.podChanges$.subscribe((c) => changes.push(c));
    stops.push(() => sub.unsubscribe());
    return { v, changes, held };
  };
  const gpu = view(GPU, pool('gpu'));
  const cpu = view(CPU, pool('cpu'));
  const own = view(NODE, { kind: 'cluster' });
  start();
  const memberPod = (name: string): V1Pod | undefined => member.objects.get<V1Pod>('Pod', 'h-shop', name);
  return { member, provider, gpu, cpu, own, memberPod };
}

const poolTerm = (value: string) => ({ matchExpressions: [{ key: POOL, operator: 'In', values: [value] }] });

describe('VirtualNodePods', () => {
  it('creates through a pool\'s view a delegate labelled with the view\'s virtual node and kept in its pool', async () => {
    const { gpu, cpu, own, memberPod } = world();
    await gpu.v.createPod(proxy('web', { nodeSelector: { 'kubernetes.io/hostname': GPU, [POOL]: 'gpu' } }));
    await cpu.v.createPod(proxy('api'));
    await own.v.createPod(proxy('legacy'));
    const web = memberPod('web')!;
    assert.equal(web.metadata?.labels?.['clusterlet.io/virtual-node'], GPU);
    assert.equal(web.metadata?.labels?.['clusterlet.io/node'], NODE, 'still the member\'s node\'s delegate');
    assert.deepEqual(web.spec?.nodeSelector, { [POOL]: 'gpu' }, 'its virtual node\'s hostname stripped, the pool label kept');
    assert.deepEqual(web.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms, [poolTerm('gpu')]);
    const api = memberPod('api')!;
    assert.equal(api.metadata?.labels?.['clusterlet.io/virtual-node'], CPU);
    assert.deepEqual(api.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms, [poolTerm('cpu')]);
    const legacy = memberPod('legacy')!;
    assert.equal(legacy.metadata?.labels?.['clusterlet.io/virtual-node'], undefined, 'the member\'s own node: no label');
    assert.equal(legacy.spec?.affinity, undefined, 'nor a constraint');
  });

  it('each view lists and counts only its own delegates; a delegate without the label is the member\'s own node\'s', async () => {
    const { member, provider, gpu, cpu, own } = world();
    await gpu.v.createPod(proxy('web'));
    await gpu.v.createPod(proxy('db'));
    await cpu.v.createPod(proxy('api'));
    // Made before groups: no virtual-node label.
    member.objects.put('Pod', forgeDelegatePod(proxy('old'), { hostName: HOST, nodeName: NODE, memberNamespace: 'h-shop' }));
    assert.deepEqual(gpu.v.listPodKeys().sort(), ['shop/db', 'shop/web']);
    assert.deepEqual(cpu.v.listPodKeys(), ['shop/api']);
    assert.deepEqual(own.v.listPodKeys(), ['shop/old']);
    assert.deepEqual([gpu.v.podCount(), cpu.v.podCount(), own.v.podCount()], [2, 1, 1]);
    assert.deepEqual(provider.listPodKeys().sort(), ['shop/api', 'shop/db', 'shop/old', 'shop/web'], 'the provider has them all');
  });

  it('reads only its own delegates: another view\'s is undefined', async () => {
    const { gpu, cpu, own } = world();
    await gpu.v.createPod(proxy('web'));
    assert.equal(gpu.v.getPod('shop', 'web')?.proxyUID, 'uid-web');
    assert.ok(gpu.v.getPodStatus('shop', 'web'));
    for (const other of [cpu.v, own.v]) {
      assert.equal(other.getPod('shop', 'web'), undefined);
      assert.equal(other.getPodStatus('shop', 'web'), undefined);
    }
    assert.equal(gpu.v.getPod('shop', 'nope'), undefined, 'no delegate at all');
  });

  it('deletes only its own delegates: another view\'s is left alone', async () => {
    const { member, gpu, cpu, own, memberPod } = world();
    await gpu.v.createPod(proxy('web'));
    await cpu.v.deletePod('shop', 'web', 0);
    await own.v.deletePod('shop', 'web', 0);
    assert.equal(member.deletes.length, 0, 'nothing asked of the member');
    assert.ok(memberPod('web'));
    await gpu.v.deletePod('shop', 'web', 0);
    assert.deepEqual(member.deletes.map((d) => `${d.namespace}/${d.name}`), ['h-shop/web']);
    assert.equal(memberPod('web'), undefined);
  });

  it('updates only its own delegates, keeping their virtual node', async () => {
    const { member, gpu, cpu, memberPod } = world();
    await gpu.v.createPod(proxy('web'));
    const newer = proxy('web', { containers: [{ name: 'app', image: 'app:2' }] });
    await gpu.v.updatePod(proxy('web'));
    assert.deepEqual(member.objects.writes('replace'), [], 'the same proxy: no churn');
    assert.deepEqual(await cpu.v.updatePod(newer), []);
    assert.deepEqual(member.objects.writes('replace'), [], 'another view\'s delegate is not replaced');
    await gpu.v.updatePod(newer);
    assert.equal(memberPod('web')?.spec?.containers[0].image, 'app:2');
    assert.equal(memberPod('web')?.metadata?.labels?.['clusterlet.io/virtual-node'], GPU);
    assert.deepEqual(memberPod('web')?.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms,
      [poolTerm('gpu')], 'still kept in its pool');
  });

  it('a delegate\'s changes reach only its own view', async () => {
    const { member, gpu, cpu, own, memberPod } = world();
    await gpu.v.createPod(proxy('web'));
    await own.v.createPod(proxy('old'));
    const web = memberPod('web')!;
    member.objects.put('Pod', { ...web, status: { phase: 'Running' } });
    await member.objects.delete('Pod', 'h-shop', 'web');
    const keys = (cs: PodChange[]) => cs.map((c) => `${c.key}:${c.lifecycle}`);
    assert.deepEqual(keys(gpu.changes), ['shop/web:true', 'shop/web:false', 'shop/web:true'], 'appeared, changed, went');
    assert.deepEqual(keys(own.changes), ['shop/old:true']);
    assert.deepEqual(cpu.changes, []);
    assert.ok(gpu.changes.every((c) => !('virtualNode' in c)), 'a view tells no virtual node');
  });

  it('changes that name no virtual node reach every view; the refusal names the pool', async () => {
    const room$ = new Subject<void>();
    const answer: FitAnswer = { fits: false, candidates: 2, requests: { cpu: '40' }, largestFree: { cpu: '15' } };
    const { gpu, cpu, own, memberPod } = world({ fit: fakeFitGate(() => answer, room$) });
    await assert.rejects(gpu.v.createPod(proxy('big')), (err: unknown) => err instanceof PodRejectedError && err.reason === 'NoMemberNodeFits'
      && err.message.startsWith('no Ready member node of member m1 (pool example.com/pool=gpu) has room for its requests (cpu 40)'));
    assert.equal(memberPod('big'), undefined);
    room$.next();
    const woken = (cs: PodChange[]) => cs.some((c) => c.key === 'shop/big' && c.lifecycle);
    await eventually('every view woken', () => woken(gpu.changes) && woken(cpu.changes) && woken(own.changes));
    await settle();
    for (const cs of [gpu.changes, cpu.changes, own.changes]) assert.deepEqual(cs, [{ key: 'shop/big', lifecycle: true }]);
  });
});

describe('a pod of the same name bound to another virtual node (a StatefulSet pod force-deleted and recreated)', () => {
  it('is not taken as created while the old node\'s delegate is there; the new node\'s view is told once it is gone', async () => {
    const { member, gpu, cpu, memberPod } = world();
    await gpu.v.createPod(proxy('db-0'));                       // old proxy uid-db-0 on the gpu node
    const newer: V1Pod = { ...proxy('db-0'), metadata: { namespace: 'shop', name: 'db-0', uid: 'uid-db-0-new' } };
    cpu.held.add('shop/db-0');
    // The cpu node's controller sees no delegate of its own: its create waits until the old one is gone.
    assert.equal(cpu.v.getPod('shop', 'db-0'), undefined);
    await assert.rejects(cpu.v.createPod(newer), /of virtual node vnode-a-gpu, is still there/);
    assert.equal(memberPod('db-0')?.metadata?.labels?.['clusterlet.io/proxy-uid'], 'uid-db-0', 'still the old pod\'s delegate');
    // The gpu node's controller deletes its orphan.
    await gpu.v.deletePod('shop', 'db-0', 0);
    await settle();
    assert.equal(memberPod('db-0'), undefined);
    assert.ok(cpu.changes.some((c) => c.key === 'shop/db-0' && c.lifecycle),
      'the cpu view gets a lifecycle change for shop/db-0 once the old delegate is gone (else its pod waits for the 5 min resync)');
    void member;
  });
});
