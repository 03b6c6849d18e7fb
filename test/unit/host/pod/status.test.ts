// The way back: a delegate's status in host coordinates (forge/status.ts) and the proxy's status policy on the host
// (host/pod/status.ts: merge with what the host owns, whether to write, the patch).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isDeepStrictEqual } from 'node:util';
import type { V1ContainerStatus, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { deletionDisruption, forgeHostStatus, restartsAfterLoss } from '../../../../src/forge/status.ts';
import {
  desiredProxyStatus, forgeProxyStatusForLostDelegate, pendingStatusInformative, proxyStatusPatch, proxyStatusWhileRestarting,
  statusEqual,
} from '../../../../src/host/pod/status.ts';
import { forgeDelegatePod } from '../../../../src/forge/pod.ts';
import { T0, T1, ctx, delegateWith, runningStatus } from '../../forge/fixtures.ts';

/** What the proxy should show for `delegate`: its status in host coordinates, merged with the proxy's own when given. */
function forgeProxyStatus(delegate: V1Pod, o: { hostIP: string; proxy?: V1Pod }): V1PodStatus {
  const fromDelegate = forgeHostStatus(delegate, o.hostIP);
  return o.proxy ? desiredProxyStatus(o.proxy, fromDelegate) : fromDelegate;
}

describe('forgeProxyStatus', () => {
  it('maps a running delegate: member IPs and containers, virtual node hostIP, member-only fields dropped', () => {
    const status = forgeProxyStatus(delegateWith({ nodeName: 'member-node-1' }, runningStatus), { hostIP: '192.0.2.10' });
    assert.deepEqual(status, {
      phase: 'Running',
      conditions: [
        { type: 'PodReadyToStartContainers', status: 'True', lastTransitionTime: T0 },
        { type: 'Initialized', status: 'True', lastTransitionTime: T0 },
        { type: 'Ready', status: 'True', lastTransitionTime: T1 },
        { type: 'ContainersReady', status: 'True', lastTransitionTime: T1 },
        { type: 'PodScheduled', status: 'True', lastTransitionTime: T0 },
      ],
      containerStatuses: runningStatus.containerStatuses,
      hostIP: '192.0.2.10',
      hostIPs: [{ ip: '192.0.2.10' }],
      podIP: '10.244.3.9',
      podIPs: [{ ip: '10.244.3.9' }],
      startTime: T0,
      qosClass: 'BestEffort',
    });
  });

  const phaseCases: { name: string; nodeName?: string; status: V1PodStatus | undefined; phase: string }[] = [
    { name: 'no status yet', status: undefined, phase: 'Pending' },
    { name: 'scheduled, no phase yet', nodeName: 'm1', status: {}, phase: 'Pending' },
    { name: 'unschedulable in the member', status: { phase: 'Pending' }, phase: 'Pending' },
    { name: 'claims Running but not scheduled', status: { phase: 'Running' }, phase: 'Pending' },
    { name: 'running', nodeName: 'm1', status: { phase: 'Running' }, phase: 'Running' },
    { name: 'succeeded', nodeName: 'm1', status: { phase: 'Succeeded' }, phase: 'Succeeded' },
    { name: 'failed before being scheduled', status: { phase: 'Failed', reason: 'DeadlineExceeded' }, phase: 'Failed' },
  ];
  for (const c of phaseCases) {
    it(`phase: ${c.name} -> ${c.phase}`, () => {
      const status = forgeProxyStatus(delegateWith({ nodeName: c.nodeName }, c.status), { hostIP: '192.0.2.10' });
      assert.equal(status.phase, c.phase);
      assert.equal(status.hostIP, '192.0.2.10');
    });
  }

  it('reports why the delegate is not scheduled yet', () => {
    const status = forgeProxyStatus(
      delegateWith({}, {
        phase: 'Pending',
        conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: '0/3 nodes are available' }],
        qosClass: 'BestEffort',
      }),
      { hostIP: '192.0.2.10' },
    );
    assert.deepEqual(status, {
      phase: 'Pending',
      conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: '0/3 nodes are available' }],
      hostIP: '192.0.2.10',
      hostIPs: [{ ip: '192.0.2.10' }],
      qosClass: 'BestEffort',
    });
  });

  it('keeps conditions host controllers own and applies the proxy readiness gates to Ready', () => {
    const proxy: V1Pod = {
      spec: { containers: [], readinessGates: [{ conditionType: 'example.com/lb-healthy' }] },
      status: {
        conditions: [
          { type: 'PodScheduled', status: 'True', lastTransitionTime: T0 },
          { type: 'Ready', status: 'False', lastTransitionTime: T0 },
          { type: 'example.com/lb-healthy', status: 'False', lastTransitionTime: T0 },
          { type: 'DisruptionTarget', status: 'True', reason: 'EvictionByEvictionAPI', lastTransitionTime: T1 },
        ],
      },
    };
    const delegate = delegateWith(
      { nodeName: 'm1' },
      {
        phase: 'Running',
        conditions: [
          { type: 'Ready', status: 'True', lastTransitionTime: T1 },
          { type: 'ContainersReady', status: 'True', lastTransitionTime: T1 },
        ],
      },
    );
    const status = forgeProxyStatus(delegate, { hostIP: '192.0.2.10', proxy });
    assert.deepEqual(status.conditions, [
      {
        type: 'Ready',
        status: 'False',
        reason: 'ReadinessGatesNotReady',
        message: 'the status of pod readiness gates "example.com/lb-healthy" is not "True"',
        lastTransitionTime: T1,
      },
      { type: 'ContainersReady', status: 'True', lastTransitionTime: T1 },
      { type: 'PodScheduled', status: 'True', lastTransitionTime: T0 },
      { type: 'example.com/lb-healthy', status: 'False', lastTransitionTime: T0 },
      { type: 'DisruptionTarget', status: 'True', reason: 'EvictionByEvictionAPI', lastTransitionTime: T1 },
    ]);

    proxy.status!.conditions![2].status = 'True';
    const ready = forgeProxyStatus(delegate, { hostIP: '192.0.2.10', proxy }).conditions!.find((c) => c.type === 'Ready');
    assert.deepEqual(ready, { type: 'Ready', status: 'True', lastTransitionTime: T1 });
  });
  it('drops the proxy\'s kubelet conditions the delegate no longer has (a recreated delegate is not Ready)', () => {
    const proxy: V1Pod = {
      spec: { containers: [] },
      status: {
        conditions: [
          { type: 'PodScheduled', status: 'True', lastTransitionTime: T0 },
          { type: 'Initialized', status: 'True', lastTransitionTime: T0 },
          { type: 'ContainersReady', status: 'True', lastTransitionTime: T1 },
          { type: 'Ready', status: 'True', lastTransitionTime: T1 },
          { type: 'example.com/custom', status: 'True', lastTransitionTime: T0 },
        ],
      },
    };
    const status = forgeProxyStatus(delegateWith({}, undefined), { hostIP: '192.0.2.10', proxy });
    assert.deepEqual(status.conditions, [
      { type: 'PodScheduled', status: 'True', lastTransitionTime: T0 },
      { type: 'example.com/custom', status: 'True', lastTransitionTime: T0 },
    ]);
  });
});

