import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forgetMember, metrics, registry, watchEventTally } from '../../src/metrics.ts';

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
