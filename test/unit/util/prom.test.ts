// The Prometheus text exposition format (src/util/prom.ts): what the member kubelets give, what the kubelet API serves.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parsePrometheus, writePrometheus } from '../../../src/util/prom.ts';

describe('Prometheus text', () => {
  it('parses names, labels (with escapes), values and timestamps; skips comments', () => {
    const s = parsePrometheus('# HELP x y\nx{a="1",b="q\\"uote\\\\d\\n"} 1.5e3 42\ny 2\nbad line {\n');
    assert.deepEqual(s, [
      { name: 'x', labels: { a: '1', b: 'q"uote\\d\n' }, value: 1500, timestamp: 42 },
      { name: 'y', labels: {}, value: 2 },
    ]);
  });

  it('writes what it parses', () => {
    const text = writePrometheus([{ name: 'm', help: 'h', type: 'gauge', samples: [{ labels: { a: 'x"y' }, value: 3, timestamp: 7 }] }]);
    assert.equal(text, '# HELP m h\n# TYPE m gauge\nm{a="x\\"y"} 3 7\n');
    assert.deepEqual(parsePrometheus(text), [{ name: 'm', labels: { a: 'x"y' }, value: 3, timestamp: 7 }]);
  });
});
