// A fake host API for controller unit tests: pods in memory, served to the controller's list-watch, with the
// writes a pod controller makes (status patches, deletes, events) applied and recorded. Not a Kubernetes: just
// enough of one to drive the controller through its protocol, fast and without a cluster.
import type { CoreV1Event, V1Pod, V1PodCondition } from '@kubernetes/client-node';
import { KubeError } from '../../../src/kube/errors.ts';
import type { RequestOptions, WatchHandlers } from '../../../src/kube/client.ts';
import type { PodHost } from '../../../src/host/pod/writer.ts';

type Patch = { $patch?: string; type?: string; [k: string]: unknown };

export class FakeHost {
  readonly pods = new Map<string, V1Pod>();
  readonly events = new Map<string, CoreV1Event>();
  readonly statusPatches: { key: string; body: Record<string, unknown> }[] = [];
  readonly deletes: { key: string; grace?: number }[] = [];
  /** The priority each write asked for (RequestOptions.priority), by method: what waits least for the host. */
  readonly priorities: { method: string; priority: string }[] = [];
  /** Every delete request, answered or not (a pod already gone answers 404). */
  deleteRequests = 0;
  /** Holds the watch's DELETED events until releaseDeletes(): a watch behind the writes, as under load. */
  holdDeletes = false;
  #heldDeletes: V1Pod[] = [];
  /** Pod deletes still to refuse as a host that is away would (503). */
  failDeletes = 0;
  /** Event creations still to refuse as a host that is away would (503). */
  failEventCreates = 0;
  /** Awaited by each status patch before it is applied: one may be held (a slow host) or refused (it throws). */
  beforeStatusPatch: (() => Promise<void>) | undefined;
  /** The watch misses every change while set (a watch down): a relist (expireWatches) is what brings them. */
  dropEvents = false;
  #rv = 1;
  #watchers = new Set<WatchHandlers>();

  /** Adds or replaces a pod (as another writer would) and tells the watchers. */
  put(pod: V1Pod): V1Pod {
    const { next, type } = this.#store(pod);
    this.#emit(type, next);
    return next;
  }

  /** Stores `pod` at a new resourceVersion; what its watch event would be. */
  #store(pod: V1Pod): { next: V1Pod; type: string } {
    const key = `${pod.metadata!.namespace}/${pod.metadata!.name}`;
    const old = this.pods.get(key);
    const next = structuredClone(pod);
    next.metadata!.uid ??= old?.metadata?.uid ?? `uid-${pod.metadata!.name}`;
    next.metadata!.resourceVersion = String(++this.#rv);
    this.pods.set(key, next);
    return { next, type: old ? 'MODIFIED' : 'ADDED' };
  }

