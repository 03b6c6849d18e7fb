// Preload for an allocation profile of clusterlet: V8's sampling heap profiler with the objects both collectors freed
// kept in it, so that it counts what was allocated over the run, not what was left. The profile is written at exit
// to $ALLOCPROF_OUT (default ./clusterlet.heapprofile), a .heapprofile that Chrome DevTools opens.
//   CLUSTERLET_NODE_OPTIONS="--import=$PWD/bench/tools/allocprof.mjs" ALLOCPROF_OUT=/tmp/a.heapprofile node bench/run.ts …
//   node bench/tools/allocprof.mjs PROFILE [--pods N] [--map FILE]   (a summary: bytes allocated by function and by file; frames
//   of the bundle named by the TypeScript module and line they were built from, through the .map beside dist/cli.js)
import { Session } from 'node:inspector';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadSourceMap } from './sourcemap.mjs';

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const arg = (name) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : undefined);
  summarize(process.argv[2], Number(arg('--pods')) || 0, arg('--map'));
} else {
  const session = new Session();
  session.connect();
  session.post('HeapProfiler.startSampling', {
    samplingInterval: 16_384, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true,
  });
  // The session on this thread answers at once, so the profile is written before the process ends.
  process.on('exit', () => {
    session.post('HeapProfiler.stopSampling', (err, res) => {
      if (!err) writeFileSync(process.env.ALLOCPROF_OUT ?? 'clusterlet.heapprofile', JSON.stringify(res.profile));
    });
  });
}

function summarize(file, pods, mapFile) {
  const profile = JSON.parse(readFileSync(file, 'utf8'));
  let bundleURL;
  const find = (n) => { if (n.callFrame.url.endsWith('/cli.js')) bundleURL ??= n.callFrame.url; n.children.forEach(find); };
  find(profile.head);
  const sourceOf = loadSourceMap(mapFile, bundleURL) ?? (() => undefined);
  const byFn = new Map();
  const byFile = new Map();
  let total = 0;
  const visit = (n) => {
    const f = n.callFrame;
    const src = f.url.endsWith('/cli.js') ? sourceOf(f) : undefined;
    const where = src ? src.file.replace(/^.*node_modules\//, 'node_modules/') : f.url ? f.url.replace(/^.*\/(dist|node_modules)\//, '$1/') : '(native)';
    const fn = `${f.functionName || '(anonymous)'} ${where}:${src ? src.line : f.lineNumber + 1}`;
    byFn.set(fn, (byFn.get(fn) ?? 0) + n.selfSize);
    byFile.set(where, (byFile.get(where) ?? 0) + n.selfSize);
    total += n.selfSize;
    for (const c of n.children) visit(c);
  };
  visit(profile.head);
  const mb = (b) => `${(b / 1e6).toFixed(1)} MB`;
  console.log(`allocated ${mb(total)}${pods ? `, ${(total / pods / 1e3).toFixed(0)} KB per pod` : ''}`);
  for (const [title, m] of [['by function', byFn], ['by file', byFile]]) {
    console.log(`\n## ${title}`);
    for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, 20)) console.log(`${mb(v).padStart(9)} ${(100 * v / total).toFixed(1).padStart(5)} %  ${k}`);
  }
}
