// Prometheus metrics of the process, served at /metrics on the health port.
import { readdirSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { HotCounter, HotHistogram } from './util/series.ts';

export const registry = new Registry();

/**
 * How often libuv's delay histogram samples the event loop. Each sample is a timer that wakes the process, a large part
 * of an idle clusterlet's CPU at a fine resolution (measured in docs/performance.md, "Event loop sampling"). A delay is sampled at
 * any resolution (how late the timer fires); a coarser one samples it less often.
 */
export const EVENT_LOOP_SAMPLE_MS = 100;

/** libuv's delay histogram behind clusterlet_nodejs_eventloop_lag_p99_seconds, reset at each scrape. */
export const eventLoopDelay: ReturnType<typeof monitorEventLoopDelay> = monitorEventLoopDelay({ resolution: EVENT_LOOP_SAMPLE_MS });

/**
 * The 99th percentile of the event loop's delay, in seconds, from libuv's histogram sampling every `resolutionMs`:
 * how late its timer fired. Node records the whole interval between two firings, the resolution in it, so that is
 * taken off. 0 without a sample.
 */
export function eventLoopDelayP99(h: { readonly count: number; percentile(p: number): number }, resolutionMs: number): number {
  if (!h.count) return 0;
  return Math.max(0, h.percentile(99) / 1e9 - resolutionMs / 1000);
}

/**
 * The process's own metrics, read when scraped, under prom-client's default names (prefixed). Not prom-client's
 * default set: its event-loop delay monitor (a timer every 10 ms and a histogram) and GC observer run all the
 * time, and it reads /proc several times per scrape.
 */
function processMetrics(): void {
  const registers = [registry];
  let cpu = { user: 0, system: 0 };
  new Counter({
    name: 'clusterlet_process_cpu_seconds_total', help: 'Total user and system CPU time spent in seconds.', registers,
    collect() {
      const now = process.cpuUsage();
      this.inc((now.user - cpu.user + now.system - cpu.system) / 1e6);
      cpu = now;
    },
  });
  new Gauge({ name: 'clusterlet_process_start_time_seconds', help: 'Start time of the process since unix epoch in seconds.', registers })
    .set(Math.round(Date.now() / 1000 - process.uptime()));
  new Gauge({
    name: 'clusterlet_process_open_fds', help: 'Number of open file descriptors.', registers,
    collect() { this.set(readdirSync('/proc/self/fd').length - 1); },
  });
  const memory: [string, string, (m: NodeJS.MemoryUsage) => number][] = [
    ['process_resident_memory_bytes', 'Resident memory size in bytes.', (m) => m.rss],
    ['nodejs_heap_size_total_bytes', 'Process heap size from Node.js in bytes.', (m) => m.heapTotal],
    ['nodejs_heap_size_used_bytes', 'Process heap size used from Node.js in bytes.', (m) => m.heapUsed],
    ['nodejs_external_memory_bytes', 'Node.js external memory size in bytes.', (m) => m.external],
  ];
  for (const [name, help, read] of memory) {
    new Gauge({ name: `clusterlet_${name}`, help, registers, collect() { this.set(read(process.memoryUsage())); } });
  }
  new Gauge({
    name: 'clusterlet_nodejs_eventloop_lag_seconds', help: 'Lag of event loop in seconds.', registers,
    collect() {
      const start = process.hrtime.bigint();
      return new Promise<void>((resolve) => setImmediate(() => { this.set(Number(process.hrtime.bigint() - start) / 1e9); resolve(); }));
    },
  });
  // The lag at scrape is one sample; the worst of the interval is what an operator needs to see (a loop busy for
  // seconds at scale): libuv's delay histogram (a native timer, no JS work), its p99 reset each scrape.
  eventLoopDelay.enable();
  new Gauge({
    name: 'clusterlet_nodejs_eventloop_lag_p99_seconds', help: 'The 99th percentile of event loop delay since the last scrape, in seconds.', registers,
    collect() { this.set(eventLoopDelayP99(eventLoopDelay, EVENT_LOOP_SAMPLE_MS)); eventLoopDelay.reset(); },
  });
}

processMetrics();

/** The work queues that run (workqueue.ts): their depths are read when /metrics is scraped, not written at every change. */
export const queueDepths = new Set<{ readonly name: string; readonly depth: number }>();

/** The kinds of watch event counted (bookmarks and errors are not changes of an object). */
export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';
export type WatchEventTally = Record<WatchEventType, number>;

/**
 * Watch events received, by `cluster/resource`: counted by listwatch.ts with a plain increment (there is one for every
 * change of every watched object) and added to the counter when /metrics is scraped.
 */
const watchEventCounts = new Map<string, { cluster: string; resource: string; tally: WatchEventTally }>();

/** The tally of watch events of one cluster and resource, by type (shared by every watch of them). */
export function watchEventTally(cluster: string, resource: string): WatchEventTally {
  const key = `${cluster}/${resource}`;
  let t = watchEventCounts.get(key);
  if (!t) watchEventCounts.set(key, t = { cluster, resource, tally: { ADDED: 0, MODIFIED: 0, DELETED: 0 } });
  return t.tally;
}

/**
 * What clusterlet_pods_offloaded reads when scraped: each running pod controller's count of delegates (its member's,
 * summed over the member's virtual nodes), by the controller's count function (set on every sync, the gauge was
 * 0.35 % of clusterlet's busy CPU samples at 1,000 pods). A stopped controller takes its count out; its series keeps
 * the value last read until forgetMember drops it, as it kept the last one set before.
 */
export const offloadedPods = new Map<() => number, string>();

// The counters and histograms written for every request, queued key or status write are util/series.ts's (HotCounter,
// HotHistogram): the same series and text as prom-client's, at a fraction of its cost per call.
export const metrics = {
  watchEvents: new Counter({
    name: 'clusterlet_watch_events_total', help: 'Watch events received, by cluster, resource and type (added, modified, deleted).',
    labelNames: ['cluster', 'resource', 'type'] as const, registers: [registry],
    collect() {
      for (const { cluster, resource, tally } of watchEventCounts.values()) {
        for (const type of ['ADDED', 'MODIFIED', 'DELETED'] as const) {
          if (tally[type] > 0) this.inc({ cluster, resource, type: type.toLowerCase() }, tally[type]);
          tally[type] = 0;
        }
      }
    },
  }),
  apiRequests: new HotCounter({
    name: 'clusterlet_api_requests_total', help: 'API requests made, by cluster and verb.',
    labelNames: ['cluster', 'verb'] as const, registers: [registry],
  }),
  apiErrors: new HotCounter({
    name: 'clusterlet_api_errors_total', help: 'API responses with an error status, by cluster and HTTP code.',
    labelNames: ['cluster', 'code'] as const, registers: [registry],
  }),
  watchRestarts: new Counter({
    name: 'clusterlet_watch_restarts_total', help: 'Watch restarts, by cluster, resource and reason.',
    labelNames: ['cluster', 'resource', 'reason'] as const, registers: [registry],
  }),
  podsOffloaded: new Gauge({
    name: 'clusterlet_pods_offloaded', help: 'Proxy pods with a delegate, by member.',
    labelNames: ['member'] as const, registers: [registry],
    collect() {
      const sums = new Map<string, number>();
      for (const [count, member] of offloadedPods) sums.set(member, (sums.get(member) ?? 0) + count());
      for (const [member, n] of sums) this.set({ member }, n);
    },
  }),
  mirroredEvents: new HotCounter({
    name: 'clusterlet_mirrored_events_total',
    help: 'Member events about delegates, by member and what became of them: written onto the proxy, skipped (the proxy was gone by then), or failed.',
    labelNames: ['member', 'result'] as const, registers: [registry],
  }),
  podSyncs: new HotCounter({
    name: 'clusterlet_pod_syncs_total', help: 'Pod syncs, by member and result.',
    labelNames: ['member', 'result'] as const, registers: [registry],
  }),
  syncLatency: new HotHistogram({
    name: 'clusterlet_sync_duration_seconds', help: 'Time to handle one queued key, by queue.',
    labelNames: ['queue'] as const, registers: [registry],
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  }),
  queueWait: new HotHistogram({
    name: 'clusterlet_queue_wait_seconds',
    help: 'How long a key waited in a work queue before a worker took it (client-go\'s workqueue_queue_duration_seconds), by queue and the priority it ran at.',
    labelNames: ['queue', 'priority'] as const, registers: [registry],
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  }),
  statusMirror: new HotHistogram({
    name: 'clusterlet_status_mirror_seconds',
    help: 'From the latest delegate status change seen in the member to the proxy status written to the host, by member.',
    labelNames: ['member'] as const, registers: [registry],
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  }),
  apiLatency: new HotHistogram({
    name: 'clusterlet_api_request_duration_seconds', help: 'API request latency (not watches), by cluster and verb.',
    labelNames: ['cluster', 'verb'] as const, registers: [registry],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  }),
  connectionWait: new HotHistogram({
    name: 'clusterlet_api_connection_wait_seconds',
    help: 'How long an API request waited for a free connection (all of its cluster\'s pool busy), by cluster and priority: only requests that waited.',
    labelNames: ['cluster', 'priority'] as const, registers: [registry],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  }),
  queueDepth: new Gauge({
    name: 'clusterlet_queue_depth', help: 'Keys waiting in a work queue.',
    labelNames: ['queue'] as const, registers: [registry],
    collect() {
      const sums = new Map<string, number>();
      for (const q of queueDepths) sums.set(q.name, (sums.get(q.name) ?? 0) + q.depth);
      for (const [queue, depth] of sums) this.set({ queue }, depth);
    },
  }),
  kubeletApiRequests: new Counter({
    name: 'clusterlet_kubelet_api_requests_total', help: 'Kubelet API requests served, by endpoint and HTTP code (101: upgraded).',
    labelNames: ['endpoint', 'code'] as const, registers: [registry],
  }),
  kubeletApiStreams: new Gauge({
    name: 'clusterlet_kubelet_api_streams',
    help: 'Kubelet API streaming sessions open (exec, attach, portForward), by endpoint and transport (spdy, websocket): '
      + 'from the upgrade until both the caller\'s connection and the one to the member have closed.',
    labelNames: ['endpoint', 'transport'] as const, registers: [registry],
  }),
  idleCollection: new Histogram({
    name: 'clusterlet_idle_collection_seconds',
    help: 'Full, compacting collections made once the process went quiet after its heap grew (src/idlecollect.ts): how long each paused it.',
    registers: [registry], buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
  }),
  crashes: new Counter({
    name: 'clusterlet_crashes_total', help: 'Unhandled rejections and uncaught exceptions, each logged before exit 1, by kind.',
    labelNames: ['kind'] as const, registers: [registry],
  }),
  objectsReflected: new Gauge({
    name: 'clusterlet_objects_reflected',
    help: 'Objects a reflector keeps written, by member, kind and direction (to-member: copies of host objects; to-host: exports).',
    labelNames: ['member', 'kind', 'direction'] as const, registers: [registry],
  }),
  reflectionErrors: new Counter({
    name: 'clusterlet_reflection_errors_total', help: 'Reflection syncs that failed (each is retried), by member, kind and direction.',
    labelNames: ['member', 'kind', 'direction'] as const, registers: [registry],
  }),
  leader: new Gauge({
    name: 'clusterlet_leader', help: '1 while this replica leads the member (writes its node, pods and copies).',
    labelNames: ['member'] as const, registers: [registry],
  }),
  leaderChanges: new Counter({
    name: 'clusterlet_leader_changes_total',
    help: 'Leadership changes of this replica by member: acquired, lost (taken or not renewed in time) or released.',
    labelNames: ['member', 'change'] as const, registers: [registry],
  }),
  fencedWrites: new Counter({
    name: 'clusterlet_fenced_writes_total',
    help: 'Writes not sent because this replica could not be sure it still led the member they were for, by cluster.',
    labelNames: ['cluster'] as const, registers: [registry],
  }),
  replicas: new Gauge({
    name: 'clusterlet_replicas', help: 'Live clusterlet replicas this replica sees (its own included).', registers: [registry],
  }),
  volumesProvisioned: new Counter({
    name: 'clusterlet_volumes_provisioned_total',
    help: 'Host volumes provisioned for claims of a member\'s storage class (their member claim made and bound), by member.',
    labelNames: ['member'] as const, registers: [registry],
  }),
  volumeFailures: new Counter({
    name: 'clusterlet_volume_failures_total',
    help: 'Volume operations the member refused or that failed (each is retried or shown on the claim), by member and operation (provision, expand, delete).',
    labelNames: ['member', 'operation'] as const, registers: [registry],
  }),
  memberReady: new Gauge({
    name: 'clusterlet_member_ready', help: '1 when the member answers and has a Ready node.',
    labelNames: ['member'] as const, registers: [registry],
  }),
};

/**
 * Drops every series of a member gone for good (its ClusterProfile deleted): those labelled with it as `member`, and
 * its API client's, labelled with it as `cluster`. Left behind, they would show it as it last was (ready, leading,
 * with pods) until the process restarts. Its queues' series go when they shut down (util/workqueue.ts).
 */
export async function forgetMember(name: string): Promise<void> {
  type Labels = Record<string, string | number>;
  for (const [key, t] of watchEventCounts) if (t.cluster === name) watchEventCounts.delete(key);
  for (const metric of Object.values(metrics) as unknown as { labelNames: readonly string[]; remove(l: Labels): void;
    get(): Promise<{ values: { labels: Labels }[] }> }[]) {
    const label = metric.labelNames.includes('member') ? 'member' : metric.labelNames.includes('cluster') ? 'cluster' : undefined;
    if (!label) continue;
    for (const { labels } of (await metric.get()).values) {
      if (labels[label] !== name) continue;
      const { le: _bucket, ...series } = labels; // a histogram's bucket label is not one of the metric's own
      metric.remove(series);
    }
  }
}
