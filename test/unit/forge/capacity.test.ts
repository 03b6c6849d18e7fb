import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Container, V1Node, V1Pod, V1PodSpec, V1Taint } from '@kubernetes/client-node';
import { NANO } from '../../../src/forge/quantity.ts';
import { ORIGIN_LABEL, PROXY_UID_LABEL } from '../../../src/forge/keys.ts';
import {
  aggregateCapacity,
  countedOn,
  nodeIsUsable,
  nodeSystemInfo,
  podCounts,
  podRequests,
  sharedNodeLabels,
  sharedTaints,
} from '../../../src/forge/capacity.ts';

type Resources = Record<string, string>;

interface NodeOptions {
  capacity?: Resources;
  allocatable?: Resources;
  ready?: boolean;
  unschedulable?: boolean;
  taint?: string;
  labels?: Record<string, string>;
  os?: string;
  arch?: string;
}

function node(name: string, o: NodeOptions = {}): V1Node {
  const capacity = o.capacity ?? { cpu: '1', memory: '1Gi', pods: '10' };
  return {
    metadata: { name, labels: o.labels },
    spec: {
      unschedulable: o.unschedulable,
      taints: o.taint ? [{ key: o.taint, effect: 'NoSchedule' }] : undefined,
    },
    status: {
      capacity,
      allocatable: o.allocatable ?? capacity,
      conditions: [{ type: 'Ready', status: o.ready === false ? 'False' : 'True' }],
      nodeInfo:
        o.os || o.arch
          ? {
              operatingSystem: o.os ?? '',
              architecture: o.arch ?? '',
              bootID: '',
              containerRuntimeVersion: '',
              kernelVersion: '',
              kubeProxyVersion: '',
              kubeletVersion: '',
              machineID: '',
              osImage: '',
              systemUUID: '',
            }
          : undefined,
    },
  };
}

function container(requests?: Resources, limits?: Resources, restartPolicy?: string): V1Container {
  return { name: 'c', resources: { requests, limits }, restartPolicy };
}

interface PodOptions {
  nodeName?: string;
  phase?: string;
  labels?: Record<string, string>;
  spec?: Partial<V1PodSpec>;
}

function pod(name: string, containers: V1Container[], o: PodOptions = {}): V1Pod {
  return {
    metadata: { name, namespace: 'default', labels: o.labels },
    spec: { containers, nodeName: o.nodeName, ...o.spec },
    status: { phase: o.phase ?? 'Running' },
  };
}

// Requests in nano units: `m` milli-units, `Mi` mebibytes.
const m = (v: bigint): bigint => v * 1_000_000n;
const Mi = (v: bigint): bigint => v * 1024n * 1024n * NANO;
const ONE_POD = { pods: NANO };

describe('nodeIsUsable', () => {
  const cases: [string, V1Node, boolean][] = [
    ['a ready node', node('a'), true],
    ['a NotReady node', node('a', { ready: false }), false],
    ['a node without conditions', { metadata: { name: 'a' } }, false],
    ['a cordoned node', node('a', { unschedulable: true }), false],
    ['a node with the unschedulable taint', node('a', { taint: 'node.kubernetes.io/unschedulable' }), false],
    ['a node with another taint', node('a', { taint: 'dedicated' }), true],
    ['a virtual kubelet', node('a', { labels: { type: 'virtual-kubelet' } }), false],
    ['one of our virtual nodes', node('a', { labels: { 'clusterlet.io/member': 'm' } }), false],
    // A label under clusterlet.io/ that a user or a tool put on a real member node does not make it virtual.
    ['a real node with a clusterlet.io/ label of a user\'s', node('a', { labels: { 'clusterlet.io/pool': 'gpu' } }), true],
  ];
  for (const [what, value, expected] of cases) it(what, () => assert.equal(nodeIsUsable(value), expected));
});

