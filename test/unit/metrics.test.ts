import { test } from 'node:test';
import assert from 'node:assert/strict';
import { registry } from '../../src/metrics.ts';

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
