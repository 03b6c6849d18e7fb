#!/usr/bin/env node
// Summarizes a V8 .cpuprofile (node --cpu-prof): where the CPU went, by function, by file/package, and the heaviest
// call paths, optionally within a time window of the profile and per pod.
//   node bench/tools/cpuprofile-summary.mjs PROFILE [--from S] [--to S] [--top 40] [--tree-min 1] [--depth 30] [--pods N]
//   --from/--to  seconds after the profile's start (see the timeline it prints first to pick the busy window)
//   --pods N     also print each line's ms per pod
//   --focus RE   the call tree only below frames whose function or file matches RE
//   --map FILE   the bundle's source map (default: the .map beside the profiled dist/cli.js, if there is one): frames of
//                the bundle are named by the TypeScript module and line (or the package) they were built from
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { loadSourceMap } from './sourcemap.mjs';

const { values, positionals } = parseArgs({ allowPositionals: true, options: {
  from: { type: 'string' }, to: { type: 'string' }, top: { type: 'string', default: '40' },
  'tree-min': { type: 'string', default: '1' }, depth: { type: 'string', default: '40' },
  pods: { type: 'string' }, bucket: { type: 'string', default: '5' }, focus: { type: 'string' }, map: { type: 'string' },
} });
if (positionals.length !== 1) {
  process.stderr.write('usage: cpuprofile-summary.mjs PROFILE [--from S] [--to S] [--top N] [--tree-min PCT] [--pods N] [--focus RE] [--map FILE]\n');
  process.exit(2);
}
const prof = JSON.parse(readFileSync(positionals[0], 'utf8'));
const top = Number(values.top);
const pods = values.pods ? Number(values.pods) : undefined;

const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

const IDLE = new Set(['(idle)', '(program)', '(garbage collector)', '(root)']);

// The bundle's source map, to name its frames by the TypeScript module and line they were built from.
const bundleURL = prof.nodes.map((n) => n.callFrame.url).find((u) => u.endsWith('/cli.js'));
const sourceOf = loadSourceMap(values.map, bundleURL) ?? (() => undefined);

/** Where a frame lives (see fileOf) and its 1-based line, through the source map for the bundle's frames. */
function where(cf) {
  const s = cf.url.endsWith('/cli.js') ? sourceOf(cf) : undefined;
  return s ? { file: fileOf(`/${s.file}`), line: s.line } : { file: fileOf(cf.url), line: cf.lineNumber + 1 };
}

/** Where a frame lives, shortened: a package, a node: built-in, or a path under dist/ or src/. */
function fileOf(url) {
  if (!url) return '(native)';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 13).split('/');
    return `pkg:${rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]}/${rest.slice(rest[0].startsWith('@') ? 2 : 1).join('/')}`;
  }
  if (url.startsWith('node:')) return url;
  const m = /\/(dist|src|bench|test)\/(.*)$/.exec(url);
  return m ? `${m[1]}/${m[2]}` : url;
}
const packageOf = (file) => (file.startsWith('pkg:') ? file.split('/').slice(0, file.startsWith('pkg:@') ? 2 : 1).join('/')
  : file.startsWith('node:') ? 'node:' + file.slice(5).split('/')[0] : file.startsWith('dist/') || file.startsWith('src/')
    ? `clusterlet:${file.split('/').slice(1, -1).join('/') || '.'}` : file);
function fnName(n) {
  const { file, line } = where(n.callFrame);
  return `${n.callFrame.functionName || '(anonymous)'} ${file}:${line}`;
}

// Sample times (µs from the profile's start) and the window.
const t0 = prof.startTime;
const times = [];
let t = t0;
for (const d of prof.timeDeltas) { t += d; times.push(t - t0); }
const from = values.from ? Number(values.from) * 1e6 : -Infinity;
const to = values.to ? Number(values.to) * 1e6 : Infinity;

// Per-sample weight: the time until the next sample (what V8's own tools do), so a coarse interval still sums right.
const weight = (i) => (i + 1 < times.length ? times[i + 1] - times[i] : 0);

const self = new Map(); // node id → µs
const timeline = new Map(); // bucket → busy µs
const bucketUs = Number(values.bucket) * 1e6;
let total = 0, busy = 0;
const special = new Map();
for (let i = 0; i < prof.samples.length; i++) {
  const w = weight(i);
  const n = byId.get(prof.samples[i]);
  const name = n.callFrame.functionName;
  const isIdle = name === '(idle)';
  if (!isIdle) {
    const b = Math.floor(times[i] / bucketUs);
    timeline.set(b, (timeline.get(b) ?? 0) + w);
  }
  if (times[i] < from || times[i] >= to) continue;
  total += w;
  if (IDLE.has(name)) special.set(name, (special.get(name) ?? 0) + w);
  if (isIdle) continue;
  busy += w;
  self.set(n.id, (self.get(n.id) ?? 0) + w);
}

