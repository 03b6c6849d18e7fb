// The list-watch observable every reflector uses (docs/CONVENTIONS.md, "Code"):
// - LIST (paged), then WATCH from its resourceVersion with bookmarks;
// - a watch that ends is resumed from the last resourceVersion seen; 410 Gone → relist;
// - a watch silent for longer than `silenceMs` is restarted (bookmarks keep healthy ones talking);
// - errors restart the whole cycle with capped exponential backoff (relist), forever;
// - unsubscribing aborts the HTTP request.
import { Observable, retry, share, timer } from 'rxjs';
import type { KubernetesObject } from '@kubernetes/client-node';
import type { ClusterClient } from './client.ts';
import { toKubeError } from './errors.ts';
import { revive } from './revive.ts';
import type { KnownSpec } from './eventline.ts';
import { backoffDelay } from '../util/backoff.ts';
import { metrics, watchEventTally } from '../metrics.ts';
import type { Logger } from '../log.ts';

export type ListWatchEvent<T> =
  /** The full state after a (re)list: consumers replace what they had. */
  | { type: 'SYNC'; items: T[] }
  | { type: 'ADDED' | 'MODIFIED' | 'DELETED'; object: T };

export interface ListPage<T> { items: T[]; metadata?: { resourceVersion?: string; _continue?: string } }
export interface ListParams { labelSelector?: string; fieldSelector?: string; limit: number; _continue?: string }

export interface ListWatchSpec<T> {
  /** Collection path to watch, e.g. `/api/v1/pods` or `/api/v1/namespaces/ns/configmaps`. */
  path: string;
  /** The typed LIST of the same collection (rate-limited and counted by the client). */
  list(params: ListParams): Promise<ListPage<T>>;
  /** Model name, e.g. `V1Pod` (documentation; watch events are revived generically). */
  model: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** For logs and metrics. */
  resource: string;
  /** Parse watch events without their objects' managedFields (WatchHandlers.cutManagedFields): for pods. */
  cutManagedFields?: boolean;
  /** With cutManagedFields: the spec the consumer's store has for an object, reused where unchanged (eventline.ts). */
  knownSpec?: KnownSpec;
  /**
   * What of each object is handed on (default: all of it), made as it comes: a watched object's before it is revived,
   * so that what is dropped is never revived (its timestamps are then still strings), a listed object's page by page
   * (revived by the client). A shape reads both alike.
   */
  shape?: (obj: T) => T;
  /**
   * Which objects are handed on at all (default: every one), asked before an object is revived or shaped: of a watched
   * object as it comes, of listed ones once the list is whole (what the consumer wants may fill in while it pages).
   * For a stream of changes read as they come (the member's events), never for a store, which would keep the last
   * version handed on of an object that is no longer wanted.
   */
  wanted?: (obj: T) => boolean;
}

export interface ListWatchOptions {
  silenceMs?: number;
  pageSize?: number;
  /** The first retry delay after an error, doubled per attempt up to 30 s (default 500 ms). */
  minBackoffMs?: number;
  log?: Logger;
}

interface RawWatchEvent { type: string; object: { metadata?: { resourceVersion?: string }; code?: number; reason?: string; message?: string } }

class GoneError extends Error {}

/** The wanted items of a whole list, shaped. */
function chosen<T>(items: T[], wanted: (obj: T) => boolean, shape: ((obj: T) => T) | undefined): T[] {
  const out: T[] = [];
  for (const it of items) if (wanted(it)) out.push(shape ? shape(it) : it);
  return out;
}

/** What a list-watch uses of a client: its name (for metrics) and watch; the list is the spec's own. */
export type WatchClient = Pick<ClusterClient, 'name' | 'watch'>;

