import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { V1NodeCondition, V1NodeStatus, V1Taint } from '@kubernetes/client-node';
import {
  DECLARED_FEATURES,
  KUBELET_VERSION,
  forgeNewNode,
  forgeNodeConditions,
  forgeNodeLabels,
  forgeNodeStatus,
  forgeNodeTaints,
  labelPatch,
  managedLabelKeys,
  mergeTaints,
  managedTaintIds,
  managedTaintsValue,
  nodeStatusMatches,
  RETIRING_TAINT,
  stampConditions,
  virtualNodeTaint,
} from '../../../src/forge/node.ts';
import type { NodeGroup } from '../../../src/forge/groups.ts';
import type { DesiredNodeStatus, NodeContext, NodeState } from '../../../src/forge/node.ts';

const T0 = new Date('2026-03-01T10:00:00Z');
const T1 = new Date('2026-03-01T10:00:10Z');

function context(o: Partial<NodeContext> = {}): NodeContext {
  return { nodeName: 'clusterlet-m1', memberName: 'm1', labels: {}, taints: [], nodeIP: '10.0.0.7', kubeletPort: 10250, ...o };
}

function state(o: Partial<NodeState> = {}): NodeState {
  return {
    reachable: true, synced: true, readyNodes: 3,
    capacity: { cpu: '12', memory: '48Gi', pods: '330' },
    allocatable: { cpu: '10', memory: '40Gi', pods: '300' },
    topologyLabels: {},
    operatingSystem: 'linux', architecture: 'amd64',
    backendVersion: 'v1.34.1',
    ...o,
  };
}

const OUR_TAINT: V1Taint = { key: 'virtual-kubelet.io/provider', value: 'clusterlet', effect: 'NoSchedule' };
const UNREACHABLE: V1Taint = { key: 'node.kubernetes.io/unreachable', effect: 'NoSchedule', timeAdded: T0 };

function ready(conditions: V1NodeCondition[] | undefined): V1NodeCondition {
  const c = conditions?.find((x) => x.type === 'Ready');
  assert.ok(c, 'no Ready condition');
  return c;
}

describe('forgeNodeLabels', () => {
  it('sets every label of CONVENTIONS.md', () => {
    assert.deepEqual(forgeNodeLabels(context(), state({ operatingSystem: 'linux', architecture: 'arm64' })), {
      type: 'virtual-kubelet',
      'kubernetes.io/role': 'agent',
      'kubernetes.io/os': 'linux',
      'kubernetes.io/arch': 'arm64',
      'kubernetes.io/hostname': 'clusterlet-m1',
      'node.kubernetes.io/exclude-from-external-load-balancers': 'true',
      'clusterlet.io/member': 'm1',
    });
  });

  it('uses the configured node name for the hostname label and the member name for the member label', () => {
    const labels = forgeNodeLabels(context({ memberName: 'eu-west', nodeName: 'vk-eu' }), state());
    assert.equal(labels['kubernetes.io/hostname'], 'vk-eu');
    assert.equal(labels['clusterlet.io/member'], 'eu-west');
  });

  it('adds the shared topology labels', () => {
    const labels = forgeNodeLabels(context(), state({
      topologyLabels: { 'topology.kubernetes.io/region': 'eu-west-1', 'topology.kubernetes.io/zone': 'eu-west-1a' },
    }));
    assert.equal(labels['topology.kubernetes.io/region'], 'eu-west-1');
    assert.equal(labels['topology.kubernetes.io/zone'], 'eu-west-1a');
    assert.equal(labels.type, 'virtual-kubelet');
  });

  it('adds the configured labels unchanged', () => {
    const labels = forgeNodeLabels(context({ labels: { 'example.com/tier': 'gold', team: 'infra' } }), state());
    assert.equal(labels['example.com/tier'], 'gold');
    assert.equal(labels.team, 'infra');
    assert.equal(labels['clusterlet.io/member'], 'm1');
  });
});