  /** Ends every watch with 410 Gone (its resourceVersion expired): the watchers list again. */
  expireWatches(): void {
    for (const w of [...this.#watchers]) w.onEvent('ERROR', { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' });
  }

  /** Sends the DELETED events held (holdDeletes), and holds no more. */
  releaseDeletes(): void {
    this.holdDeletes = false;
    for (const pod of this.#heldDeletes.splice(0)) this.#emit('DELETED', pod);
  }

  get(namespace: string, name: string): V1Pod | undefined { return this.pods.get(`${namespace}/${name}`); }

  condition(namespace: string, name: string, type: string): V1PodCondition | undefined {
    return this.get(namespace, name)?.status?.conditions?.find((c) => c.type === type);
  }

  eventReasons(): string[] { return [...this.events.values()].map((e) => e.reason ?? ''); }

  #emit(type: string, object: unknown): void {
    if (this.dropEvents) return;
    for (const w of this.#watchers) w.onEvent(type, structuredClone(object));
  }

  /** The host API the controller sees: the calls it makes (PodHost), no more. */
  client(): PodHost {
    const notFound = (what: string) => new KubeError('NotFound', 404, 'NotFound', `${what} not found`);
    const core = {
      listPodForAllNamespaces: async (p?: { fieldSelector?: string }) => {
        const node = /spec\.nodeName=(.+)/.exec(p?.fieldSelector ?? '')?.[1];
        const items = [...this.pods.values()].filter((x) => !node || x.spec?.nodeName === node).map((x) => structuredClone(x));
        return { items, metadata: { resourceVersion: String(this.#rv) } };
      },
      patchNamespacedPodStatus: async (p: { namespace: string; name: string; body: { status: Record<string, unknown> } }, o?: RequestOptions) => {
        this.priorities.push({ method: 'patchNamespacedPodStatus', priority: o?.priority ?? 'normal' });
        await this.beforeStatusPatch?.();
        const key = `${p.namespace}/${p.name}`;
        const pod = this.pods.get(key);
        if (!pod) throw notFound(`pod ${key}`);
        this.statusPatches.push({ key, body: structuredClone(p.body) });
        const patched = structuredClone(pod);
        patched.status = applyStatusPatch((patched.status ?? {}) as Record<string, unknown>, p.body.status);
        // As kube-apiserver: the answer (here its version, RequestOptions.onVersion), then the watch event.
        const { next, type } = this.#store(patched);
        if (o?.discard) o.onVersion?.(next.metadata!.resourceVersion!);
        this.#emit(type, next);
        return next;
      },
      deleteNamespacedPod: async (p: { namespace: string; name: string; gracePeriodSeconds?: number }) => {
        const key = `${p.namespace}/${p.name}`;
        this.deleteRequests++;
        let pod = this.pods.get(key);
        if (!pod) throw notFound(`pod ${key}`);
        if (this.failDeletes > 0 && this.failDeletes--) throw new KubeError('Unavailable', 503, 'ServiceUnavailable', 'the host is away');
        this.deletes.push({ key, grace: p.gracePeriodSeconds });
        const grace = pod.metadata?.deletionGracePeriodSeconds;
        if (pod.metadata?.deletionTimestamp && p.gracePeriodSeconds === 0 && grace) {
          // As kube-apiserver (rest.BeforeDelete): a pod already terminating given a shorter grace period has it and
          // its deletionTimestamp moved back by the difference written (MODIFIED); at 0 it then goes.
          const at = new Date(new Date(pod.metadata.deletionTimestamp).getTime() - grace * 1000);
          pod = this.put({ ...pod, metadata: { ...pod.metadata, deletionTimestamp: at, deletionGracePeriodSeconds: 0 } });
        }
        this.pods.delete(key);
        if (this.holdDeletes) this.#heldDeletes.push(pod); else this.#emit('DELETED', pod);
        return pod;
      },
      createNamespacedEvent: async (p: { namespace: string; body: CoreV1Event }, o?: RequestOptions) => {
        this.priorities.push({ method: 'createNamespacedEvent', priority: o?.priority ?? 'normal' });
        if (this.failEventCreates > 0 && this.failEventCreates--) throw new KubeError('Unavailable', 503, 'ServiceUnavailable', 'the host is away');
        const key = `${p.namespace}/${p.body.metadata!.name}`;
        if (this.events.has(key)) throw new KubeError('AlreadyExists', 409, 'AlreadyExists', 'exists');
        this.events.set(key, structuredClone(p.body));
        return p.body;
      },
      readNamespacedEvent: async (p: { namespace: string; name: string }) => {
        const e = this.events.get(`${p.namespace}/${p.name}`);
        if (!e) throw notFound('event');
        return structuredClone(e);
      },
      patchNamespacedEvent: async (p: { namespace: string; name: string; body: Partial<CoreV1Event> }) => {
        const key = `${p.namespace}/${p.name}`;
        const e = { ...this.events.get(key)!, ...p.body };
        this.events.set(key, e);
        return e;
      },
    };
    const fake = {
      name: 'host',
      core,
      watch: (_path: string, _query: unknown, h: WatchHandlers) => new Promise<void>((resolve) => {
        this.#watchers.add(h);
        h.signal.addEventListener('abort', () => { this.#watchers.delete(h); resolve(); });
      }),
    };
    return fake;
  }
}

/** A strategic merge patch of a pod status, as far as the controller uses it. */
function applyStatusPatch(status: Record<string, unknown>, patch: Record<string, unknown>): V1Pod['status'] {
  const out: Record<string, unknown> = { ...status };
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) { delete out[k]; continue; }
    if (k === 'conditions' && Array.isArray(v)) {
      const conds = [...((status.conditions as V1PodCondition[] | undefined) ?? [])];
      for (const c of v as Patch[]) {
        const i = conds.findIndex((x) => x.type === c.type);
        if (c.$patch === 'delete') { if (i >= 0) conds.splice(i, 1); continue; }
        if (i >= 0) conds[i] = { ...conds[i], ...(c as unknown as V1PodCondition) }; else conds.push(c as unknown as V1PodCondition);
      }
      out.conditions = conds;
      continue;
    }
    if (Array.isArray(v) && (v[0] as Patch | undefined)?.$patch === 'replace') { out[k] = v.slice(1); continue; }
    out[k] = v;
  }
  return out as V1Pod['status'];
}
