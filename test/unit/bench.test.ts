import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connectionWaitOf, countsBetween, queuePriorities, queueWaitBuckets, runsPerPod, cpuPerApiServer, deltas, parseScrape, pLine, statTicks, threadKind, v8Share, restartsLine, histogramQuantile, median, modeOrder, pairMax, pairRatios, percentile, rssKB, summarize,
  toMarkdown, waitLine, type OffloadedRun, type RunResult, type Scrape } from '../../bench/bench.ts';
import type { V1Node } from '@kubernetes/client-node';
import { memberNames } from '../../bench/members.ts';
import { leaseAge, leaseAges, manyMemberNodes, NodeWriteCounter, nodeChanges, nodeMemberNames, nodesMarkdown, nodeWriteKind, requestsPerMinute,
  spreadDeployment } from '../../bench/nodes.ts';

const h = (pairs: [number, number][]): Map<number, number> => new Map(pairs);

describe('histogramQuantile', () => {
  it('interpolates within the bucket holding the rank, over what was observed between the scrapes', () => {
    const before = h([[0.1, 10], [0.5, 10], [1, 10], [Infinity, 10]]);
    const after = h([[0.1, 10], [0.5, 30], [1, 110], [Infinity, 110]]);
    // 100 new observations: 20 in (0.1, 0.5], 80 in (0.5, 1]. The median (rank 50) is 30/80 into the third bucket.
    assert.equal(histogramQuantile(before, after, 0.5), (0.5 + 0.5 * (30 / 80)) * 1000);
    assert.equal(histogramQuantile(before, after, 0.1), (0.1 + 0.4 * (10 / 20)) * 1000);
  });

  it('answers the last finite bound for ranks in +Inf, and nothing when nothing was observed', () => {
    assert.equal(histogramQuantile(undefined, h([[1, 1], [Infinity, 10]]), 0.99), 1000);
    assert.equal(histogramQuantile(h([[1, 3], [Infinity, 3]]), h([[1, 3], [Infinity, 3]]), 0.5), undefined);
    assert.equal(histogramQuantile(undefined, undefined, 0.5), undefined);
  });
});

describe('watch restarts', () => {
  it('are what each counter rose by during the run, by cluster, resource and reason; a line says none without any', () => {
    const text = (silent: number, gone: number): string => [
      `clusterlet_watch_restarts_total{cluster="host",resource="pods",reason="silent"} ${silent}`,
      `clusterlet_watch_restarts_total{cluster="member",resource="pods",reason="gone"} ${gone}`,
    ].join('\n');
    const r = countsBetween(parseScrape(text(2, 1)).watchRestarts, parseScrape(text(5, 1)).watchRestarts);
    assert.deepEqual(r, { 'host pods silent': 3 });
    assert.equal(restartsLine(r), 'host pods silent 3');
    assert.equal(restartsLine({}), 'none');
    assert.equal(restartsLine(undefined), 'none');
  });

  it('a progress line gives p50 and p99 in whole ms, – for one missing', () => {
    assert.equal(pLine({ p50: 12.4, p99: 340.6 }), 'p50 12 ms, p99 341 ms');
    assert.equal(pLine({ p50: 3 }), 'p50 3 ms, p99 – ms');
    assert.equal(pLine(undefined), 'p50 – ms, p99 – ms');
  });
});

describe("clusterlet's CPU by thread", () => {
  it('reads a thread name and its ticks from a /proc stat line, a name with spaces and parentheses included', () => {
    const rest = 'S 1 2 3 4 5 6 7 8 9 10 625 110 0 0 20 0 11';
    assert.deepEqual(statTicks(`18139 (MainThread) ${rest}`), { comm: 'MainThread', ticks: 735 });
    assert.deepEqual(statTicks(`18140 (a (b) c) ${rest}`), { comm: 'a (b) c', ticks: 735 });
  });

  it("sorts node's threads by what they do", () => {
    assert.deepEqual(['MainThread', 'node', 'V8Worker', 'DelayedTaskSche', 'libuv-worker', 'SignalInspector'].map(threadKind),
      ['main', 'main', 'v8', 'v8', 'libuv', 'other']);
  });

  it("gives V8's helpers' share of the run's CPU", () => {
    assert.equal(v8Share({ main: 8.5, v8: 1.5, libuv: 0, other: 0 }), 0.15);
    assert.equal(v8Share(undefined), undefined);
    assert.equal(v8Share({ main: 0, v8: 0, libuv: 0, other: 0 }), undefined, 'no CPU, no share');
  });
});

