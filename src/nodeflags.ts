// The V8 flags clusterlet runs with, wherever it is started: the image's entrypoint, the `clusterlet` bin's
// shebang, `make demo`, the test suite and the benchmark (a unit test keeps the Dockerfile and the shebang in step).
// --max-semi-space-size=4 --heap-growing-percent=10: a young generation of up to 4 MB a semi-space, and an old
// generation that grows by 10 % between full collections. Together they keep the peak RSS low at a small CPU cost.
// A smaller young generation promotes what lives across one request, to be marked by full collections, which costs
// more CPU (V8's helper threads most) for little memory saved. V8's defaults cost much more memory; --optimize-for-size
// costs more CPU (it also makes V8's compilers and runtime favour size over speed). Past the knee of HEAP_GROWTH
// (src/heapgrowth.ts), the percentage rises with the heap, so that a large heap is not marked whole for every 10 % it
// grows.
// --no-node-snapshot: Node builds its bootstrap by running its internal modules (from their code cache) instead of
// deserializing its startup snapshot, which leaves the snapshot's pages of the node binary (read once, then kept
// resident as part of the process) untouched: less RSS, for a slightly slower start.
// --expose-gc: the collector src/idlecollect.ts calls once clusterlet goes quiet after its heap grew.
// See docs/performance.md, 'V8 flags and MALLOC_ARENA_MAX', for the measurements behind each.
export const NODE_FLAGS: readonly string[] = ['--max-semi-space-size=4', '--heap-growing-percent=10', '--no-node-snapshot', '--expose-gc'];

// The environment clusterlet runs with, in the same places (the unit test keeps the Dockerfile's ENV and the
// shebang in step). MALLOC_ARENA_MAX=2: glibc's malloc otherwise keeps an arena per thread that allocates (V8's
// compiler and GC threads, libuv's pool), each holding on to what was freed in it; two arenas lower the peak RSS
// and the CPU, and leave the idle RSS as it is (docs/performance.md, 'V8 flags and MALLOC_ARENA_MAX').
export const NODE_ENV_VARS: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2' };
