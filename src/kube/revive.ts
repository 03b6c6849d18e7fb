// Watch events arrive as parsed JSON; the typed models carry Date objects for timestamps. Turning just the
// known timestamp fields into Dates gives the same shape as client-node's ObjectSerializer at a fraction
// of the cost, and without its habit of giving every model instance every field (undefined) as its own
// property, which multiplies the memory held per object.
// The walk also shares repeated strings: JSON.parse gives every pod its own copy of its namespace, image, node name,
// mount paths, toleration keys, scheduler name and so on, and the informers keep two pods (proxy and delegate) per
// offloaded pod, so the same few values would be held thousands of times over (docs/performance.md, 'Watch events
// revived in place, repeated strings shared').

/** Fields that hold metav1.Time / MicroTime in the kinds clusterlet watches. */
const TIME_FIELDS = new Set([
  'creationTimestamp', 'deletionTimestamp', 'startTime', 'lastTransitionTime', 'lastProbeTime', 'lastHeartbeatTime',
  'startedAt', 'finishedAt', 'firstTimestamp', 'lastTimestamp', 'eventTime', 'lastObservedTime', 'renewTime',
  'acquireTime', 'lastUpdateTime', 'completionTime', 'time', 'expirationTimestamp',
]);
/** String maps and opaque payloads: user keys in them are never timestamps. */
const OPAQUE_FIELDS = new Set([
  'labels', 'annotations', 'data', 'binaryData', 'stringData', 'capacity', 'allocatable', 'requests', 'limits',
  'nodeSelector', 'managedFields', 'fieldsV1', 'overhead', 'matchLabels', 'selector',
]);

/**
 * Fields whose values are (nearly) unique to their object, or a credential: not worth a lookup, and they would crowd the
 * table. Strings in arrays are not shared either (addresses, arguments); nor what revive does not walk (data, labels).
 */
const UNIQUE_FIELDS = new Set([
  'name', 'uid', 'resourceVersion', 'generateName', 'message', 'podIP', 'ip', 'containerID', 'imageID', 'hostname',
  'note', 'continue', 'selfLink', 'token', 'clusterIP',
]);
/** Longer values are rarely repeated (a message, a certificate) and cost more to hash than they save. */
const MAX_SHARED_LENGTH = 96;
/** Distinct values the table holds at most; when full it starts again, so it stays bounded whatever comes in. */
export const MAX_SHARED_VALUES = 8_192;

/** The one copy of each repeated value seen recently. */
const shared = new Map<string, string>();

/** `s`, or an equal string seen before (the copy kept): equal strings share their memory. */
export function share(s: string): string {
  if (s.length > MAX_SHARED_LENGTH) return s;
  const known = shared.get(s);
  if (known !== undefined) return known;
  if (shared.size >= MAX_SHARED_VALUES) shared.clear();
  shared.set(s, s);
  return s;
}

/** How many values the table holds (for tests). */
export const sharedValues = (): number => shared.size;

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

function walk(v: Json): void {
  if (Array.isArray(v)) {
    for (const x of v) if (x !== null && typeof x === 'object') walk(x);
    return;
  }
  if (v === null || typeof v !== 'object') return;
  const o = v as Record<string, unknown>;
  for (const k in o) visit(o, k);
}

/** One field of an object: a timestamp revived, a string shared, an object walked. */
function visit(o: Record<string, unknown>, k: string): void {
  const x = o[k];
  if (typeof x === 'string') {
    if (TIME_FIELDS.has(k)) o[k] = new Date(x);
    else if (!UNIQUE_FIELDS.has(k)) o[k] = share(x);
  } else if (x !== null && typeof x === 'object' && !OPAQUE_FIELDS.has(k)) {
    walk(x as Json);
  }
}

/**
 * Parts of objects revived ahead of their object (a pod's spec parsed on its own, eventline.ts), each with the tag its
 * reviver knows it by (eventline: a digest of its bytes); revive skips them. Weak: an entry goes with its part.
 */
const revived = new WeakMap<object, string>();

/** Revives one part of an object on its own, ahead of the object: `revive` of the object then leaves it as it is. */
export function revivePart(part: object, tag: string): void {
  walk(part as Json);
  tagPart(part, tag);
}

/**
 * Tags a part made of another revived part's values (a copy of some of its fields, nothing of its own to revive) with
 * that part's tag: it stands for the same bytes, and `revive` leaves it as it is.
 */
export function tagPart(part: object, tag: string): void {
  revived.set(part, tag);
}

/** The tag `part` was revived with by revivePart, if it was. */
export const revivedTag = (part: object): string | undefined => revived.get(part);

/**
 * Parsed JSON of a Kubernetes object → the typed model's shape (timestamps as Date), in place, its repeated values shared.
 * managedFields dropped.
 */
export function revive<T>(raw: unknown): T {
  if (raw === null || typeof raw !== 'object') return raw as T;
  const o = raw as Record<string, unknown>;
  const meta = o.metadata as { managedFields?: unknown } | undefined;
  if (meta?.managedFields) delete meta.managedFields;
  const spec = o.spec;
  if (spec !== null && typeof spec === 'object' && revived.has(spec)) {
    for (const k in o) if (k !== 'spec') visit(o, k);
  } else {
    walk(o as Json);
  }
  return raw as T;
}