describe('forgeNodeTaints', () => {
  it('is the virtual-kubelet provider taint when none is configured', () => {
    assert.deepEqual(forgeNodeTaints(context()), [OUR_TAINT]);
    assert.deepEqual(virtualNodeTaint(), OUR_TAINT);
  });

  it('appends the configured taints', () => {
    const gpu: V1Taint = { key: 'example.com/gpu', value: 'true', effect: 'NoExecute' };
    assert.deepEqual(forgeNodeTaints(context({ taints: [gpu] })), [OUR_TAINT, gpu]);
  });

  it('then the taints every member node shares; a configured one of the same key and effect wins', () => {
    const gpu: V1Taint = { key: 'nvidia.com/gpu', effect: 'NoSchedule' };
    const dedicated: V1Taint = { key: 'dedicated', value: 'ml', effect: 'NoSchedule' };
    assert.deepEqual(forgeNodeTaints(context({ taints: [{ ...dedicated, value: 'ours' }] }), { taints: [gpu, dedicated] }),
      [OUR_TAINT, { ...dedicated, value: 'ours' }, gpu]);
  });
});

describe('member taints on the virtual node: copied while shared, removed once not', () => {
  const gpu: V1Taint = { key: 'nvidia.com/gpu', effect: 'NoSchedule' };
  it('removes a taint clusterlet copied earlier and no longer wants; leaves one it did not copy', () => {
    const userTaint: V1Taint = { key: 'example.com/maintenance', effect: 'NoSchedule' };
    assert.deepEqual(mergeTaints([OUR_TAINT, gpu, userTaint, UNREACHABLE], [OUR_TAINT], new Set(['nvidia.com/gpu:NoSchedule'])),
      [OUR_TAINT, userTaint, UNREACHABLE]);
    assert.equal(mergeTaints([OUR_TAINT, userTaint], [OUR_TAINT], new Set(['nvidia.com/gpu:NoSchedule'])), undefined);
    assert.deepEqual(managedTaintIds(forgeNewNode(context(), state({ taints: [gpu] }), new Date())), new Set(['nvidia.com/gpu:NoSchedule']));
    assert.equal(managedTaintsValue(state({ taints: [gpu, { key: 'a', effect: 'NoExecute' }] })), 'a:NoExecute,nvidia.com/gpu:NoSchedule');
  });
});

describe('mergeTaints', () => {
  it('adds ours to a node without taints', () => {
    assert.deepEqual(mergeTaints(undefined, [OUR_TAINT]), [OUR_TAINT]);
    assert.deepEqual(mergeTaints([], [OUR_TAINT]), [OUR_TAINT]);
  });

  it('keeps foreign taints such as node.kubernetes.io/unreachable', () => {
    const merged = mergeTaints([UNREACHABLE], [OUR_TAINT]);
    assert.deepEqual(merged, [UNREACHABLE, OUR_TAINT]);
  });

  it('returns undefined when all of ours are already there', () => {
    assert.equal(mergeTaints([UNREACHABLE, { ...OUR_TAINT }], [OUR_TAINT]), undefined);
    assert.equal(mergeTaints([OUR_TAINT], [OUR_TAINT]), undefined);
  });

  it('treats a missing value and an empty value as the same', () => {
    const t: V1Taint = { key: 'example.com/dedicated', effect: 'NoSchedule' };
    assert.equal(mergeTaints([{ ...t, value: '' }], [t]), undefined);
  });

  it('replaces our taint when its value differs, keeping the others', () => {
    const stale: V1Taint = { ...OUR_TAINT, value: 'something-else' };
    const merged = mergeTaints([stale, UNREACHABLE], [OUR_TAINT]);
    assert.deepEqual(merged, [UNREACHABLE, OUR_TAINT]);
  });

  it('keeps a taint with the same key but another effect', () => {
    const noExecute: V1Taint = { ...OUR_TAINT, effect: 'NoExecute' };
    assert.deepEqual(mergeTaints([noExecute], [OUR_TAINT]), [noExecute, OUR_TAINT]);
  });

  it('adds only the missing ones', () => {
    const gpu: V1Taint = { key: 'example.com/gpu', value: 'true', effect: 'NoExecute' };
    assert.deepEqual(mergeTaints([OUR_TAINT, UNREACHABLE], [OUR_TAINT, gpu]), [OUR_TAINT, UNREACHABLE, gpu]);
  });
});