describe('podRequests', () => {
  const cases: [string, V1Pod, Record<string, bigint>][] = [
    [
      'sums app containers and counts one pod',
      pod('p', [container({ cpu: '500m', memory: '1Gi' }), container({ cpu: '250m', memory: '512Mi' })]),
      { cpu: m(750n), memory: Mi(1536n), ...ONE_POD },
    ],
    [
      'falls back to limits',
      pod('p', [container({ cpu: '1' }, { cpu: '2', 'nvidia.com/gpu': '1' })]),
      { cpu: NANO, 'nvidia.com/gpu': NANO, ...ONE_POD },
    ],
    [
      'takes an init container larger than the app containers',
      pod('p', [container({ cpu: '500m', memory: '256Mi' })], {
        spec: { initContainers: [container({ cpu: '2', memory: '128Mi' })] },
      }),
      { cpu: m(2000n), memory: Mi(256n), ...ONE_POD },
    ],
    [
      'adds sidecars to app containers and to later init containers',
      pod('p', [container({ cpu: '500m' })], {
        spec: {
          initContainers: [container({ cpu: '100m' }, undefined, 'Always'), container({ cpu: '1' })],
        },
      }),
      { cpu: m(1100n), ...ONE_POD },
    ],
    [
      'does not add a sidecar to init containers that run before it',
      pod('p', [container({ cpu: '500m' })], {
        spec: {
          initContainers: [container({ cpu: '1' }), container({ cpu: '100m' }, undefined, 'Always')],
        },
      }),
      { cpu: NANO, ...ONE_POD },
    ],
    [
      'adds overhead',
      pod('p', [container({ cpu: '100m', memory: '128Mi' })], {
        spec: { overhead: { cpu: '250m', memory: '120Mi' } },
      }),
      { cpu: m(350n), memory: Mi(248n), ...ONE_POD },
    ],
    [
      'lets pod-level requests take precedence',
      pod('p', [container({ cpu: '100m', memory: '128Mi' })], {
        spec: { resources: { requests: { cpu: '2' } } },
      }),
      { cpu: m(2000n), memory: Mi(128n), ...ONE_POD },
    ],
    ['counts a pod without requests', pod('p', [container()]), ONE_POD],
  ];
  for (const [what, value, expected] of cases) it(what, () => assert.deepEqual(Object.fromEntries(podRequests(value)), expected));

  it('rejects an invalid quantity', () => {
    assert.throws(() => podRequests(pod('p', [container({ cpu: 'lots' })])), /"lots"/);
  });
});

describe('podCounts, countedOn', () => {
  const usable = new Set(['n1']);
  const cases: [string, V1Pod, boolean][] = [
    ['a running pod on a usable node', pod('p', [], { nodeName: 'n1' }), true],
    ['a pending pod bound to a usable node', pod('p', [], { nodeName: 'n1', phase: 'Pending' }), true],
    ['an unbound pod', pod('p', [], { phase: 'Pending' }), false],
    ['a pod on another node', pod('p', [], { nodeName: 'n2' }), false],
    ['a Succeeded pod', pod('p', [], { nodeName: 'n1', phase: 'Succeeded' }), false],
    ['a Failed pod', pod('p', [], { nodeName: 'n1', phase: 'Failed' }), false],
    ['a delegate', pod('p', [], { nodeName: 'n1', labels: { [ORIGIN_LABEL]: 'host', [PROXY_UID_LABEL]: 'u' } }), false],
  ];
  for (const [what, value, expected] of cases) {
    it(what, () => {
      assert.equal(podCounts(value, undefined, usable), expected);
      assert.equal(countedOn(value, undefined, usable), expected ? 'n1' : undefined, 'the node it counts on');
    });
  }

  it('takes a custom delegate test', () => {
    assert.equal(podCounts(pod('p', [], { nodeName: 'n1' }), () => true, usable), false);
    assert.equal(countedOn(pod('p', [], { nodeName: 'n1' }), () => true, usable), undefined);
  });
});