describe('parseScrape', () => {
  it("reads clusterlet's event loop delay p99 (a series without labels), and the queue waits' buckets", () => {
    const s = parseScrape([
      '# TYPE clusterlet_nodejs_eventloop_lag_p99_seconds gauge',
      'clusterlet_nodejs_eventloop_lag_p99_seconds 0.04',
      'clusterlet_queue_wait_seconds_bucket{le="0.1",queue="pods-n"} 3',
      'clusterlet_queue_wait_seconds_bucket{le="+Inf",queue="pods-n"} 4',
    ].join('\n'));
    assert.equal(s.loopDelayP99Seconds, 0.04);
    assert.deepEqual([...s.buckets.get('clusterlet_queue_wait_seconds{queue=pods-n}') ?? []], [[0.1, 3], [Infinity, 4]]);
    assert.equal(parseScrape('').loopDelayP99Seconds, undefined);
  });

  it('counts the runs of a queue between two scrapes, per pod: its waits\' +Inf bucket, every priority', () => {
    const at = (n: number) => parseScrape(`clusterlet_queue_wait_seconds_bucket{le="0.1",queue="pods-n"} ${n - 1}\n`
      + `clusterlet_queue_wait_seconds_bucket{le="+Inf",queue="pods-n"} ${n}`);
    assert.equal(runsPerPod(at(4), at(1004), 'pods-n', 400), 2.5);
    assert.equal(runsPerPod(parseScrape(''), at(3), 'pods-n', 3), 1, 'none before: from 0');
    const lanes = parseScrape([
      'clusterlet_queue_wait_seconds_bucket{le="1",queue="st",priority="visible"} 8',
      'clusterlet_queue_wait_seconds_bucket{le="+Inf",queue="st",priority="visible"} 10',
      'clusterlet_queue_wait_seconds_bucket{le="1",queue="st",priority="change"} 1',
      'clusterlet_queue_wait_seconds_bucket{le="+Inf",queue="st",priority="change"} 5',
      'clusterlet_queue_wait_seconds_bucket{le="+Inf",queue="other",priority="0"} 7',
    ].join('\n'));
    assert.equal(runsPerPod(parseScrape(''), lanes, 'st', 5), 3);
    assert.deepEqual([...queueWaitBuckets(lanes, 'st') ?? []], [[1, 9], [Infinity, 15]]);
    assert.deepEqual([...queueWaitBuckets(lanes, 'st', 'change') ?? []], [[1, 1], [Infinity, 5]]);
    assert.deepEqual(queuePriorities(lanes, 'st'), ['visible', 'change']);
  });
});

