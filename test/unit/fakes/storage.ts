// Storage fakes: the host API the volume controller calls (claims, volumes and classes in a FakeObjects, merge and
// JSON patches applied, events recorded), the member API of the member's volumes (claims in a FakeObjects, storage
// classes by name, errors to inject), and a VolumeProvider the test drives by hand.
import { Subject } from 'rxjs';
import type { KubernetesObject, V1PersistentVolume, V1PersistentVolumeClaim, V1StorageClass } from '@kubernetes/client-node';
import type { EventSubject } from '../../../src/kube/events.ts';
import type { HostStorageApi } from '../../../src/host/storage/api.ts';
import type { MemberClaimsApi } from '../../../src/member/storage/volumes.ts';
import type { ClaimRequest, VolumeState } from '../../../src/forge/volumes.ts';
import type { VolumeProvider } from '../../../src/provider/volume.ts';
import { KubeError } from '../../../src/kube/errors.ts';
import { FakeObjects, labelled } from './objects.ts';

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date);

/** RFC 7386 merge patch: null removes a key, objects merge, anything else replaces. */
export function mergePatch<T>(target: T, patch: unknown): T {
  if (!isObj(patch)) return patch as T;
  const out: Json = isObj(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out as T;
}

/** The `test` and `remove` operations of a JSON patch, on paths of objects and arrays; a failed test is Invalid. */
function jsonPatch<T>(target: T, ops: { op: string; path: string; value?: unknown }[]): T {
  const out = structuredClone(target) as unknown as Json;
  for (const { op, path, value } of ops) {
    const parts = path.split('/').slice(1);
    const last = parts.pop()!;
    const parent = parts.reduce<unknown>((o, p) => (o as Json)?.[p], out) as Json | unknown[] | undefined;
    const at = Array.isArray(parent) ? Number(last) : last;
    const cur = (parent as Json | undefined)?.[at as string];
    if (op === 'test' && JSON.stringify(cur) !== JSON.stringify(value)) throw new KubeError('Invalid', 422, 'Invalid', `test of ${path} failed`);
    if (op === 'remove') {
      if (Array.isArray(parent)) parent.splice(at as number, 1);
      else delete (parent as Json)[last];
    }
  }
  return out as unknown as T;
}

/** A host event as the controller wrote it. */
export interface WrittenEvent { about: EventSubject; type: string; reason: string; message: string }

/** The host side of storage: the controller's HostStorageApi over a FakeObjects, and what it wrote. */
export class FakeHostStorage {
  readonly objects = new FakeObjects();
  readonly events: WrittenEvent[] = [];
  /** Claim patches (metadata) and status patches, in order. */
  readonly claimPatches: { namespace: string; name: string; status: boolean; body: object }[] = [];
  readonly claims = this.objects.informer<V1PersistentVolumeClaim>('PersistentVolumeClaim');
  readonly volumes = this.objects.informer<V1PersistentVolume>('PersistentVolume', labelled('clusterlet.io/member'));

  constructor() {
    this.claims.start();
    this.volumes.start();
  }

  stop(): void {
    this.claims.stop();
    this.volumes.stop();
  }

  reasons(type?: string): string[] {
    return this.events.filter((e) => !type || e.type === type).map((e) => e.reason);
  }

  #patch<T extends KubernetesObject>(kind: string, namespace: string, name: string, apply: (o: T) => T): T {
    const cur = this.objects.get<T>(kind, namespace, name);
    if (!cur) throw new KubeError('NotFound', 404, 'NotFound', `${kind} ${name} not found`);
    this.objects.calls.push({ verb: 'replace', kind, key: namespace ? `${namespace}/${name}` : name });
    return this.objects.put(kind, apply(cur));
  }

  api(): HostStorageApi {
    const o = this.objects;
    return {
      claims: this.claims, volumes: this.volumes,
      readClass: async (name) => o.get<V1StorageClass>('StorageClass', '', name),
      createClass: (body) => o.create('StorageClass', '', body),
      replaceClass: (name, body) => o.replace('StorageClass', '', name, body),
      deleteClass: (name, uid) => o.delete('StorageClass', '', name, uid),
      createVolume: (body) => o.create('PersistentVolume', '', body),
      patchVolume: async (name, body) => this.#patch('PersistentVolume', '', name, (pv) => mergePatch(pv, body)),
      jsonPatchVolume: async (name, ops) => {
        const pv = this.#patch<V1PersistentVolume>('PersistentVolume', '', name, (v) => jsonPatch(v, ops as { op: string; path: string }[]));
        // A volume being deleted goes with its last finalizer, as the API's do.
        if (pv.metadata?.deletionTimestamp && !pv.metadata.finalizers?.length) o.drop('PersistentVolume', '', name);
      },
      deleteVolume: async (name, uid) => {
        const pv = o.get<V1PersistentVolume>('PersistentVolume', '', name);
        if (pv?.metadata?.finalizers?.length) {
          if (uid !== pv.metadata.uid) throw new KubeError('Conflict', 409, 'Conflict', 'precondition failed: UID');
          o.calls.push({ verb: 'delete', kind: 'PersistentVolume', key: name });
          o.put('PersistentVolume', { ...pv, metadata: { ...pv.metadata, deletionTimestamp: new Date() } });
          return;
        }
        await o.delete('PersistentVolume', '', name, uid);
      },
      patchClaim: async (namespace, name, body) => {
        this.claimPatches.push({ namespace, name, status: false, body });
        this.#patch('PersistentVolumeClaim', namespace, name, (c) => mergePatch(c, body));
      },
      patchClaimStatus: async (namespace, name, body) => {
        this.claimPatches.push({ namespace, name, status: true, body });
        this.#patch('PersistentVolumeClaim', namespace, name, (c) => mergePatch(c, body));
      },
      event: async (about, ev) => { this.events.push({ about, ...ev }); },
    };
  }
}