describe('forgeNodeConditions', () => {
  it('is Ready when the member answers and has Ready nodes', () => {
    const r = ready(forgeNodeConditions(context(), state({ readyNodes: 3 })));
    assert.equal(r.status, 'True');
    assert.equal(r.reason, 'MemberReady');
    assert.match(r.message ?? '', /\bm1\b/);
    assert.match(r.message ?? '', /3 Ready, schedulable nodes/);
  });

  it('says "node" for a single Ready node', () => {
    const r = ready(forgeNodeConditions(context(), state({ readyNodes: 1 })));
    assert.match(r.message ?? '', /1 Ready, schedulable node$/);
  });

  it('is not Ready when the member does not answer, naming the member and the error', () => {
    const r = ready(forgeNodeConditions(context(), state({
      reachable: false, unreachableReason: 'connect ECONNREFUSED 10.1.2.3:6443',
    })));
    assert.equal(r.status, 'False');
    assert.equal(r.reason, 'MemberUnreachable');
    assert.match(r.message ?? '', /\bm1\b/);
    assert.ok(r.message?.includes('connect ECONNREFUSED 10.1.2.3:6443'), r.message);
  });

  it('is not Ready when the member does not answer and no error is known', () => {
    const r = ready(forgeNodeConditions(context(), state({ reachable: false })));
    assert.equal(r.reason, 'MemberUnreachable');
    assert.match(r.message ?? '', /\bm1\b/);
  });

  it('unreachable takes precedence over not synced and no Ready node', () => {
    const r = ready(forgeNodeConditions(context(), state({ reachable: false, synced: false, readyNodes: 0 })));
    assert.equal(r.reason, 'MemberUnreachable');
  });

  it('is not Ready before the member nodes have been listed', () => {
    const r = ready(forgeNodeConditions(context(), state({ synced: false, readyNodes: 0 })));
    assert.equal(r.status, 'False');
    assert.equal(r.reason, 'MemberNotSynced');
    assert.match(r.message ?? '', /\bm1\b/);
  });

  it('is not Ready when the member has no Ready node', () => {
    const r = ready(forgeNodeConditions(context({ memberName: 'eu1' }), state({ readyNodes: 0 })));
    assert.equal(r.status, 'False');
    assert.equal(r.reason, 'MemberHasNoReadyNode');
    assert.match(r.message ?? '', /\beu1\b/);
  });

  it('reports no pressure and a ready network', () => {
    const conditions = forgeNodeConditions(context(), state({ reachable: false }));
    assert.deepEqual(conditions.map((c) => c.type),
      ['Ready', 'MemoryPressure', 'DiskPressure', 'PIDPressure', 'NetworkUnavailable']);
    for (const c of conditions.slice(1)) assert.equal(c.status, 'False', c.type);
  });

  it('carries no timestamps', () => {
    for (const c of forgeNodeConditions(context(), state())) {
      assert.equal(c.lastHeartbeatTime, undefined);
      assert.equal(c.lastTransitionTime, undefined);
    }
  });
});