describe('connectionWaitOf', () => {
  const scrape = (requests: [string, number][], waits?: [number, number][]): Scrape => ({
    requests: new Map(requests), watchEvents: new Map(), mirroredEvents: new Map(), watchRestarts: new Map(),
    buckets: new Map(waits ? [['clusterlet_api_connection_wait_seconds{cluster=host,priority=normal}', h(waits)]] : []),
  });
  it("is the share of the cluster's requests (watches aside) that waited between the scrapes, with their wait's quantiles", () => {
    const before = scrape([['host/patch', 100], ['host/watch', 5], ['member/create', 50]], [[0.1, 4], [1, 4], [Infinity, 4]]);
    const after = scrape([['host/patch', 300], ['host/create', 100], ['host/watch', 50], ['member/create', 500]],
      [[0.1, 34], [1, 64], [Infinity, 64]]);
    // 300 host requests (not the watches), 60 of them waited: 30 up to 0.1 s and 30 in (0.1, 1].
    const w = connectionWaitOf(before, after, 'host');
    assert.equal(w.share, 0.2);
    assert.equal(w.p50, 100);
    assert.equal(w.p99, (0.1 + 0.9 * (29.4 / 30)) * 1000);
    assert.deepEqual(connectionWaitOf(before, after, 'member'), { share: 0, p50: undefined, p99: undefined });
  });
  it('sums the waits of every priority, and counts each priority\'s', () => {
    const text = (high: number, low: number): string => [
      `clusterlet_api_connection_wait_seconds_bucket{le="0.1",cluster="host",priority="high"} ${high}`,
      `clusterlet_api_connection_wait_seconds_bucket{le="+Inf",cluster="host",priority="high"} ${high}`,
      `clusterlet_api_connection_wait_seconds_bucket{le="0.1",cluster="host",priority="low"} 0`,
      `clusterlet_api_connection_wait_seconds_bucket{le="+Inf",cluster="host",priority="low"} ${low}`,
      'clusterlet_api_requests_total{cluster="host",verb="patch"} ' + String(10 * (high + low)),
    ].join('\n');
    const w = connectionWaitOf(parseScrape(text(1, 2)), parseScrape(text(3, 10)), 'host');
    // 100 requests between the scrapes, 10 waited: 2 high (at most 0.1 s), 8 low (longer).
    assert.equal(w.share, 0.1);
    assert.deepEqual(w.byPriority, { high: 2, low: 8 });
    assert.equal(w.p50, 100, 'in the open-ended bucket: its lower bound, as histogram_quantile');
    assert.equal(waitLine({ host: { share: 0.1, p50: 50, p99: 900, byPriority: { high: 2, low: 8 } } }), 'host 10% (p50 50 / p99 900 ms; high 2, low 8)');
  });
  it('reads as a line: the share in percent, and the quantiles when any waited', () => {
    assert.equal(waitLine({ host: { share: 0.125, p50: 30.4, p99: 240 }, member: { share: 0 } }), 'host 12.5% (p50 30 / p99 240 ms), member 0%');
    assert.equal(waitLine(undefined), '–');
  });
});

describe('percentile', () => {
  it('is the nearest rank', () => {
    assert.equal(percentile([5, 1, 4, 2, 3], 50), 3);
    assert.equal(percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 99), 10);
    assert.equal(percentile([], 50), 0);
  });
});

describe('median', () => {
  it('is the middle value, or the mean of the two middle ones', () => {
    assert.equal(median([3, 1, 2]), 2);
    assert.equal(median([1.9, 1.47]), 1.685);
    assert.equal(median([]), 0);
  });
});

describe('rssKB', () => {
  it("reads a process's VmRSS and its anonymous and file parts, and nothing once it is gone", () => {
    const r = rssKB(process.pid)!;
    assert.ok(r.total > 0 && r.anon > 0 && r.file > 0, JSON.stringify(r));
    assert.ok(r.anon + r.file <= r.total, 'the parts are within the total');
    assert.equal(rssKB(2 ** 22 + 1), undefined, 'above pid_max: no such process');
  });
});

describe('modeOrder', () => {
  it('rotates the three modes each pair, so each runs first, second and third once in three pairs', () => {
    assert.deepEqual(modeOrder(1), ['direct', 'offloaded', 'hostOnly']);
    assert.deepEqual(modeOrder(2), ['offloaded', 'hostOnly', 'direct']);
    assert.deepEqual(modeOrder(3), ['hostOnly', 'direct', 'offloaded']);
    assert.deepEqual(modeOrder(4), modeOrder(1));
  });
});

describe('deltas', () => {
  it('is the time from one map to the other for the keys in both', () => {
    const bound = new Map([['ns/a', 100], ['ns/b', 150], ['ns/c', 200]]);
    const created = new Map([['ns/a', 130], ['ns/c', 450], ['ns/d', 500]]);
    assert.deepEqual(deltas(bound, created), [30, 250]);
  });
});

describe('pairRatios and pairMax', () => {
  it('divide and compare pair by pair, only the pairs both sides have', () => {
    const offloaded = new Map([[1, 30], [2, 20], [3, 50]]);
    const direct = new Map([[1, 10], [2, 16]]);
    const hostOnly = new Map([[1, 15], [2, 8], [3, 25]]);
    assert.deepEqual(pairRatios(offloaded, direct), [3, 1.25]);
    assert.deepEqual([...pairMax(direct, hostOnly)], [[1, 15], [2, 16]]);
    assert.deepEqual(pairRatios(offloaded, pairMax(direct, hostOnly)), [2, 1.25]);
  });
});

