// When clusterlet goes quiet after its heap grew (start-up, a burst of pods), one full, compacting collection that gives
// V8's spare memory back.
//
// V8 sizes its heap for the work it has just done and keeps it: the young generation it grew during start-up or a
// burst of pods, and old-generation pages left half empty once the objects on them died. Nothing collects while the
// process is idle (no allocation, no collection), so all of it stays resident. One "last resort" collection once the
// process is quiet (full, compacting: its pages evacuated, the young generation shrunk to its minimum) gives it back.
// It pauses the process for a few milliseconds at idle (on a large heap, longer than a regular full collection), and
// only when nothing is happening.
//
// Quiet: clusterlet's own CPU below `quietCpuMs` in each of `quietIntervals` intervals in a row. It collects once per
// quiet spell, and only when V8's committed heap has grown by `minGrowthBytes` since the last collection (start-up
// counts): an idle process is not collected again and again. An idle clusterlet still works every minute or two (its
// silent watches restarted together, a node status refresh); collecting after each of those costs CPU with nothing to
// give back. The threshold is 1 MB: a larger one leaves an idle clusterlet uncollected for long while its heap and the
// external memory of its garbage grow, and its RSS with them. See docs/performance.md, 'Idle collection'.
import { cpuUsage } from 'node:process';
import { getHeapStatistics } from 'node:v8';

export interface IdleCollectOptions {
  /** How often the CPU is sampled. */
  intervalMs: number;
  /** CPU time in an interval below which it counts as quiet. */
  quietCpuMs: number;
  /** Quiet intervals in a row before it collects. */
  quietIntervals: number;
  /** How much larger than the last collection left it V8's committed heap must have been since, for one to be worth it. */
  minGrowthBytes: number;
}
export const IDLE_COLLECT: IdleCollectOptions = { intervalMs: 5_000, quietCpuMs: 50, quietIntervals: 2, minGrowthBytes: 1024 * 1024 };

export interface IdleCollectHooks {
  /** The process's CPU time so far, ms. */
  cpuMs(): number;
  /** V8's committed heap, bytes: what a compacting collection can give back is in it. */
  heapBytes(): number;
  /** One full collection that compacts and shrinks the heap; default: V8's, through the `gc` that --expose-gc gives. */
  collect(): void;
  /** Calls `cb` every `ms` (not keeping the process alive); returns a stop. */
  every(ms: number, cb: () => void): () => void;
}

type Gc = (options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;
/** V8's collector, when the process runs with --expose-gc (NODE_FLAGS); undefined otherwise. */
export const exposedGc = (): Gc | undefined => (globalThis as { gc?: Gc }).gc;

export const v8Hooks = (gc: Gc): IdleCollectHooks => ({
  cpuMs: () => { const u = cpuUsage(); return (u.user + u.system) / 1000; },
  heapBytes: () => getHeapStatistics().total_heap_size,
  collect: () => gc({ type: 'major', execution: 'sync', flavor: 'last-resort' }),
  every: (ms, cb) => { const t = setInterval(cb, ms); t.unref(); return () => clearInterval(t); },
});

/**
 * Samples the CPU and the heap every interval and collects once the process has been quiet for `quietIntervals` and
 * its heap has been `minGrowthBytes` larger than what the last collection left at some point since (the first
 * collection comes after start-up). `onCollect` hears how long each collection took (ms). Returns a stop.
 */
export function startIdleCollect(hooks: IdleCollectHooks, onCollect?: (ms: number) => void,
  opts: IdleCollectOptions = IDLE_COLLECT): () => void {
  let last = hooks.cpuMs();
  let quiet = 0;
  let heapAfterCollect = 0;
  // The largest the heap was since the last collection: V8's own memory reducer may shrink it after a burst before
  // the process has been quiet long enough, and what it left fragmented is still worth compacting.
  let peak = 0;
  return hooks.every(opts.intervalMs, () => {
    peak = Math.max(peak, hooks.heapBytes());
    const now = hooks.cpuMs();
    const used = now - last;
    last = now;
    if (used >= opts.quietCpuMs) {
      quiet = 0;
      return;
    }
    if (++quiet < opts.quietIntervals || peak - heapAfterCollect < opts.minGrowthBytes) return;
    const t0 = performance.now();
    hooks.collect();
    onCollect?.(performance.now() - t0);
    heapAfterCollect = hooks.heapBytes();
    peak = heapAfterCollect;
    quiet = 0;
    // The collection's own CPU is not work.
    last = hooks.cpuMs();
  });
}