describe('forgeNodeStatus', () => {
  it('copies capacity and allocatable', () => {
    const s = forgeNodeStatus(context(), state());
    assert.deepEqual(s.capacity, { cpu: '12', memory: '48Gi', pods: '330' });
    assert.deepEqual(s.allocatable, { cpu: '10', memory: '40Gi', pods: '300' });
  });

  it('keeps the last known capacity while the member does not answer', () => {
    const s = forgeNodeStatus(context(), state({ reachable: false }));
    assert.deepEqual(s.capacity, { cpu: '12', memory: '48Gi', pods: '330' });
    assert.equal(ready(s.conditions).status, 'False');
  });

  it('until the member is synced, keeps the capacity and allocatable known on the node (a restart); once synced, the member\'s', () => {
    const known = { capacity: { cpu: '56', memory: '224Gi', pods: '12000' }, allocatable: { cpu: '50', memory: '200Gi', pods: '12000' } };
    const starting = state({ synced: false, readyNodes: 0, capacity: {}, allocatable: {} });
    const s = forgeNodeStatus(context(), starting, known);
    assert.deepEqual([s.capacity, s.allocatable], [known.capacity, known.allocatable]);
    assert.equal(ready(s.conditions).reason, 'MemberNotSynced');
    assert.deepEqual(forgeNodeStatus(context(), starting).allocatable, { pods: '0' }, 'a new node: nothing known');
    assert.deepEqual(forgeNodeStatus(context(), state(), known).allocatable, { cpu: '10', memory: '40Gi', pods: '300' });
  });

  it('defaults pods to "0"', () => {
    const s = forgeNodeStatus(context(), state({ capacity: { cpu: '1' }, allocatable: {} }));
    assert.deepEqual(s.capacity, { cpu: '1', pods: '0' });
    assert.deepEqual(s.allocatable, { pods: '0' });
  });

  it('does not modify the state it is given', () => {
    const st = state({ capacity: { cpu: '1' }, allocatable: { cpu: '1' } });
    forgeNodeStatus(context(), st);
    assert.deepEqual(st.capacity, { cpu: '1' });
    assert.deepEqual(st.allocatable, { cpu: '1' });
  });

  it('publishes the node IP, hostname and kubelet port', () => {
    const s = forgeNodeStatus(context({ nodeName: 'vk-m1', nodeIP: '192.0.2.10', kubeletPort: 11250 }), state());
    assert.deepEqual(s.addresses, [
      { type: 'InternalIP', address: '192.0.2.10' },
      { type: 'Hostname', address: 'vk-m1' },
    ]);
    assert.deepEqual(s.daemonEndpoints, { kubeletEndpoint: { Port: 11250 } });
  });

  it('fills nodeInfo', () => {
    const info = forgeNodeStatus(context(), state({ operatingSystem: 'linux', architecture: 'arm64' })).nodeInfo;
    assert.ok(info);
    assert.match(info.kubeletVersion, /clusterlet/);
    assert.equal(info.kubeletVersion, KUBELET_VERSION);
    assert.equal(info.operatingSystem, 'linux');
    assert.equal(info.architecture, 'arm64');
    assert.match(info.containerRuntimeVersion, /v1\.34\.1/);
    assert.match(info.osImage, /\bm1\b/);
  });

  it('declares ExtendWebSocketsToKubelet, so 1.36+ API servers pass WebSockets through (a sorted list)', () => {
    const s = forgeNodeStatus(context(), state());
    assert.deepEqual(s.declaredFeatures, ['ExtendWebSocketsToKubelet']);
    assert.deepEqual(s.declaredFeatures, [...DECLARED_FEATURES].sort());
  });

  it('names an unknown member version', () => {
    const info = forgeNodeStatus(context(), state({ backendVersion: undefined })).nodeInfo;
    assert.equal(info?.containerRuntimeVersion, 'clusterlet://unknown');
  });
});