describe('ephemeral container statuses (kubectl debug)', () => {
  const now = new Date('2026-03-01T11:00:00.750Z');
  const at = new Date('2026-03-01T11:00:00Z');
  const status = (name: string, state: V1ContainerStatus['state']): V1ContainerStatus =>
    ({ name, image: 'busybox', imageID: `sha-${name}`, containerID: `containerd://${name}`, ready: false, restartCount: 0, state });
  const running = (name: string): V1ContainerStatus => status(name, { running: { startedAt: T1 } });
  const exited = (name: string): V1ContainerStatus => status(name, { terminated: { exitCode: 0, reason: 'Completed', startedAt: T0, finishedAt: T1 } });
  const lost = (name: string): V1ContainerStatus => ({
    ...status(name, { terminated: { exitCode: 137, reason: 'DelegateLost', containerID: `containerd://${name}`, startedAt: T1, finishedAt: at,
      message: 'ran in an earlier delegate, which was lost; ephemeral containers are not restarted' } }),
    started: false,
  });
  const proxy = (names: string[], statuses?: V1ContainerStatus[]): V1Pod => ({
    spec: { containers: [{ name: 'c', image: 'i' }], ephemeralContainers: names.map((name) => ({ name, image: 'busybox', targetContainerName: 'c' })) },
    status: { phase: 'Running', ephemeralContainerStatuses: statuses },
  });

  const cases: { name: string; proxy: V1Pod; delegate?: V1ContainerStatus[]; want: V1ContainerStatus[] | undefined }[] = [
    { name: 'none anywhere', proxy: proxy([]), want: undefined },
    { name: 'added, not reported yet', proxy: proxy(['dbg']), want: undefined },
    { name: 'reported by the delegate: shown as it is', proxy: proxy(['dbg']), delegate: [running('dbg')], want: [running('dbg')] },
    { name: 'finished in the delegate', proxy: proxy(['dbg'], [running('dbg')]), delegate: [exited('dbg')], want: [exited('dbg')] },
    {
      name: 'one the delegate has and the proxy not (debugged in the member) is not the proxy\'s',
      proxy: proxy(['dbg']), delegate: [running('dbg'), running('members-own')], want: [running('dbg')],
    },
    {
      name: 'ran in a lost delegate, its successor does not report it: kept, terminated',
      proxy: proxy(['dbg', 'new'], [running('dbg')]), delegate: [running('new')], want: [lost('dbg'), running('new')],
    },
    {
      name: 'finished in a lost delegate: kept as it was',
      proxy: proxy(['dbg'], [exited('dbg')]), delegate: [], want: [exited('dbg')],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const delegate = delegateWith({ nodeName: 'm1' }, { phase: 'Running', ephemeralContainerStatuses: c.delegate });
      const desired = desiredProxyStatus(c.proxy, forgeHostStatus(delegate, '192.0.2.10'), now);
      assert.deepEqual(desired.ephemeralContainerStatuses, c.want);
    });
  }

  it('a terminated one kept is written once: the next comparison finds nothing to change', () => {
    const p = proxy(['dbg'], [running('dbg')]);
    const fromDelegate = forgeHostStatus(delegateWith({ nodeName: 'm1' }, { phase: 'Running' }), '192.0.2.10');
    const written: V1Pod = { ...p, status: desiredProxyStatus(p, fromDelegate, now) };
    assert.ok(statusEqual(desiredProxyStatus(written, fromDelegate, new Date(now.getTime() + 60_000)), written.status));
  });

  it('a proxy whose delegate is lost for good: its ephemeral containers that ran are terminated, like its containers', () => {
    const p = proxy(['dbg', 'done', 'never'], [running('dbg'), exited('done')]);
    const failed = forgeProxyStatusForLostDelegate(p, 'DelegateLost', 'deleted in member eu1', now);
    const dbg = { ...running('dbg'), started: false,
      state: { terminated: { exitCode: 137, reason: 'DelegateLost', message: 'deleted in member eu1', containerID: 'containerd://dbg', startedAt: T1, finishedAt: at } } };
    assert.deepEqual(failed.ephemeralContainerStatuses, [dbg, exited('done')]);
  });
});

