// What each cluster's KWOK serves on its fake nodes' kubelet port, so the API server can proxy logs, exec,
// attach, port-forward and resource metrics to them (KWOK v0.7.0 kinds, given with --config):
//   ClusterLogs         containers "main" and "sidecar" read <dir>/logs/<container>.log (previous:
//                       <container>.previous.log), any other container <dir>/logs/default.log; CRI log format.
//   ClusterAttach       the same per container under <dir>/attach/ (KWOK's attach follows a file; stdin is ignored).
//   ClusterExec         runs the requested command on this machine, in <dir> (so stdin and exit codes are real).
//   ClusterPortForward  port 7000 runs `cat` (an echo); any other port connects to <dir>'s echo target if set.
//   ClusterResourceUsage + Metric
//                       usage from the pod annotations kwok.x-k8s.io/usage-cpu / -memory (default 10m / 16Mi),
//                       served as kubelet /metrics/resource at /metrics/nodes/<node>/metrics/resource (the path
//                       each fake node names in its metrics.k8s.io/resource-metrics-path annotation).
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export const KWOK_LOG_CONTAINERS = ['main', 'sidecar'];
export const KWOK_ECHO_PORT = 7000;
export const RESOURCE_METRICS_PATH_ANNOTATION = 'metrics.k8s.io/resource-metrics-path';

export function resourceMetricsPath(node: string): string {
  return `/metrics/nodes/${node}/metrics/resource`;
}

export interface KwokFiles {
  dir: string;
  /** The file KWOK serves as this container's log (any pod). */
  logs(container: string): string;
  previousLogs(container: string): string;
  attach(container: string): string;
}

export function kwokFiles(dir: string): KwokFiles {
  const pick = (sub: string, container: string, suffix = ''): string =>
    join(dir, sub, `${KWOK_LOG_CONTAINERS.includes(container) ? container : 'default'}${suffix}.log`);
  return {
    dir,
    logs: (c) => pick('logs', c),
    previousLogs: (c) => pick('logs', c, '.previous'),
    attach: (c) => pick('attach', c),
  };
}

/** Writes the KWOK config for the kubelet API into `dir` and returns its path. */
export async function writeKwokApiConfig(dir: string): Promise<string> {
  const files = kwokFiles(dir);
  await mkdir(join(dir, 'logs'), { recursive: true });
  await mkdir(join(dir, 'attach'), { recursive: true });
  const all = [...KWOK_LOG_CONTAINERS, 'default'];
  // KWOK follows files with fsnotify: they must exist before a follow starts.
  await Promise.all(all.flatMap((c) => [files.logs(c), files.previousLogs(c), files.attach(c)].map((f) => writeFile(f, ''))));
  const logs = (kind: 'logs' | 'attach'): string => all.map((c) => {
    const containers = c === 'default' ? '' : `\n    containers: [${c}]`;
    return kind === 'logs'
      ? `  - logsFile: ${files.logs(c)}\n    previousLogsFile: ${files.previousLogs(c)}${containers}`
      : `  - logsFile: ${files.attach(c)}${containers}`;
  }).join('\n');
  const yaml = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterLogs
metadata:
  name: harness-logs
spec:
  logs:
${logs('logs')}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterAttach
metadata:
  name: harness-attach
spec:
  attaches:
${logs('attach')}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterExec
metadata:
  name: harness-exec
spec:
  execs:
  - local:
      workDir: ${dir}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterPortForward
metadata:
  name: harness-port-forward
spec:
  forwards:
  - ports: [${KWOK_ECHO_PORT}]
    command: [cat]
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterResourceUsage
metadata:
  name: harness-usage
spec:
  usages:
  - usage:
      cpu:
        expression: |
          "kwok.x-k8s.io/usage-cpu" in pod.metadata.annotations
          ? Quantity(pod.metadata.annotations["kwok.x-k8s.io/usage-cpu"])
          : Quantity("10m")
      memory:
        expression: |
          "kwok.x-k8s.io/usage-memory" in pod.metadata.annotations
          ? Quantity(pod.metadata.annotations["kwok.x-k8s.io/usage-memory"])
          : Quantity("16Mi")
---
${METRICS_RESOURCE}`;
  const file = join(dir, 'kubelet-api.yaml');
  await writeFile(file, yaml);
  return file;
}

// KWOK's kustomize/metrics/resource Metric (the kubelet's /metrics/resource), per node.
const METRICS_RESOURCE = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Metric
metadata:
  name: metrics-resource
spec:
  path: "/metrics/nodes/{nodeName}/metrics/resource"
  metrics:
  - name: scrape_error
    dimension: node
    help: "[ALPHA] 1 if there was an error while getting metrics from the node, 0 otherwise"
    kind: gauge
    value: '0'
  - name: container_start_time_seconds
    dimension: container
    help: "[ALPHA] Start time of the container since unix epoch in seconds"
    kind: gauge
    labels:
    - { name: container, value: 'container.name' }
    - { name: namespace, value: 'pod.metadata.namespace' }
    - { name: pod, value: 'pod.metadata.name' }
    value: 'pod.SinceSecond()'
  - name: container_cpu_usage_seconds_total
    dimension: container
    help: "[ALPHA] Cumulative cpu time consumed by the container in core-seconds"
    kind: counter
    labels:
    - { name: container, value: 'container.name' }
    - { name: namespace, value: 'pod.metadata.namespace' }
    - { name: pod, value: 'pod.metadata.name' }
    value: 'pod.CumulativeUsage("cpu", container.name)'
  - name: container_memory_working_set_bytes
    dimension: container
    help: "[ALPHA] Current working set of the container in bytes"
    kind: gauge
    labels:
    - { name: container, value: 'container.name' }
    - { name: namespace, value: 'pod.metadata.namespace' }
    - { name: pod, value: 'pod.metadata.name' }
    value: 'pod.Usage("memory", container.name)'
  - name: pod_cpu_usage_seconds_total
    dimension: pod
    help: "[ALPHA] Cumulative cpu time consumed by the pod in core-seconds"
    kind: counter
    labels:
    - { name: namespace, value: 'pod.metadata.namespace' }
    - { name: pod, value: 'pod.metadata.name' }
    value: 'pod.CumulativeUsage("cpu")'
  - name: pod_memory_working_set_bytes
    dimension: pod
    help: "[ALPHA] Current working set of the pod in bytes"
    kind: gauge
    labels:
    - { name: namespace, value: 'pod.metadata.namespace' }
    - { name: pod, value: 'pod.metadata.name' }
    value: 'pod.Usage("memory")'
  - name: node_cpu_usage_seconds_total
    dimension: node
    help: "[ALPHA] Cumulative cpu time consumed by the node in core-seconds"
    kind: counter
    value: 'node.CumulativeUsage("cpu")'
  - name: node_memory_working_set_bytes
    dimension: node
    help: "[ALPHA] Current working set of the node in bytes"
    kind: gauge
    value: 'node.Usage("memory")'
`;
