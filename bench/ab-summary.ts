// The summary of bench/ab.sh's runs: one row per run (round, build), read from the JSON files whose names start with
// the prefix given, then the median of each build. Usage: node bench/ab-summary.ts DIR PREFIX
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BenchResult, OffloadedRun, RunResult } from './bench.ts';

const [dir = 'bench/results', prefix = 'ab-'] = process.argv.slice(2);
interface Row { round: string; build: string; n: number; direct: number; offloaded: number; ratio: number; cpuMsPerPod: number; deleteS: number; rssMB: number; hostWrites: number }
const rows: Row[] = [];
for (const f of readdirSync(dir).filter((f) => f.startsWith(prefix) && f.endsWith('.json')).sort()) {
  const [round = '', build = ''] = f.slice(prefix.length, -'.json'.length).split('-');
  const r = JSON.parse(readFileSync(join(dir, f), 'utf8')) as BenchResult;
  for (const s of r.summary) {
    const off = r.runs.find((x): x is OffloadedRun => x.mode === 'offloaded' && x.n === s.n);
    const direct = r.runs.find((x: RunResult) => x.mode === 'direct' && x.n === s.n);
    rows.push({ round, build, n: s.n, direct: (direct?.readyMs ?? NaN) / 1000, offloaded: s.offloadedMedianMs / 1000, ratio: s.ratioMedian,
      cpuMsPerPod: s.cpuMsPerPodMedian, deleteS: (off?.deleteMs ?? NaN) / 1000, rssMB: off?.peakRssMB ?? NaN, hostWrites: s.hostWritesPerPod });
  }
}
const f2 = (x: number): string => (Number.isFinite(x) ? x.toFixed(2) : '–');
const median = (xs: number[]): number => { const s = [...xs].sort((a, b) => a - b); return s.length ? (s[(s.length - 1) >> 1] + s[s.length >> 1]) / 2 : NaN; };
const lines = ['| round | build | N | direct s | offloaded s | × direct | clusterlet CPU-ms / pod | delete s | peak RSS MB | host writes / pod |',
  '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|'];
for (const x of rows) lines.push(`| ${x.round} | ${x.build} | ${x.n} | ${f2(x.direct)} | ${f2(x.offloaded)} | ${f2(x.ratio)} | ${f2(x.cpuMsPerPod)} | ${f2(x.deleteS)} | ${f2(x.rssMB)} | ${f2(x.hostWrites)} |`);
for (const build of ['base', 'head']) {
  const mine = rows.filter((x) => x.build === build);
  if (!mine.length) continue;
  const m = (k: keyof Row): string => f2(median(mine.map((x) => x[k] as number)));
  lines.push(`| median | ${build} | ${mine[0]?.n ?? ''} | ${m('direct')} | ${m('offloaded')} | ${m('ratio')} | ${m('cpuMsPerPod')} | ${m('deleteS')} | ${m('rssMB')} | ${m('hostWrites')} |`);
}
process.stdout.write(lines.join('\n') + '\n');