describe('pendingStatusInformative', () => {
  const scheduled: V1PodStatus = { phase: 'Pending', hostIP: '10.0.0.1', conditions: [{ type: 'PodScheduled', status: 'True' }] };
  const cases: { name: string; desired: V1PodStatus; proxy?: V1PodStatus; want: boolean }[] = [
    { name: 'scheduled in the member, nothing else yet', desired: scheduled, proxy: { phase: 'Pending' }, want: false },
    { name: 'waiting for the member scheduler', desired: { phase: 'Pending', hostIP: '10.0.0.1' }, proxy: undefined, want: false },
    { name: 'a host condition that is not True is not the delegate\'s news',
      desired: { ...scheduled, conditions: [...scheduled.conditions!, { type: 'clusterlet.io/Offloaded', status: 'False' }] }, want: false },
    { name: 'unschedulable in the member', desired: { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable' }] }, want: true },
    { name: 'containers being created', desired: { ...scheduled, containerStatuses: [{ name: 'a', image: 'i', imageID: '', ready: false, restartCount: 0,
      state: { waiting: { reason: 'ContainerCreating' } } }] }, want: true },
    { name: 'init containers reported', desired: { ...scheduled, initContainerStatuses: [{ name: 'i', image: 'i', imageID: '', ready: false, restartCount: 0 }] }, want: true },
    { name: 'a reason', desired: { ...scheduled, reason: 'SchedulingGated' }, want: true },
    { name: 'Running', desired: { ...scheduled, phase: 'Running' }, want: true },
    { name: 'the proxy shows another phase (a recreated delegate)', desired: scheduled, proxy: { phase: 'Running' }, want: true },
  ];
  for (const c of cases) {
    it(`${c.name} -> ${c.want}`, () => assert.equal(pendingStatusInformative(c.desired, c.proxy), c.want));
  }
});

describe('statusEqual', () => {
  const base: V1PodStatus = {
    phase: 'Running',
    startTime: T0,
    conditions: [
      { type: 'Ready', status: 'True', lastTransitionTime: T1 },
      { type: 'PodScheduled', status: 'True', lastTransitionTime: T0 },
    ],
    containerStatuses: [
      { name: 'a', image: 'i', imageID: '', ready: true, restartCount: 0 },
      { name: 'b', image: 'i', imageID: '', ready: true, restartCount: 0 },
    ],
  };
  const variant = (patch: Partial<V1PodStatus>): V1PodStatus => ({ ...structuredClone(base), ...patch });
  const asString = (d: Date) => d.toISOString().replace('.000Z', 'Z');
  const cases: { name: string; a: V1PodStatus | undefined; b: V1PodStatus | undefined; equal: boolean }[] = [
    { name: 'identical', a: base, b: variant({}), equal: true },
    { name: 'conditions reordered', a: base, b: variant({ conditions: [...base.conditions!].reverse() }), equal: true },
    { name: 'container statuses reordered', a: base, b: variant({ containerStatuses: [...base.containerStatuses!].reverse() }), equal: true },
    {
      name: 'Date vs ISO string',
      a: base,
      b: JSON.parse(JSON.stringify({ ...base, startTime: asString(T0) })) as V1PodStatus,
      equal: true,
    },
    { name: 'sub-second difference', a: base, b: variant({ startTime: new Date(T0.getTime() + 400) }), equal: true },
    { name: 'undefined vs empty array', a: variant({ podIPs: undefined }), b: variant({ podIPs: [] }), equal: true },
    {
      name: 'lastProbeTime null vs undefined',
      a: base,
      b: variant({
        conditions: [
          { type: 'Ready', status: 'True', lastTransitionTime: T1, lastProbeTime: null as unknown as undefined },
          { type: 'PodScheduled', status: 'True', lastTransitionTime: T0 },
        ],
      }),
      equal: true,
    },
    { name: 'both undefined', a: undefined, b: undefined, equal: true },
    { name: 'undefined vs empty', a: undefined, b: {}, equal: true },
    { name: 'phase differs', a: base, b: variant({ phase: 'Succeeded' }), equal: false },
    { name: 'time differs', a: base, b: variant({ startTime: T1 }), equal: false },
    {
      name: 'condition status differs',
      a: base,
      b: variant({ conditions: [{ type: 'Ready', status: 'False', lastTransitionTime: T1 }, base.conditions![1]] }),
      equal: false,
    },
    { name: 'pod IP order matters', a: variant({ podIPs: [{ ip: 'a' }, { ip: 'b' }] }), b: variant({ podIPs: [{ ip: 'b' }, { ip: 'a' }] }), equal: false },
    { name: 'condition added', a: base, b: variant({ conditions: [...base.conditions!, { type: 'Initialized', status: 'True' }] }), equal: false },
  ];
  for (const c of cases) {
    it(`${c.name} -> ${c.equal}`, () => {
      assert.equal(statusEqual(c.a, c.b), c.equal);
      assert.equal(statusEqual(c.b, c.a), c.equal);
    });
  }
});

describe('statusEqual against its definition', () => {
  // What statusEqual means, written plainly: both sides normalized (absent values dropped, timestamps to whole
  // seconds, keyed lists sorted), then deep-equal.
  const SORT_KEYS: Record<string, string> = { conditions: 'type', containerStatuses: 'name', initContainerStatuses: 'name', ephemeralContainerStatuses: 'name' };
  const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
  const normalize = (v: unknown, field = ''): unknown => {
    if (v === null || v === undefined) return undefined;
    if (v instanceof Date) return Math.floor(v.getTime() / 1000);
    if (typeof v === 'string' && RFC3339.test(v)) return Math.floor(Date.parse(v) / 1000);
    if (Array.isArray(v)) {
      if (v.length === 0) return undefined;
      const items = v.map((x) => normalize(x));
      const key = SORT_KEYS[field];
      const of = (x: unknown): string => String((x as Record<string, unknown>)[key!]);
      return key ? items.sort((x, y) => (of(x) < of(y) ? -1 : of(x) > of(y) ? 1 : 0)) : items;
    }
    if (typeof v === 'object') {
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, normalize(x, k)] as const).filter(([, x]) => x !== undefined));
    }
    return v;
  };
  const reference = (a: V1PodStatus | undefined, b: V1PodStatus | undefined): boolean => isDeepStrictEqual(normalize(a ?? {}), normalize(b ?? {}));

  // Random statuses from a small vocabulary, so that equal pairs come up often.
  const pick = <T>(xs: T[]): T => xs[Math.floor(Math.random() * xs.length)]!;
  const time = (): unknown => pick([T0, T1, new Date(T0.getTime() + 300), T0.toISOString(), T1.toISOString().replace('.000Z', 'Z'), null, undefined]);
  const maybe = <T>(x: T): T | undefined | null => pick([x, x, undefined, null]);
  const shuffled = <T>(xs: T[]): T[] => [...xs].sort(() => Math.random() - 0.5);
  const status = (): V1PodStatus => ({
    phase: maybe(pick(['Pending', 'Running'])),
    startTime: time(),
    podIPs: pick([undefined, [], [{ ip: 'a' }], [{ ip: 'a' }, { ip: 'b' }]]),
    conditions: pick([undefined, [], shuffled(['Ready', 'PodScheduled', 'Initialized'].slice(0, 1 + Math.floor(Math.random() * 3)).map((type) => ({
      type, status: pick(['True', 'True', 'False']), lastTransitionTime: time(), lastProbeTime: maybe(T0),
    })))]),
    containerStatuses: pick([undefined, shuffled(['a', 'b'].map((name) => ({
      name, image: 'i', imageID: '', ready: pick([true, true, false]), restartCount: 0, state: pick([{}, { running: { startedAt: time() } }, undefined]),
    })))]),
  } as V1PodStatus);

  // `s` rewritten the ways statusEqual ignores (order of keyed lists, Date or string, null or undefined or empty),
  // and now and then changed for real.
  const variant = (s: V1PodStatus): V1PodStatus => {
    const rewrite = (v: unknown, field: string): unknown => {
      if (v instanceof Date) return pick([v, v.toISOString(), new Date(Math.floor(v.getTime() / 1000) * 1000 + 999), v.getTime() === T0.getTime() && Math.random() < 0.1 ? T1 : v]);
      if (v === null || v === undefined) return pick([null, undefined, v]);
      if (Array.isArray(v)) {
        const items = v.map((x) => rewrite(x, ''));
        return SORT_KEYS[field] ? shuffled(items) : items;
      }
      if (typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, rewrite(x, k)]));
      if (typeof v === 'string' && RFC3339.test(v)) return pick([v, new Date(v)]);
      return Math.random() < 0.03 ? `${String(v)}!` : v;
    };
    return rewrite(s, '') as V1PodStatus;
  };

  it('agrees with it on random pairs', () => {
    let equal = 0;
    for (let i = 0; i < 3000; i++) {
      const a = status();
      const b = Math.random() < 0.2 ? status() : variant(a);
      const want = reference(a, b);
      equal += want ? 1 : 0;
      assert.equal(statusEqual(a, b), want, JSON.stringify({ a, b }));
      assert.equal(statusEqual(b, a), want, JSON.stringify({ b, a }));
    }
    assert.ok(equal > 1000 && equal < 2700, `both answers come up (${equal} equal of 3000)`);
  });
});

