// Idle clusterlet: the local clusters and one clusterlet (as the bench starts it), no pods; once settled, its CPU per
// second over a window, read from /proc, its main thread's voluntary context switches (each one a wake-up; preemptions
// apart), its RSS at the end, and (on stderr) its watch restarts and API requests so far. For idle-cost experiments
// (`npm run build` first):
//   node bench/tools/idle-probe.ts [--settle S] [--window S] [--every S]   (--every: its memory every S seconds of the window,
//   read from its /metrics and /proc; CLUSTERLET_NODE_OPTIONS / CLUSTERLET_ARGS as for the bench). Where the node
//   binary's resident pages go: bench/tools/binpages.mjs PID; what holds the heap: bench/tools/heapsummary.mjs on a snapshot.
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { Harness } from '../../test/harness/harness.ts';
import { startBenchClusterlet } from '../clusterlet.ts';
import { cpuTicks, rssKB } from '../bench.ts';

const { values } = parseArgs({ options: { settle: { type: 'string', default: '60' }, window: { type: 'string', default: '60' },
  every: { type: 'string' } } });
const log = (l: string): void => { process.stderr.write(`[idle] ${l}\n`); };
const h = await Harness.start({ componentQPS: 2000, log });
await h.createLeaseNamespace();
const cl = await startBenchClusterlet(h, ['--member-kubeconfig', h.member.kubeconfig, '--member-name', 'member'], 'clusterlet.log', 'idle probe');
try {
  await cl.ready(60_000);
  await sleep(Number(values.settle) * 1000);
  const read = (): { at: number; ticks: number; woke: number; preempted: number } => {
    const status = readFileSync(`/proc/${cl.pid}/status`, 'utf8');
    const sw = (k: string): number => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
    return { at: performance.now(), ticks: cpuTicks(cl.pid), woke: sw('voluntary_ctxt_switches'),
      preempted: sw('nonvoluntary_ctxt_switches') };
  };
  const w = Number(values.window);
  const a = read();
  if (values.every) {
    // A timeline of its memory through the window: RSS, V8's committed and used heap, external (MB).
    const every = Number(values.every) * 1000;
    const t0 = performance.now();
    for (let t = 0; t < w * 1000; t += every) {
      await sleep(Math.min(every, w * 1000 - t));
      const text = await (await fetch(`http://127.0.0.1:${cl.healthPort}/metrics`)).text();
      const mb = (name: string): string =>
        (Number(new RegExp(`^clusterlet_${name} (\\S+)$`, 'm').exec(text)?.[1]) / 1048576).toFixed(1);
      // Its RSS and its split from one read of /proc: anonymous memory, and file pages (mostly the node binary's code
      // and data it touched).
      const rss = rssKB(cl.pid);
      const kb = (v: number | undefined): string => ((v ?? NaN) / 1024).toFixed(1);
      process.stdout.write(`${Math.round((performance.now() - t0) / 1000)} s: RSS ${kb(rss?.total)} MB (anon ${
        kb(rss?.anon)}, file ${kb(rss?.file)}), heap ${mb('nodejs_heap_size_total_bytes')} committed / ${
        mb('nodejs_heap_size_used_bytes')} used, external ${mb('nodejs_external_memory_bytes')}\n`);
    }
  } else {
    await sleep(w * 1000);
  }
  const b = read();
  const metrics = await (await fetch(`http://127.0.0.1:${cl.healthPort}/metrics`)).text();
  const lines = metrics.split('\n');
  const shown = ['clusterlet_watch_restarts_total', 'clusterlet_api_requests_total', 'clusterlet_idle_collection_seconds_count',
    'clusterlet_idle_collection_seconds_sum'].flatMap((name) => lines.filter((l) => l.startsWith(name)));
  process.stderr.write(`${shown.join('\n')}\n`);
  const rss = (rssKB(cl.pid)?.total ?? NaN) / 1024;
  // Per second of the window as it ran (scrapes and a loaded machine lengthen it); clock ticks are 1/100 s.
  const s = (b.at - a.at) / 1000;
  process.stdout.write(`idle CPU ${((b.ticks - a.ticks) * 10 / s).toFixed(2)} ms/s, main-thread wake-ups ${((b.woke - a.woke) / s).toFixed(1)}/s `
    + `(and ${((b.preempted - a.preempted) / s).toFixed(1)}/s preempted) over ${s.toFixed(0)} s; RSS then ${rss.toFixed(1)} MB (pid ${cl.pid})\n`);
} finally {
  await cl.stop();
  await h.stop();
}
