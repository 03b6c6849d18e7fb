// The bundle's source map for the profile summaries (cpuprofile-summary.mjs, allocprof.mjs): a frame of dist/cli.js
// (0-based line and column, as V8's profiles give them) → the TypeScript module or package and 1-based line it was
// built from.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The source map `file` names, or the .map beside the bundle `bundleURL` (a file: URL); undefined without one. */
export function loadSourceMap(file, bundleURL) {
  const mapFile = file ?? (bundleURL?.startsWith('file://') ? `${fileURLToPath(bundleURL)}.map` : undefined);
  if (!mapFile || !existsSync(mapFile)) return undefined;
  const map = decodeMap(JSON.parse(readFileSync(mapFile, 'utf8')));
  /** The source file (relative, or node_modules/…) and 1-based line a frame of the bundle was built from. */
  return (cf) => {
    const segs = map.lines[cf.lineNumber];
    if (!segs?.length) return undefined;
    let lo = 0, hi = segs.length - 1, best = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (segs[mid][0] <= cf.columnNumber) { best = mid; lo = mid + 1; } else hi = mid - 1;
    }
    if (best < 0) return undefined;
    return { file: map.sources[segs[best][1]].replace(/^(\.\.\/)+/, ''), line: segs[best][2] + 1 };
  };
}

// Per generated line, its segments' [column, source index, source line], in column order.
function decodeMap(map) {
  const digits = new Map([...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'].map((c, i) => [c, i]));
  const lines = [];
  // Each field is a delta from its value in the segment before; only the columns, sources and lines are kept.
  let src = 0, srcLine = 0;
  for (const text of map.mappings.split(';')) {
    const segs = [];
    let col = 0;
    for (const seg of text ? text.split(',') : []) {
      const v = [];
      let n = 0, shift = 0;
      for (const ch of seg) {
        const d = digits.get(ch);
        n += (d & 31) << shift;
        if (d & 32) shift += 5;
        else { v.push(n & 1 ? -(n >>> 1) : n >>> 1); n = 0; shift = 0; }
      }
      col += v[0];
      if (v.length < 4) continue;
      src += v[1]; srcLine += v[2];
      segs.push([col, src, srcLine]);
    }
    lines.push(segs);
  }
  return { lines, sources: map.sources };
}