describe('forgeProxyStatusForLostDelegate', () => {
  it('fails the proxy and terminates the containers that had not finished', () => {
    const now = new Date('2026-03-01T11:00:00.750Z');
    const proxy: V1Pod = {
      spec: {
        initContainers: [{ name: 'init', image: 'i' }],
        containers: [
          { name: 'web', image: 'w' },
          { name: 'never-started', image: 'n' },
        ],
      },
      status: {
        phase: 'Running',
        hostIP: '192.0.2.10',
        podIP: '10.244.3.9',
        qosClass: 'BestEffort',
        conditions: [
          { type: 'PodScheduled', status: 'True', lastTransitionTime: T0 },
          { type: 'Ready', status: 'True', lastTransitionTime: T1 },
          { type: 'ContainersReady', status: 'True', lastTransitionTime: T1 },
        ],
        initContainerStatuses: [
          {
            name: 'init', image: 'i', imageID: 'sha', ready: false, restartCount: 0,
            state: { terminated: { exitCode: 0, reason: 'Completed', finishedAt: T0 } },
          },
        ],
        containerStatuses: [
          {
            name: 'web', image: 'w', imageID: 'sha-w', containerID: 'containerd://1', ready: true, started: true, restartCount: 2,
            state: { running: { startedAt: T1 } },
          },
        ],
      },
    };
    const finishedAt = new Date('2026-03-01T11:00:00Z');
    assert.deepEqual(forgeProxyStatusForLostDelegate(proxy, 'DelegateLost', 'deleted in member eu1', now), {
      phase: 'Failed',
      reason: 'DelegateLost',
      message: 'deleted in member eu1',
      hostIP: '192.0.2.10',
      podIP: '10.244.3.9',
      qosClass: 'BestEffort',
      conditions: [
        { type: 'PodScheduled', status: 'True', lastTransitionTime: T0 },
        { type: 'ContainersReady', status: 'False', reason: 'PodCompleted', lastTransitionTime: finishedAt },
        { type: 'Ready', status: 'False', reason: 'PodCompleted', lastTransitionTime: finishedAt },
      ],
      initContainerStatuses: proxy.status!.initContainerStatuses,
      containerStatuses: [
        {
          name: 'web', image: 'w', imageID: 'sha-w', containerID: 'containerd://1', ready: false, started: false, restartCount: 2,
          state: {
            terminated: {
              exitCode: 137, reason: 'DelegateLost', message: 'deleted in member eu1', containerID: 'containerd://1',
              startedAt: T1, finishedAt,
            },
          },
        },
        {
          name: 'never-started', image: 'n', imageID: '', ready: false, started: false, restartCount: 0,
          state: { terminated: { exitCode: 137, reason: 'DelegateLost', message: 'deleted in member eu1', finishedAt } },
        },
      ],
    });
  });
});

