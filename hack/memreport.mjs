// Preloaded into clusterlet by hack/idle-rss.ts (`--import`): on SIGUSR2 it writes process.memoryUsage() and V8's
// heap spaces as one JSON line to $MEMREPORT_OUT, and a heap snapshot next to it when $MEMREPORT_SNAPSHOT is set.
// Plain JS so that it loads the same way in front of src/cli.ts and dist/cli.js.
import { appendFileSync } from 'node:fs';
import v8 from 'node:v8';

process.on('SIGUSR2', () => {
  const out = process.env.MEMREPORT_OUT;
  if (!out) return;
  const spaces = Object.fromEntries(v8.getHeapSpaceStatistics().map((s) => [s.space_name, s.space_used_size]));
  const snapshot = process.env.MEMREPORT_SNAPSHOT ? v8.writeHeapSnapshot(process.env.MEMREPORT_SNAPSHOT) : undefined;
  appendFileSync(out, `${JSON.stringify({ ...process.memoryUsage(), spaces, snapshot })}\n`);
});
