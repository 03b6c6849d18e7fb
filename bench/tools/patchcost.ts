#!/usr/bin/env node
// What one proxy status write costs the host's kube-apiserver, by the kind of write: the strategic merge patch
// clusterlet sends (src/host/pod/status.ts), one of only the changed fields, a JSON merge patch of the same change,
// and a PUT of the status subresource. N pods bound to a node nothing runs (no KWOK, no clusterlet) get their status rewritten, each round
// a real change (Ready flips, a restart counted), by `--workers` writers at once; the API server's and etcd's CPU
// (/proc) and the writes' latency are reported per kind, the kinds interleaved over the rounds.
//   node bench/tools/patchcost.ts [--pods 1000] [--rounds 4] [--workers 20]
import { parseArgs } from 'node:util';
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { Harness } from '../../test/harness/harness.ts';
import { ClusterClient, PATCH } from '../../src/kube/client.ts';
import { loadKubeconfigFile } from '../../src/kube/kubeconfig.ts';
import { proxyStatusPatch } from '../../src/host/pod/status.ts';
import { cpuTicks, median, percentile } from '../bench.ts';

const { values } = parseArgs({ options: {
  pods: { type: 'string', default: '1000' }, rounds: { type: 'string', default: '4' }, workers: { type: 'string', default: '20' },
} });
const N = Number(values.pods), ROUNDS = Number(values.rounds), WORKERS = Number(values.workers);
const log = (l: string) => process.stderr.write(`[patchcost] ${l}\n`);

const cpuSeconds = (pid: number): number => cpuTicks(pid) / 100; // USER_HZ

function statusOf(i: number, k: number, start: Date): V1PodStatus {
  const ready = k % 2 === 0 ? 'True' : 'False';
  const t = new Date(start.getTime() + k * 1000);
  return {
    phase: 'Running', hostIP: '10.20.0.1', hostIPs: [{ ip: '10.20.0.1' }],
    podIP: `10.21.${Math.floor(i / 250)}.${i % 250}`, podIPs: [{ ip: `10.21.${Math.floor(i / 250)}.${i % 250}` }],
    startTime: start, qosClass: 'BestEffort',
    conditions: [
      { type: 'PodReadyToStartContainers', status: 'True', lastTransitionTime: start },
      { type: 'Initialized', status: 'True', lastTransitionTime: start },
      { type: 'Ready', status: ready, lastTransitionTime: t },
      { type: 'ContainersReady', status: ready, lastTransitionTime: t },
      { type: 'PodScheduled', status: 'True', lastTransitionTime: start },
    ],
    containerStatuses: [{
      name: 'main', image: 'registry.k8s.io/pause:3.10', imageID: 'registry.k8s.io/pause@sha256:0', ready: ready === 'True',
      started: true, restartCount: k, containerID: `containerd://${i}-${k}`,
      state: { running: { startedAt: t } },
      ...(k > 0 ? { lastState: { terminated: { exitCode: 137, reason: 'Error', startedAt: start, finishedAt: t } } } : {}),
    }],
  };
}

type Kind = 'strategic' | 'diff' | 'merge' | 'put';
const KINDS: Kind[] = ['strategic', 'diff', 'merge', 'put'];

/** A strategic merge patch of only what changed: the conditions that differ (merged by type), and the lists that do. */
function diffPatch(desired: V1PodStatus, current: V1PodStatus | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(desired)) {
    if (k === 'conditions') continue;
    if (JSON.stringify(v) !== JSON.stringify((current as Record<string, unknown> | undefined)?.[k])) out[k] = v;
  }
  const changed = (desired.conditions ?? []).filter((c) =>
    JSON.stringify(c) !== JSON.stringify(current?.conditions?.find((x) => x.type === c.type)));
  if (changed.length) out.conditions = changed;
  return out;
}