describe('proxyStatusPatch', () => {
  const current: V1PodStatus = {
    phase: 'Running', podIP: '10.0.0.1', podIPs: [{ ip: '10.0.0.1' }], hostIP: '192.0.2.1', hostIPs: [{ ip: '192.0.2.1' }],
    startTime: new Date(0), reason: 'Old', containerStatuses: [{ name: 'c', image: 'i', imageID: '', ready: true, restartCount: 0 }],
    conditions: [
      { type: 'Ready', status: 'True' }, { type: 'PodReadyToStartContainers', status: 'True' },
      { type: 'clusterlet.io/Offloaded', status: 'True' }, { type: 'example.com/Gate', status: 'True' },
    ],
  };

  it('replaces podIPs and hostIPs instead of merging a new IP next to the old one', () => {
    const patch = proxyStatusPatch({ phase: 'Running', podIP: '10.0.0.2', podIPs: [{ ip: '10.0.0.2' }], hostIP: '192.0.2.1',
      hostIPs: [{ ip: '192.0.2.1' }] }, current);
    assert.deepEqual(patch.podIPs, [{ $patch: 'replace' }, { ip: '10.0.0.2' }]);
    assert.deepEqual(patch.hostIPs, [{ $patch: 'replace' }, { ip: '192.0.2.1' }]);
    assert.equal(patch.podIP, '10.0.0.2');
  });

  it('clears what the delegate no longer reports, and deletes its conditions, but not the ones it does not own', () => {
    const desired: V1PodStatus = { phase: 'Pending', hostIP: '192.0.2.1', hostIPs: [{ ip: '192.0.2.1' }],
      conditions: [{ type: 'PodScheduled', status: 'False' }, { type: 'example.com/Gate', status: 'True' }] };
    const patch = proxyStatusPatch(desired, current, new Set(['clusterlet.io/Offloaded']));
    assert.deepEqual(
      [patch.podIP, patch.podIPs, patch.startTime, patch.reason, patch.containerStatuses],
      [null, null, null, null, null],
    );
    assert.deepEqual(patch.conditions, [
      { type: 'PodScheduled', status: 'False' }, { type: 'example.com/Gate', status: 'True' },
      { type: 'Ready', $patch: 'delete' }, { type: 'PodReadyToStartContainers', $patch: 'delete' },
    ]);
    assert.equal(patch.phase, 'Pending');
    assert.equal('message' in patch, false, 'nothing to clear');
  });

  it('never writes an owned condition, even one the desired status carries', () => {
    const patch = proxyStatusPatch({ phase: 'Running', conditions: [{ type: 'clusterlet.io/Offloaded', status: 'False' }] },
      { phase: 'Running', conditions: [{ type: 'clusterlet.io/Offloaded', status: 'True' }] }, new Set(['clusterlet.io/Offloaded']));
    assert.equal('conditions' in patch, false);
  });

  it('of an unchanged status, sends the same values (a no-op for the API)', () => {
    const desired: V1PodStatus = { phase: 'Running', podIP: '10.0.0.1', conditions: [{ type: 'Ready', status: 'True' }] };
    const patch = proxyStatusPatch(desired, desired);
    assert.deepEqual(patch, { phase: 'Running', podIP: '10.0.0.1', conditions: [{ type: 'Ready', status: 'True' }] });
  });
});

