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
      void inf.waitSynced().then(check);
    });
  } finally {
    inf.stop();
  }
}

function summarize(o: KubernetesObject): string {
  const s = o as KubernetesObject & { status?: { phase?: string; conditions?: { type?: string; status?: string; reason?: string }[] } };
  const conds = (s.status?.conditions ?? []).map((c) => `${c.type}=${c.status}${c.reason ? `(${c.reason})` : ''}`).join(',');
  return `${o.metadata?.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata?.name} ${s.status?.phase ?? ''} ${conds}`;
}
