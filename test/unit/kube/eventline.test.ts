import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseEventLine } from '../../../src/kube/eventline.ts';

const MANAGED = [
  { manager: 'kwok', operation: 'Update', apiVersion: 'v1', time: '2026-11-24T12:00:00Z', fieldsType: 'FieldsV1', subresource: 'status',
    fieldsV1: { 'f:status': { 'f:conditions': { 'k:{"type":"Ready"}': { '.': {}, 'f:status': {} } }, 'f:podIP': {} } } },
  { manager: 'clusterlet', operation: 'Update', apiVersion: 'v1', fieldsType: 'FieldsV1',
    fieldsV1: { 'f:metadata': { 'f:annotations': { 'f:a]}"[{': {} } }, 'f:spec': { 'f:containers': { 'k:{"name":"c"}': {} } } } },
];

/** `text` as it arrives: other events before and after it in the same chunk. */
function inChunk(text: string): { b: Buffer; start: number; end: number } {
  const before = Buffer.from('{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"1"}}}\n');
  const line = Buffer.from(text);
  const after = Buffer.from('\n{"type":"ADDED","object":{"metadata":{"name":"next","managedFields":[{"manager":"x"}]}}}\n');
  return { b: Buffer.concat([before, line, after]), start: before.length, end: before.length + line.length };
}

const parse = (text: string): unknown => { const c = inChunk(text); return parseEventLine(c.b, c.start, c.end); };
const withoutManaged = (ev: { object: { metadata: Record<string, unknown> } }): unknown => {
  const copy = structuredClone(ev);
  delete copy.object.metadata.managedFields;
  return copy;
};

describe('parseEventLine', () => {
  const pod = {
    kind: 'Pod', apiVersion: 'v1',
    metadata: {
      name: 'web-1', namespace: 'ns', labels: { app: 'web' },
      // Strings that look like the markers: escaped quotes inside a string never end it.
      annotations: { note: '"managedFields":[ "metadata":{ ]]}}', 'x/y': 'ünïcødé ✓ \\"' },
      managedFields: MANAGED,
    },
    spec: { containers: [{ name: 'c', image: 'i', args: ['[', '{', ']'] }] },
    status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
  };
  type Ev = { type: string; object: { metadata: Record<string, unknown>; [k: string]: unknown } };
  const cases: [string, Ev][] = [
    ['a typed object (managedFields last in its metadata)', { type: 'MODIFIED', object: pod }],
    ['a custom resource (keys sorted: a field after managedFields)', { type: 'ADDED', object: {
      apiVersion: 'x/v1', kind: 'X',
      metadata: { annotations: { a: 'b' }, managedFields: MANAGED, name: 'x', resourceVersion: '5' }, spec: { managedFields: [1] } } }],
    ['managedFields alone in the metadata', { type: 'ADDED', object: { metadata: { managedFields: MANAGED } } }],
    ['a nested managedFields key before the metadata\'s own (kept)', { type: 'ADDED', object: {
      metadata: { x: { managedFields: [{ y: ['[]'] }] }, name: 'n', managedFields: MANAGED } } }],
    ['no managedFields', { type: 'DELETED', object: { metadata: { name: 'a' }, spec: { managedFields: ['kept: not the metadata\'s'] } } }],
    ['an ERROR event', { type: 'ERROR', object: { kind: 'Status', metadata: {}, code: 410, message: 'too old' } as never }],
  ];
  for (const [what, ev] of cases) {
    it(`${what}: the same value as JSON.parse, without the metadata's managedFields`, () => {
      assert.deepEqual(parse(JSON.stringify(ev)), withoutManaged(ev));
    });
  }

  it('parses a line whose managedFields do not end within it whole, as JSON.parse would (an error for bad JSON)', () => {
    assert.throws(() => parse('{"type":"ADDED","object":{"metadata":{"managedFields":[{"a":"]"}'), SyntaxError);
    assert.throws(() => parse('{"type":"ADDED","object":{"metadata":{"managedFields":[}}}'), SyntaxError);
  });

  it('reads only its own line: the next event\'s managedFields are not cut into it', () => {
    const line = JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'a' } } });
    assert.deepEqual(parse(line), { type: 'ADDED', object: { metadata: { name: 'a' } } });
  });
});
