// A fake Kubernetes API of objects in memory, any kind by name (ConfigMap, Secret, ServiceAccount, Pod, Namespace…),
// for reflection unit tests: the calls a reflector makes (create, replace, delete with a UID precondition, read) with
// the API's errors, every write recorded, and list-watch streams (label-selected) that an Informer is fed from.
// Changes reach the streams at once, before the call that made them returns. Not a Kubernetes: just enough of one.
import { Observable, Subject } from 'rxjs';
import type { KubernetesObject } from '@kubernetes/client-node';
import { KubeError, ignoreNotFound } from '../../../src/kube/errors.ts';
import { Informer, objectKey } from '../../../src/kube/informer.ts';
import type { ListWatchEvent } from '../../../src/kube/listwatch.ts';
import type { Target } from '../../../src/kube/kinds.ts';

type Obj = KubernetesObject & { data?: unknown; binaryData?: unknown; immutable?: boolean };
type Change = { kind: string; type: 'ADDED' | 'MODIFIED' | 'DELETED'; object: Obj };

/** A write through the API (what a reflector did), or a read. */
export interface Call { verb: 'create' | 'replace' | 'delete' | 'read'; kind: string; key: string }

/** A label selector (`a=b`, `a!=b`, `a`, `!a`, comma-separated) as a predicate. */
export function labelled(selector: string): (o: KubernetesObject) => boolean {
  const terms = selector.split(',').map((t) => t.trim()).filter(Boolean).map((t) => {
    const m = /^(!?)([^!=]+)(?:(!?=)(.*))?$/.exec(t)!;
    return { not: m[1] === '!', key: m[2], op: m[3], value: m[4] };
  });
  return (o) => terms.every(({ not, key, op, value }) => {
    const v = o.metadata?.labels?.[key];
    if (op === '=') return v === value;
    if (op === '!=') return v !== value;
    return not ? v === undefined : v !== undefined;
  });
}

const keyOf = (namespace: string, name: string): string => namespace ? `${namespace}/${name}` : name;

export class FakeObjects {
  readonly calls: Call[] = [];
  #kinds = new Map<string, Map<string, Obj>>();
  #changes = new Subject<Change>();
  #rv = 0;
  #uid = 0;

  /** The object, as stored (a copy). */
  get<T extends KubernetesObject>(kind: string, namespace: string, name: string): T | undefined {
    const o = this.#of(kind).get(keyOf(namespace, name));
    return o && structuredClone(o) as T;
  }

