import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually } from './fakes/wait.ts';
import { EVENT_LOOP_SAMPLE_MS, eventLoopDelay, eventLoopDelayP99, forgetMember, metrics, registry, watchEventTally } from '../../src/metrics.ts';

test('the process metrics are read when scraped, under prom-client\'s default names', async () => {
  const text = await registry.metrics();
  const value = (name: string): number => Number(new RegExp(`^clusterlet_${name} (\\S+)$`, 'm').exec(text)?.[1]);
  assert.ok(value('process_cpu_seconds_total') > 0);
  assert.ok(Math.abs(value('process_start_time_seconds') - (Date.now() / 1000 - process.uptime())) < 2);
  assert.ok(value('process_resident_memory_bytes') > 10e6);
  assert.ok(value('process_open_fds') > 2);
  assert.ok(value('nodejs_heap_size_used_bytes') > 0);
  assert.ok(value('nodejs_heap_size_total_bytes') >= value('nodejs_heap_size_used_bytes'));
  assert.ok(value('nodejs_external_memory_bytes') > 0);
  assert.ok(value('nodejs_eventloop_lag_seconds') >= 0);
  assert.ok(value('nodejs_eventloop_lag_p99_seconds') >= 0, 'the worst of the interval, from libuv\'s delay histogram');
  assert.doesNotMatch(text, /nodejs_gc_duration|eventloop_lag_p50|nodejs_active_handles/);
});

test('the event loop delay p99 is how late libuv\'s timer fired: the interval Node records, less the resolution', () => {
  const hist = (count: number, p99Ms: number) => ({ count, percentile: (p: number) => (p === 99 ? p99Ms * 1e6 : NaN) });
  assert.equal(eventLoopDelayP99(hist(0, 0), 100), 0, 'no sample yet');
  assert.equal(eventLoopDelayP99(hist(50, 100), 100), 0, 'on time');
  assert.equal(eventLoopDelayP99(hist(50, 99.5), 100), 0, 'a timer a little early is not negative delay');
  assert.ok(Math.abs(eventLoopDelayP99(hist(50, 350), 100) - 0.25) < 1e-9);
  assert.ok(Math.abs(eventLoopDelayP99(hist(50, 27), 20) - 0.007) < 1e-9);
});

test('a loop blocked for 300 ms shows in the event loop delay p99 of the next scrape', async () => {
  const p99 = async (): Promise<number> =>
    Number(/^clusterlet_nodejs_eventloop_lag_p99_seconds (\S+)$/m.exec(await registry.metrics())?.[1]);
  /** Until the histogram has recorded more than `n` samples (a firing of its timer). */
  const sampled = (n: number): Promise<void> => eventually('an event loop delay sample', () => eventLoopDelay.count > n);
  await p99(); // a scrape resets the histogram, and it records from its second firing on
  await sampled(0);
  const before = eventLoopDelay.count;
  const t0 = performance.now();
  while (performance.now() - t0 < 300) { /* busy */ }
  await sampled(before);
  const lag = await p99();
  assert.ok(lag >= 0.3 - EVENT_LOOP_SAMPLE_MS / 1000 && lag < 1, `p99 ${lag} s after a 300 ms block`);
});

test('forgetMember drops every series of that member (by member, and its API client\'s by cluster) and no other\'s', async () => {
  for (const m of ['gone', 'kept']) {
    metrics.memberReady.set({ member: m }, 1);
    metrics.podSyncs.inc({ member: m, result: 'created' });
    metrics.statusMirror.observe({ member: m }, 0.2);
    metrics.apiRequests.inc({ cluster: m, verb: 'get' });
    metrics.leaderChanges.inc({ member: m, change: 'acquired' });
    watchEventTally(m, 'pods').MODIFIED += 2;
  }
  metrics.apiRequests.inc({ cluster: 'host', verb: 'get' });
  await forgetMember('gone');
  const text = await registry.metrics();
  assert.doesNotMatch(text, /(member|cluster)="gone"/);
  for (const series of ['clusterlet_member_ready{member="kept"} 1', 'clusterlet_pod_syncs_total{member="kept",result="created"} 1',
    'clusterlet_status_mirror_seconds_count{member="kept"} 1', 'clusterlet_api_requests_total{cluster="kept",verb="get"} 1',
    'clusterlet_api_requests_total{cluster="host",verb="get"} 1', 'clusterlet_leader_changes_total{member="kept",change="acquired"} 1',
    'clusterlet_watch_events_total{cluster="kept",resource="pods",type="modified"} 2']) {
    assert.ok(text.includes(series), series);
  }
  await forgetMember('kept');
});
