// The identity of an object the API server returned: its metadata always has a name and a UID, and a namespace
// when its kind is namespaced. These accessors give them as strings, and throw an Error naming the field on an
// object that lacks one. Pure.
import type { KubernetesObject } from '@kubernetes/client-node';

export interface ObjectId { namespace: string; name: string; uid: string }

type IdField = keyof ObjectId;

/** The namespace, name and UID of a namespaced object. */
export function objectId(o: KubernetesObject): ObjectId {
  return { namespace: field(o, 'namespace'), name: field(o, 'name'), uid: field(o, 'uid') };
}

/** The namespace and name of a namespaced object. */
export function namespacedName(o: KubernetesObject): { namespace: string; name: string } {
  return { namespace: field(o, 'namespace'), name: field(o, 'name') };
}

export function nameOf(o: KubernetesObject): string {
  return field(o, 'name');
}

export function uidOf(o: KubernetesObject): string {
  return field(o, 'uid');
}

function field(o: KubernetesObject, f: IdField): string {
  const value = o.metadata?.[f];
  if (value === undefined) throw new Error(`${identify(o)} has no metadata.${f}`);
  return value;
}

/** `<kind> <namespace>/<name>`, as much of it as the object has. */
function identify(o: KubernetesObject): string {
  const m = o.metadata;
  const where = m?.name === undefined ? '' : ` ${m.namespace === undefined ? '' : `${m.namespace}/`}${m.name}`;
  return `${o.kind ?? 'object'}${where}`;
}
