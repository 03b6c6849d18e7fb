// How much V8's old generation may grow between full (mark-compact) collections, scaled with its size.
//
// clusterlet starts with --heap-growing-percent=10 (src/nodeflags.ts): a full collection whenever the old generation has
// grown 10 % since the last one. That keeps the peak RSS low. It also makes the number of full collections grow with
// the heap while each one marks the whole heap: at 10,000 pods the collector's incremental marking takes a large share
// of the main thread's time.
//
// So above a knee the percentage rises with the heap in use, up to a ceiling: below it nothing changes (idle, and up to
// 1,000 pods), above it the steps between full collections get longer. V8 reads the flag each time it sets the next
// limit, after a full collection, which is when this looks at the heap. Its own default does the same kind of thing
// (a factor between 1.1 and 4 from how fast it collects against how fast the program allocates), without a bound
// on the memory it costs. See docs/performance.md, 'Heap growth'.
import { PerformanceObserver, constants } from 'node:perf_hooks';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';

export interface HeapGrowthPolicy {
  /** The percentage up to the knee (the one NODE_FLAGS sets). */
  basePercent: number;
  /** Heap in use above which the percentage rises in proportion to it. */
  kneeBytes: number;
  /** It rises no further than this. */
  maxPercent: number;
}

const MB = 1024 * 1024;
export const HEAP_GROWTH: HeapGrowthPolicy = { basePercent: 10, kneeBytes: 48 * MB, maxPercent: 30 };

/** The growth percentage for `usedBytes` of heap in use: the base up to the knee, then base × used / knee, capped. */
export function growingPercent(usedBytes: number, p: HeapGrowthPolicy = HEAP_GROWTH): number {
  if (usedBytes <= p.kneeBytes) return p.basePercent;
  return Math.min(p.maxPercent, Math.round(p.basePercent * usedBytes / p.kneeBytes));
}

export interface HeapGrowthHooks {
  /** Calls back after each full collection (default: a PerformanceObserver of 'gc' entries); returns a stop. */
  onFullGc(cb: () => void): () => void;
  heapUsed(): number;
  setPercent(percent: number): void;
}

const v8Hooks: HeapGrowthHooks = {
  onFullGc(cb) {
    const obs = new PerformanceObserver((list) => {
      const full = list.getEntries().some((e) => (e as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR);
      if (full) cb();
    });
    obs.observe({ entryTypes: ['gc'] });
    return () => obs.disconnect();
  },
  heapUsed: () => getHeapStatistics().used_heap_size,
  setPercent: (percent) => setFlagsFromString(`--heap-growing-percent=${percent}`),
};

/**
 * After each full collection, sets V8's growth percentage for the heap then in use (only when it changes). Returns a
 * stop. `onChange` hears each change (logged at debug).
 */
export function startHeapGrowth(onChange?: (percent: number, usedBytes: number) => void,
  hooks: HeapGrowthHooks = v8Hooks, policy: HeapGrowthPolicy = HEAP_GROWTH): () => void {
  let current = policy.basePercent;
  return hooks.onFullGc(() => {
    const used = hooks.heapUsed();
    const percent = growingPercent(used, policy);
    if (percent === current) return;
    current = percent;
    hooks.setPercent(percent);
    onChange?.(percent, used);
  });
}
