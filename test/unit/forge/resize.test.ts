// In-place resize, the forge side: the delegate's `resize` patch for a resized proxy (forge/pod.ts), a resize the
// member refused on the proxy's status (forge/status.ts), and a pod's requests while it is resized, as the
// scheduler counts them (forge/capacity.ts).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Container, V1ContainerStatus, V1Pod, V1PodStatus, V1ResourceRequirements } from '@kubernetes/client-node';
import { delegateResize } from '../../../src/forge/resize.ts';
import { forgeHostStatus, withResizeInfeasible } from '../../../src/forge/status.ts';
import { podRequests, resizeStatus } from '../../../src/forge/capacity.ts';
import { requestsRelevant } from '../../../src/member/requests.ts';
import { statusEqual } from '../../../src/host/pod/status.ts';

const T = new Date('2026-03-01T10:00:00Z');

const ctr = (name: string, resources?: V1ResourceRequirements, restartPolicy?: string): V1Container =>
  ({ name, image: `${name}:1`, resources, restartPolicy });

const podOf = (containers: V1Container[], initContainers?: V1Container[], status?: V1PodStatus): V1Pod =>
  ({ metadata: { name: 'web', namespace: 'shop' }, spec: { containers, initContainers, nodeName: 'n1' }, status });

const burstable = (cpu: string, cpuLimit: string): V1ResourceRequirements =>
  ({ requests: { cpu, memory: '64Mi' }, limits: { cpu: cpuLimit, memory: '128Mi' } });

describe('delegateResize', () => {
  const delegate = podOf([ctr('app', burstable('100m', '200m')), ctr('log', { requests: { cpu: '50m' } })],
    [ctr('init', { requests: { cpu: '1' } }), ctr('proxy', { requests: { cpu: '10m' } }, 'Always')]);
  const proxyWith = (app?: V1ResourceRequirements, sidecar?: V1ResourceRequirements): V1Pod => podOf(
    [ctr('app', app ?? burstable('100m', '200m')), ctr('log', { requests: { cpu: '50m' } })],
    [ctr('init', { requests: { cpu: '1' } }), ctr('proxy', sidecar ?? { requests: { cpu: '10m' } }, 'Always')]);

  const cases: [string, V1Pod, V1Pod, ReturnType<typeof delegateResize>][] = [
    ['nothing resized: no patch', proxyWith(), delegate, undefined],
    ['the same quantities written otherwise are no resize', proxyWith(burstable('0.1', '0.2')), delegate, undefined],
    [
      'a resized container: its cpu and memory, merged by name, the others untouched',
      proxyWith(burstable('300m', '500m')), delegate,
      { spec: { containers: [{ name: 'app', resources: burstable('300m', '500m') }] } },
    ],
    [
      'a resized sidecar: in initContainers',
      proxyWith(undefined, { requests: { cpu: '20m' } }), delegate,
      { spec: { initContainers: [{ name: 'proxy', resources: { requests: { cpu: '20m' } } }] } },
    ],
    [
      'a value the member added (a LimitRange default) is no difference',
      proxyWith(), podOf([ctr('app', { requests: { cpu: '100m', memory: '64Mi', 'ephemeral-storage': '1Gi' },
        limits: { cpu: '200m', memory: '128Mi' } }), ctr('log', { requests: { cpu: '50m', memory: '32Mi' } })],
      delegate.spec!.initContainers), undefined,
    ],
    [
      'only cpu and memory: the resize subresource changes nothing else',
      proxyWith({ ...burstable('100m', '200m'), requests: { cpu: '100m', memory: '64Mi', 'ephemeral-storage': '2Gi' } }),
      delegate, undefined,
    ],
    [
      'a container the delegate does not have is left out',
      podOf([ctr('app', burstable('100m', '200m')), ctr('new', { requests: { cpu: '1' } })]), delegate, undefined,
    ],
  ];
  for (const [what, proxy, d, expected] of cases) it(what, () => assert.deepEqual(delegateResize(proxy, d), expected));
});

describe('withResizeInfeasible', () => {
  const refused = { message: 'member m1 refused the resize: node didn\'t have enough allocatable resources', at: T };
  const infeasible = { type: 'PodResizePending', status: 'True', reason: 'Infeasible', message: refused.message, lastTransitionTime: T };

  it('adds PodResizePending/Infeasible with the member\'s message, the other conditions as they are', () => {
    const status: V1PodStatus = { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] };
    assert.deepEqual(withResizeInfeasible(status, refused),
      { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }, infeasible] });
    assert.deepEqual(status.conditions, [{ type: 'Ready', status: 'True' }], 'the input is not changed');
  });

  it('replaces the delegate\'s own PodResizePending (an earlier resize, deferred), keeps PodResizeInProgress', () => {
    const status: V1PodStatus = { conditions: [
      { type: 'PodResizePending', status: 'True', reason: 'Deferred', message: 'not now' },
      { type: 'PodResizeInProgress', status: 'True' },
    ] };
    assert.deepEqual(withResizeInfeasible(status, refused).conditions, [{ type: 'PodResizeInProgress', status: 'True' }, infeasible]);
  });
});

