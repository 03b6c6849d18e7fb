// The V8 flags clusterlet runs with, wherever it is started: the image's entrypoint, the `clusterlet` bin's
// shebang, `make demo`, the test suite and the benchmark (a unit test keeps the Dockerfile and the shebang in step).
// --optimize-for-size: peak RSS at 1,000 offloaded pods 264 MB → 127 MB, with no CPU cost the benchmark could see.
// NODE_OPTIONS refuses it, so it goes on the command line.
export const NODE_FLAGS: readonly string[] = ['--optimize-for-size'];
