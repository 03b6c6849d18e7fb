// A fake collection for list-watch unit tests. Its LIST serves `items` page by page (as the caller's limit
// asks); each WATCH that listWatch opens is recorded as a FakeWatch the test drives by hand: events, an end, a
// failure, or silence. The client it hands out is what listWatch uses of one (WatchClient): `name` and `watch`.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { WatchHandlers } from '../../../src/kube/client.ts';
import type { WatchClient } from '../../../src/kube/listwatch.ts';
import type { ListPage, ListParams, ListWatchSpec } from '../../../src/kube/listwatch.ts';
import { parseEventLine } from '../../../src/kube/eventline.ts';
import { eventually } from './wait.ts';

/** One open watch request, as the server side sees it. */
export class FakeWatch {
  readonly path: string;
  readonly query: Record<string, unknown>;
  readonly idleMs: number;
  #h: WatchHandlers;
  #settle: (err?: Error) => void = () => {};
  #idle: NodeJS.Timeout | undefined;
  #over = false;

  constructor(path: string, query: Record<string, unknown>, h: WatchHandlers) {
    this.path = path;
    this.query = query;
    this.idleMs = h.idleMs;
    this.#h = h;
  }

  /** The promise ClusterClient.watch returns: as the real one, it resolves on end or abort, rejects on failure. */
  run(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#settle = (err) => {
        if (this.#over) return;
        this.#over = true;
        clearTimeout(this.#idle);
        if (err) reject(err); else resolve();
      };
      this.#h.signal.addEventListener('abort', () => this.#settle(), { once: true });
      this.#armIdle();
    });
  }

  get resourceVersion(): unknown { return this.query.resourceVersion; }
  get aborted(): boolean { return this.#h.signal.aborted; }

  /**
   * One event line of the stream; `object` is copied, as parsing a line would give a fresh one. A watch that cuts
   * managedFields gets it as ClusterClient.watch parses it then: the line through parseEventLine, with its knownSpec.
   */
  send(type: string, object: unknown): void {
    if (this.#over) throw new Error(`watch from ${String(this.resourceVersion)} is over: cannot send ${type}`);
    this.#armIdle();
    if (!this.#h.cutManagedFields) {
      this.#h.onEvent(type, structuredClone(object));
      return;
    }
    const line = Buffer.from(JSON.stringify({ type, object }));
    const ev = parseEventLine(line, 0, line.length, this.#h.knownSpec) as { type: string; object: unknown };
    this.#h.onEvent(ev.type, ev.object);
  }

  /** The server ends the stream (its timeoutSeconds, a closed connection). */
  end(): void { this.#settle(); }

  /** The request fails: an error status when it opens, a reset connection. */
  fail(err: Error): void { this.#settle(err); }

  /** What the real client does when nothing arrives for idleMs: end the request with a TimeoutError. */
  #armIdle(): void {
    clearTimeout(this.#idle);
    this.#idle = setTimeout(() => {
      const err = new Error(`silent for ${this.idleMs} ms`);
      err.name = 'TimeoutError';
      this.#settle(err);
    }, this.idleMs).unref();
  }
}

export class FakeCollection<T extends KubernetesObject> {
  /** What the next LIST returns. */
  items: T[] = [];
  resourceVersion = '1';
  /** Every LIST call (one per page), with when it came (performance.now()). */
  readonly lists: (ListParams & { at: number })[] = [];
  readonly watches: FakeWatch[] = [];
  readonly name: string;
  #listFailures: Error[] = [];

  /** `name` is the client's (cluster) name, the label of its watch-restart metrics. */
  constructor(name = 'fake') { this.name = name; }

  /** The next LISTs fail with these errors, one each, in order. */
  failLists(...errors: Error[]): void { this.#listFailures.push(...errors); }

  /** What a list-watch uses of a client (WatchClient): its name and watch. */
  client(): WatchClient {
    const fake = {
      name: this.name,
      watch: (path: string, query: Record<string, unknown>, h: WatchHandlers): Promise<void> => {
        const w = new FakeWatch(path, query, h);
        this.watches.push(w);
        return w.run();
      },
    };
    return fake;
  }

  spec(extra: Partial<ListWatchSpec<T>> = {}): ListWatchSpec<T> {
    return { path: '/api/v1/configmaps', model: 'V1ConfigMap', resource: 'configmaps', list: (p) => this.#list(p), ...extra };
  }

  /** The n-th watch (1-based), once listWatch has opened it. */
  async watch(n: number): Promise<FakeWatch> {
    await eventually(`watch ${n}`, () => this.watches.length >= n);
    return this.watches[n - 1];
  }

  async #list(p: ListParams): Promise<ListPage<T>> {
    this.lists.push({ ...p, at: performance.now() });
    const failure = this.#listFailures.shift();
    if (failure) throw failure;
    const from = Number(p._continue ?? 0);
    const to = from + p.limit;
    return {
      items: this.items.slice(from, to).map((o) => structuredClone(o)),
      metadata: { resourceVersion: this.resourceVersion, _continue: to < this.items.length ? String(to) : undefined },
    };
  }
}
