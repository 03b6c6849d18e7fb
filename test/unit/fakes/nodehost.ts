// A fake host API for the node controller: nodes and leases in memory, nodes served to the controller's
// list-watch, the writes it makes (create, strategic-merge patches of node and status, lease merge patches)
// applied and recorded. Like fakes/host.ts, just enough of a Kubernetes to drive the controller.
import type { V1Lease, V1Node } from '@kubernetes/client-node';
import { KubeError } from '../../../src/kube/errors.ts';
import type { WatchHandlers } from '../../../src/kube/client.ts';
import type { NodeHost } from '../../../src/host/node/controller.ts';

export interface Write { op: 'createNode' | 'deleteNode' | 'patchNode' | 'patchNodeStatus' | 'createLease' | 'patchLease'; name: string; body: unknown; at: number }

type Json = Record<string, unknown>;
interface Change { rv: number; type: string; node: V1Node }

export class FakeNodeHost {
  readonly nodes = new Map<string, V1Node>();
  readonly leases = new Map<string, V1Lease>();
  readonly writes: Write[] = [];
  #rv = 1;
  #uids = 0;
  /** Every node change, so a watch started from a list's resourceVersion misses none. */
  #changes: Change[] = [];
  #watchers = new Set<{ h: WatchHandlers; name?: string }>();

  /** Adds or replaces a node (as another writer would) and tells the watchers. */
  put(node: V1Node): V1Node {
    const name = node.metadata!.name!;
    const old = this.nodes.get(name);
    const next = structuredClone(node);
    next.metadata!.uid ??= old?.metadata?.uid ?? `uid-${name}-${++this.#uids}`;
    next.metadata!.resourceVersion = String(++this.#rv);
    this.nodes.set(name, next);
    this.#emit(old ? 'MODIFIED' : 'ADDED', next);
    return structuredClone(next);
  }

  /** Deletes a node, as someone else would. */
  remove(name: string): void {
    const node = this.nodes.get(name);
    if (!node) return;
    this.nodes.delete(name);
    ++this.#rv;
    this.#emit('DELETED', { ...node, metadata: { ...node.metadata, resourceVersion: String(this.#rv) } });
  }

  /** The node's Ready condition as the host shows it. */
  ready(name: string): { status?: string; reason?: string } | undefined {
    return this.nodes.get(name)?.status?.conditions?.find((c) => c.type === 'Ready');
  }

  count(op: Write['op']): number { return this.writes.filter((w) => w.op === op).length; }

  #emit(type: string, node: V1Node): void {
    this.#changes.push({ rv: this.#rv, type, node: structuredClone(node) });
    // Delivered a little later, as over a connection: a controller that answers its own writes with more
    // writes loops through the event loop (and fails its test) instead of starving it.
    for (const w of this.#watchers) {
      if (!w.name || w.name === node.metadata!.name) setImmediate(() => w.h.onEvent(type, structuredClone(node)));
    }
  }