/** A provision call's outcome the test sets: a volume (made now or found), or an error. */
type Outcome = { volume: VolumeState; created: boolean } | Error;

/** A VolumeProvider whose volumes and answers the test sets; every call recorded. */
export class FakeVolumeProvider implements VolumeProvider {
  readonly volumeChanges$ = new Subject<string>();
  readonly provisions: ClaimRequest[] = [];
  readonly expansions: { key: string; storage: string }[] = [];
  readonly deletions: { key: string; uid: string }[] = [];
  readonly volumes = new Map<string, VolumeState>();
  /** What provisionVolume answers for a host key (default: the volume set for it, found, or an error if none). */
  readonly outcomes = new Map<string, Outcome>();
  /** The next expandVolume fails with this. */
  expandError: Error | undefined;

  /** Sets the volume of a host key and tells the controller it changed. */
  set(key: string, v: VolumeState | undefined): void {
    if (v) this.volumes.set(key, v);
    else this.volumes.delete(key);
    this.volumeChanges$.next(key);
  }

  async provisionVolume(req: ClaimRequest): Promise<{ volume: VolumeState; created: boolean }> {
    this.provisions.push(req);
    const key = `${req.namespace}/${req.name}`;
    const outcome = this.outcomes.get(key);
    if (outcome instanceof Error) throw outcome;
    if (outcome) {
      this.outcomes.delete(key);
      this.volumes.set(key, outcome.volume);
      return outcome;
    }
    const v = this.volumes.get(key);
    if (!v) throw new Error(`no volume set for ${key}`);
    return { volume: v, created: false };
  }

  getVolume(namespace: string, name: string): VolumeState | undefined { return this.volumes.get(`${namespace}/${name}`); }

  async expandVolume(namespace: string, name: string, storage: string): Promise<void> {
    const err = this.expandError;
    this.expandError = undefined;
    if (err) throw err;
    this.expansions.push({ key: `${namespace}/${name}`, storage });
  }

  /** Records the call; the volume of that claim is gone at once (the member's deletion is not waited for). */
  async deleteVolume(namespace: string, name: string, uid: string): Promise<void> {
    const key = `${namespace}/${name}`;
    this.deletions.push({ key, uid });
    if (this.volumes.get(key)?.claimUID === uid) this.volumes.delete(key);
  }

  waitSynced(): Promise<void> { return Promise.resolve(); }
}

/** The member API of the member's volumes over a FakeObjects: claims of the owner's labels, classes by name. */
export class FakeMemberClaims {
  readonly objects = new FakeObjects();
  readonly patches: { key: string; body: object }[] = [];
  /** The next call of a method ("create", "patch", …) fails with this. */
  readonly failures = new Map<string, Error>();

  #fail(method: string): void {
    const err = this.failures.get(method);
    this.failures.delete(method);
    if (err) throw err;
  }

  api(selector: string): MemberClaimsApi {
    const o = this.objects;
    return {
      claims: o.informer<V1PersistentVolumeClaim>('PersistentVolumeClaim', labelled(selector)),
      create: async (namespace, body) => { this.#fail('create'); return o.create('PersistentVolumeClaim', namespace, body); },
      read: (namespace, name) => o.read('PersistentVolumeClaim', namespace, name),
      patch: async (namespace, name, body) => {
        this.#fail('patch');
        const cur = await o.read<V1PersistentVolumeClaim>('PersistentVolumeClaim', namespace, name);
        const uid = (body as { metadata?: { uid?: string } }).metadata?.uid;
        if (uid && uid !== cur.metadata?.uid) throw new KubeError('Conflict', 409, 'Conflict', 'precondition failed: UID');
        this.patches.push({ key: `${namespace}/${name}`, body });
        return o.put('PersistentVolumeClaim', mergePatch(cur, body));
      },
      remove: (namespace, name, uid) => o.delete('PersistentVolumeClaim', namespace, name, uid),
      storageClass: async (name) => o.get<V1StorageClass>('StorageClass', '', name),
    };
  }
}
