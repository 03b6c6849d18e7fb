// GET /stats/summary and /metrics/resource: CPU and memory of the node, each pod and each container, in host
// names, as the node's runtime measures them — so the host's metrics-server, `kubectl top` and HPA work for
// offloaded pods. Here they are only rendered in the kubelet's formats.
import type { MeasuredNodeUsage } from '../../provider/runtime.ts';
import { writePrometheus, type Family } from '../../util/prom.ts';
import type { VirtualNode } from './nodes.ts';
import type { NodeStats } from './server.ts';

/** NodeStats from each node's runtime. */
export class RuntimeStats implements NodeStats {
  /** The nodes' start time: when the kubelet API started. */
  readonly #started = Date.now();

  async summary(node: VirtualNode): Promise<unknown> {
    return summaryOf(node.name, this.#started, await node.runtime.usage());
  }

  async resourceMetrics(node: VirtualNode): Promise<string> {
    return resourceMetricsOf(await node.runtime.usage());
  }
}

const iso = (ms: number | undefined): string | undefined => ms === undefined ? undefined : new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');

function cpu(time: number, cores: number | undefined, seconds: number): Record<string, unknown> {
  return {
    time: iso(time),
    ...(cores !== undefined ? { usageNanoCores: Math.round(cores * 1e9) } : {}),
    usageCoreNanoSeconds: Math.round(seconds * 1e9),
  };
}

function memory(time: number, workingSet: number): Record<string, unknown> {
  return { time: iso(time), usageBytes: Math.round(workingSet), workingSetBytes: Math.round(workingSet) };
}

/** The kubelet's stats/v1alpha1 Summary of the node `nodeName`, up since `startTime`. */
export function summaryOf(nodeName: string, startTime: number, u: MeasuredNodeUsage): unknown {
  return {
    node: {
      nodeName, startTime: iso(startTime), systemContainers: [],
      cpu: cpu(u.timestamp, u.cpuCores, u.cpuSeconds), memory: memory(u.timestamp, u.memoryWorkingSetBytes),
    },
    pods: u.pods.map((p) => ({
      podRef: { name: p.name, namespace: p.namespace, uid: p.uid },
      startTime: iso(p.startTime),
      containers: p.containers.map((c) => ({
        name: c.name, startTime: iso(c.startTime ?? p.startTime),
        cpu: cpu(c.timestamp, c.cpuCores, c.cpuSeconds), memory: memory(c.timestamp, c.memoryWorkingSetBytes),
      })),
      cpu: cpu(p.timestamp, p.cpuCores, p.cpuSeconds), memory: memory(p.timestamp, p.memoryWorkingSetBytes),
    })),
  };
}

/** The kubelet's /metrics/resource families, with timestamps as it gives them. */
export function resourceMetricsOf(u: MeasuredNodeUsage): string {
  const containers = u.pods.flatMap((p) => p.containers.map((c) => ({ p, c, labels: { container: c.name, namespace: p.namespace, pod: p.name } })));
  const startTimes: Family['samples'] = [];
  for (const { p, c, labels } of containers) {
    const start = c.startTime ?? p.startTime;
    if (start !== undefined) startTimes.push({ labels, value: start / 1000, timestamp: c.timestamp });
  }
  const families: Family[] = [
    { name: 'container_cpu_usage_seconds_total', help: '[STABLE] Cumulative cpu time consumed by the container in core-seconds', type: 'counter',
      samples: containers.map(({ c, labels }) => ({ labels, value: c.cpuSeconds, timestamp: c.timestamp })) },
    { name: 'container_memory_working_set_bytes', help: '[STABLE] Current working set of the container in bytes', type: 'gauge',
      samples: containers.map(({ c, labels }) => ({ labels, value: c.memoryWorkingSetBytes, timestamp: c.timestamp })) },
    { name: 'container_start_time_seconds', help: '[STABLE] Start time of the container since unix epoch in seconds', type: 'gauge',
      samples: startTimes },
    { name: 'node_cpu_usage_seconds_total', help: '[STABLE] Cumulative cpu time consumed by the node in core-seconds', type: 'counter',
      samples: [{ value: u.cpuSeconds, timestamp: u.timestamp }] },
    { name: 'node_memory_working_set_bytes', help: '[STABLE] Current working set of the node in bytes', type: 'gauge',
      samples: [{ value: u.memoryWorkingSetBytes, timestamp: u.timestamp }] },
    { name: 'pod_cpu_usage_seconds_total', help: '[STABLE] Cumulative cpu time consumed by the pod in core-seconds', type: 'counter',
      samples: u.pods.map((p) => ({ labels: { namespace: p.namespace, pod: p.name }, value: p.cpuSeconds, timestamp: p.timestamp })) },
    { name: 'pod_memory_working_set_bytes', help: '[STABLE] Current working set of the pod in bytes', type: 'gauge',
      samples: u.pods.map((p) => ({ labels: { namespace: p.namespace, pod: p.name }, value: p.memoryWorkingSetBytes, timestamp: p.timestamp })) },
    { name: 'resource_scrape_error', help: '[STABLE] 1 if there was an error while getting container metrics, 0 otherwise', type: 'gauge',
      samples: [{ value: 0 }] },
  ];
  return writePrometheus(families);
}
