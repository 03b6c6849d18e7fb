// The test images hack/build-images.sh builds, under names of our own: loaded elsewhere (`docker load`, `kind load`,
// `ctr images import`), an official name (registry.k8s.io/pause, docker.io/library/busybox) would shadow the real
// image with ours. test/unit/harness/realnode.test.ts checks the script builds these names.
/** The sandbox ("pause") image of the real nodes' containerd. */
export const PAUSE_IMAGE = 'localhost/clusterlet-test/pause:3.10';
/** The e2e suite's workload image on the real nodes: Debian's busybox-static. */
export const BUSYBOX_IMAGE = 'localhost/clusterlet-test/busybox:1.36';