describe('aggregateCapacity', () => {
  const nodes = [
    node('n1', {
      capacity: { cpu: '4', memory: '16Gi', pods: '110', 'ephemeral-storage': '100Gi', 'hugepages-2Mi': '1Gi', 'nvidia.com/gpu': '2' },
      allocatable: { cpu: '3800m', memory: '15Gi', pods: '110', 'ephemeral-storage': '90Gi', 'hugepages-2Mi': '1Gi', 'nvidia.com/gpu': '2' },
    }),
    node('n2', {
      capacity: { cpu: '8', memory: '32Gi', pods: '110', 'ephemeral-storage': '200Gi' },
      allocatable: { cpu: '7800m', memory: '31Gi', pods: '110', 'ephemeral-storage': '180Gi' },
    }),
    node('n3', { capacity: { cpu: '2', memory: '8Gi', pods: '50', 'nvidia.com/gpu': '1' } }),
    node('notready', { ready: false, capacity: { cpu: '64', memory: '256Gi', pods: '110' } }),
    node('cordoned', { unschedulable: true, capacity: { cpu: '64', memory: '256Gi', pods: '110' } }),
    node('virtual', { labels: { type: 'virtual-kubelet' }, capacity: { cpu: '1k', memory: '1Ti', pods: '1k' } }),
  ];
  const pods = [
    pod('running', [container({ cpu: '500m', memory: '1Gi' }), container({ cpu: '250m', memory: '512Mi' }, { 'nvidia.com/gpu': '1' })], {
      nodeName: 'n1',
    }),
    pod('hugepages', [container({ cpu: '100m', memory: '256Mi', 'hugepages-2Mi': '512Mi' })], { nodeName: 'n1' }),
    pod('done', [container({ cpu: '4' })], { nodeName: 'n2', phase: 'Succeeded' }),
    pod('delegate', [container({ cpu: '2' })], { nodeName: 'n2', labels: { [ORIGIN_LABEL]: 'host', [PROXY_UID_LABEL]: 'u' } }),
    pod('init', [container({ cpu: '500m', memory: '256Mi' })], {
      nodeName: 'n2',
      spec: { initContainers: [container({ cpu: '2', memory: '1Gi' })] },
    }),
    pod('overhead', [container({ cpu: '100m', memory: '128Mi' })], {
      nodeName: 'n2',
      spec: { overhead: { cpu: '250m', memory: '120Mi' } },
    }),
    pod('on-notready', [container({ cpu: '1' })], { nodeName: 'notready' }),
    pod('unbound', [container({ cpu: '1' })], { phase: 'Pending' }),
  ];

  it('sums every resource of the usable nodes and subtracts the pods that count', () => {
    assert.deepEqual(aggregateCapacity(nodes, pods), {
      capacity: {
        cpu: '14',
        'ephemeral-storage': '300Gi',
        'hugepages-2Mi': '1Gi',
        memory: '56Gi',
        'nvidia.com/gpu': '3',
        pods: '270',
      },
      allocatable: {
        cpu: '10400m', // 13600m - 750m - 100m - 2 - 350m
        'ephemeral-storage': '270Gi',
        'hugepages-2Mi': '512Mi',
        memory: '52232Mi', // 54Gi - 1536Mi - 256Mi - 1Gi - 248Mi
        'nvidia.com/gpu': '2',
        pods: '266',
      },
      nodeCount: 3,
    });
  });

  it('lets the caller decide what is a delegate', () => {
    const { allocatable } = aggregateCapacity(nodes, pods, { isDelegate: () => false });
    assert.equal(allocatable.cpu, '8400m');
    assert.equal(allocatable.pods, '265');
  });

  it('clamps over-subscription at zero', () => {
    const { capacity, allocatable } = aggregateCapacity(
      [node('n1', { capacity: { cpu: '1', memory: '1Gi', pods: '2' } })],
      [
        pod('a', [container({ cpu: '1500m', memory: '512Mi' })], { nodeName: 'n1' }),
        pod('b', [container({ cpu: '1', memory: '256Mi' })], { nodeName: 'n1' }),
        pod('c', [container({ memory: '128Mi' })], { nodeName: 'n1' }),
      ],
    );
    assert.deepEqual(capacity, { cpu: '1', memory: '1Gi', pods: '2' });
    assert.deepEqual(allocatable, { cpu: '0', memory: '128Mi', pods: '0' });
  });

  it('is empty without usable nodes', () => {
    assert.deepEqual(aggregateCapacity([node('a', { ready: false })], []), { capacity: {}, allocatable: {}, nodeCount: 0 });
  });
});