// A direct run also samples clusterlet, which watches the member's own pods.
const plain = (mode: 'direct' | 'hostOnly', pair: number, readyMs: number, deleteMs: number): RunResult => ({
  mode, n: 100, pair, readyMs, deleteMs, stagesMs: { bound: readyMs / 2, ready: readyMs },
  deleteStagesMs: { terminating: deleteMs / 2, gone: deleteMs },
  ...(mode === 'direct'
    ? { cpuToReady: { etcd: 1, clusterlet: 0.1 * pair, 'member/kube-apiserver': 1 },
      cpuToDeleted: { etcd: deleteMs / 1000, clusterlet: 0.05, 'member/kube-apiserver': 0.5 }, clusterletPeakRssMB: 80 + pair }
    : { cpuToReady: { etcd: 1 }, cpuToDeleted: { etcd: deleteMs / 1000 } }),
});
const offloaded = (pair: number, readyMs: number, deleteMs: number, cpuSeconds: number, boundToDelegate: [number, number]): OffloadedRun => ({
  mode: 'offloaded', n: 100, pair, readyMs, deleteMs, cpuToReady: { etcd: 2, clusterlet: 0.5 }, cpuSeconds,
  deleteStagesMs: { proxiesTerminating: 100, delegatesTerminating: 200, delegatesGone: deleteMs, proxiesGone: deleteMs + 100 },
  cpuToDeleted: { etcd: 1, clusterlet: cpuSeconds }, cpuMsPerPod: (cpuSeconds * 1000) / 100,
  proxyBoundToDelegateMs: { p50: boundToDelegate[0], p99: boundToDelegate[1] }, statusMirrorMs: { p50: 40, p99: 90 },
  queueWaitMs: { lifecycle: { p50: boundToDelegate[0] / 5, p99: boundToDelegate[1] / 5 }, status: { p50: 10 * pair, p99: 30 } },
  loopDelayP99Ms: 20 * pair,
  cpuByThread: { main: cpuSeconds * 0.75, v8: cpuSeconds * (pair === 3 ? 0.5 : 0.25), libuv: 0, other: 0 },
  addedLatencyMs: { p50: 50, p99: 120, max: 130 }, peakRssMB: 120 + pair, requestsPerPod: { host: { create: 1 } },
  watchEventsPerPod: { host: { pods: 4 + pair, 'pods added': 1, 'pods modified': 2 + pair, 'pods deleted': 1 }, member: { pods: 6, events: 1 } },
  hostWritesPerPod: 3, hostListsDuringRun: 0,
});
// Pair 1: direct 1.0 s, host-only 1.5 s, offloaded 3.0 s; pair 2: direct 2.0 s, host-only 1.0 s, offloaded 3.0 s;
// pair 3 has its offloaded run only (a bench stopped there).
const runs: (RunResult | OffloadedRun)[] = [
  plain('direct', 1, 1000, 400), offloaded(1, 3000, 800, 0.3, [20, 150]), plain('hostOnly', 1, 1500, 500),
  offloaded(2, 3000, 500, 0.5, [30, 250]), plain('hostOnly', 2, 1000, 300), plain('direct', 2, 2000, 500),
  offloaded(3, 4000, 900, 0.4, [25, 200]),
];

