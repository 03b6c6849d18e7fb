// The V8 flags clusterlet runs with, wherever it is started: the image's entrypoint, the `clusterlet` bin's
// shebang, `make demo`, the test suite and the benchmark (a unit test keeps the Dockerfile and the shebang in step).
// --max-semi-space-size=4 --heap-growing-percent=10: a young generation of up to 4 MB a semi-space, and an old
// generation that grows by 10 % between full collections. That is what keeps the peak RSS at 1,000 offloaded pods near
// 100 MB (264 MB with V8's defaults, when --optimize-for-size was adopted). The young generation was 1 MB until
// 2026-11-29: with 1, what lives across one request is promoted, to be marked by full collections; 1,000-pod and
// 10,000-pod runs, 3 pairs each (interleaved at 10,000), clusterlet CPU median 4.4 -> 4.1 and 4.3 -> 3.9 ms/pod, V8's
// helper threads 9.4-10.1 -> 5.3-6.1 CPU-s at 10,000; peak RSS 100-102 -> 105-107 MB at 1,000 and 202-208 -> 205-215 at
// 10,000, idle RSS 65.6 -> 66.5 MB (bench/results/semi-space-10k-b453b27.md). It used to be --optimize-for-size, which
// sets a 1 MB young generation but also makes V8's compilers and runtime favour size over speed. 1,000-pod bench, offloaded
// runs only, 3 x 3 pairs each, interleaved: clusterlet CPU median 6.7 -> 5.6 ms/pod; peak RSS median 104 -> 109 MB;
// idle RSS the same (68.5-70 MB). Without --heap-growing-percent, peak RSS was 124-157 MB. --single-threaded-gc on top
// of these: 156-159 MB. Above 48 MB of heap in use, src/heapgrowth.ts raises the percentage with the heap (up to 30):
// at 10,000 pods, 10 % meant a full collection for every 10 MB promoted, each marking ~100 MB.
// --no-node-snapshot: Node builds its bootstrap by running its internal modules (from their code cache) instead of
// deserializing its startup snapshot, which leaves the snapshot's pages of the node binary (read once, then kept
// resident as part of the process) untouched. RSS of `dist/cli.js --help` 62.1 -> 57.7 MB, and it starts 60 ms
// slower (0.12-0.13 -> 0.17-0.21 s). 1,000-pod bench, offloaded runs only, 2 x 3 pairs each, interleaved: idle RSS
// 71.1, 70.4 -> 67.4, 68.0 MB; peak RSS median 119 -> 112.5 MB; clusterlet CPU median 7.85 -> 7.05 ms/pod.
// --expose-gc: the collector src/idlecollect.ts calls once clusterlet goes quiet after its heap grew.
export const NODE_FLAGS: readonly string[] = ['--max-semi-space-size=4', '--heap-growing-percent=10', '--no-node-snapshot', '--expose-gc'];

// The environment clusterlet runs with, in the same places (the unit test keeps the Dockerfile's ENV and the
// shebang in step). MALLOC_ARENA_MAX=2: glibc's malloc otherwise keeps an arena per thread that allocates (V8's
// compiler and GC threads, libuv's pool), each holding on to what was freed in it. 1,000-pod bench, one run each:
// peak RSS 119 -> 114 MB, clusterlet CPU 15.2 -> 13.8 s; idle RSS unchanged (73.4 vs 73.5 MB, 2 runs each).
export const NODE_ENV_VARS: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2' };
