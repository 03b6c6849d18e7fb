// Preloaded into clusterlet by bench/tools/idle-rss.ts (`--import`): on SIGUSR2 it writes process.memoryUsage() and V8's
// heap spaces as one JSON line to $MEMREPORT_OUT, and a heap snapshot next to it when $MEMREPORT_SNAPSHOT is set.
// With $MEMREPORT_AT_EXIT set it writes the line (with VmRSS as `rss`) when the process exits instead: the cost of
// the modules an entry loads, run with --help.
// Plain JS so that it loads the same way in front of src/cli.ts and dist/cli.js.
import { appendFileSync, readFileSync } from 'node:fs';
import v8 from 'node:v8';

function report() {
  const out = process.env.MEMREPORT_OUT;
  if (!out) return;
  const spaces = Object.fromEntries(v8.getHeapSpaceStatistics().map((s) => [s.space_name, s.space_used_size]));
  const snapshot = process.env.MEMREPORT_SNAPSHOT ? v8.writeHeapSnapshot(process.env.MEMREPORT_SNAPSHOT) : undefined;
  const vmRSS = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1]) * 1024;
  appendFileSync(out, `${JSON.stringify({ ...process.memoryUsage(), rss: vmRSS, spaces, snapshot })}\n`);
}

if (process.env.MEMREPORT_AT_EXIT) process.on('exit', report);
else process.on('SIGUSR2', report);
