// When clusterlet goes quiet after work, one full, compacting collection that gives V8's spare memory back.
//
// V8 sizes its heap for the work it has just done and keeps it: the young generation it grew during start-up or a
// burst of pods, and old-generation pages left half empty once the objects on them died. Nothing collects while the
// process is idle (no allocation, no collection), so all of it stays resident: at idle with one member and no pods,
// 69.0 MB with the shipped flags, 73.3 MB with a 4 MB young generation (`hack/idle-rss.ts --variants dist`, medians
// of 2 runs). With one "last resort" collection once the process is quiet (full, compacting: its pages evacuated, the
// young generation shrunk to its minimum), 66.5 and 66.4 MB. It pauses the process for a few milliseconds at idle; on
// a heap of 143 MB live, 248-288 ms (a regular full collection: 113-147 ms), and only when nothing is happening.
//
// Quiet: clusterlet's own CPU below `quietCpuMs` in each of `quietIntervals` intervals in a row. It collects once per
// quiet spell, and only after work (start-up counts): an idle process is not collected again and again.
import { cpuUsage } from 'node:process';

export interface IdleCollectOptions {
  /** How often the CPU is sampled. */
  intervalMs: number;
  /** CPU time in an interval below which it counts as quiet. */
  quietCpuMs: number;
  /** Quiet intervals in a row before it collects. */
  quietIntervals: number;
}
export const IDLE_COLLECT: IdleCollectOptions = { intervalMs: 5_000, quietCpuMs: 50, quietIntervals: 2 };

export interface IdleCollectHooks {
  /** The process's CPU time so far, ms. */
  cpuMs(): number;
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
  collect: () => gc({ type: 'major', execution: 'sync', flavor: 'last-resort' }),
  every: (ms, cb) => { const t = setInterval(cb, ms); t.unref(); return () => clearInterval(t); },
});

/**
 * Samples the CPU every interval and collects once the process has been quiet for `quietIntervals` after work.
 * `onCollect` hears how long each collection took (ms). Returns a stop.
 */
export function startIdleCollect(hooks: IdleCollectHooks, onCollect?: (ms: number) => void,
  opts: IdleCollectOptions = IDLE_COLLECT): () => void {
  let last = hooks.cpuMs();
  let quiet = 0;
  let workedSinceCollect = true;
  return hooks.every(opts.intervalMs, () => {
    const now = hooks.cpuMs();
    const used = now - last;
    last = now;
    if (used >= opts.quietCpuMs) {
      quiet = 0;
      workedSinceCollect = true;
      return;
    }
    if (++quiet < opts.quietIntervals || !workedSinceCollect) return;
    const t0 = performance.now();
    hooks.collect();
    onCollect?.(performance.now() - t0);
    workedSinceCollect = false;
    quiet = 0;
    // The collection's own CPU is not work.
    last = hooks.cpuMs();
  });
}
