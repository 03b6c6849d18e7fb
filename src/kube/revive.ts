// Watch events arrive as parsed JSON; the typed models carry Date objects for timestamps. Turning just the
// known timestamp fields into Dates gives the same shape as client-node's ObjectSerializer at a fraction
// of the cost, and without its habit of giving every model instance every field (undefined) as its own
// property, which multiplied the memory held per object.

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

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

function walk(v: Json): void {
  if (Array.isArray(v)) {
    for (const x of v) if (x !== null && typeof x === 'object') walk(x);
    return;
  }
  if (v === null || typeof v !== 'object') return;
  const o = v as Record<string, unknown>;
  for (const k in o) {
    const x = o[k];
    if (typeof x === 'string') {
      if (TIME_FIELDS.has(k)) o[k] = new Date(x);
    } else if (x !== null && typeof x === 'object' && !OPAQUE_FIELDS.has(k)) {
      walk(x as Json);
    }
  }
}

/** Parsed JSON of a Kubernetes object → the typed model's shape (timestamps as Date), in place. managedFields dropped. */
export function revive<T>(raw: unknown): T {
  const meta = (raw as { metadata?: { managedFields?: unknown } } | null)?.metadata;
  if (meta?.managedFields) delete meta.managedFields;
  walk(raw as Json);
  return raw as T;
}