describe('stampConditions', () => {
  const desired = forgeNodeConditions(context(), state());

  it('stamps heartbeat and transition with now when there is no current status', () => {
    for (const c of stampConditions(desired, undefined, T0)) {
      assert.deepEqual(c.lastHeartbeatTime, T0);
      assert.deepEqual(c.lastTransitionTime, T0);
    }
  });

  it('keeps the transition time of a condition whose status is unchanged and refreshes the heartbeat', () => {
    const current = stampConditions(desired, undefined, T0);
    const stamped = stampConditions(desired, current, T1);
    for (const c of stamped) {
      assert.deepEqual(c.lastHeartbeatTime, T1, c.type);
      assert.deepEqual(c.lastTransitionTime, T0, c.type);
    }
  });

  it('resets the transition time of a condition whose status changed', () => {
    const current = stampConditions(desired, undefined, T0);
    const notReady = forgeNodeConditions(context(), state({ reachable: false }));
    const stamped = stampConditions(notReady, current, T1);
    assert.deepEqual(ready(stamped).lastTransitionTime, T1);
    assert.deepEqual(ready(stamped).lastHeartbeatTime, T1);
    const memory = stamped.find((c) => c.type === 'MemoryPressure');
    assert.deepEqual(memory?.lastTransitionTime, T0);
  });

  it('keeps the transition time when only the reason changes', () => {
    const current = stampConditions(forgeNodeConditions(context(), state({ synced: false })), undefined, T0);
    const stamped = stampConditions(forgeNodeConditions(context(), state({ readyNodes: 0 })), current, T1);
    assert.equal(ready(stamped).reason, 'MemberHasNoReadyNode');
    assert.deepEqual(ready(stamped).lastTransitionTime, T0);
  });

  it('accepts transition times read back as strings', () => {
    const current: V1NodeCondition[] = [{
      type: 'Ready', status: 'True', lastTransitionTime: '2026-03-01T10:00:00Z' as unknown as Date,
    }];
    const stamped = stampConditions(desired, current, T1);
    assert.deepEqual(ready(stamped).lastTransitionTime, T0);
  });

  it('uses now when the current condition has no transition time', () => {
    const stamped = stampConditions(desired, [{ type: 'Ready', status: 'True' }], T1);
    assert.deepEqual(ready(stamped).lastTransitionTime, T1);
  });

  it('does not modify its inputs', () => {
    const current = stampConditions(desired, undefined, T0);
    const snapshot = structuredClone(current);
    stampConditions(desired, current, T1);
    assert.deepEqual(current, snapshot);
    assert.equal(desired[0].lastHeartbeatTime, undefined);
  });
});

describe('nodeStatusMatches', () => {
  const desired = (): DesiredNodeStatus => forgeNodeStatus(context(), state());
  const current = (): V1NodeStatus => {
    const s = forgeNodeStatus(context(), state());
    s.conditions = stampConditions(s.conditions ?? [], undefined, T0);
    return s;
  };

  it('is false without a current status', () => {
    assert.equal(nodeStatusMatches(desired(), undefined), false);
  });

  it('ignores timestamps', () => {
    assert.equal(nodeStatusMatches(desired(), current()), true);
  });

  it('ignores the order of conditions, addresses and resources', () => {
    const c = current();
    c.conditions = [...(c.conditions ?? [])].reverse();
    c.addresses = [...(c.addresses ?? [])].reverse();
    c.capacity = { pods: '330', memory: '48Gi', cpu: '12' };
    assert.equal(nodeStatusMatches(desired(), c), true);
  });

  it('detects declared features that differ; their absence (an API server that drops them) is no difference', () => {
    const c = current();
    c.declaredFeatures = [];
    assert.equal(nodeStatusMatches(desired(), c), false);
    delete c.declaredFeatures;
    assert.equal(nodeStatusMatches(desired(), c), true);
  });

  it('ignores conditions others added', () => {
    const c = current();
    c.conditions = [...(c.conditions ?? []), { type: 'example.com/Healthy', status: 'True' }];
    assert.equal(nodeStatusMatches(desired(), c), true);
  });

  it('detects a capacity change', () => {
    const c = current();
    c.capacity = { ...c.capacity, cpu: '13' };
    assert.equal(nodeStatusMatches(desired(), c), false);
  });

  it('detects a new or removed resource', () => {
    const added = current();
    added.capacity = { ...added.capacity, 'nvidia.com/gpu': '1' };
    assert.equal(nodeStatusMatches(desired(), added), false);
    const removed = current();
    removed.allocatable = { cpu: '10', pods: '300' };
    assert.equal(nodeStatusMatches(desired(), removed), false);
  });

  it('detects an allocatable change', () => {
    const c = current();
    c.allocatable = { ...c.allocatable, memory: '39Gi' };
    assert.equal(nodeStatusMatches(desired(), c), false);
  });

  it('detects a condition status, reason or message change', () => {
    const notReady = forgeNodeStatus(context(), state({ reachable: false, unreachableReason: 'timeout' }));
    assert.equal(nodeStatusMatches(notReady, current()), false);

    const reason = current();
    reason.conditions = (reason.conditions ?? []).map((c) => c.type === 'Ready' ? { ...c, reason: 'KubeletReady' } : c);
    assert.equal(nodeStatusMatches(desired(), reason), false);

    const message = forgeNodeStatus(context(), state({ readyNodes: 4 }));
    assert.equal(nodeStatusMatches(message, current()), false);
  });

  it('detects a missing condition', () => {
    const c = current();
    c.conditions = (c.conditions ?? []).filter((x) => x.type !== 'PIDPressure');
    assert.equal(nodeStatusMatches(desired(), c), false);
  });

  it('detects an address change', () => {
    const c = current();
    c.addresses = [{ type: 'InternalIP', address: '10.0.0.8' }, { type: 'Hostname', address: 'clusterlet-m1' }];
    assert.equal(nodeStatusMatches(desired(), c), false);
    const fewer = current();
    fewer.addresses = [{ type: 'InternalIP', address: '10.0.0.7' }];
    assert.equal(nodeStatusMatches(desired(), fewer), false);
  });

  it('detects a kubelet port change', () => {
    const c = current();
    c.daemonEndpoints = { kubeletEndpoint: { Port: 10251 } };
    assert.equal(nodeStatusMatches(desired(), c), false);
  });

  it('detects a nodeInfo change', () => {
    const c = current();
    c.nodeInfo = { ...c.nodeInfo!, containerRuntimeVersion: 'clusterlet://v1.33.0' };
    assert.equal(nodeStatusMatches(desired(), c), false);
    const none = current();
    none.nodeInfo = undefined;
    assert.equal(nodeStatusMatches(desired(), none), false);
  });
});