  #record(op: Write['op'], name: string, body: unknown): void {
    this.writes.push({ op, name, body: structuredClone(body), at: Date.now() });
  }

  /** The host API the node controller sees: the calls it makes (NodeHost), no more. */
  client(): NodeHost {
    const notFound = (what: string) => new KubeError('NotFound', 404, 'NotFound', `${what} not found`);
    const exists = (what: string) => new KubeError('AlreadyExists', 409, 'AlreadyExists', `${what} already exists`);
    const nodeNamed = (name: string): V1Node => {
      const n = this.nodes.get(name);
      if (!n) throw notFound(`node ${name}`);
      return n;
    };
    const core = {
      listNode: async (p?: { fieldSelector?: string }) => {
        const name = /metadata\.name=(.+)/.exec(p?.fieldSelector ?? '')?.[1];
        const items = [...this.nodes.values()].filter((n) => !name || n.metadata!.name === name).map((n) => structuredClone(n));
        return { items, metadata: { resourceVersion: String(this.#rv) } };
      },
      readNode: async (p: { name: string }) => structuredClone(nodeNamed(p.name)),
      createNode: async (p: { body: V1Node }) => {
        const name = p.body.metadata!.name!;
        if (this.nodes.has(name)) throw exists(`node ${name}`);
        this.#record('createNode', name, p.body);
        // The worst case of API servers that drop the status on create: the controller must write it.
        return this.put({ ...p.body, status: undefined });
      },
      patchNode: async (p: { name: string; body: Json }) => {
        const node = nodeNamed(p.name);
        this.#record('patchNode', p.name, p.body);
        const { status: _ignored, ...rest } = p.body;
        return this.put(merge(node, rest, true) as V1Node);
      },
      deleteNode: async (p: { name: string; body?: { preconditions?: { uid?: string } } }) => {
        const node = nodeNamed(p.name);
        const uid = p.body?.preconditions?.uid;
        if (uid && node.metadata?.uid !== uid) throw new KubeError('Conflict', 409, 'Conflict', `node ${p.name} has another UID`);
        this.#record('deleteNode', p.name, p.body ?? {});
        this.remove(p.name);
        return {};
      },
      patchNodeStatus: async (p: { name: string; body: { status: Json } }) => {
        const node = nodeNamed(p.name);
        this.#record('patchNodeStatus', p.name, p.body);
        return this.put({ ...node, status: merge(node.status, p.body.status, true) as V1Node['status'] });
      },
    };
    const coordination = {
      createNamespacedLease: async (p: { namespace: string; body: V1Lease }) => {
        const key = `${p.namespace}/${p.body.metadata!.name}`;
        if (this.leases.has(key)) throw exists(`lease ${key}`);
        this.#record('createLease', key, p.body);
        this.leases.set(key, structuredClone(p.body));
        return p.body;
      },
      patchNamespacedLease: async (p: { namespace: string; name: string; body: Json }) => {
        const key = `${p.namespace}/${p.name}`;
        const lease = this.leases.get(key);
        if (!lease) throw notFound(`lease ${key}`);
        this.#record('patchLease', key, p.body);
        const next = merge(lease, p.body, false) as V1Lease;
        this.leases.set(key, next);
        return structuredClone(next);
      },
    };
    const fake = {
      name: 'host',
      core,
      coordination,
      watch: (_path: string, query: { resourceVersion?: string; fieldSelector?: string }, h: WatchHandlers) =>
        new Promise<void>((resolve) => {
          const w = { h, name: /metadata\.name=(.+)/.exec(query.fieldSelector ?? '')?.[1] };
          const from = Number(query.resourceVersion ?? 0);
          for (const c of this.#changes) {
            if (c.rv > from && (!w.name || w.name === c.node.metadata!.name)) h.onEvent(c.type, structuredClone(c.node));
          }
          this.#watchers.add(w);
          h.signal.addEventListener('abort', () => { this.#watchers.delete(w); resolve(); });
        }),
    };
    return fake;
  }
}

/** Lists a strategic merge patch merges by their `type` (node conditions and addresses); others are replaced. */
const MERGED_BY_TYPE = new Set(['conditions', 'addresses']);

/**
 * A JSON merge patch (null removes), or with `strategic` a strategic merge patch as far as node objects need
 * one: conditions and addresses merged by type, every other list (taints) replaced.
 */
function merge(current: unknown, patch: unknown, strategic: boolean, key = ''): unknown {
  if (Array.isArray(patch)) {
    if (!strategic || !MERGED_BY_TYPE.has(key) || !Array.isArray(current)) return structuredClone(patch);
    const out = [...current] as Json[];
    for (const item of patch as Json[]) {
      const i = out.findIndex((x) => x.type === item.type);
      if (i >= 0) out[i] = merge(out[i], item, strategic) as Json; else out.push(structuredClone(item));
    }
    return out;
  }
  if (patch === null || typeof patch !== 'object' || patch instanceof Date) return patch;
  const out: Json = current !== null && typeof current === 'object' && !Array.isArray(current) ? { ...(current as Json) } : {};
  for (const [k, v] of Object.entries(patch as Json)) {
    if (v === null) delete out[k];
    else out[k] = merge(out[k], v, strategic, k);
  }
  return out;
}
