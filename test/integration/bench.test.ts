// The benchmark, smoke-tested at N=10 so it cannot rot. No timed assertions: it must run and report.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { client, clusterletArgs, harness, startClusterlet } from '../support/env.ts';
import { waitVirtualNodeSchedulable } from '../support/objects.ts';
import { freePort, pollUntil } from '../harness/net.ts';
import { HOST_NODES } from '../harness/harness.ts';
import { runBench, toMarkdown } from '../../bench/bench.ts';

describe('benchmark (smoke)', () => {
  it('runs direct, host-only and offloaded at N=10 and reports every figure', async (t) => {
    const port = await freePort();
    const cl = startClusterlet(clusterletArgs(harness().member, ['--health-port', String(port)]));
    try {
      await waitVirtualNodeSchedulable(client(harness().host));
      await pollUntil('clusterlet /readyz', async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.ok ? true : undefined, 30_000);
      const result = await runBench({
        harness: harness(), sizes: [10], pairs: 1, clusterletPid: cl.child.pid!, virtualNode: 'clusterlet-member',
        // The suite's harness has no host-floor node: 10 pods fit on a local host node.
        hostOnlyNode: HOST_NODES[0].name, idleRss: { settleMs: 0, samples: 2, intervalMs: 100 },
        metricsURL: `http://127.0.0.1:${port}/metrics`, log: (l) => t.diagnostic(l),
      });
      assert.equal(result.runs.length, 3);
      assert.ok(result.idleRss.medianMB > 0);
      assert.ok((result.afterRss?.medianMB ?? 0) > 0, 'RSS after the runs sampled');
      const [s] = result.summary;
      assert.equal(s.n, 10);
      assert.ok(s.directMedianMs > 0 && s.offloadedMedianMs > 0);
      assert.ok(s.hostOnlyMedianMs > 0 && s.deleteDirectMedianMs > 0 && s.deleteHostOnlyMedianMs > 0 && s.deleteOffloadedMedianMs > 0);
      assert.equal(s.ratios.length, 1);
      assert.equal(s.floorRatios.length, 1);
      assert.equal(s.deleteRatios.length, 1);
      assert.ok(s.cpuMsPerPodMedian > 0, "clusterlet's CPU per pod counted");
      assert.ok(s.peakRssMB > 0);
      assert.ok(s.hostWritesPerPod > 0, 'host writes counted from clusterlet metrics');
      assert.ok((s.requestsPerPod.member?.create ?? 0) >= 1, 'at least one member create per pod (the delegate)');
      assert.ok((s.statusMirrorP50Ms ?? 0) > 0, "clusterlet's part of the added latency read from its histogram");
      assert.ok((s.hostPatchP50Ms ?? 0) > 0, 'host status patch latency read from its histogram');
      assert.ok(s.cpuToReadyOffloaded > 0 && s.cpuToReadyDirect > 0 && s.cpuToReadyHostOnly > 0, 'CPU of all processes to Ready counted');
      // Every process is read, clusterlet's too. At N=10 a run reaches Ready in ~0.2 s, less than clusterlet may spend in
      // whole 10 ms clock ticks, so its share is only required to be read (a gone process reads NaN), not to be above 0.
      for (const r of result.runs) {
        assert.ok(Object.values(r.cpuToReady).every((v) => Number.isFinite(v) && v >= 0), `${r.mode}: every process's CPU read`);
        assert.ok(Object.keys(r.cpuToReady).some((k) => k.endsWith('kube-apiserver')), `${r.mode}: the API servers' CPU read`);
      }
      assert.ok('clusterlet' in result.runs.find((r) => r.mode === 'offloaded')!.cpuToReady, "clusterlet's CPU read");
      assert.ok((s.deleteStagesOffloadedMs?.delegatesGone ?? 0) > 0 && (s.deleteStagesOffloadedMs?.proxiesGone ?? 0) > 0, 'offloaded deletion stages seen');
      assert.ok((s.deleteStagesDirectMs?.gone ?? 0) > 0 && (s.deleteStagesHostOnlyMs?.gone ?? 0) > 0, 'deletion stages seen');
      assert.ok(s.cpuToDeletedOffloaded !== undefined && s.cpuToDeletedDirect !== undefined, 'CPU of the deletion read');
      const md = toMarkdown(result);
      assert.match(md, /^\| 10 \| [\d.]+ s \| [\d.]+ s \| [\d.]+ s \|/m);
      assert.match(md, /Machine: \d+ ×/);
    } finally {
      await cl.stop();
    }
  });
});
