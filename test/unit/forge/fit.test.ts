// Fit of a delegate on one member node, as the member's scheduler counts it.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Node, V1Pod, V1PodSpec } from '@kubernetes/client-node';
import { memberFit, noFitMessage, scaleUpMessage } from '../../../src/forge/fit.ts';
import { requestsByNode } from '../../../src/forge/capacity.ts';

function node(name: string, allocatable: Record<string, string>, extra: { labels?: Record<string, string>;
  taints?: { key: string; value?: string; effect: string }[]; ready?: boolean } = {}): V1Node {
  return {
    metadata: { name, labels: { 'kubernetes.io/hostname': name, ...extra.labels } },
    spec: { taints: extra.taints },
    status: { allocatable, capacity: allocatable, conditions: [{ type: 'Ready', status: extra.ready === false ? 'False' : 'True' }] },
  };
}

function pod(requests: Record<string, string>, spec: Partial<V1PodSpec> = {}, nodeName?: string): V1Pod {
  return { metadata: { name: 'p', namespace: 'ns' }, spec: { nodeName, containers: [{ name: 'c', image: 'i', resources: { requests } }], ...spec },
    status: { phase: nodeName ? 'Running' : 'Pending' } };
}

const nodes = [
  node('small', { cpu: '8', memory: '32Gi', pods: '110' }),
  node('large', { cpu: '32', memory: '128Gi', pods: '110' }),
  node('gpu', { cpu: '16', memory: '64Gi', pods: '110', 'nvidia.com/gpu': '4' }, { labels: { accelerator: 'a100' },
    taints: [{ key: 'nvidia.com/gpu', effect: 'NoSchedule' }] }),
  node('down', { cpu: '64', memory: '256Gi', pods: '110' }, { ready: false }),
];
// 30 CPUs run on 'large', 1 on 'small': 7 free on small, 2 on large, 16 on gpu (which needs a toleration).
const used = requestsByNode([pod({ cpu: '30' }, {}, 'large'), pod({ cpu: '1' }, {}, 'small')], () => false);

describe('memberFit', () => {
  const cases: [string, V1Pod, string | undefined][] = [
    ['fits where a node has room, after what runs there', pod({ cpu: '6' }), 'small'],
    ['40 CPUs: more than any one node, though the sum has them', pod({ cpu: '40' }), undefined],
    ['a NotReady node does not count, however large', pod({ cpu: '60' }), undefined],
    ['8 CPUs: the small node has 7 left, the large 2, the GPU node is tainted', pod({ cpu: '8' }), undefined],
    ['with the GPU taint tolerated, the GPU node', pod({ cpu: '8' }, { tolerations: [{ key: 'nvidia.com/gpu', operator: 'Exists' }] }), 'gpu'],
    ['an extended resource only one node has', pod({ 'nvidia.com/gpu': '1' }, { tolerations: [{ operator: 'Exists' }] }), 'gpu'],
    ['a node selector narrows the candidates', pod({ cpu: '1' }, { nodeSelector: { 'kubernetes.io/hostname': 'large' } }), 'large'],
    ['required node affinity narrows them too', pod({ cpu: '1' }, { affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: {
      nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'NotIn', values: ['small'] }] }] } } } }), 'large'],
    ['an empty node selector term matches no node, as the scheduler counts it', pod({ cpu: '1' }, { affinity: { nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{}] } } } }), undefined],
    ['an empty term beside one that matches: the other term decides', pod({ cpu: '1' }, { affinity: { nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [] }, { matchExpressions: [
        { key: 'kubernetes.io/hostname', operator: 'In', values: ['large'] }] }] } } } }), 'large'],
    ['a RuntimeClass overhead counts: 6 CPUs and 2 of overhead fit no node with 7 or 2 free', pod({ cpu: '6' }, { overhead: { cpu: '2' } }),
      undefined],
  ];
  for (const [name, p, want] of cases) {
    it(name, () => {
      const a = memberFit(p, nodes, used);
      assert.equal(a.fits ? a.node : undefined, want);
    });
  }

  it('no fit: the requests and the largest free slot per resource, in the message with what to do', () => {
    const a = memberFit(pod({ cpu: '40', memory: '1Gi' }), nodes, used);
    assert.ok(!a.fits);
    assert.deepEqual(a, { fits: false, candidates: 2, requests: { cpu: '40', memory: '1Gi' }, largestFree: { cpu: '7', memory: '128Gi' } },
      'the pod count is not shown while it is not what is short');
    assert.equal(noFitMessage('member eu-1', a), 'no Ready member node of member eu-1 has room for its requests (cpu 40, memory 1Gi); '
      + 'the most one of the 2 it may run on has free is cpu 7, memory 128Gi. It is offloaded once one has '
      + 'room: lower its requests, add member nodes, or, where the member adds nodes for Pending pods, set its fit to advisory '
      + '(the delegate then waits in the member)');
    assert.equal(scaleUpMessage('member eu-1', a, 'its cluster-autoscaler reports in kube-system/cluster-autoscaler-status'),
      'no Ready member node of member eu-1 has room for its requests (cpu 40, memory 1Gi); the most one of the 2 it may run on has '
      + 'free is cpu 7, memory 128Gi. The delegate waits Pending in the member for it to add a node (its cluster-autoscaler reports '
      + 'in kube-system/cluster-autoscaler-status); it runs once one has room');
    const full = memberFit(pod({ cpu: '1' }), [node('tiny', { cpu: '8', pods: '1' })], requestsByNode([pod({}, {}, 'tiny')], () => false));
    assert.ok(!full.fits);
    assert.deepEqual(full.largestFree, { cpu: '8', pods: '0' });
    const none = memberFit(pod({ cpu: '1' }, { nodeSelector: { zone: 'mars' } }), nodes, used);
    assert.ok(!none.fits);
    assert.match(noFitMessage('member eu-1', none), /^no Ready member node of member eu-1 admits it \(its node selector/);
  });
});

describe('memberFit message order', () => {
  it('names the resources in alphabetical order, whatever order the pod lists them in', () => {
    const a = memberFit(pod({ 'example.com/gpu': '2', cpu: '1' }), [node('n', { cpu: '4', pods: '10' })], new Map());
    assert.ok(!a.fits);
    assert.deepEqual(Object.keys(a.requests), ['cpu', 'example.com/gpu']);
    assert.deepEqual(Object.keys(a.largestFree), ['cpu', 'example.com/gpu']);
  });
});