describe('forgeHostStatus of a resized delegate', () => {
  it('carries the member kubelet\'s resources, allocatedResources and resize conditions to the proxy', () => {
    const cs: V1ContainerStatus = { name: 'app', image: 'app:1', imageID: '', ready: true, restartCount: 0, state: { running: {} },
      resources: burstable('300m', '500m'), allocatedResources: { cpu: '300m', memory: '64Mi' } };
    const d = podOf([ctr('app', burstable('300m', '500m'))], undefined, { phase: 'Running', containerStatuses: [cs], conditions: [
      { type: 'PodResizeInProgress', status: 'True', observedGeneration: 3, lastTransitionTime: T },
      { type: 'PodResizePending', status: 'True', reason: 'Deferred', message: 'Node didn\'t have enough resource: cpu', lastTransitionTime: T },
    ] });
    const status = forgeHostStatus(d, '192.0.2.1');
    assert.deepEqual(status.containerStatuses, [cs]);
    assert.deepEqual(status.conditions, [
      { type: 'PodResizeInProgress', status: 'True', lastTransitionTime: T },
      { type: 'PodResizePending', status: 'True', reason: 'Deferred', message: 'Node didn\'t have enough resource: cpu', lastTransitionTime: T },
    ], 'observedGeneration counts the delegate\'s generations, not the proxy\'s');
    assert.ok(!statusEqual(status, { ...status, containerStatuses: [{ ...cs, allocatedResources: { cpu: '100m', memory: '64Mi' } }] }),
      'a new allocation is a status change worth writing');
  });
});

describe('podRequests of a pod resized in place', () => {
  const NANO = 1_000_000_000n;
  const m = (n: bigint) => n * NANO / 1000n;
  const running = (name: string, requests: Record<string, string>, allocated?: Record<string, string>): V1ContainerStatus =>
    ({ name, image: '', imageID: '', ready: true, restartCount: 0, resources: { requests }, allocatedResources: allocated ?? requests });
  const pending = (reason: string) => ({ type: 'PodResizePending', status: 'True', reason });

  const cases: [string, V1Pod, bigint][] = [
    ['no status resources: the spec', podOf([ctr('app', { requests: { cpu: '300m' } })]), m(300n)],
    [
      'resized up, not actuated yet: the new spec',
      podOf([ctr('app', { requests: { cpu: '300m' } })], undefined, { containerStatuses: [running('app', { cpu: '100m' })] }),
      m(300n),
    ],
    [
      'resized down, not actuated yet: the old resources until the kubelet releases them',
      podOf([ctr('app', { requests: { cpu: '100m' } })], undefined, { containerStatuses: [running('app', { cpu: '300m' })] }),
      m(300n),
    ],
    [
      'allocated, not actuated yet: the larger',
      podOf([ctr('app', { requests: { cpu: '100m' } })], undefined,
        { containerStatuses: [running('app', { cpu: '100m' }, { cpu: '200m' })] }),
      m(200n),
    ],
    [
      'an infeasible resize: what the pod has, not what it asked for',
      podOf([ctr('app', { requests: { cpu: '33' } })], undefined,
        { containerStatuses: [running('app', { cpu: '300m' })], conditions: [pending('Infeasible')] }),
      m(300n),
    ],
    [
      'a deferred resize still counts the spec',
      podOf([ctr('app', { requests: { cpu: '2' } })], undefined,
        { containerStatuses: [running('app', { cpu: '300m' })], conditions: [pending('Deferred')] }),
      m(2000n),
    ],
    [
      'a resized sidecar counts with the app containers',
      podOf([ctr('app', { requests: { cpu: '100m' } })], [ctr('proxy', { requests: { cpu: '10m' } }, 'Always')],
        { containerStatuses: [running('app', { cpu: '100m' })], initContainerStatuses: [running('proxy', { cpu: '50m' })] }),
      m(150n),
    ],
  ];
  for (const [what, pod, cpu] of cases) it(what, () => assert.equal(podRequests(pod).get('cpu'), cpu));

  it('requestsRelevant: a new allocation or an infeasible resize can move the requests; other status churn cannot', () => {
    const before = podOf([ctr('app', { requests: { cpu: '100m' } })], undefined,
      { phase: 'Running', containerStatuses: [running('app', { cpu: '300m' })] });
    const allocated = structuredClone(before);
    allocated.status!.containerStatuses = [running('app', { cpu: '100m' })];
    const infeasible = structuredClone(before);
    infeasible.status!.conditions = [pending('Infeasible')];
    const churn = structuredClone(before);
    churn.status!.containerStatuses![0].ready = false;
    churn.status!.conditions = [{ type: 'Ready', status: 'False' }];
    assert.equal(requestsRelevant(allocated, before), true);
    assert.equal(requestsRelevant(infeasible, before), true);
    assert.equal(requestsRelevant(churn, before), false);
    // A delegate counts for nothing (it is the virtual node's own load): its resize moves no member requests.
    const ours = (p: V1Pod): V1Pod => ({ ...p, metadata: { ...p.metadata, labels: { 'clusterlet.io/origin': 'host', 'clusterlet.io/proxy-uid': 'u' } } });
    assert.equal(requestsRelevant(ours(allocated), ours(before)), false);
    assert.equal(requestsRelevant(ours(infeasible), ours(before)), false);
    assert.deepEqual(resizeStatus(before), { containers: { app: { actual: { cpu: '300m' }, allocated: { cpu: '300m' } } }, infeasible: false });
  });
});