describe('labelPatch', () => {
  const desired = { type: 'virtual-kubelet', 'clusterlet.io/member': 'm1' };
  const ours = new Set(Object.keys(desired));

  it('is undefined when the node already carries the labels', () => {
    assert.equal(labelPatch(desired, { ...desired, 'example.com/foreign': 'x' }, ours), undefined);
  });

  it('is undefined when there is nothing desired and nothing to remove', () => {
    assert.equal(labelPatch({}, undefined, new Set()), undefined);
    assert.equal(labelPatch({}, { a: 'b' }, new Set()), undefined);
  });

  it('sets every label of a node without labels', () => {
    assert.deepEqual(labelPatch(desired, undefined, new Set()), desired);
  });

  it('sets only the labels that are missing or changed', () => {
    const patch = labelPatch(
      { ...desired, 'topology.kubernetes.io/zone': 'b' },
      { ...desired, 'clusterlet.io/member': 'old', 'topology.kubernetes.io/zone': 'a' },
      ours,
    );
    assert.deepEqual(patch, { 'clusterlet.io/member': 'm1', 'topology.kubernetes.io/zone': 'b' });
  });

  it('removes a label that was ours and is no longer desired', () => {
    const previously = new Set([...ours, 'topology.kubernetes.io/zone']);
    const patch = labelPatch(desired, { ...desired, 'topology.kubernetes.io/zone': 'a' }, previously);
    assert.deepEqual(patch, { 'topology.kubernetes.io/zone': null });
  });

  it('does not remove a label that was ours but is already gone', () => {
    const previously = new Set([...ours, 'topology.kubernetes.io/zone']);
    assert.equal(labelPatch(desired, { ...desired }, previously), undefined);
    assert.equal(labelPatch({}, undefined, previously), undefined);
  });

  // Membership is own-property only: a label named like an Object.prototype member ("constructor") is a label.
  it('removes a label of ours named like an Object property', () => {
    assert.deepEqual(labelPatch({}, { constructor: 'x' }, new Set(['constructor'])), { constructor: null });
  });

  it('never touches foreign labels', () => {
    const current = { ...desired, 'example.com/owner': 'someone', 'topology.kubernetes.io/zone': 'a' };
    const patch = labelPatch({ ...desired, 'clusterlet.io/member': 'm2' }, current, ours);
    assert.deepEqual(patch, { 'clusterlet.io/member': 'm2' });
    assert.ok(patch && !('example.com/owner' in patch));
    assert.ok(patch && !('topology.kubernetes.io/zone' in patch));
  });
});

