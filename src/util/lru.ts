// Bounds for lru-cache. Its `max` option preallocates every slot up front (two arrays of `max` pointers plus
// three Uint32Arrays: about 28 bytes a slot) even while the cache is empty, so caches sized for 10,000 pods would
// hold megabytes of an idle process's heap. `maxSize` with a size of 1 per entry gives the same bound on the number
// of entries with storage that grows as entries come (docs/performance.md, 'Small caches, no ICU collation, no
// fs/promises').

/** lru-cache options that keep at most `n` entries, without preallocating them. */
export function upTo(n: number): { maxSize: number; sizeCalculation: () => number } {
  return { maxSize: n, sizeCalculation: () => 1 };
}
