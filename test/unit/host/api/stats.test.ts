// The kubelet's usage formats, rendered from what the node's runtime measured (src/host/api/stats.ts).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parsePrometheus } from '../../../../src/util/prom.ts';
import { resourceMetricsOf, summaryOf } from '../../../../src/host/api/stats.ts';
import type { MeasuredNodeUsage } from '../../../../src/provider/runtime.ts';

describe('usage in the kubelet\'s formats', () => {
  const usage: MeasuredNodeUsage = {
    cpuSeconds: 13, cpuCores: 0.5, memoryWorkingSetBytes: 2048,
    timestamp: Date.parse('2026-01-01T01:00:00Z'),
    pods: [{ namespace: 'team-a', name: 'web', uid: 'u', startTime: Date.parse('2026-01-01T00:00:00Z'), cpuSeconds: 13, cpuCores: 0.5,
      memoryWorkingSetBytes: 2048, timestamp: Date.parse('2026-01-01T01:00:00Z'),
      containers: [{ name: 'app', cpuSeconds: 13, cpuCores: 0.5, memoryWorkingSetBytes: 2048, timestamp: Date.parse('2026-01-01T01:00:00Z') }] }],
  };

  it('the stats/v1alpha1 Summary', () => {
    const s = summaryOf('clusterlet-eu', Date.parse('2026-01-01T00:00:00Z'), usage) as { node: Record<string, unknown>; pods: Record<string, unknown>[] };
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
