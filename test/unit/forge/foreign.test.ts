// What the member informer keeps of a pod that is not a delegate of its host (forge/foreign.ts): every answer
// clusterlet reads from member pods must be the same from the shape it keeps as from the whole pod.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { foreignPodShape, memberPodShape } from '../../../src/forge/foreign.ts';
import { podCounts, podRequests, resizeStatus } from '../../../src/forge/capacity.ts';
import { delegateOf, hostRefOf, isAnyDelegate, type Owner } from '../../../src/forge/owner.ts';
import { requestsRelevant } from '../../../src/member/requests.ts';
import { forgeDelegatePod } from '../../../src/forge/pod.ts';
import { ctx, hostPod, runningStatus } from './fixtures.ts';

const owner: Owner = { hostName: ctx.hostName, node: ctx.nodeName };

/** The member's own pod: the fixture's full pod, bound to a member node and running. */
function memberPod(): V1Pod {
  const p = hostPod();
  p.metadata!.namespace = 'shop';
  p.spec!.nodeName = 'node-a';
  p.status = structuredClone(runningStatus);
  return p;
}

function withSidecarsAndOverhead(): V1Pod {
  const p = memberPod();
  p.spec!.initContainers = [
    { name: 'init', image: 'i', resources: { requests: { cpu: '2', memory: '1Gi' } } },
    { name: 'mesh', image: 'm', restartPolicy: 'Always', resources: { requests: { cpu: '100m' }, limits: { memory: '64Mi' } } },
  ];
  p.spec!.overhead = { cpu: '250m', memory: '120Mi' };
  p.spec!.resources = { requests: { cpu: '3' } };
  return p;
}

function resizing(reason?: string): V1Pod {
  const p = memberPod();
  p.spec!.containers[0].resources = { requests: { cpu: '500m', memory: '64Mi' } };
  p.status!.containerStatuses = [{
    name: 'web', image: 'i', imageID: 'x', ready: true, restartCount: 0, started: true,
    state: { running: { startedAt: new Date() } },
    resources: { requests: { cpu: '100m', memory: '64Mi' } }, allocatedResources: { cpu: '200m', memory: '64Mi' },
  }];
  if (reason) p.status!.conditions = [...p.status!.conditions ?? [], { type: 'PodResizePending', status: 'True', reason }];
  return p;
}

function otherHostsDelegate(): V1Pod {
  return { ...forgeDelegatePod(hostPod(), { ...ctx, hostName: 'host-b' }), status: structuredClone(runningStatus) };
}

const finished = (): V1Pod => ({ ...memberPod(), status: { phase: 'Succeeded' } });
const unbound = (): V1Pod => { const p = memberPod(); delete p.spec!.nodeName; p.status = { phase: 'Pending' }; return p; };
const deleting = (): V1Pod => { const p = memberPod(); p.metadata!.deletionTimestamp = new Date(); return p; };

describe('foreignPodShape', () => {
  const cases: [string, () => V1Pod][] = [
    ['a running pod of the member', memberPod],
    ['sidecars, an init container, overhead and pod-level requests', withSidecarsAndOverhead],
    ['an in-place resize under way', () => resizing()],
    ['an infeasible resize', () => resizing('Infeasible')],
    ['a deferred resize', () => resizing('Deferred')],
    ['another host\'s delegate', otherHostsDelegate],
    ['a finished pod', finished],
    ['a pod not bound yet', unbound],
    ['a pod being deleted', deleting],
  ];
  for (const [what, make] of cases) {
    it(`${what}: the same answers from the shape as from the pod`, () => {
      const pod = make();
      const shape = foreignPodShape(structuredClone(pod));
      assert.deepEqual(podRequests(shape), podRequests(pod));
      assert.equal(podCounts(shape), podCounts(pod));
      assert.equal(podCounts(shape, (p) => isAnyDelegate(p)), podCounts(pod, (p) => isAnyDelegate(p)));
      assert.deepEqual(resizeStatus(shape), resizeStatus(pod));
      assert.equal(isAnyDelegate(shape), isAnyDelegate(pod));
      assert.deepEqual(delegateOf(shape, owner), delegateOf(pod, owner));
      assert.deepEqual(delegateOf(shape, { hostName: 'host-b', node: ctx.nodeName }), delegateOf(pod, { hostName: 'host-b', node: ctx.nodeName }));
      for (const k of ['name', 'namespace', 'uid', 'resourceVersion', 'generation', 'deletionTimestamp'] as const) {
        assert.deepEqual(shape.metadata?.[k], pod.metadata?.[k], k);
      }
      assert.equal(shape.spec?.nodeName, pod.spec?.nodeName);
      assert.equal(shape.status?.phase, pod.status?.phase);
    });
  }

  it('whether a change can move the requests: the same answer from the shapes as from the pods', () => {
    const pairs: [string, V1Pod, V1Pod][] = [
      ['status churn of a running pod', memberPod(), (() => { const p = memberPod(); p.status!.podIP = '10.0.0.9'; p.metadata!.resourceVersion = '2'; return p; })()],
      ['bound', unbound(), memberPod()],
      ['finished', memberPod(), finished()],
      ['a resize actuated', resizing(), (() => { const p = resizing(); p.status!.containerStatuses![0].resources = { requests: { cpu: '500m' } }; return p; })()],
      ['a resize found infeasible', resizing(), resizing('Infeasible')],
      ['requests resized in the spec', memberPod(), (() => { const p = memberPod(); p.metadata!.generation = 2; return p; })()],
    ];
    for (const [what, old, pod] of pairs) {
      assert.equal(requestsRelevant(foreignPodShape(structuredClone(pod)), foreignPodShape(structuredClone(old))),
        requestsRelevant(pod, old), what);
    }
  });

  it('keeps a fraction of the pod', () => {
    const pod = memberPod();
    const kept = JSON.stringify(foreignPodShape(structuredClone(pod))).length;
    const whole = JSON.stringify(pod).length;
    assert.ok(kept * 4 < whole, `${kept} of ${whole} bytes`);
    assert.equal(foreignPodShape(pod).spec?.volumes, undefined);
    assert.equal(foreignPodShape(pod).spec?.containers[0].env, undefined);
    assert.equal(foreignPodShape(pod).metadata?.labels, undefined);
  });
});

describe('memberPodShape', () => {
  it('keeps this host\'s delegates whole, of this node and of its other nodes', () => {
    const ours = { ...forgeDelegatePod(hostPod(), ctx), status: structuredClone(runningStatus) };
    assert.ok(hostRefOf(ours, owner));
    assert.equal(memberPodShape(ours, owner), ours);
    const sibling = forgeDelegatePod(hostPod(), { ...ctx, nodeName: 'clusterlet-eu2' });
    assert.ok(delegateOf(sibling, owner) && !delegateOf(sibling, owner)!.ownNode);
    assert.equal(memberPodShape(sibling, owner), sibling);
  });

  it('keeps of anything else its shape', () => {
    const other = otherHostsDelegate();
    assert.ok(isAnyDelegate(other));
    assert.notEqual(memberPodShape(other, owner), other);
    assert.deepEqual(memberPodShape(other, owner), foreignPodShape(other));
    assert.deepEqual(memberPodShape(memberPod(), owner), foreignPodShape(memberPod()));
  });
});
