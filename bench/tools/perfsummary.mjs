#!/usr/bin/env node
// Summarizes a `perf record` of clusterlet (on-CPU samples, kernel and native code included, unlike V8's --cpu-prof,
// whose samples are wall-clock and land on whatever JavaScript was running when the process was descheduled): the
// share of its CPU by thread, by library and by kind of code (JIT-compiled JavaScript by tier, V8 builtins, inline-cache
// misses and runtime calls, the garbage collector, JSON, malloc, crypto, the kernel), then the top symbols.
// Record with JavaScript frames named (node writes /tmp/perf-PID.map):
//   CLUSTERLET_NODE_OPTIONS=--perf-basic-prof node bench/run.ts …   # then, once clusterlet runs:
//   perf record -F 499 -g -p PID -o perf.data                          # ends when clusterlet exits
//   node bench/tools/perfsummary.mjs perf.data [--top 30] [--inclusive]
// --inclusive adds the share of samples with each JavaScript function anywhere on the stack (named by the bundle's
// source map). A caveat: /tmp/perf-PID.map keeps every code object V8 ever made, and perf may name a frame by an
// older object whose address range was since reused; a small function with a large share is suspect.
import { execFileSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import { loadSourceMap } from './sourcemap.mjs';

const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: 'string', default: '30' }, inclusive: { type: 'boolean', default: false } } });
if (positionals.length !== 1) {
  process.stderr.write('usage: perfsummary.mjs PERF.DATA [--top N] [--inclusive]\n');
  process.exit(2);
}
const text = execFileSync('perf', ['report', '-i', positionals[0], '--no-children', '-n', '--sort', 'comm,dso,symbol', '--stdio', '-g', 'none'],
  { encoding: 'utf8', maxBuffer: 1 << 28, stdio: ['ignore', 'pipe', 'ignore'] });
// "  1.76%  98  MainThread  node  [.] Builtins_LoadIC": shares are computed from the sample counts (the rounded
// percentages of ~2,000 symbols do not add up to 100).
const parsed = text.split('\n').map((l) => /^\s*[\d.]+%\s+(\d+)\s+(\S+)\s+(.+?)\s+\[([.k])\]\s+(.*?)\s*$/.exec(l)).filter(Boolean)
  .map((m) => ({ samples: Number(m[1]), thread: m[2], dso: m[3].trim(), kernel: m[4] === 'k', sym: m[5] }));
const count = parsed.reduce((s, r) => s + r.samples, 0);
const rows = parsed.map((r) => ({ ...r, pct: (100 * r.samples) / count }));

