// Bounded, event-driven waits: a list-watch on the objects in question, re-checking the predicate on
// every change, failing with what was last seen when the time is up. No fixed sleeps.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { ClusterClient } from '../../src/kube/client.ts';
import { Informer } from '../../src/kube/informer.ts';
import { listWatch, type ListWatchSpec } from '../../src/kube/listwatch.ts';

export async function waitUntil<T extends KubernetesObject>(client: ClusterClient, spec: ListWatchSpec<T>,
  predicate: (items: T[]) => boolean, timeoutMs: number, what: string): Promise<T[]> {
  const inf = new Informer<T>(what, listWatch<T>(client, spec, { silenceMs: 30_000 }));
  try {
    return await new Promise<T[]>((resolve, reject) => {
      const finish = (settle: () => void): void => {
        clearTimeout(timer);
        sub.unsubscribe();
        settle();
      };
      const check = (): void => {
        if (!inf.hasSynced) return;
        const items = inf.list();
        try {
          if (predicate(items)) finish(() => resolve(items));
        } catch (err) {
          finish(() => reject(err as Error));
        }
      };
      const sub = inf.events$.subscribe({ next: check, error: (err: unknown) => finish(() => reject(err as Error)) });
      const timer = setTimeout(() => finish(() => {
        const seen = inf.list().map(summarize).join('\n  ');
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last seen:\n  ${seen || '(nothing)'}`));
      }), timeoutMs);
      inf.start();
      inf.waitSynced().then(check, (err: unknown) => finish(() => reject(err as Error)));
    });
  } finally {
    inf.stop();
  }
}

/**
 * Watches the objects, runs `act` once the watch has listed them, and records for each of `names` the
 * `metadata.deletionGracePeriodSeconds` of every version seen with a deletionTimestamp (the versions a
 * graceful delete writes before the object goes, however soon it goes). Resolves once each of `names` is
 * gone; fails with what was seen when the time is up.
 */
export async function deletionGraces<T extends KubernetesObject>(client: ClusterClient, spec: ListWatchSpec<T>,
  names: string[], act: () => Promise<void>, timeoutMs: number): Promise<Map<string, (number | undefined)[]>> {
  const graces = new Map<string, (number | undefined)[]>(names.map((n) => [n, []]));
  const gone = new Set<string>();
  let acting = false;
  let acted = false;
  const note = (o: T): void => {
    const m = o.metadata;
    if (m?.deletionTimestamp && m.name && graces.has(m.name)) graces.get(m.name)!.push(m.deletionGracePeriodSeconds);
  };
  return await new Promise((resolve, reject) => {
    const finish = (settle: () => void): void => {
      clearTimeout(timer);
      sub.unsubscribe();
      settle();
    };
    const check = (): void => { if (acted && names.every((n) => gone.has(n))) finish(() => resolve(graces)); };
    const sub = listWatch<T>(client, spec, { silenceMs: 30_000 }).subscribe({
      next: (e) => {
        if (e.type !== 'SYNC') {
          note(e.object);
          if (e.type === 'DELETED' && e.object.metadata?.name) gone.add(e.object.metadata.name);
        } else {
          for (const o of e.items) note(o);
          // After `act`, a relist that lacks an object means it went while the watch was down.
          if (acting) for (const n of names) if (!e.items.some((o) => o.metadata?.name === n)) gone.add(n);
          if (!acting) {
            acting = true;
            act().then(() => { acted = true; check(); }, (err: unknown) => finish(() => reject(err as Error)));
            return;
          }
        }
        check();
      },
      error: (err: unknown) => finish(() => reject(err as Error)),
    });
    const timer = setTimeout(() => finish(() => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${names.join(', ')} `
      + `to be deleted; gone: ${[...gone].join(', ') || 'none'}; grace periods seen: ${JSON.stringify(Object.fromEntries(graces))}`))), timeoutMs);
  });
}

function summarize(o: KubernetesObject): string {
  const s = o as KubernetesObject & { status?: { phase?: string; conditions?: { type?: string; status?: string; reason?: string }[] } };
  const conds = (s.status?.conditions ?? []).map((c) => `${c.type}=${c.status}${c.reason ? `(${c.reason})` : ''}`).join(',');
  return `${o.metadata?.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata?.name} ${s.status?.phase ?? ''} ${conds}`;
}

/**
 * Watches the objects and hands `note` every version seen (the first list's and every change's), until the returned
 * function is called: what a test asserts over the whole of a change, not only its end.
 */
export function everyVersion<T extends KubernetesObject>(client: ClusterClient, spec: ListWatchSpec<T>, note: (o: T) => void): () => void {
  const sub = listWatch<T>(client, spec, { silenceMs: 30_000 }).subscribe((e) => {
    if (e.type === 'SYNC') for (const o of e.items) note(o);
    else note(e.object);
  });
  return () => sub.unsubscribe();
}

/**
 * For what no watch shows (an answer of the API, e.g. a TokenReview): asks `probe` again until `done` holds, a
 * little less often each time, failing with the last answer when the time is up.
 */
export async function pollUntil<T>(probe: () => Promise<T>, done: (v: T) => boolean, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (let delay = 50; ; delay = Math.min(delay * 2, 1000)) {
    const v = await probe();
    if (done(v)) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last answer: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, delay));
  }
}