describe('summarize', () => {
  const [s] = summarize(runs, [100]);

  it('reads offloaded against direct and against max(host-only, direct), pair by pair', () => {
    assert.equal(s.directMedianMs, 1500);
    assert.equal(s.hostOnlyMedianMs, 1250);
    assert.equal(s.offloadedMedianMs, 3000);
    assert.deepEqual(s.ratios, [3, 1.5]);
    assert.equal(s.ratioMedian, 2.25);
    assert.deepEqual(s.floorRatios, [2, 1.5]);
    assert.equal(s.floorRatioMedian, 1.75);
  });

  it("gives clusterlet's CPU-ms per pod per run and its median", () => {
    assert.deepEqual(s.cpuMsPerPod, [3, 5, 4]);
    assert.equal(s.cpuMsPerPodMedian, 4);
  });

  it("gives clusterlet's CPU over the API servers' per run that has it, and its median; none for runs without", () => {
    assert.deepEqual(s.cpuPerApiServer, []);
    assert.equal(s.cpuPerApiServerMedian, undefined);
    const ratios = [0.14, 0.1, 0.12];
    const withApi = runs.map((r) => (r.mode === 'offloaded' ? { ...r, cpuPerApiServer: ratios.shift() } : r));
    const [t] = summarize(withApi, [100]);
    assert.deepEqual(t.cpuPerApiServer, [0.14, 0.1, 0.12]);
    assert.equal(t.cpuPerApiServerMedian, 0.12);
    const machine = { cores: 2, cpu: 'x', memoryGiB: 24, kernel: 'k', node: 'v24', kubernetes: 'v1.36' };
    assert.match(toMarkdown({ machine, startedAt: 'x', idleRss: { medianMB: 1, samplesMB: [1] }, runs: withApi, summary: [t] }),
      /^\| 100 \| 0\.14, 0\.1, 0\.12 \(median 0\.12\) \| 0\.25, 0\.25, 0\.4 \(median 0\.25\) \|$/m);
  });

  it("gives the share of clusterlet's CPU on V8's helper threads per pair, and its median", () => {
    assert.deepEqual(s.v8ThreadShare, [0.25, 0.25, 0.4]);
    assert.equal(s.v8ThreadShareMedian, 0.25);
    const [t] = summarize(runs.map((r) => (r.mode === 'offloaded' ? { ...r, cpuByThread: undefined } : r)), [100]);
    assert.equal(t.v8ThreadShare, undefined, 'none without threads');
  });

  it("cpuPerApiServer: clusterlet's CPU to Ready and to deleted over both kube-apiservers' in the same spans", () => {
    assert.equal(cpuPerApiServer({ clusterlet: 2, 'host/kube-apiserver': 10, 'member/kube-apiserver': 6, etcd: 5 },
      { clusterlet: 1, 'host/kube-apiserver': 9, 'member/kube-apiserver': 5 }), 0.1);
    assert.equal(cpuPerApiServer({ clusterlet: 2, etcd: 5 }, undefined), undefined, 'no API server sampled');
  });

  it('gives the delete time of each mode and offloaded against direct per pair', () => {
    assert.equal(s.deleteDirectMedianMs, 450);
    assert.equal(s.deleteHostOnlyMedianMs, 400);
    assert.equal(s.deleteOffloadedMedianMs, 800);
    assert.deepEqual(s.deleteRatios, [2, 1]);
    assert.equal(s.deleteRatioMedian, 1.5);
  });

  it('gives the stages of the deletion and the CPU it took, per mode', () => {
    assert.deepEqual(s.deleteStagesDirectMs, { terminating: 225, gone: 450 });
    assert.deepEqual(s.deleteStagesOffloadedMs, { proxiesTerminating: 100, delegatesTerminating: 200, delegatesGone: 800, proxiesGone: 900 });
    assert.equal(s.cpuToDeletedHostOnly, 0.4);
    assert.equal(s.cpuToDeletedOffloaded, 1.4);
    assert.equal(s.cpuToDeletedClusterlet, 0.4);
  });

  it("gives clusterlet's cost while the member ran pods of its own (direct)", () => {
    assert.equal(s.directClusterletPeakRssMB, 82);
    assert.equal(s.directClusterletCpuMsPerPod, 2);
    assert.equal(s.directClusterletCpuPerMemberApiServer, 0.133, 'median of 0.15 / 1.5 and 0.25 / 1.5');
    assert.equal(summarize(runs.filter((r) => r.mode !== 'direct'), [100])[0].directClusterletPeakRssMB, undefined);
  });

  it("gives clusterlet's own path both ways and the host-only stages", () => {
    assert.equal(s.proxyBoundToDelegateP50Ms, 25);
    assert.equal(s.proxyBoundToDelegateP99Ms, 200);
    assert.equal(s.statusMirrorP99Ms, 90);
    assert.deepEqual([s.lifecycleWaitP50Ms, s.lifecycleWaitP99Ms, s.statusWaitP50Ms, s.statusWaitP99Ms], [5, 40, 20, 30],
      'the queue waits part of each, medians of the pairs');
    assert.equal(s.loopDelayP99Ms, 40, "clusterlet's event loop delay, median of the pairs");
    assert.deepEqual(s.stagesHostOnlyMs, { bound: 625, ready: 1250 });
    assert.equal(s.cpuToReadyHostOnly, 1);
  });
});

