// What real nodes (test/harness/realnode.ts) decide before they touch the machine: whether its cgroups can hold
// them, and pod ranges no route of the machine meets; and the names of the images they run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { cgroupSupport, podRangeBase } from '../../harness/realnode.ts';
import { BUSYBOX_IMAGE, PAUSE_IMAGE } from '../../harness/images.ts';

test('cgroup v2 alone, no cgroup v1 hierarchies, or no pids hierarchy: real nodes stop with why; v1 or hybrid: they run', () => {
  assert.match(cgroupSupport(0x63677270, false) ?? '', /cgroup v2 alone .*real nodes need cgroup v1/);
  assert.match(cgroupSupport(0x9123683e, false) ?? '', /no cgroup v1 hierarchies/);
  assert.match(cgroupSupport(undefined, false) ?? '', /no cgroup v1 hierarchies/);
  assert.match(cgroupSupport(0x01021994, false) ?? '', /no cgroup v1 pids hierarchy/);
  assert.equal(cgroupSupport(0x01021994, true), undefined);
});

test('pod ranges meet no route of the machine: the default route is no obstacle, a covering or a taken /24 is', () => {
  const at = (n: number) => () => (n / 2 + 0.5) / 127;
  assert.equal(podRangeBase(['0.0.0.0/0', '10.0.0.0/8', '198.18.3.0/30'], at(40)), 40);
  // 198.19.41.0/24 is taken: 40 and 41 go together, the next pair is 42 and 43.
  assert.equal(podRangeBase(['0.0.0.0/0', '198.19.41.0/24'], at(40)), 42);
  assert.equal(podRangeBase(['198.19.40.7/32', '198.19.42.0/23'], at(40)), 44);
  // From the last pair round to the first.
  assert.equal(podRangeBase(['198.19.252.0/22'], at(252)), 0);
  assert.throws(() => podRangeBase(['198.19.0.0/16'], at(0)), /meets a route of this machine/);
  assert.throws(() => podRangeBase(['198.16.0.0/12'], at(0)), /meets a route of this machine/);
});

test('hack/build-images.sh builds the test images under the names the real nodes and the suite use, names of our own', () => {
  const script = readFileSync(new URL('../../../hack/build-images.sh', import.meta.url), 'utf8');
  assert.equal(/^PAUSE_REF=(.*)$/m.exec(script)?.[1], PAUSE_IMAGE);
  assert.equal(/^BUSYBOX_REF=(.*)$/m.exec(script)?.[1], BUSYBOX_IMAGE);
  for (const name of [PAUSE_IMAGE, BUSYBOX_IMAGE]) assert.match(name, /^localhost\/clusterlet-test\//);
});
