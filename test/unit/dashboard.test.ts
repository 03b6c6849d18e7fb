// The Grafana dashboard (charts/clusterlet/dashboards/clusterlet.json) asks only for what clusterlet serves: every
// PromQL expression parses, and every metric and label it uses is in /metrics as the health server serves it, so
// renaming a metric or a label fails here. It also covers what an operator watches (the list).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startHealthServer } from '../../src/health.ts';
import {
  dashboardProblems, dashboardQueries, exposedSeries, loadDashboard, queriedMetrics, registryLabels, type Family,
} from '../support/dashboard.ts';
import { parsePromQL } from '../support/promql.ts';

describe('dashboard', () => {
  let server: Server;
  let series: Map<string, Family>;
  before(async () => {
    server = await startHealthServer(0, []);
    const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`);
    assert.equal(res.status, 200);
    series = exposedSeries(await res.text(), registryLabels);
  });
  after(() => { server.close(); });

  it('every query parses, and every metric and label it uses is in /metrics', () => {
    const queries = dashboardQueries();
    assert.ok(queries.length >= 20, `${queries.length} queries`);
    assert.deepEqual(dashboardProblems(queries, series), []);
  });

  it('a renamed metric or label, or a query that is not PromQL, is caught', () => {
    const renamed = new Map(series);
    renamed.delete('clusterlet_member_ready');
    const q = [{ where: 'p', expr: 'sum by (member) (clusterlet_member_ready{job=~"$job"})' }];
    assert.deepEqual(dashboardProblems(q, series), []);
    assert.deepEqual(dashboardProblems(q, renamed), ['p: metric clusterlet_member_ready is not in /metrics']);
    assert.deepEqual(dashboardProblems([{ where: 'p', expr: 'clusterlet_member_ready{membre="a"}' }], series),
      ['p: clusterlet_member_ready has no label membre']);
    assert.deepEqual(dashboardProblems([{ where: 'p', expr: 'sum by (queue) (clusterlet_member_ready)' }], series),
      ['p: groups by queue, which none of its series has']);
    // A histogram is queried through its series, never by the family's name.
    assert.match(dashboardProblems([{ where: 'p', expr: 'rate(clusterlet_sync_duration_seconds[5m])' }], series)[0], /not in \/metrics/);
    assert.match(dashboardProblems([{ where: 'p', expr: 'sum(rate(clusterlet_api_requests_total[5m])' }], series)[0], /expected "," at \d+, found the end/);
  });

  it('covers nodes, readiness, offloaded pods, sync latency, queues and their waits, API errors and rates, reflection, kubelet API, leadership, crashes', () => {
    const used = queriedMetrics(dashboardQueries());
    for (const m of ['clusterlet_member_ready', 'clusterlet_pods_offloaded', 'clusterlet_pod_syncs_total',
      'clusterlet_sync_duration_seconds_bucket', 'clusterlet_queue_wait_seconds_bucket', 'clusterlet_status_mirror_seconds_bucket', 'clusterlet_queue_depth',
      'clusterlet_api_errors_total', 'clusterlet_api_requests_total', 'clusterlet_api_request_duration_seconds_bucket',
      'clusterlet_objects_reflected', 'clusterlet_reflection_errors_total', 'clusterlet_kubelet_api_requests_total',
      'clusterlet_kubelet_api_streams', 'clusterlet_leader', 'clusterlet_replicas', 'clusterlet_crashes_total']) {
      assert.ok(used.has(m), `the dashboard queries ${m}`);
    }
  });

  it('its data source and variables are templated, so it imports into any Grafana', () => {
    const d = loadDashboard() as unknown as { uid: string; templating: { list: { name: string; type: string }[] } };
    assert.equal(d.uid, 'clusterlet');
    assert.deepEqual(d.templating.list.map((v) => [v.name, v.type]), [['datasource', 'datasource'], ['job', 'query'], ['member', 'query']]);
    const text = JSON.stringify(loadDashboard());
    const uids = new Set([...text.matchAll(/"uid":"([^"]*)"/g)].map((m) => m[1]));
    assert.deepEqual([...uids].sort(), ['${datasource}', 'clusterlet']);
  });
});

describe('PromQL parser', () => {
  it('reads selectors, groupings, functions, operators, subqueries and Grafana intervals', () => {
    const p = parsePromQL('histogram_quantile(0.99, sum by (le, queue) (rate(a_bucket{job=~"$job"}[$__rate_interval])))'
      + ' / on (queue) group_left max without (x) (b offset 5m) > bool 1 or -c[1h:5m] @ end() unless {__name__="d", e!="f"}');
    assert.deepEqual(p.selectors, [{ metric: 'a_bucket', labels: ['job'] }, { metric: 'b', labels: [] },
      { metric: 'c', labels: [] }, { metric: 'd', labels: ['e'] }]);
    assert.deepEqual(p.groupings.map((g) => [g.labels, g.selectors.map((s) => s.metric)]), [[['le', 'queue'], ['a_bucket']], [['x'], ['b']]]);
  });
  it('refuses what is not PromQL', () => {
    for (const bad of ['sum(', 'rate(x[5m]', 'x{a="b"', 'x{a=b}', 'nofunc(x)', 'x +', '5m', 'x y', 'x{a=~"b"', 'sum by (a b) (x)']) {
      assert.throws(() => parsePromQL(bad), Error, bad);
    }
  });
});