describe('toMarkdown', () => {
  const md = toMarkdown({ machine: { cores: 2, cpu: 'x', memoryGiB: 24, kernel: 'k', node: 'v24', kubernetes: 'v1.36' }, startedAt: 'T',
    idleRss: { medianMB: 68.4, samplesMB: [68, 68.4, 69, 68.2, 70] }, afterRss: { medianMB: 71.2, samplesMB: [71.2] },
    runs, summary: summarize(runs, [100]) });

  it('shows the idle RSS, then each table with its row', () => {
    assert.match(md, /Idle RSS .*median of 5 samples.*\*\*68\.4 MB\*\*.*After the runs, every pod gone.*\*\*71\.2 MB\*\*/);
    assert.match(md, /^\| 100 \| 1\.50 s \| 1\.25 s \| 3\.00 s \| 3, 1\.5 \(median 2\.25\) \| 2, 1\.5 \(median 1\.75\) \| 3, 5, 4 \(median 4\) \| 123 MB \|$/m);
    assert.match(md, /^\| 100 \| 0\.45 s \| 0\.40 s \| 0\.80 s \| 2, 1 \(median 1\.5\) \|$/m);
    assert.match(md, /^\| 100 \| 25 \/ 200 ms \| 5 \/ 40 ms \| – \/ – ms \| 40 \/ 90 ms \| 20 \/ 30 ms \| – \/ – ms \| 50 \/ 120 ms \| 40 ms \|$/m);
    assert.match(md, /^\| 100 \| 0\.8 → 1\.5 \| 0\.6 → 1\.3 \| /m);
    assert.match(md, /while the member ran N pods of its own[^]*^\| 100 \| 82 MB \| 2 \| 0.133 \|$/m);
    assert.match(md, /Watch events clusterlet received per pod[^]*^\| 100 \| host \| pods 7 \(added 1, modified 5, deleted 1\) \|$\n^\| 100 \| member \| pods 6, events 1 \|$/m,
      'of the last offloaded run');
    assert.match(md, /^\| 100 \| 0\.2 → 0\.5 \(1\.0\) \| 0\.2 → 0\.4 \(0\.4\) \| 0\.1 → 0\.2 → 0\.8 → 0\.9 \(1\.4, 0\.4\) \|$/m);
  });

  it('shows a mode the bench did not run (--modes) as –, not as 0, and says which it ran', () => {
    const offloadedOnly = runs.filter((r) => r.mode === 'offloaded');
    const only = toMarkdown({ machine: { cores: 2, cpu: 'x', memoryGiB: 24, kernel: 'k', node: 'v24', kubernetes: 'v1.36' }, startedAt: 'T',
      idleRss: { medianMB: 68.4, samplesMB: [68.4] }, runs: offloadedOnly, summary: summarize(offloadedOnly, [100]) });
    assert.match(only, /this bench ran only: offloaded\)/);
    assert.doesNotMatch(only, /After the runs/, 'no after-RSS measured, none shown');
    assert.doesNotMatch(only, /pods of its own/, 'no direct run, no line of it');
    const directOnly = runs.filter((r) => r.mode === 'direct');
    const noOffloaded = toMarkdown({ machine: { cores: 2, cpu: 'x', memoryGiB: 24, kernel: 'k', node: 'v24', kubernetes: 'v1.36' }, startedAt: 'T',
      idleRss: { medianMB: 68.4, samplesMB: [68.4] }, runs: directOnly, summary: summarize(directOnly, [100]) });
    assert.match(noOffloaded, /^\| 100 \| 1\.50 s \| – \| – \| – \| – \| – \| – \|$/m, 'no offloaded run: no peak RSS of one');
    assert.doesNotMatch(md, /this bench ran only/);
    assert.match(only, /^\| 100 \| – \| – \| 3\.00 s \| – \| – \| 3, 5, 4 \(median 4\) \| 123 MB \|$/m);
    assert.match(only, /^\| 100 \| – \| – \| 0\.80 s \| – \|$/m);
    assert.match(only, /^\| 100 \| [\d.]+ \| [\d.]+ \| – \/ – \/ [\d.]+ \([\d.]+\) \|$/m);
  });
});