const ms = (us) => (us / 1000).toFixed(0).padStart(7);
const pct = (us) => `${((100 * us) / busy).toFixed(1).padStart(5)}%`;
const perPod = (us) => (pods ? ` ${(us / 1000 / pods).toFixed(3).padStart(7)} ms/pod` : '');
const line = (us, label) => `${ms(us)} ms ${pct(us)}${perPod(us)}  ${label}`;

console.log(`profile ${positionals[0]}: ${((times.at(-1) ?? 0) / 1e6).toFixed(1)} s long; window ${values.from ?? 'start'}..${values.to ?? 'end'} s`);
console.log(`busy (not idle) ${(busy / 1e6).toFixed(2)} s of ${(total / 1e6).toFixed(2)} s${pods ? `, ${(busy / 1000 / pods).toFixed(2)} ms/pod` : ''}; `
  + [...special].map(([k, v]) => `${k} ${(v / 1e6).toFixed(2)} s`).join(', '));

console.log(`\n## Timeline: busy ms per ${values.bucket} s`);
const maxB = Math.max(0, ...timeline.keys());
const row = [];
for (let b = 0; b <= maxB; b++) row.push(`${b * Number(values.bucket)}s:${((timeline.get(b) ?? 0) / 1000).toFixed(0)}`);
for (let i = 0; i < row.length; i += 12) console.log('  ' + row.slice(i, i + 12).join('  '));

function printTop(title, m) {
  console.log(`\n## ${title}`);
  for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(line(v, k));
}

const selfByFn = new Map(), selfByFile = new Map(), selfByPkg = new Map();
for (const [id, us] of self) {
  const n = byId.get(id);
  const f = fnName(n), file = where(n.callFrame).file;
  selfByFn.set(f, (selfByFn.get(f) ?? 0) + us);
  selfByFile.set(file, (selfByFile.get(file) ?? 0) + us);
  const p = IDLE.has(n.callFrame.functionName) ? n.callFrame.functionName : packageOf(file);
  selfByPkg.set(p, (selfByPkg.get(p) ?? 0) + us);
}
printTop('Self time by package / clusterlet directory', selfByPkg);
printTop('Self time by file', selfByFile);
printTop('Self time by function', selfByFn);

// Inclusive time by function: each sample counts once per distinct function on its stack.
const inclFn = new Map();
const inclNode = new Map();
for (const [id, us] of self) {
  const seen = new Set();
  for (let x = id; x !== undefined; x = parent.get(x)) {
    inclNode.set(x, (inclNode.get(x) ?? 0) + us);
    const f = fnName(byId.get(x));
    if (!seen.has(f)) { seen.add(f); inclFn.set(f, (inclFn.get(f) ?? 0) + us); }
  }
}
inclFn.delete(fnName(byId.get(prof.nodes[0].id)));
printTop('Inclusive time by function (clusterlet code only)', new Map([...inclFn].filter(([k]) => / (dist|src)\//.test(k))));
printTop('Inclusive time by function (all)', inclFn);

// The call tree, merged by function along each path, showing nodes above --tree-min % of busy time.
const min = (Number(values['tree-min']) / 100) * busy;
const depth = Number(values.depth);
const focus = values.focus ? new RegExp(values.focus) : undefined;
function merged(ids) {
  const m = new Map();
  for (const id of ids) {
    const f = fnName(byId.get(id));
    const e = m.get(f) ?? { us: 0, ids: [] };
    e.us += inclNode.get(id) ?? 0;
    e.ids.push(...(byId.get(id).children ?? []));
    m.set(f, e);
  }
  return [...m].sort((a, b) => b[1].us - a[1].us);
}
function print(ids, indent, d) {
  if (d > depth) return;
  for (const [f, e] of merged(ids)) {
    if (e.us < min) continue;
    console.log(`${ms(e.us)} ms ${pct(e.us)}${perPod(e.us)}  ${'  '.repeat(indent)}${f}`);
    print(e.ids, indent + 1, d + 1);
  }
}
if (focus) {
  // Every topmost frame matching the focus, merged by function.
  const roots = [];
  const walk = (id, inside) => {
    const n = byId.get(id);
    const hit = !inside && (focus.test(n.callFrame.functionName) || focus.test(n.callFrame.url));
    if (hit) roots.push(id);
    for (const c of n.children ?? []) walk(c, inside || hit);
  };
  walk(prof.nodes[0].id, false);
  console.log(`\n## Call tree below /${values.focus}/ (≥ ${values['tree-min']}% of busy)`);
  print(roots, 0, 0);
} else {
  console.log(`\n## Call tree (inclusive, ≥ ${values['tree-min']}% of busy)`);
  print(byId.get(prof.nodes[0].id).children ?? [], 0, 0);
}
