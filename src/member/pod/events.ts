// The member's events about a provider's delegates, in host coordinates: a watch of the member's pod events that keeps
// only those about this node's delegates (or pods it is creating, whose events are held until they show), never
// passes one version of an event on twice, and replays on its first list only what happened shortly before a start.
import { EMPTY, filter, from, map, merge, mergeMap, of, type Observable } from 'rxjs';
import { LRUCache } from 'lru-cache';
import type { CoreV1Event } from '@kubernetes/client-node';
import { upTo } from '../../util/lru.ts';
import { listWatch, type ListWatchEvent } from '../../kube/listwatch.ts';
import { objectKey } from '../../kube/informer.ts';
import type { PodEvent } from '../../provider/pod.ts';
import type { Logger } from '../../log.ts';
import type { MemberCluster } from '../cluster.ts';
import type { Creations } from './creations.ts';

export type EventsMember = Pick<MemberCluster, 'client' | 'delegates' | 'pods'>;

/**
 * The pod events of `member` for this node's delegates: watched from now on, plus those of the last `replayWindowMs`
 * on the first list, plus `released$` (events held for a delegate until the pod informer showed it).
 */
export function memberPodEvents(member: EventsMember, creations: Creations, released$: Observable<CoreV1Event>, log: Logger,
  replayWindowMs: number): Observable<PodEvent> {
  /** Member events (uid and resourceVersion) already passed on, so that a relist does not repeat them. */
  const seen = new LRUCache<string, true>(upTo(20_000));
  /** True the first time this version of an event is seen. */
  const firstSight = (e: CoreV1Event): boolean => {
    const key = `${e.metadata?.uid}/${e.metadata?.resourceVersion}`;
    if (seen.has(key)) return false;
    seen.set(key, true);
    return true;
  };
  /**
   * Whether a member event is about one of this node's delegates, or a pod being created: what toPodEvent may mirror
   * or hold. Its timestamps may not be revived yet.
   */
  const mayMirror = (e: CoreV1Event): boolean => {
    const io = involvedPod(e);
    return io !== undefined && (member.delegates.hostRefOf(io.memberKey) !== undefined || creations.has(io.memberKey));
  };
  /** An event about an earlier pod of the same name (another UID) is not this proxy's. */
  const uidMismatch = (key: string, uid: string): boolean => {
    const p = member.pods.get(key);
    return p !== undefined && p.metadata?.uid !== uid;
  };
  const toPodEvent = (e: CoreV1Event): PodEvent | undefined => {
    const io = involvedPod(e);
    if (!io) return undefined;
    const ref = member.delegates.hostRefOf(io.memberKey);
    if (!ref) {
      creations.hold(io.memberKey, e);
      return undefined;
    }
    if (io.uid && uidMismatch(io.memberKey, io.uid)) return undefined;
    const at = new Date(eventTime(e));
    return {
      namespace: ref.namespace, name: ref.name, id: e.metadata?.uid ?? objectKey(e),
      event: {
        type: e.type, reason: e.reason, message: e.message, count: e.count ?? e.series?.count ?? 1,
        firstTimestamp: e.firstTimestamp ?? e.eventTime ?? at, lastTimestamp: at,
        source: { component: e.reportingComponent || e.source?.component || 'member', host: e.source?.host },
      },
    };
  };

  const started = Date.now();
  const events = listWatch<CoreV1Event>(member.client, {
    path: '/api/v1/events', model: 'CoreV1Event', resource: 'events', fieldSelector: 'involvedObject.kind=Pod',
    // Most of a member's pod events are about its own pods: dropped before they are revived or remembered.
    wanted: mayMirror,
    list: (p) => member.client.core.listEventForAllNamespaces(p),
  }, { log });
  const memberEvents$ = events.pipe(
    mergeMap((ev: ListWatchEvent<CoreV1Event>) => {
      if (ev.type === 'SYNC') {
        // The first list replays what happened shortly before clusterlet started; a relist (the watch expired,
        // or the member was away) only what was not seen yet: never the member's whole event history again.
        const since = started - replayWindowMs;
        return from(ev.items.filter((e) => eventTime(e) >= since && firstSight(e)));
      }
      return ev.type === 'DELETED' || !firstSight(ev.object) ? EMPTY : of(ev.object);
    }),
  );
  return merge(memberEvents$, released$).pipe(
    map(toPodEvent),
    filter((e): e is PodEvent => e !== undefined),
  );
}

/** The member pod an event is about (its namespace, name, UID if given, and key), if the event names one. */
function involvedPod(e: CoreV1Event): { uid?: string; memberKey: string } | undefined {
  const io = e.involvedObject;
  if (!io?.namespace || !io.name) return undefined;
  return { uid: io.uid, memberKey: `${io.namespace}/${io.name}` };
}

function eventTime(e: CoreV1Event): number {
  const t = e.lastTimestamp ?? e.series?.lastObservedTime ?? e.eventTime ?? e.firstTimestamp ?? e.metadata?.creationTimestamp;
  return t ? new Date(t).getTime() : Date.now();
}