describe('forgeNewNode', () => {
  it('assembles name, labels, taints and a stamped status', () => {
    const ctx = context({ labels: { team: 'infra' } });
    const st = state({ topologyLabels: { 'topology.kubernetes.io/zone': 'z1' } });
    const node = forgeNewNode(ctx, st, T0);
    assert.equal(node.apiVersion, 'v1');
    assert.equal(node.kind, 'Node');
    assert.equal(node.metadata?.name, 'clusterlet-m1');
    assert.deepEqual(node.metadata?.labels, forgeNodeLabels(ctx, st));
    assert.equal(node.metadata?.labels?.team, 'infra');
    assert.deepEqual(managedLabelKeys(node), new Set(Object.keys(forgeNodeLabels(ctx, st))), 'every label it sets recorded as ours');
    assert.deepEqual(node.spec?.taints, [OUR_TAINT]);
    assert.deepEqual(node.status?.capacity, st.capacity);
    assert.equal(node.status?.daemonEndpoints?.kubeletEndpoint?.Port, 10250);
    assert.equal(ready(node.status?.conditions).status, 'True');
    for (const c of node.status?.conditions ?? []) {
      assert.deepEqual(c.lastHeartbeatTime, T0);
      assert.deepEqual(c.lastTransitionTime, T0);
    }
  });

  it('matches its own forged status', () => {
    const node = forgeNewNode(context(), state(), T0);
    assert.equal(nodeStatusMatches(forgeNodeStatus(context(), state()), node.status), true);
  });

  it('registers a not Ready node for an unreachable member', () => {
    const node = forgeNewNode(context(), state({ reachable: false, unreachableReason: 'dial tcp: i/o timeout' }), T0);
    assert.equal(ready(node.status?.conditions).reason, 'MemberUnreachable');
  });
});

