// The event mirror of one virtual node: each event the member records about a delegate is written onto its proxy,
// with the member named in its source, after the status writes under way (which the user waits for more).
import { map, mergeMap, type Subscription } from 'rxjs';
import type { V1Pod } from '@kubernetes/client-node';
import type { Informer } from '../../kube/informer.ts';
import { toKubeError } from '../../kube/errors.ts';
import { writeEvent } from '../../kube/events.ts';
import { backoffDelay } from '../../util/backoff.ts';
import type { WorkQueue } from '../../util/workqueue.ts';
import type { PodEvent, PodProvider } from '../../provider/pod.ts';
import { metrics } from '../../metrics.ts';
import type { Logger } from '../../log.ts';
import { STATUS } from './status-mirror.ts';
import { proxyRef } from './writer.ts';
import type { EventClient } from '../../kube/events.ts';

/** Attempts at writing a mirrored member event onto the host, while the host answers with a transient error. */
const EVENT_WRITE_ATTEMPTS = 5;

/** The longest a mirrored event waits for the status writes under way. */
const EVENT_YIELD_MAX_MS = 5_000;

/** Mirrored events written at once. */
const EVENT_WRITERS = 4;

export interface EventMirrorOptions {
  nodeName: string;
  member: string;
  /** The longest a mirrored event waits for the status writes under way (default 5 s). */
  yieldMs?: number;
  stopped: () => boolean;
}

/**
 * Mirrors the provider's pod events until unsubscribed. Events give way to status writes (`statusQueue`): both go to
 * the host API server, and a burst of pods becoming Ready comes with the member's events about them (Scheduled,
 * Pulled, Started…). For a while only, counted from the event's arrival (not from when a writer takes it): under a
 * status queue that never drains (thousands of pods changing), events still go, late by that while and no more.
 */
export function mirrorEvents(host: EventClient, proxies: Informer<V1Pod>, provider: PodProvider, statusQueue: WorkQueue,
  log: Logger, opts: EventMirrorOptions): Subscription {
  const write = async (e: PodEvent): Promise<'written' | 'skipped' | 'failed'> => {
    const proxy = proxies.get(`${e.namespace}/${e.name}`);
    const uid = proxy?.metadata?.uid;
    // Gone by its turn (events give way to status writes): nobody is left to read it.
    if (!uid) return 'skipped';
    const source = { component: `${e.event.source?.component ?? 'member'} (member ${opts.member})`, host: opts.nodeName };
    for (let attempt = 0; !opts.stopped(); attempt++) {
      try {
        await writeEvent(host, proxyRef(e.namespace, e.name, uid), e.id, { ...e.event, source },
          { bump: false, instance: opts.nodeName });
        return 'written';
      } catch (err) {
        const k = toKubeError(err);
        // A host that is briefly away or busy (or a concurrent write of the same event) is tried again, a few times.
        const again = attempt < EVENT_WRITE_ATTEMPTS - 1 && !opts.stopped()
          && (k.kind === 'Unavailable' || k.kind === 'TooManyRequests' || k.kind === 'Conflict' || k.kind === 'Unknown');
        if (!again) {
          log.warn({ namespace: e.namespace, pod: e.name, err: k.message }, 'could not mirror a member event');
          return 'failed';
        }
        await new Promise((r) => setTimeout(r, backoffDelay(attempt, 500, 8_000)).unref());
      }
    }
    return 'failed';
  };
  return provider.podEvents$.pipe(
    map((e) => ({ e, yieldUntil: performance.now() + (opts.yieldMs ?? EVENT_YIELD_MAX_MS) })),
    mergeMap(async ({ e, yieldUntil }) => {
      await statusQueue.settled(STATUS.change, yieldUntil - performance.now());
      const result = await write(e);
      if (!opts.stopped()) metrics.mirroredEvents.inc({ member: opts.member, result });
    }, EVENT_WRITERS),
  ).subscribe();
}