describe('sharedNodeLabels', () => {
  const region = 'topology.kubernetes.io/region';
  const zone = 'topology.kubernetes.io/zone';
  const legacyZone = 'failure-domain.beta.kubernetes.io/zone';

  it('keeps labels identical on all usable nodes and drops the others', () => {
    const nodes = [
      node('a', { labels: { [region]: 'eu', [zone]: 'eu-a', [legacyZone]: 'eu-a', other: 'x' } }),
      node('b', { labels: { [region]: 'eu', [zone]: 'eu-b', [legacyZone]: 'eu-a', other: 'x' } }),
      node('c', { ready: false, labels: { [region]: 'us', [zone]: 'us-a' } }),
    ];
    assert.deepEqual(sharedNodeLabels(nodes), { [region]: 'eu', [legacyZone]: 'eu-a' });
  });

  it('drops a label missing on one node', () => {
    assert.deepEqual(sharedNodeLabels([node('a', { labels: { [zone]: 'z' } }), node('b')]), {});
  });

  it('instance type and GPU model too, when every usable node has the same', () => {
    const it1 = 'node.kubernetes.io/instance-type';
    const gpu = 'nvidia.com/gpu.product';
    const nodes = [
      node('a', { labels: { [it1]: 'p4d.24xlarge', [gpu]: 'A100-SXM4-40GB' } }),
      node('b', { labels: { [it1]: 'p4d.24xlarge', [gpu]: 'A100-SXM4-40GB' } }),
      node('c', { ready: false, labels: { [it1]: 'm5.large' } }),
    ];
    assert.deepEqual(sharedNodeLabels(nodes), { [it1]: 'p4d.24xlarge', [gpu]: 'A100-SXM4-40GB' });
    assert.deepEqual(sharedNodeLabels([...nodes, node('d', { labels: { [it1]: 'p4d.24xlarge', [gpu]: 'H100' } })]), { [it1]: 'p4d.24xlarge' });
  });

  it('is empty without usable nodes', () => {
    assert.deepEqual(sharedNodeLabels([node('a', { ready: false, labels: { [zone]: 'z' } })]), {});
  });
});

describe('sharedTaints', () => {
  const withTaints = (name: string, taints: V1Taint[], ready = true): V1Node => {
    const n = node(name, { ready });
    n.spec = { taints };
    return n;
  };
  const gpu: V1Taint = { key: 'nvidia.com/gpu', value: 'present', effect: 'NoSchedule' };
  const spot: V1Taint = { key: 'example.com/spot', effect: 'NoExecute' };

  it('the NoSchedule/NoExecute taints every usable node carries, sorted; not PreferNoSchedule, not the host\'s own', () => {
    const nodes = [
      withTaints('a', [spot, gpu, { key: 'soft', effect: 'PreferNoSchedule' }, { key: 'node.kubernetes.io/disk-pressure', effect: 'NoSchedule' }]),
      withTaints('b', [gpu, spot, { key: 'soft', effect: 'PreferNoSchedule' }, { key: 'node.kubernetes.io/disk-pressure', effect: 'NoSchedule' }]),
      withTaints('c', [], false),
    ];
    assert.deepEqual(sharedTaints(nodes), [spot, gpu]);
  });

  it('a taint one node lacks, or carries with another value, is not shared', () => {
    assert.deepEqual(sharedTaints([withTaints('a', [gpu, spot]), withTaints('b', [{ ...gpu, value: 'other' }])]), []);
    assert.deepEqual(sharedTaints([]), []);
  });
});

describe('nodeSystemInfo', () => {
  it('takes the most common OS and architecture', () => {
    const nodes = [
      node('a', { os: 'linux', arch: 'arm64' }),
      node('b', { os: 'linux', arch: 'arm64' }),
      node('c', { os: 'windows', arch: 'amd64' }),
      node('d', { ready: false, os: 'windows', arch: 'amd64' }),
      node('e', { ready: false, os: 'windows', arch: 'amd64' }),
    ];
    assert.deepEqual(nodeSystemInfo(nodes), { operatingSystem: 'linux', architecture: 'arm64' });
  });

  it('falls back to labels', () => {
    const nodes = [node('a', { labels: { 'kubernetes.io/os': 'windows', 'kubernetes.io/arch': 's390x' } })];
    assert.deepEqual(nodeSystemInfo(nodes), { operatingSystem: 'windows', architecture: 's390x' });
  });

  it('defaults to linux/amd64', () => {
    assert.deepEqual(nodeSystemInfo([]), { operatingSystem: 'linux', architecture: 'amd64' });
  });
});