describe('a virtual node of a group of the member\'s nodes', () => {
  const gpu: NodeGroup = { kind: 'pool', label: 'example.com/pool', value: 'gpu' };
  const w1: NodeGroup = { kind: 'node', node: 'w1' };
  const grouped = (group: NodeGroup) => context({ nodeName: 'clusterlet-m1-x', group });

  const cases: { name: string; group: NodeGroup; st: Partial<NodeState>; status: string; reason: string; message: string | RegExp }[] = [
    {
      name: 'a pool with Ready nodes', group: gpu, st: { groupNodes: 3, readyNodes: 2 }, status: 'True', reason: 'MemberReady',
      message: 'member m1 (pool example.com/pool=gpu) answers and has 2 Ready nodes',
    },
    {
      name: 'a pool with one Ready node', group: gpu, st: { groupNodes: 1, readyNodes: 1 }, status: 'True', reason: 'MemberReady',
      message: 'member m1 (pool example.com/pool=gpu) answers and has 1 Ready node',
    },
    {
      name: 'a member node, Ready', group: w1, st: { groupNodes: 1, readyNodes: 1 }, status: 'True', reason: 'MemberReady',
      message: 'member m1 (node w1) answers and has 1 Ready node',
    },
    {
      name: 'a pool whose nodes are all NotReady', group: gpu, st: { groupNodes: 2, readyNodes: 0 }, status: 'False',
      reason: 'MemberHasNoReadyNode', message: 'member m1 (pool example.com/pool=gpu) has no Ready node',
    },
    {
      name: 'a pool with no node any more', group: gpu, st: { groupNodes: 0, readyNodes: 0 }, status: 'False', reason: 'MemberGroupGone',
      message: /^member m1 \(pool example\.com\/pool=gpu\) has no node any more: no pod is placed here/,
    },
    {
      name: 'a member node gone', group: w1, st: { groupNodes: 0, readyNodes: 0 }, status: 'False', reason: 'MemberGroupGone',
      message: /^member m1 \(node w1\) has no node any more/,
    },
    {
      name: 'a pool gone, the member unreachable: unreachable', group: gpu,
      st: { groupNodes: 0, readyNodes: 0, reachable: false, unreachableReason: 'timeout' }, status: 'False', reason: 'MemberUnreachable',
      message: 'member cluster m1 does not answer: timeout',
    },
    {
      name: 'a pool, not synced yet: not synced, not gone', group: gpu, st: { groupNodes: 0, readyNodes: 0, synced: false }, status: 'False',
      reason: 'MemberNotSynced', message: 'member cluster m1 answers; listing its nodes',
    },
    {
      name: 'the whole member as a group: the member\'s messages, never gone', group: { kind: 'cluster' }, st: { groupNodes: 0, readyNodes: 3 },
      status: 'True', reason: 'MemberReady', message: 'member cluster m1 answers and has 3 Ready, schedulable nodes',
    },
  ];
  for (const c of cases) {
    it(`Ready: ${c.name}`, () => {
      const r = ready(forgeNodeConditions(grouped(c.group), state(c.st)));
      assert.deepEqual([r.status, r.reason], [c.status, c.reason]);
      if (typeof c.message === 'string') assert.equal(r.message, c.message);
      else assert.match(r.message ?? '', c.message);
    });
  }

  it('forgeNewNode records the group (clusterlet.io/node-group); a node without a group records none', () => {
    const ann = (group?: NodeGroup) => forgeNewNode(context(group ? { group } : {}), state(), T0).metadata!.annotations!;
    assert.equal(ann(gpu)['clusterlet.io/node-group'], 'pool:example.com/pool=gpu');
    assert.equal(ann(w1)['clusterlet.io/node-group'], 'node:w1');
    assert.equal(ann({ kind: 'cluster' })['clusterlet.io/node-group'], 'cluster');
    assert.equal('clusterlet.io/node-group' in ann(), false);
    assert.ok(ann(gpu)['clusterlet.io/managed-labels'], 'the other annotations still there');
  });

  it('RETIRING_TAINT: NoSchedule, a valid label value, taken onto the node from the state and recorded as copied', () => {
    assert.deepEqual(RETIRING_TAINT, { key: 'clusterlet.io/retiring', value: 'granularity-changed', effect: 'NoSchedule' });
    assert.match(RETIRING_TAINT.value!, /^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$/);
    const retiring = state({ taints: [RETIRING_TAINT] });
    assert.deepEqual(forgeNodeTaints(context(), retiring), [OUR_TAINT, RETIRING_TAINT]);
    assert.equal(managedTaintsValue(retiring), 'clusterlet.io/retiring:NoSchedule');
    const node = forgeNewNode(context(), retiring, T0);
    assert.deepEqual(node.spec!.taints, [OUR_TAINT, RETIRING_TAINT]);
    assert.deepEqual(managedTaintIds(node), new Set(['clusterlet.io/retiring:NoSchedule']));
  });

  it('mergeTaints: adds RETIRING_TAINT when wanted, removes it once not (recorded as ours), keeps everyone else\'s', () => {
    const user: V1Taint = { key: 'example.com/maintenance', effect: 'NoSchedule' };
    assert.deepEqual(mergeTaints([OUR_TAINT, user, UNREACHABLE], forgeNodeTaints(context(), { taints: [RETIRING_TAINT] })),
      [OUR_TAINT, user, UNREACHABLE, RETIRING_TAINT]);
    const current = [OUR_TAINT, user, RETIRING_TAINT, UNREACHABLE];
    const previouslyOurs = new Set(['clusterlet.io/retiring:NoSchedule']);
    assert.deepEqual(mergeTaints(current, forgeNodeTaints(context(), { taints: [] }), previouslyOurs), [OUR_TAINT, user, UNREACHABLE]);
    assert.equal(mergeTaints(current, forgeNodeTaints(context(), { taints: [] })), undefined,
      'not recorded as ours: someone else\'s, left alone');
    assert.equal(mergeTaints(current, forgeNodeTaints(context(), { taints: [RETIRING_TAINT] }), previouslyOurs), undefined,
      'still wanted: nothing to do');
  });
});