export function listWatch<T extends KubernetesObject>(client: WatchClient, spec: ListWatchSpec<T>,
  opts: ListWatchOptions = {}): Observable<ListWatchEvent<T>> {
  const silenceMs = opts.silenceMs ?? 90_000;
  const pageSize = opts.pageSize ?? 500;
  const minBackoffMs = opts.minBackoffMs ?? 500;
  const events = watchEventTally(client.name, spec.resource);
  const restart = (reason: string): void => {
    metrics.watchRestarts.inc({ cluster: client.name, resource: spec.resource, reason });
  };

  const cycle = new Observable<ListWatchEvent<T>>((subscriber) => {
    let closed = false;
    let controller: AbortController | undefined;

    const list = async (): Promise<string> => {
      const items: T[] = [];
      let cont: string | undefined;
      let rv = '';
      do {
        const res = await spec.list({
          labelSelector: spec.labelSelector, fieldSelector: spec.fieldSelector, limit: pageSize, _continue: cont,
        });
        // Shaped page by page, unless wanted asks first (once the list is whole, below).
        const shape = spec.wanted ? undefined : spec.shape;
        for (const it of res.items) items.push(shape ? shape(it) : it);
        rv = res.metadata?.resourceVersion ?? rv;
        cont = res.metadata?._continue || undefined;
      } while (cont && !closed);
      if (!closed) subscriber.next({ type: 'SYNC', items: spec.wanted ? chosen(items, spec.wanted, spec.shape) : items });
      return rv;
    };

    /** The last watch ended for silence (already counted as a 'silent' restart, not 'ended' too). */
    let silentRestart = false;
    const watchOnce = async (rv: string): Promise<string> => {
      silentRestart = false;
      let last = rv;
      let failed: Error | undefined;
      controller = new AbortController();
      const c = controller;
      try {
        await client.watch(spec.path, {
          resourceVersion: rv, allowWatchBookmarks: true,
          // Server-side end after 5-10 min, as client-go does, so connections get rebalanced.
          timeoutSeconds: 300 + Math.floor(Math.random() * 300),
          labelSelector: spec.labelSelector, fieldSelector: spec.fieldSelector,
        }, {
          signal: c.signal, idleMs: silenceMs, cutManagedFields: spec.cutManagedFields, knownSpec: spec.knownSpec,
          onEvent: (type, obj) => {
            const ev = { type, object: obj } as RawWatchEvent;
            if (type === 'ERROR') {
              failed = ev.object.code === 410 ? new GoneError(ev.object.message)
                : toKubeError({ statusCode: ev.object.code, message: ev.object.message });
              c.abort();
              return;
            }
            last = ev.object.metadata?.resourceVersion ?? last;
            if (type === 'BOOKMARK' || closed) return;
            if (type === 'ADDED' || type === 'MODIFIED' || type === 'DELETED') {
              events[type]++;
              if (spec.wanted && !spec.wanted(obj as T)) return;
              subscriber.next({ type, object: revive<T>(spec.shape ? spec.shape(obj as T) : obj) });
            }
          },
        });
      } catch (err) {
        if (failed) throw failed;
        if ((err as { name?: string }).name === 'TimeoutError') {
          restart('silent');
          silentRestart = true;
          return last;
        }
        if (closed) return last;
        const k = toKubeError(err);
        throw k.code === 410 ? new GoneError(k.message) : k;
      } finally {
        if (controller === c) controller = undefined;
      }
      if (failed) throw failed;
      return last;
    };

    void (async () => {
      let rv = await list();
      while (!closed) {
        try {
          rv = await watchOnce(rv);
          if (!closed && !silentRestart) restart('ended');
        } catch (err) {
          if (!(err instanceof GoneError)) throw err;
          restart('gone');
          opts.log?.debug({ resource: spec.resource }, 'watch expired (410 Gone), relisting');
          rv = await list();
        }
      }
    })().catch((err: unknown) => { if (!closed) subscriber.error(toKubeError(err)); });

    return () => {
      closed = true;
      controller?.abort();
    };
  });

  return cycle.pipe(
    retry({
      resetOnSuccess: true,
      delay: (err: unknown, attempt: number) => {
        restart('error');
        const k = toKubeError(err);
        opts.log?.warn({ resource: spec.resource, err: k.message, code: k.code, attempt }, 'list/watch failed; retrying');
        return timer(backoffDelay(attempt - 1, minBackoffMs, 30_000));
      },
    }),
    share({ resetOnRefCountZero: true }),
  );
}
