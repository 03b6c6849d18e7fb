// Events clusterlet writes about an object (a proxy pod, a host Service): one event object per object UID and
// id, so a repeat bumps its count instead of piling up objects, and a mirrored event updated in the member
// updates the same object here. See docs/CONVENTIONS.md ("Reasons").
import { createHash } from 'node:crypto';
import type { CoreV1Event } from '@kubernetes/client-node';
import { DISCARD, PATCH, type ClusterClient } from './client.ts';
import { toKubeError } from './errors.ts';

// Events wait for the host's rate limit and connections behind every other request: nobody waits on them.
const LOW = { priority: 'low' } as const;
const LOW_DISCARD = { ...DISCARD, priority: 'low' } as const;

/** The object an event is about. */
export interface EventSubject { apiVersion: string; kind: string; namespace: string; name: string; uid: string }

/** What an event says. */
export type EventFields = Pick<CoreV1Event, 'type' | 'reason' | 'message' | 'count' | 'firstTimestamp' | 'lastTimestamp' | 'source'>;

export interface WriteEventOptions {
  /** The same event again (one of clusterlet's own): one more to its count. Else `ev`'s count and message replace. */
  bump: boolean;
  /** The writer's instance, e.g. the virtual node's name (reportingComponent is clusterlet). */
  instance: string;
}

/** What writing an event uses of a client. */
export type EventClient = { core: Pick<ClusterClient['core'], 'createNamespacedEvent' | 'readNamespacedEvent' | 'patchNamespacedEvent'> };

/** Writes `ev` about `about` as the event of `id` (the reason, or a mirrored event's UID). */
export async function writeEvent(client: EventClient, about: EventSubject, id: string, ev: EventFields, opts: WriteEventOptions): Promise<void> {
  const { namespace } = about;
  const name = `${about.name}.${createHash('sha256').update(`${about.uid}/${id}`).digest('hex').slice(0, 16)}`;
  try {
    await client.core.createNamespacedEvent({ namespace, body: {
      metadata: { name, namespace }, involvedObject: about, ...ev, reportingComponent: 'clusterlet', reportingInstance: opts.instance,
    } }, LOW_DISCARD);
  } catch (err) {
    const k = toKubeError(err);
    if (k.kind !== 'AlreadyExists') throw k;
    const cur = await client.core.readNamespacedEvent({ namespace, name }, LOW);
    const count = opts.bump ? (cur.count ?? 1) + 1 : ev.count ?? cur.count;
    if (!opts.bump && count === cur.count && ev.message === cur.message) return;
    await client.core.patchNamespacedEvent({ namespace, name, body: {
      count, message: ev.message, lastTimestamp: ev.lastTimestamp ?? new Date(),
    } }, { contentType: PATCH.merge, priority: 'low' });
  }
}

/** clusterlet's own event about `about` (source component clusterlet, `host`: the virtual node); repeats bump one object. */
export function writeOwnEvent(client: EventClient, about: EventSubject, host: string,
  ev: { type: 'Normal' | 'Warning'; reason: string; message: string }): Promise<void> {
  const now = new Date();
  return writeEvent(client, about, ev.reason, {
    ...ev, count: 1, firstTimestamp: now, lastTimestamp: now, source: { component: 'clusterlet', host },
  }, { bump: true, instance: host });
}
