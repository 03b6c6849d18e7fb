// One watch event line (JSON bytes) → its parsed value, without the object's metadata.managedFields.
// managedFields are about a third of a pod's JSON (a delegate or a proxy written by two managers) and, as many small
// nested objects, more of what JSON.parse allocates; nothing in clusterlet reads them, so parsing them only to drop
// them is wasted. They are cut from the bytes before parsing: for a Pod found by native searches for the markers of
// its layout, else by a walk of the metadata's top level.
// A pod's watch also hands over its whole spec again in every event (bound, each status write, the deletion), though
// it seldom changes: given the specs its store has (KnownSpec), the parse reuses the stored one where the bytes are the
// same, and parses only the metadata and status. bench/tools/eventcost.ts times this on the events of a real offloaded pod;
// see docs/performance.md, 'The event line parser'.

import { hash } from 'node:crypto';
import type { V1ObjectMeta } from '@kubernetes/client-node';
import { revivePart, revivedTag } from './revive.ts';

const METADATA = Buffer.from('"metadata":{');
const MANAGED = Buffer.from('"managedFields":[');
const QUOTE = 0x22, BACKSLASH = 0x5c, COMMA = 0x2c;
const OPEN_ARRAY = 0x5b, CLOSE_ARRAY = 0x5d, OPEN_OBJECT = 0x7b, CLOSE_OBJECT = 0x7d;

/** The index just after the string whose opening quote is just before `i`, or -1 if it does not end before `end`. */
function stringEnd(b: Buffer, i: number, end: number): number {
  while (i < end) {
    const d = b[i++];
    if (d === BACKSLASH) i++;
    else if (d === QUOTE) return i;
  }
  return -1;
}

/**
 * The index just after the closer of the array or object whose opener is just before `from`, in `b` up to `end`; -1 if
 * it does not close there or closes with another bracket than `closer`. Brackets in strings are skipped; UTF-8
 * continuation bytes are never ASCII, so the scan is byte-wise.
 */
function closeOf(b: Buffer, from: number, end: number, closer: number): number {
  let depth = 1;
  for (let i = from; i < end;) {
    const c = b[i++];
    if (c === QUOTE) {
      if ((i = stringEnd(b, i, end)) < 0) return -1;
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) depth++;
    else if ((c === CLOSE_ARRAY || c === CLOSE_OBJECT) && --depth === 0) return c === closer ? i : -1;
  }
  return -1;
}

/**
 * Where `"managedFields":[` starts as a key of the object whose `{` is just before `from`, walking that object's top
 * level (strings and nested values skipped whole); -1 if it is not a key there.
 */
function managedFieldsAt(b: Buffer, from: number, end: number): number {
  for (let i = from; i < end;) {
    const c = b[i];
    if (c === QUOTE) {
      const key = i + MANAGED.length;
      if (b[i + 1] === MANAGED[1] && key <= end && b.compare(MANAGED, 0, MANAGED.length, i, key) === 0) return i;
      if ((i = stringEnd(b, i + 1, end)) < 0) return -1;
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if ((i = closeOf(b, i + 1, end, c === OPEN_ARRAY ? CLOSE_ARRAY : CLOSE_OBJECT)) < 0) return -1;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) return -1;
    else i++;
  }
  return -1;
}

/**
 * The spec the store already has for the object `namespace`/`name` (as parseEventLine returned it), if any. A watch of
 * pods sees each pod's whole spec again in every event of its life (the binding, every status write, the deletion),
 * yet a pod's spec seldom changes: where an event's spec bytes are those of the stored spec, the stored spec is reused
 * instead of being parsed and revived again. A reused spec is shared by the pod's versions in the store, and by the
 * `object` and `old` of the informer's events: like everything an informer stores, it is never to be changed.
 * `metadata` is the event's (parsed, not yet revived): the store may keep another shape of the spec for some objects
 * than for others (the member's pods, member/podshapes.ts), and answer for the shape the event's object will get.
 */
export type KnownSpec = (namespace: string, name: string, metadata: V1ObjectMeta) => object | undefined;

// A Pod as kube-apiserver writes it: `{"kind":"Pod","apiVersion":"v1","metadata":{…,"managedFields":[…]},"spec":{…},"status":{…}}`.
/** What comes before a Pod's metadata in its watch event. */
const POD = Buffer.from('"object":{"kind":"Pod","apiVersion":"v1",');
const MANAGED_LAST = Buffer.from(',"managedFields":[');
/** The metadata's `}`, then the spec. */
const END_METADATA = Buffer.from('},"spec":{');
/** The spec's `}`, then the status. */
const THEN_STATUS = Buffer.from('},"status":{');
/** What stands for the spec in the text parsed, until the spec is set. */
const ZERO = Buffer.from('0');