const KINDS = [
  ['JavaScript, TurboFan', (r) => /^JS:\*/.test(r.sym)],
  ['JavaScript, Maglev', (r) => /^JS:\+/.test(r.sym)],
  ['JavaScript, Sparkplug', (r) => /^JS:\^/.test(r.sym)],
  ['JavaScript, interpreted', (r) => /^JS:~/.test(r.sym)],
  ['JavaScript, other', (r) => /^JS:/.test(r.sym)],
  ['kernel', (r) => r.kernel],
  ['garbage collector', (r) => /Scaveng|Mark|Sweep|Heap|Evacuat|Compact|RememberedSet|SlotSet|Minor|PagedSpace|RecordWrite|GCTracer/.test(r.sym)],
  ['inline caches, runtime calls, maps', (r) => /IC_|IC\b|Transition|LookupIterator|Runtime_|MigrateToMap|Map::/.test(r.sym)],
  ['JSON', (r) => /Json|JSON/.test(r.sym)],
  ['V8 compilers (TurboFan, Maglev, Sparkplug, bytecode)', (r) => /compiler::|maglev::|turboshaft|baseline::|interpreter::|Zone|::Parser|PreParser|::Scanner/.test(r.sym)],
  ['strings (table, hashing, copies)', (r) => /String/.test(r.sym)],
  ['malloc, memcpy', (r) => /malloc|free\b|_int_|unlink_chunk|memmove|memcpy|memset|memcmp|memchr/.test(r.sym)],
  ['crypto, TLS', (r) => /aesni|gcm|ghash|SSL|ssl|tls|EVP|evp|ossl|OPENSSL|CRYPTO|sha\d|TLSWrap|NodeBIO/.test(r.sym)],
  ['other V8 builtins', (r) => /^Builtins_/.test(r.sym)],
  ['other', () => true],
];
/** The rows' shares summed by `key`, largest first. */
const shares = (key) => {
  const m = new Map();
  for (const r of rows) m.set(key(r), (m.get(key(r)) ?? 0) + r.pct);
  return [...m].sort((a, b) => b[1] - a[1]);
};
console.log(`${count} samples in ${rows.length} symbols`);
console.log('\n## By thread');
for (const [t, p] of shares((r) => r.thread)) console.log(`${p.toFixed(1).padStart(6)} %  ${t}`);
console.log('\n## By library');
for (const [d, p] of shares((r) => r.dso).filter(([, p]) => p >= 0.1)) console.log(`${p.toFixed(1).padStart(6)} %  ${d}`);
console.log('\n## By kind of code (main thread | all threads)');
const kindOf = (r) => KINDS.find(([, f]) => f(r))[0];
const sums = new Map();
for (const r of rows) {
  const k = kindOf(r);
  const s = sums.get(k) ?? { main: 0, all: 0 };
  s.all += r.pct;
  if (r.thread === 'MainThread') s.main += r.pct;
  sums.set(k, s);
}
for (const [k, s] of [...sums].sort((a, b) => b[1].all - a[1].all)) {
  console.log(`${s.main.toFixed(1).padStart(6)} % | ${s.all.toFixed(1).padStart(5)} %  ${k}`);
}
console.log(`\n## Top ${values.top} symbols`);
for (const r of rows.slice(0, Number(values.top))) {
  console.log(`${r.pct.toFixed(2).padStart(6)} %  ${r.thread.padEnd(10)} ${kindOf(r).padEnd(36)} ${r.sym.slice(0, 110)}`);
}

// --inclusive: the share of samples (all threads) with each JavaScript function anywhere on their stack, as a
// caller-side view: the flat profile above charges V8's runtime and builtins, not the code that called them.
if (values.inclusive) {
  // "JS:*'name file:///…/dist/cli.js:202:1005" (tier mark, then a quote on some): one name for all tiers, and frames
  // of the bundle named by the TypeScript module and line they were built from (its source map; 1-based positions).
  const cache = new Map();
  const sourceMaps = new Map();
  const jsName = (sym) => {
    let n = cache.get(sym);
    if (n !== undefined) return n;
    n = sym.replace(/^JS:[*+^~]?'?/, '').trim();
    const at = /^(.*?)\s*(file:\/\/\S+?):(\d+):(\d+)$/.exec(n);
    if (at) {
      if (!sourceMaps.has(at[2])) sourceMaps.set(at[2], loadSourceMap(undefined, at[2]));
      const src = sourceMaps.get(at[2])?.({ lineNumber: Number(at[3]) - 1, columnNumber: Number(at[4]) - 1 });
      if (src) n = `${at[1] || '(anonymous)'} ${src.file}:${src.line}`;
    }
    cache.set(sym, n);
    return n;
  };
  const script = execFileSync('perf', ['script', '-i', positionals[0], '-F', 'comm,ip,sym'],
    { encoding: 'utf8', maxBuffer: 1 << 30, stdio: ['ignore', 'pipe', 'ignore'] });
  const incl = new Map();
  let samples = 0;
  for (const block of script.split('\n\n')) {
    const lines = block.split('\n').filter((l) => l.trim() !== '');
    if (lines.length < 2) continue;
    samples++;
    const seen = new Set();
    for (const l of lines.slice(1)) {
      const m = /^\s*\S+\s+(JS:\S+(?: \S+)?)/.exec(l) ?? /^\s*(JS:.*)$/.exec(l.trim());
      if (!m) continue;
      const name = jsName(m[1]);
      if (seen.has(name)) continue;
      seen.add(name);
      incl.set(name, (incl.get(name) ?? 0) + 1);
    }
  }
  console.log(`\n## Top ${values.top} JavaScript functions, inclusive (${samples} samples)`);
  for (const [n, c] of [...incl].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top))) {
    console.log(`${((100 * c) / samples).toFixed(1).padStart(6)} %  ${n.slice(0, 140)}`);
  }
}