describe('the many-nodes run (bench/nodes.ts)', () => {
  const node = (o: { labels?: Record<string, string>; taints?: { key: string; effect: string }[]; ready?: string; beat?: string;
    rv?: string; cpu?: string } = {}): V1Node => ({
    metadata: { name: 'clusterlet-n01-n01-n01', resourceVersion: o.rv ?? '1', labels: { type: 'virtual-kubelet', ...o.labels } },
    spec: { taints: o.taints ?? [{ key: 'virtual-kubelet.io/provider', effect: 'NoSchedule' }] },
    status: {
      capacity: { cpu: o.cpu ?? '16' },
      conditions: [{ type: 'Ready', status: o.ready ?? 'True', reason: 'KubeletReady', lastHeartbeatTime: new Date(o.beat ?? '2026-01-01T00:00:00Z'),
        lastTransitionTime: new Date('2026-01-01T00:00:00Z') }],
    },
  });

  it('names members n01, ... and their nodes <member>-n01, ..., no name a prefix of another, the nodes over 3 zones', () => {
    const names = nodeMemberNames(10);
    assert.deepEqual([names[0], names[9]], ['n01', 'n10']);
    for (const a of [...names, ...memberNames(10), 'host', 'member']) {
      for (const b of [...names, ...memberNames(10), 'host', 'member']) if (a !== b) assert.ok(!b.startsWith(a), `${a} starts ${b}`);
    }
    assert.equal(nodeMemberNames(100)[0], 'n001');
    const nodes = manyMemberNodes('n01', 50);
    assert.equal(nodes.length, 50);
    assert.deepEqual([nodes[0]!.name, nodes[49]!.name], ['n01-n01', 'n01-n50']);
    assert.deepEqual(nodes[0]!.capacity, { cpu: '16', memory: '64Gi', pods: '110' });
    assert.deepEqual(new Set(nodes.map((n) => n.labels?.['topology.kubernetes.io/zone'])), new Set(['local-1a', 'local-1b', 'local-1c']));
  });

  it('tells what a write to a node changed, the heartbeat times aside, and of what kind it is', () => {
    const a = node();
    assert.deepEqual(nodeChanges(a, node({ rv: '2', beat: '2026-01-01T00:01:00Z' })), []);
    assert.equal(nodeWriteKind([]), 'refresh');
    const notReady = nodeChanges(a, node({ rv: '2', ready: 'False' }));
    assert.deepEqual(notReady, ['condition Ready']);
    assert.equal(nodeWriteKind(notReady), 'status');
    assert.deepEqual(nodeChanges(a, node({ cpu: '8' })), ['status capacity']);
    const meta = nodeChanges(a, node({ labels: { 'beta.kubernetes.io/os': 'linux' }, taints: [], cpu: '8' }));
    assert.deepEqual(meta, ['label beta.kubernetes.io/os', 'spec taints', 'status capacity']);
    assert.equal(nodeWriteKind(meta), 'metadata');
  });

  it('counts the writes per node per minute, by kind and by change, and Ready → not Ready', () => {
    const c = new NodeWriteCounter();
    const ev = (type: 'ADDED' | 'MODIFIED' | 'DELETED', object: V1Node, old?: V1Node) => ({ type, key: 'x', object, old });
    c.add(ev('MODIFIED', node({ rv: '2', beat: '2026-01-01T00:01:00Z' }), node()));
    c.add(ev('MODIFIED', node({ rv: '3', ready: 'False' }), node()));
    c.add(ev('MODIFIED', node({ rv: '4', labels: { a: 'b' } }), node()));
    c.add(ev('ADDED', node()));
    const r = c.result(2, 120_000, 0);
    assert.deepEqual({ ...r, changes: undefined }, { total: 3, perNodePerMinute: 0.75, maxPerNode: 3, refresh: 1, status: 1, metadata: 1,
      notReady: 1, added: 1, deleted: 0, relists: 0, changes: undefined });
    assert.deepEqual(r.changes, { 'condition Ready': 1, 'label a': 1 });
  });

  it("reads a Lease's renewTime age, and sums up the ages", () => {
    const now = Date.parse('2026-01-01T00:00:10Z');
    assert.equal(leaseAge({ spec: { renewTime: new Date('2026-01-01T00:00:04Z') } }, now), 6000);
    assert.equal(leaseAge({ spec: { renewTime: '2026-01-01T00:00:04.500000Z' as unknown as Date } }, now), 5500);
    assert.equal(leaseAge({ spec: {} }, now), undefined);
    const ages = [...Array.from({ length: 98 }, () => 5000), 25_000, 41_000];
    assert.deepEqual(leaseAges(ages, 10, 1), { samples: 10, ages: 100, missing: 1, p50Ms: 5000, p99Ms: 25_000, maxMs: 41_000, over20s: 2, over40s: 1 });
  });

  it('gives requests per minute, the members summed', () => {
    assert.deepEqual(requestsPerMinute({ 'host/patch': 120, 'n01/get': 12, 'n02/get': 12, 'member/get': 3 }, 120_000, ['n01', 'n02']),
      { 'host/patch': 60, 'members/get': 12, 'member/get': 1.5 });
  });

  it('spreads one pod per virtual node of the members', () => {
    const d = spreadDeployment('bench', 500, ['n01', 'n02']);
    assert.equal(d.spec?.replicas, 500);
    assert.deepEqual(d.spec?.template.spec?.topologySpreadConstraints?.[0]?.topologyKey, 'kubernetes.io/hostname');
    assert.deepEqual(d.spec?.template.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms[0]
      ?.matchExpressions?.[0], { key: 'clusterlet.io/member', operator: 'In', values: ['n01', 'n02'] });
  });

  it('writes a "## Many nodes" section, with the window and the pods when they ran', () => {
    const base = { members: ['n01', 'n02'], nodesPerMember: 5, virtualNodes: 10, registeredMs: 1200, readyMs: 1300, cpuToReadyClusterlet: 0.5,
      idleRssMB: 78, rssMB: { clusterlet: 78, members: 900 } };
    const md = nodesMarkdown(base);
    assert.match(md, /^## Many nodes: one clusterlet, 2 members × 5 nodes in node mode \(10 virtual nodes\)$/m);
    assert.match(md, /^\| 1\.2 s \| 1\.3 s \| 0\.5 \| 78 MB \|$/m);
    assert.doesNotMatch(md, /Steady window/);
    const full = nodesMarkdown({ ...base,
      window: { ms: 180_000, cpuSeconds: 3, cpuPerMinute: 1, cpuByGroup: { clusterlet: 3 }, peakRssMB: 90, endRssMB: 85,
        leases: leaseAges([5000, 9000], 2, 0), requestsPerMinute: { 'host/patch': 60 }, watchRestarts: {},
        writes: { total: 30, perNodePerMinute: 1, maxPerNode: 4, refresh: 30, status: 0, metadata: 0, changes: {}, notReady: 0, added: 0, deleted: 0,
          relists: 0 } },
      pods: { pods: 10, readyMs: 700, nodesUsed: 10, cpuToReadyClusterlet: 0.1, peakRssMB: 84, deleteMs: 600, left: { proxies: 0, delegates: 0 } } });
    assert.match(full, /^\| 3\.0 \(1\) \| 90 \/ 85 MB \| 5\.0 s \/ 9\.0 s \/ 9\.0 s \| 0 \/ 0 \| 30 \(1\) \| 30 \/ 0 \/ 0 \| 0 \|$/m);
    assert.match(full, /all Ready in 0\.7 s, on 10 virtual nodes/);
  });
});