const h = await Harness.start({ componentQPS: 2000, log });
try {
  const host = new ClusterClient(loadKubeconfigFile(h.host.kubeconfig), { cluster: 'host', qps: 5000, burst: 5000 });
  const node = 'patchcost';
  await host.core.createNode({ body: { metadata: { name: node } } });
  const ns = 'patchcost';
  await host.core.createNamespace({ body: { metadata: { name: ns } } });
  const start = new Date(Math.floor(Date.now() / 1000) * 1000);
  const names = Array.from({ length: N }, (_, i) => `p-${i}`);
  const pool = async (work: (i: number) => Promise<void>) => {
    let next = 0;
    await Promise.all(Array.from({ length: WORKERS }, async () => { while (next < N) await work(next++); }));
  };
  await pool(async (i) => {
    await host.core.createNamespacedPod({ namespace: ns, body: {
      metadata: { name: names[i], labels: { app: 'patchcost' } },
      spec: { nodeName: node, containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }],
        tolerations: [{ operator: 'Exists' }] },
    } });
  });
  log(`${N} pods created`);
  // What each pod's status is now (as the writer last left it), and its latest resourceVersion for a PUT.
  const current = new Map<string, V1PodStatus | undefined>();
  const pods = new Map<string, V1Pod>();
  const apiserver = h.pids().get('host/kube-apiserver')!, etcd = h.pids().get('etcd')!;
  let k = 0;
  const results = Object.fromEntries(KINDS.map((k) => [k, { cpu: [] as number[], etcd: [] as number[], wall: [] as number[], lat: [] as number[] }])) as
    Record<Kind, { cpu: number[]; etcd: number[]; wall: number[]; lat: number[] }>;
  for (let round = 0; round < ROUNDS; round++) {
    for (const kind of (round % 2 === 0 ? KINDS : [...KINDS].reverse())) {
      k++;
      if (kind === 'put') {
        const list = await host.core.listNamespacedPod({ namespace: ns });
        for (const p of list.items) pods.set(p.metadata!.name!, p);
      }
      const a0 = cpuSeconds(apiserver), e0 = cpuSeconds(etcd), t0 = performance.now();
      const lat: number[] = [];
      await pool(async (i) => {
        const name = names[i];
        const desired = statusOf(i, k, start);
        const s = performance.now();
        if (kind === 'strategic') {
          await host.core.patchNamespacedPodStatus({ namespace: ns, name, body: { status: proxyStatusPatch(desired, current.get(name)) } },
            { contentType: PATCH.strategic, discard: true });
        } else if (kind === 'diff') {
          await host.core.patchNamespacedPodStatus({ namespace: ns, name, body: { status: diffPatch(desired, current.get(name)) } },
            { contentType: PATCH.strategic, discard: true });
        } else if (kind === 'merge') {
          await host.core.patchNamespacedPodStatus({ namespace: ns, name, body: { status: desired } },
            { contentType: PATCH.merge, discard: true });
        } else {
          const pod = pods.get(name)!;
          await host.core.replaceNamespacedPodStatus({ namespace: ns, name, body: { ...pod, status: desired } }, { discard: true });
        }
        lat.push(performance.now() - s);
        current.set(name, desired);
      });
      const wall = (performance.now() - t0) / 1000;
      // The API server's watch cache and etcd settle after the last answer: let them finish what the writes caused.
      await new Promise((r) => setTimeout(r, 2000));
      const cpu = cpuSeconds(apiserver) - a0, ecpu = cpuSeconds(etcd) - e0;
      const r = results[kind];
      r.cpu.push(cpu); r.etcd.push(ecpu); r.wall.push(wall); r.lat.push(percentile(lat, 50));
      log(`round ${round + 1} ${kind}: ${wall.toFixed(2)} s, kube-apiserver ${(cpu * 1000 / N).toFixed(2)} CPU-ms/write, etcd ${
        (ecpu * 1000 / N).toFixed(2)}, latency p50 ${percentile(lat, 50).toFixed(0)} / p99 ${percentile(lat, 99).toFixed(0)} ms`);
    }
  }
  console.log('| write | kube-apiserver CPU-ms per write | etcd CPU-ms per write | wall s per round | latency p50 ms |');
  console.log('|---|---:|---:|---:|---:|');
  for (const kind of KINDS) {
    const r = results[kind];
    console.log(`| ${kind} | ${(median(r.cpu) * 1000 / N).toFixed(2)} (${r.cpu.map((c) => (c * 1000 / N).toFixed(2)).join(', ')}) | ${
      (median(r.etcd) * 1000 / N).toFixed(2)} | ${median(r.wall).toFixed(2)} | ${median(r.lat).toFixed(0)} |`);
  }
} finally {
  await h.stop();
}
