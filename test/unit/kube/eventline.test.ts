import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parseEventLine, type KnownSpec } from '../../../src/kube/eventline.ts';
import { revive } from '../../../src/kube/revive.ts';

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

// Real events: one offloaded pod from creation to deletion, as clusterlet's two pod watches got them (bench/tools/eventcost.ts,
// 2026-11-28): its proxy on the host (a namespace watch: unbound, bound, status written, deleted) and its delegate.
const FIXTURE = JSON.parse(readFileSync(new URL('./fixtures/pod-watch-events.json', import.meta.url), 'utf8')) as
  Record<'proxies' | 'delegates', string[]>;

type Pod = { metadata: { namespace: string; name: string; managedFields?: unknown }; spec?: object; status?: object };

/** The lines of `lines` parsed with a store's specs known, as an informer keeps them; the objects revived, in order. */
function replay(lines: string[], known = true): Pod[] {
  const store = new Map<string, Pod>();
  const specs: KnownSpec = (namespace, name) => store.get(`${namespace}/${name}`)?.spec;
  return lines.map((text) => {
    const b = Buffer.from(text);
    const ev = parseEventLine(b, 0, b.length, known ? specs : undefined) as { type: string; object: Pod };
    const pod = revive<Pod>(ev.object);
    const key = `${pod.metadata.namespace}/${pod.metadata.name}`;
    if (ev.type === 'DELETED') store.delete(key); else store.set(key, pod);
    return pod;
  });
}

/** What the informer had before: each line parsed whole, managedFields dropped, revived. */
const whole = (text: string): Pod => {
  const o = (JSON.parse(text) as { object: Pod }).object;
  delete o.metadata.managedFields;
  return revive<Pod>(o);
};

describe('parseEventLine with the store\'s specs known', () => {
  for (const [stream, lines] of Object.entries(FIXTURE)) {
    it(`${stream}: gives each event's object as parsing it whole does, and reuses the stored spec where its bytes are the same`, () => {
      const pods = replay(lines);
      assert.deepEqual(pods, lines.map(whole));
      assert.deepEqual(replay(lines, false), lines.map(whole));
      // Reused exactly where the spec's JSON is the previous event's (the binding changes it; status writes and the
      // deletion do not).
      const same = lines.map((l, i) => i > 0 && JSON.stringify(JSON.parse(l).object.spec) === JSON.stringify(JSON.parse(lines[i - 1]!).object.spec));
      assert.deepEqual(pods.map((p, i) => i > 0 && p.spec === pods[i - 1]!.spec), same);
      assert.ok(same.filter(Boolean).length >= 3, 'the fixture has events whose spec did not change');
    });
  }

  const pod = (spec: object, status: object = { phase: 'Pending' }) => ({
    kind: 'Pod', apiVersion: 'v1',
    metadata: { name: 'p', namespace: 'ns', resourceVersion: '1', managedFields: MANAGED }, spec, status,
  });
  const line = (type: string, object: object): Buffer => Buffer.from(JSON.stringify({ type, object }));
  const parsed = (b: Buffer, known: KnownSpec): Pod => (parseEventLine(b, 0, b.length, known) as { object: Pod }).object;
  const spec = { containers: [{ name: 'c', image: 'i:1' }], nodeName: 'n' };

  it('parses a spec that changed (an image, a resize) anew', () => {
    const first = parsed(line('ADDED', pod(spec)), () => undefined);
    const changed = { ...spec, containers: [{ name: 'c', image: 'i:2' }] };
    const next = parsed(line('MODIFIED', pod(changed)), () => first.spec);
    assert.notEqual(next.spec, first.spec);
    assert.deepEqual(next.spec, changed);
  });

  it('reuses only a spec it parsed itself, of the object asked for: never one made elsewhere or of another key', () => {
    const asked: string[] = [];
    const first = parsed(line('ADDED', pod(spec)), (ns, name) => { asked.push(`${ns}/${name}`); return undefined; });
    assert.deepEqual(asked, ['ns/p']);
    // The same bytes, but the store's spec was not parsed from them (a seed, a transform's copy).
    const copy = structuredClone(first.spec!);
    assert.notEqual(parsed(line('MODIFIED', pod(spec)), () => copy).spec, copy);
    assert.equal(parsed(line('MODIFIED', pod(spec)), () => first.spec).spec, first.spec);
  });

  it('revives a spec it parsed (timestamps as Dates), as revive of the whole object would', () => {
    const withTime = { ...spec, containers: [{ name: 'c', image: 'i:1', lifecycle: { x: { lastProbeTime: '2026-01-02T03:04:05Z' } } }] };
    const got = revive<Pod>(parsed(line('ADDED', pod(withTime)), () => undefined));
    assert.deepEqual(got, revive(JSON.parse(JSON.stringify({ ...pod(withTime), metadata: { name: 'p', namespace: 'ns', resourceVersion: '1' } }))));
    assert.ok((got.spec as { containers: { lifecycle: { x: { lastProbeTime: unknown } } }[] }).containers[0]!.lifecycle.x.lastProbeTime instanceof Date);
  });

  // A marker of the layout matched where it is not the boundary: parsed the careful way, the same value.
  const odd: [string, object][] = [
    ['a spec with a key "status" after an object', pod({ a: { b: 1 }, status: { c: '},"status":{' } })],
    ['no status', { kind: 'Pod', apiVersion: 'v1', metadata: { name: 'p', namespace: 'ns', managedFields: MANAGED }, spec }],
    ['no spec', { kind: 'Pod', apiVersion: 'v1', metadata: { name: 'p', namespace: 'ns', managedFields: MANAGED }, status: { phase: 'Pending' } }],
    ['no managedFields', { kind: 'Pod', apiVersion: 'v1', metadata: { name: 'p', namespace: 'ns' }, spec, status: {} }],
    // Not its own: the metadata has none, an object deeper in the spec has managedFields, a spec and a status.
    ['no managedFields, an object in the spec with them', { kind: 'Pod', apiVersion: 'v1', metadata: { name: 'p', namespace: 'ns' },
      spec: { t: { metadata: { a: 1, managedFields: [] }, spec: { c: 1 }, status: {} } }, status: { phase: 'x' } }],
    ['a custom resource (keys sorted)', { apiVersion: 'x/v1', kind: 'X', metadata: { managedFields: MANAGED, name: 'p', namespace: 'ns', uid: 'u' },
      spec: { list: [1] }, status: { list: [{}] } }],
    // Its own field before the spec ends in `]}`: the markers alone would cut from its managedFields to there.
    ['a custom resource with a field ending in an array before its spec', { apiVersion: 'x/v1', kind: 'X',
      metadata: { creationTimestamp: '2026-01-01T00:00:00Z', managedFields: MANAGED, name: 'p', namespace: 'ns', uid: 'u' },
      provider: { zones: ['a'] }, spec: { x: 1 } }],
  ];
  for (const [what, object] of odd) {
    it(`${what}: the same value as JSON.parse, without managedFields`, () => {
      const got = parseEventLine(line('MODIFIED', object), 0, line('MODIFIED', object).length, () => undefined);
      assert.deepEqual(got, withoutManaged({ type: 'MODIFIED', object } as { type: string; object: { metadata: Record<string, unknown> } }));
    });
  }

  it('throws on a line that is not JSON, as JSON.parse does', () => {
    const bad = Buffer.from('{"type":"MODIFIED","object":{"metadata":{"managedFields":[]},"spec":{"a":1},"status":{');
    assert.throws(() => parseEventLine(bad, 0, bad.length, () => undefined), SyntaxError);
  });
});