describe('a lost delegate created again', () => {
  const proxy: V1Pod = {
    metadata: { name: 'web-1', namespace: 'web', uid: 'u1' },
    spec: { containers: [{ name: 'app', image: 'a' }, { name: 'side', image: 's' }] },
    status: { phase: 'Running', containerStatuses: [
      { name: 'app', image: 'a', imageID: '', ready: true, restartCount: 2 },
    ] },
  };
  it('restartsAfterLoss: what the proxy shows plus one, per container', () => {
    assert.deepEqual(restartsAfterLoss(proxy), { app: 3, side: 1 });
  });
  it('while the new delegate is being made, the proxy shows it restarting, once: the retries count the loss no more', () => {
    const now = new Date('2026-01-01T00:05:00.400Z');
    const patch = proxyStatusWhileRestarting(proxy, restartsAfterLoss(proxy), now);
    assert.ok(patch);
    const shownNow = { ...proxy, status: { ...proxy.status, ...patch } as V1PodStatus };
    assert.equal(shownNow.status.phase, 'Running');
    assert.deepEqual(shownNow.status.containerStatuses?.map((c) => [c.name, c.restartCount, c.state?.waiting?.reason,
      c.lastState?.terminated?.reason, c.lastState?.terminated?.exitCode]), [['app', 3, 'ContainerCreating', 'DelegateLost', 137],
      ['side', 1, 'ContainerCreating', 'DelegateLost', 137]]);
    assert.deepEqual((patch.conditions as { type: string; status: string }[]).map((c) => [c.type, c.status]),
      [['ContainersReady', 'False'], ['Ready', 'False']]);
    assert.deepEqual(restartsAfterLoss(shownNow), { app: 3, side: 1 }, 'not counted again');
    assert.equal(proxyStatusWhileRestarting(shownNow, restartsAfterLoss(shownNow), new Date(now.getTime() + 60_000)), undefined,
      'nothing more to write');
  });
  it('the new delegate carries them and the proxy status adds them to what it reports', () => {
    const d = forgeDelegatePod(proxy, { ...ctx, restarts: { app: 3, side: 1 } });
    assert.equal(d.metadata!.annotations!['clusterlet.io/restarts'], '{"app":3,"side":1}');
    d.status = { phase: 'Running', containerStatuses: [
      { name: 'app', image: 'a', imageID: '', ready: true, restartCount: 0 },
      { name: 'side', image: 's', imageID: '', ready: true, restartCount: 4 },
    ] };
    d.spec!.nodeName = 'm1';
    const s = forgeProxyStatus(d, { hostIP: '10.0.0.1', proxy });
    assert.deepEqual(s.containerStatuses!.map((c) => [c.name, c.restartCount]), [['app', 3], ['side', 5]]);
  });
  const LOST = {
    exitCode: 137, reason: 'DelegateLost', finishedAt: T1,
    message: 'killed with its delegate, which the member lost (its node gone, or the pod deleted or evicted there)',
  };
  /** The replacement of the proxy's lost delegate, created at T1, with `status` from the member. */
  const replacement = (status: V1PodStatus | undefined, nodeName?: string): V1Pod => {
    const d = forgeDelegatePod(proxy, { ...ctx, restarts: { app: 3, side: 1 } });
    d.metadata!.creationTimestamp = T1;
    if (nodeName) d.spec!.nodeName = nodeName;
    d.status = status;
    return d;
  };
  const shown = { ...proxy, status: { ...proxy.status, startTime: T0, conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: T0 }] } };

  it('until it starts its containers, the pod shows them restarting: Running, each waiting with its restarts and killed last, not Ready', () => {
    const cases: [string, V1PodStatus | undefined, string | undefined][] = [
      ['just created', undefined, undefined],
      ['scheduled in the member', { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'True', lastTransitionTime: T1 }] }, 'm1'],
    ];
    for (const [name, status, node] of cases) {
      const s = forgeProxyStatus(replacement(status, node), { hostIP: '10.0.0.1', proxy: shown });
      assert.equal(s.phase, 'Running', name);
      assert.equal(s.startTime, T0, `${name}: the pod's start, not the replacement's`);
      assert.deepEqual(s.containerStatuses, [
        { name: 'app', image: 'a', imageID: '', ready: false, started: false, restartCount: 3, state: { waiting: { reason: 'ContainerCreating' } },
          lastState: { terminated: LOST } },
        { name: 'side', image: 's', imageID: '', ready: false, started: false, restartCount: 1, state: { waiting: { reason: 'ContainerCreating' } },
          lastState: { terminated: LOST } },
      ], name);
      const cond = (t: string) => s.conditions!.find((c) => c.type === t);
      assert.deepEqual([cond('Ready'), cond('ContainersReady')], [
        { type: 'Ready', status: 'False', reason: 'ContainersNotReady', lastTransitionTime: T1 },
        { type: 'ContainersReady', status: 'False', reason: 'ContainersNotReady', lastTransitionTime: T1 },
      ], name);
      // The same answer on every sync: nothing to write again.
      assert.ok(statusEqual(forgeProxyStatus(replacement(status, node), { hostIP: '10.0.0.1', proxy: shown }), s), name);
    }
  });

  it('once running, a container that has not restarted there shows the loss as its last state; one that has, its own', () => {
    const own = { terminated: { exitCode: 1, reason: 'Error', finishedAt: T0 } };
    const s = forgeProxyStatus(replacement({ phase: 'Running', startTime: T1, containerStatuses: [
      { name: 'app', image: 'a', imageID: '', ready: true, restartCount: 0, state: { running: { startedAt: T1 } } },
      { name: 'side', image: 's', imageID: '', ready: true, restartCount: 1, state: { running: { startedAt: T1 } }, lastState: own },
    ] }, 'm1'), { hostIP: '10.0.0.1', proxy: shown });
    assert.deepEqual(s.containerStatuses!.map((c) => [c.name, c.restartCount, c.lastState]), [['app', 3, { terminated: LOST }], ['side', 2, own]]);
    assert.equal(s.startTime, T0, 'the pod started once');
  });

  it('a replacement that finished shows its own status, not a restart', () => {
    const s = forgeProxyStatus(replacement({ phase: 'Failed', reason: 'Evicted' }, 'm1'), { hostIP: '10.0.0.1' });
    assert.equal(s.phase, 'Failed');
    assert.equal(s.containerStatuses, undefined);
  });

  it('a first delegate carries no restarts annotation, and a garbled one is ignored', () => {
    assert.equal(forgeDelegatePod(proxy, ctx).metadata!.annotations!['clusterlet.io/restarts'], undefined);
    const d = forgeDelegatePod(proxy, ctx);
    d.metadata!.annotations!['clusterlet.io/restarts'] = '{not json';
    d.spec!.nodeName = 'm1';
    d.status = { phase: 'Running', containerStatuses: [{ name: 'app', image: 'a', imageID: '', ready: true, restartCount: 1 }] };
    assert.equal(forgeProxyStatus(d, { hostIP: '10.0.0.1', proxy }).containerStatuses![0].restartCount, 1);
  });
});

describe('deletionDisruption', () => {
  const cases: [string, V1PodStatus, string | undefined][] = [
    ['pod GC of a lost node', { phase: 'Failed', conditions: [{ type: 'DisruptionTarget', status: 'True', reason: 'DeletionByPodGC' }] }, 'DeletionByPodGC'],
    ['taint eviction', { phase: 'Running', conditions: [{ type: 'DisruptionTarget', status: 'True', reason: 'DeletionByTaintManager' }] }, 'DeletionByTaintManager'],
    ['the kubelet ended it (stays Failed, not deleted)', { phase: 'Failed', conditions: [{ type: 'DisruptionTarget', status: 'True', reason: 'TerminationByKubelet' }] }, undefined],
    ['a condition that is False', { phase: 'Failed', conditions: [{ type: 'DisruptionTarget', status: 'False', reason: 'DeletionByPodGC' }] }, undefined],
    ['no disruption', { phase: 'Failed' }, undefined],
  ];
  for (const [name, status, want] of cases) {
    it(name, () => assert.equal(deletionDisruption({ metadata: {}, status }), want));
  }
});
