import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { ObjectSerializer } from '@kubernetes/client-node/dist/gen/models/ObjectSerializer.js';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { MAX_SHARED_VALUES, revive, revivedTag, revivePart, share, sharedValues } from '../../../src/kube/revive.ts';

const pod = () => ({
  metadata: {
    name: 'p', namespace: 'ns', creationTimestamp: '2026-01-02T03:04:05Z', deletionTimestamp: '2026-01-02T03:05:00Z',
    labels: { time: '2026-01-02T03:04:05Z' }, annotations: { startTime: '2026-01-02T03:04:05Z' },
    managedFields: [{ manager: 'x', time: '2026-01-02T03:04:05Z', fieldsV1: { 'f:metadata': {} } }],
  },
  spec: { nodeName: 'n', containers: [{ name: 'c', image: 'i', resources: { requests: { cpu: '1' } } }] },
  status: {
    phase: 'Running', startTime: '2026-01-02T03:04:06Z',
    conditions: [{ type: 'Ready', status: 'True', lastProbeTime: null, lastTransitionTime: '2026-01-02T03:04:07Z' }],
    containerStatuses: [{ name: 'c', ready: true, restartCount: 0, image: 'i', imageID: '',
      state: { running: { startedAt: '2026-01-02T03:04:08Z' } },
      lastState: { terminated: { exitCode: 1, startedAt: '2026-01-02T03:00:00Z', finishedAt: '2026-01-02T03:01:00Z' } } }],
  },
});

describe('revive', () => {
  it('turns exactly the timestamps the typed model has into Dates, as ObjectSerializer does', () => {
    const ours = revive<V1Pod>(pod());
    const theirs = ObjectSerializer.deserialize(pod(), 'V1Pod', '') as V1Pod;
    const pairs: [unknown, unknown][] = [
      [ours.metadata!.creationTimestamp, theirs.metadata!.creationTimestamp],
      [ours.metadata!.deletionTimestamp, theirs.metadata!.deletionTimestamp],
      [ours.status!.startTime, theirs.status!.startTime],
      [ours.status!.conditions![0].lastTransitionTime, theirs.status!.conditions![0].lastTransitionTime],
      [ours.status!.containerStatuses![0].state!.running!.startedAt, theirs.status!.containerStatuses![0].state!.running!.startedAt],
      [ours.status!.containerStatuses![0].lastState!.terminated!.finishedAt, theirs.status!.containerStatuses![0].lastState!.terminated!.finishedAt],
    ];
    for (const [a, b] of pairs) {
      assert.ok(a instanceof Date && b instanceof Date);
      assert.equal(a.getTime(), b.getTime());
    }
    assert.equal(ours.status!.conditions![0].lastProbeTime, null);
  });

  it('leaves label and annotation values alone, even when named like a timestamp', () => {
    const ours = revive<V1Pod>(pod());
    assert.equal(ours.metadata!.labels!.time, '2026-01-02T03:04:05Z');
    assert.equal(ours.metadata!.annotations!.startTime, '2026-01-02T03:04:05Z');
    assert.equal(ours.spec!.containers[0].resources!.requests!.cpu, '1');
  });

  it('drops managedFields', () => {
    assert.equal(revive<V1Pod>(pod()).metadata!.managedFields, undefined);
  });

  it('serialises back to the same timestamps through the typed client', () => {
    const ours = revive<V1Pod>(pod());
    const out = ObjectSerializer.serialize(ours, 'V1Pod', '') as V1Pod;
    assert.equal(out.metadata!.creationTimestamp, '2026-01-02T03:04:05.000Z');
    assert.equal(out.status!.containerStatuses![0].state!.running!.startedAt, '2026-01-02T03:04:08.000Z');
  });

  it('gives equal values of repeated fields one copy, so that a thousand pods do not hold a thousand copies', () => {
    // Heap used by 3,000 parsed pods kept alive, revived or not, measured in a child with a collector it can call.
    const script = `
      const { revive } = await import(${JSON.stringify(fileURLToPath(new URL('../../../src/kube/revive.ts', import.meta.url)))});
      const text = (i) => JSON.stringify({ metadata: { name: 'p' + i, namespace: 'a-namespace-of-forty-characters-0000000' },
        spec: { nodeName: 'a-node-name-of-forty-characters-00000000', serviceAccountName: 'an-account-of-forty-characters-000000000',
          containers: [{ image: 'registry.example/an-image-of-forty-chars:1',
            volumeMounts: [{ mountPath: '/var/run/secrets/kubernetes.io/serviceaccount' }] }] } });
      // The pods are returned with the heap's growth, so they are still alive when it is read.
      const heapOf = (f) => { gc(); const before = process.memoryUsage().heapUsed; const kept = [];
        for (let i = 0; i < 3000; i++) kept.push(f(JSON.parse(text(i)))); gc(); return [process.memoryUsage().heapUsed - before, kept]; };
      const [parsed] = heapOf((o) => o);
      const [revived] = heapOf((o) => revive(o));
      console.log(JSON.stringify({ parsed, revived }));`;
    const out = execFileSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], { encoding: 'utf8' });
    const { parsed, revived } = JSON.parse(out) as { parsed: number; revived: number };
    assert.ok(revived < 0.75 * parsed, `revived pods held ${revived} bytes, parsed ones ${parsed}`);
  });

  it('keeps unique fields and long values out of its table, and the table bounded', () => {
    revive<V1Pod>(pod());
    const before = sharedValues();
    revive({ metadata: { name: 'unique-name-1', uid: 'unique-uid-1', resourceVersion: '123456' } });
    share('x'.repeat(200));
    assert.equal(sharedValues(), before);
    revive({ spec: { nodeName: 'a-node-not-seen-before' } });
    assert.equal(sharedValues(), before + 1, 'a repeated field\'s value is kept');
    for (let i = 0; i < MAX_SHARED_VALUES + 10; i++) share(`value-${i}`);
    assert.ok(sharedValues() <= MAX_SHARED_VALUES);
  });

  it('revives a part on its own ahead of its object, and leaves it as it is in the object\'s revive', () => {
    const p = pod();
    revivePart(p.spec, 'tag');
    assert.equal(revivedTag(p.spec), 'tag');
    assert.equal(revivedTag(pod().spec), undefined);
    // Whatever is in it now is not walked again (a reused spec is revived already); the rest of the object is.
    (p.spec as Record<string, unknown>).startTime = '2026-01-02T03:04:05Z';
    const got = revive<V1Pod & { spec: { startTime: unknown } }>(p);
    assert.equal(got.spec.startTime, '2026-01-02T03:04:05Z');
    assert.ok(got.status!.startTime instanceof Date);
    assert.ok(got.metadata!.creationTimestamp instanceof Date);
    assert.deepEqual(Object.keys(got), ['metadata', 'spec', 'status']);
  });
});