/**
 * JSON.parse of `b[start, end)`, one watch event (`{"type":…,"object":{…}}`), with the object's managedFields cut out
 * before parsing: the `"managedFields":[…]` key of the first `"metadata":{` (the object's own: kube-apiserver writes
 * kind and apiVersion, then metadata, typed kinds in field order and custom resources in key order). For what
 * kube-apiserver sends, the result is JSON.parse's with managedFields dropped, only cheaper; bytes of another shape are
 * walked (any layout) or parsed whole.
 *
 * With `known`, a Pod's spec comes revived (revive.ts): the stored one where the bytes are the same (by SHA-256), else
 * parsed on its own; revive then skips it.
 */
export function parseEventLine(b: Buffer, start: number, end: number, known?: KnownSpec): unknown {
  // A view of the line alone, so that a search does not run on into the events after it in the same chunk.
  const line = b.subarray(start, end);
  const meta = line.indexOf(METADATA);
  if (meta < 0) return JSON.parse(line.toString('utf8'));
  return pod(line, meta, known) ?? walked(line, meta);
}

/**
 * The event of a Pod as kube-apiserver writes it, cut at its layout's markers found by native searches; undefined for
 * any other object (then walked). The Go encoder writes a core/v1 Pod's fields in their order: kind, apiVersion,
 * metadata, spec, status, and nothing else, each key once; metadata is an ObjectMeta, whose managedFields come last and
 * whose other nested objects are string maps and owner references (no "spec" key). A marker cannot match inside a
 * string (its quotes would end the string), so each match is structure:
 * - the metadata ends at the first `},"spec":{` after it; a `,"managedFields":[` before that is its own, and ends
 *   with it: the `]` just before (a pod whose metadata has none is walked);
 * - the spec's first `},"status":{` is its end, or one deeper inside it, where the text cut has unbalanced brackets,
 *   which JSON.parse refuses (then walked).
 * Other kinds are not cut this way: a custom resource's keys are sorted, so a field of its own can end in `]}` before
 * its spec.
 */
function pod(line: Buffer, meta: number, known: KnownSpec | undefined): unknown {
  if (meta < POD.length || line.compare(POD, 0, POD.length, meta - POD.length, meta) !== 0) return undefined;
  const metaEnd = line.indexOf(END_METADATA, meta);
  const managed = line.indexOf(MANAGED_LAST, meta);
  if (metaEnd < 0 || managed < 0 || managed > metaEnd || line[metaEnd - 1] !== CLOSE_ARRAY) return undefined;
  const specFrom = metaEnd + END_METADATA.length - 1;
  try {
    const specTo = known ? line.indexOf(THEN_STATUS, specFrom) + 1 : 0;
    if (!known || specTo <= 0) return parseOf([line.subarray(0, managed), line.subarray(metaEnd)]);
    const ev = parseOf([line.subarray(0, managed), line.subarray(metaEnd, specFrom), ZERO, line.subarray(specTo)]) as Parsed;
    if (!ev?.object) return undefined;
    setSpec(ev.object, line.subarray(specFrom, specTo), known);
    return ev;
  } catch {
    return undefined;
  }
}

type Parsed = { object?: { metadata?: V1ObjectMeta; spec?: unknown } } | null;

/** Sets `obj.spec` (a placeholder) to the spec of `bytes`: the stored one if the same, else parsed and revived. */
function setSpec(obj: NonNullable<NonNullable<Parsed>['object']>, bytes: Buffer, known: KnownSpec): void {
  const digest = hash('sha256', bytes, 'base64');
  const m = obj.metadata;
  const stored = typeof m?.name === 'string' ? known(typeof m.namespace === 'string' ? m.namespace : '', m.name, m) : undefined;
  if (stored !== undefined && revivedTag(stored) === digest) {
    obj.spec = stored;
  } else {
    // The bytes of one object: the text around them parsed, so they are balanced and begin with `{`.
    const spec = JSON.parse(bytes.toString('utf8')) as object;
    revivePart(spec, digest);
    obj.spec = spec;
  }
}

/** The event, its managedFields found by walking its metadata's top level (any layout), and cut out if found. */
function walked(line: Buffer, meta: number): unknown {
  const at = managedFieldsAt(line, meta + METADATA.length, line.length);
  if (at >= 0) {
    const close = closeOf(line, at + MANAGED.length, line.length, CLOSE_ARRAY);
    if (close > 0) {
      // `,"managedFields":[…]` when it follows a field (typed kinds: last in metadata), or `"managedFields":[…],` when
      // a field follows it (custom resources: keys sorted).
      let from = at;
      let to = close;
      if (line[from - 1] === COMMA) from--;
      else if (line[to] === COMMA) to++;
      return parseOf([line.subarray(0, from), line.subarray(to)]);
    }
  }
  return JSON.parse(line.toString('utf8'));
}

/**
 * JSON.parse of the bytes of `parts` one after the other. Joined as bytes and decoded once: strings joined with `+`
 * make a rope that V8 flattens before JSON.parse reads it, which costs more (docs/performance.md, 'The event line
 * parser').
 */
function parseOf(parts: Buffer[]): unknown {
  return JSON.parse(Buffer.concat(parts).toString('utf8'));
}
