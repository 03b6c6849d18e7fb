// Usage in host names from what the member reports (src/host/api/stats.ts, src/host/api/prom.ts).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { parsePrometheus, writePrometheus } from '../../../../src/host/api/prom.ts';
import {
  resourceMetricsOf, summaryOf, usageFromPodMetrics, usageFromResourceMetrics, type DelegateRef, type NodeUsage,
} from '../../../../src/host/api/stats.ts';

const proxy = (ns: string, name: string, uid: string, containers: string[]): V1Pod => ({
  metadata: { namespace: ns, name, uid }, spec: { containers: containers.map((c) => ({ name: c })) },
  status: { startTime: new Date('2026-01-01T00:00:00Z') },
});

// Member namespace "team-a-eu" stands for host namespace "team-a".
const delegates: DelegateRef[] = [
  { memberNamespace: 'team-a-eu', memberName: 'web', memberNode: 'n1', proxy: proxy('team-a', 'web', 'uid-web', ['app', 'sidecar']) },
];

const KUBELET = `# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds
# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{container="app",namespace="team-a-eu",pod="web"} 12.5 1767225600000
container_cpu_usage_seconds_total{container="sidecar",namespace="team-a-eu",pod="web"} 0.5 1767225600000
container_cpu_usage_seconds_total{container="app",namespace="other",pod="web"} 99 1767225600000
container_cpu_usage_seconds_total{container="injected",namespace="team-a-eu",pod="web"} 1 1767225600000
container_memory_working_set_bytes{container="app",namespace="team-a-eu",pod="web"} 1.048576e+08 1767225600000
container_memory_working_set_bytes{container="sidecar",namespace="team-a-eu",pod="web"} 1048576 1767225600000
container_start_time_seconds{container="app",namespace="team-a-eu",pod="web"} 1.7672256e+09 1767225600000
pod_cpu_usage_seconds_total{namespace="team-a-eu",pod="web"} 13.25 1767225600000
pod_memory_working_set_bytes{namespace="team-a-eu",pod="web"} 1.06e+08 1767225600000
node_cpu_usage_seconds_total 1000 1767225600000
`;

describe('Prometheus text', () => {
  it('parses names, labels (with escapes), values and timestamps; skips comments', () => {
    const s = parsePrometheus('# HELP x y\nx{a="1",b="q\\"uote\\\\d\\n"} 1.5e3 42\ny 2\nbad line {\n');
    assert.deepEqual(s, [
      { name: 'x', labels: { a: '1', b: 'q"uote\\d\n' }, value: 1500, timestamp: 42 },
      { name: 'y', labels: {}, value: 2 },
    ]);
  });

  it('writes what it parses', () => {
    const text = writePrometheus([{ name: 'm', help: 'h', type: 'gauge', samples: [{ labels: { a: 'x"y' }, value: 3, timestamp: 7 }] }]);
    assert.equal(text, '# HELP m h\n# TYPE m gauge\nm{a="x\\"y"} 3 7\n');
    assert.deepEqual(parsePrometheus(text), [{ name: 'm', labels: { a: 'x"y' }, value: 3, timestamp: 7 }]);
  });
});

describe('usage from the member', () => {
  it('kubelet resource metrics → host names; other pods and containers not in the spec are left out', () => {
    const [p] = usageFromResourceMetrics(parsePrometheus(KUBELET), delegates, 0);
    assert.equal(p.namespace, 'team-a');
    assert.equal(p.uid, 'uid-web');
    assert.deepEqual(p.containers.map((c) => [c.name, c.cpuSeconds, c.memoryWorkingSetBytes]), [['app', 12.5, 104857600], ['sidecar', 0.5, 1048576]]);
    assert.equal(p.cpuSeconds, 13.25, 'the pod-level counter when there is one');
    assert.equal(p.memoryWorkingSetBytes, 1.06e8);
    assert.equal(p.containers[0].startTime, 1767225600000);
    assert.equal(p.timestamp, 1767225600000);
  });

  it('metrics API PodMetrics → host names, CPU as a rate', () => {
    const [p] = usageFromPodMetrics([{ metadata: { namespace: 'team-a-eu', name: 'web' }, timestamp: '2026-01-01T00:00:00Z',
      containers: [{ name: 'app', usage: { cpu: '250m', memory: '64Mi' } }, { name: 'other', usage: { cpu: '1' } }] }], delegates, 0);
    assert.equal(p.name, 'web');
    assert.deepEqual(p.containers.map((c) => [c.name, c.cpuCores, c.memoryWorkingSetBytes]), [['app', 0.25, 64 * 2 ** 20]]);
    assert.equal(p.cpuCores, 0.25);
  });

  const usage: NodeUsage = {
    node: 'clusterlet-eu', startTime: Date.parse('2026-01-01T00:00:00Z'), cpuSeconds: 13, cpuCores: 0.5, memoryWorkingSetBytes: 2048,
    timestamp: Date.parse('2026-01-01T01:00:00Z'),
    pods: [{ namespace: 'team-a', name: 'web', uid: 'u', startTime: Date.parse('2026-01-01T00:00:00Z'), cpuSeconds: 13, cpuCores: 0.5,
      memoryWorkingSetBytes: 2048, timestamp: Date.parse('2026-01-01T01:00:00Z'),
      containers: [{ name: 'app', cpuSeconds: 13, cpuCores: 0.5, memoryWorkingSetBytes: 2048, timestamp: Date.parse('2026-01-01T01:00:00Z') }] }],
  };

  it('the stats/v1alpha1 Summary', () => {
    const s = summaryOf(usage) as { node: Record<string, unknown>; pods: Record<string, unknown>[] };
    assert.deepEqual(s.node, { nodeName: 'clusterlet-eu', startTime: '2026-01-01T00:00:00Z', systemContainers: [],
      cpu: { time: '2026-01-01T01:00:00Z', usageNanoCores: 500_000_000, usageCoreNanoSeconds: 13_000_000_000 },
      memory: { time: '2026-01-01T01:00:00Z', usageBytes: 2048, workingSetBytes: 2048 } });
    assert.deepEqual(s.pods[0].podRef, { name: 'web', namespace: 'team-a', uid: 'u' });
    assert.deepEqual((s.pods[0].containers as { name: string }[]).map((c) => c.name), ['app']);
  });

  it('the /metrics/resource families metrics-server reads', () => {
    const samples = parsePrometheus(resourceMetricsOf(usage));
    const find = (name: string) => samples.filter((x) => x.name === name);
    assert.deepEqual(find('container_cpu_usage_seconds_total'), [{ name: 'container_cpu_usage_seconds_total',
      labels: { container: 'app', namespace: 'team-a', pod: 'web' }, value: 13, timestamp: Date.parse('2026-01-01T01:00:00Z') }]);
    assert.equal(find('container_memory_working_set_bytes')[0].value, 2048);
    assert.equal(find('container_start_time_seconds')[0].value, Date.parse('2026-01-01T00:00:00Z') / 1000);
    assert.equal(find('node_cpu_usage_seconds_total')[0].value, 13);
    assert.equal(find('node_memory_working_set_bytes')[0].value, 2048);
    assert.equal(find('pod_cpu_usage_seconds_total')[0].labels.namespace, 'team-a');
  });
});