  /** Every object of a kind, as stored (copies). */
  list<T extends KubernetesObject>(kind: string): T[] {
    return [...this.#of(kind).values()].map((o) => structuredClone(o) as T);
  }

  /** Writes through the API of a verb (and kind), e.g. to assert an object was never touched. */
  writes(verb?: Call['verb'], kind?: string): Call[] {
    return this.calls.filter((c) => c.verb !== 'read' && (!verb || c.verb === verb) && (!kind || c.kind === kind));
  }

  /** Creates or replaces an object as another writer would: no checks, not recorded. */
  put<T extends KubernetesObject>(kind: string, obj: T): T {
    const key = objectKey(obj);
    const old = this.#of(kind).get(key);
    const next = structuredClone(obj) as Obj;
    next.metadata = { ...next.metadata, uid: old?.metadata?.uid ?? `uid-${++this.#uid}`, resourceVersion: String(++this.#rv) };
    this.#of(kind).set(key, next);
    this.#changes.next({ kind, type: old ? 'MODIFIED' : 'ADDED', object: next });
    return structuredClone(next) as T;
  }

  /** Deletes an object as another writer would. */
  drop(kind: string, namespace: string, name: string): void {
    const key = keyOf(namespace, name);
    const old = this.#of(kind).get(key);
    if (!old) return;
    this.#of(kind).delete(key);
    this.#changes.next({ kind, type: 'DELETED', object: old });
  }

  async create<T extends KubernetesObject>(kind: string, namespace: string, body: T): Promise<T> {
    const key = keyOf(namespace, body.metadata!.name!);
    if (this.#of(kind).has(key)) throw new KubeError('AlreadyExists', 409, 'AlreadyExists', `${kind} ${key} already exists`);
    this.calls.push({ verb: 'create', kind, key });
    const { uid: _uid, resourceVersion: _rv, ...meta } = body.metadata ?? {};
    return this.put(kind, { ...body, metadata: { ...meta, namespace } });
  }

  async replace<T extends KubernetesObject>(kind: string, namespace: string, name: string, body: T): Promise<T> {
    const key = keyOf(namespace, name);
    const cur = this.#of(kind).get(key);
    if (!cur) throw new KubeError('NotFound', 404, 'NotFound', `${kind} ${key} not found`);
    const rv = body.metadata?.resourceVersion;
    if (rv && rv !== cur.metadata?.resourceVersion) throw new KubeError('Conflict', 409, 'Conflict', `${kind} ${key}: the object has been modified`);
    const b = body as Obj;
    if (cur.immutable && JSON.stringify([b.data, b.binaryData]) !== JSON.stringify([cur.data, cur.binaryData])) {
      throw new KubeError('Invalid', 422, 'Invalid', `${kind} ${key}: field is immutable when \`immutable\` is set`);
    }
    this.calls.push({ verb: 'replace', kind, key });
    return this.put(kind, { ...body, metadata: { ...body.metadata, namespace, name } });
  }

  async delete(kind: string, namespace: string, name: string, uid?: string): Promise<void> {
    const key = keyOf(namespace, name);
    const cur = this.#of(kind).get(key);
    if (!cur) throw new KubeError('NotFound', 404, 'NotFound', `${kind} ${key} not found`);
    if (uid && cur.metadata?.uid !== uid) throw new KubeError('Conflict', 409, 'Conflict', `${kind} ${key}: precondition failed: UID`);
    this.calls.push({ verb: 'delete', kind, key });
    this.drop(kind, namespace, name);
  }

  async read<T extends KubernetesObject>(kind: string, namespace: string, name: string): Promise<T> {
    this.calls.push({ verb: 'read', kind, key: keyOf(namespace, name) });
    const o = this.get<T>(kind, namespace, name);
    if (!o) throw new KubeError('NotFound', 404, 'NotFound', `${kind} ${keyOf(namespace, name)} not found`);
    return o;
  }

  /**
   * A kind's objects that `select` admits, as list-watch events: a SYNC of what is there, then each change; an
   * object that stops being admitted (its labels changed) is DELETED from the stream's point of view, as with a
   * label-selected watch.
   */
  watch<T extends KubernetesObject>(kind: string, select: (o: KubernetesObject) => boolean = () => true): Observable<ListWatchEvent<T>> {
    return new Observable<ListWatchEvent<T>>((sub) => {
      const admitted = new Set<string>();
      const items = [...this.#of(kind).values()].filter(select);
      for (const o of items) admitted.add(objectKey(o));
      sub.next({ type: 'SYNC', items: structuredClone(items) as T[] });
      const s = this.#changes.subscribe((c) => {
        if (c.kind !== kind) return;
        const key = objectKey(c.object);
        const object = structuredClone(c.object) as T;
        if (c.type !== 'DELETED' && select(c.object)) {
          sub.next({ type: admitted.has(key) ? 'MODIFIED' : 'ADDED', object });
          admitted.add(key);
        } else if (admitted.delete(key)) {
          sub.next({ type: 'DELETED', object });
        }
      });
      return () => s.unsubscribe();
    });
  }

  informer<T extends KubernetesObject>(kind: string, select?: (o: KubernetesObject) => boolean): Informer<T> {
    return new Informer<T>(`fake-${kind}`, this.watch<T>(kind, select));
  }

  /** What a reflector writes through: a store of the objects `select` admits, and this API's calls. */
  target<T extends KubernetesObject>(kind: string, select: (o: KubernetesObject) => boolean): Target<T> {
    return {
      store: this.informer<T>(kind, select),
      read: (namespace, name) => ignoreNotFound(() => this.read<T>(kind, namespace, name)),
      create: (namespace, body) => this.create(kind, namespace, body),
      replace: (namespace, name, body) => this.replace(kind, namespace, name, body),
      remove: (namespace, name, uid) => this.delete(kind, namespace, name, uid),
    };
  }

  #of(kind: string): Map<string, Obj> {
    let m = this.#kinds.get(kind);
    if (!m) this.#kinds.set(kind, m = new Map());
    return m;
  }
}
