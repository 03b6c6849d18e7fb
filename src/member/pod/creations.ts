// The delegates a provider is creating or created that the delegate index has not shown yet: what creating() answers,
// whether a delegate's appearance is the create's own (PodChange.created), and the member events held for a delegate
// the pod informer has not shown yet.
import { LRUCache } from 'lru-cache';
import type { CoreV1Event } from '@kubernetes/client-node';
import { upTo } from '../../util/lru.ts';
import type { DelegateChange } from '../delegates.ts';

/** How many events about a delegate not shown yet are held for it (the latest). */
const EARLY_EVENTS_PER_POD = 20;

/**
 * A delegate this provider is creating or created, that the delegate index has not shown since: marked before the
 * create is sent, and ended by the next change of its member key (take), or by the member refusing the create.
 */
export interface Creation {
  /** The proxy's key: creating() is asked in host coordinates. */
  hostKey: string;
  /**
   * The member answered that the delegate exists (created, or AlreadyExists and ours): creating() is true. A create
   * left without an answer (the connection lost, a timeout) may have made it: its events are held, nothing is awaited.
   */
  answered: boolean;
  /**
   * The resourceVersion the create answered with, where its appearance at that version needs no sync
   * (PodChange.created); undefined before the answer, after an AlreadyExists, or with ephemeral containers to add.
   */
  rv: string | undefined;
  /**
   * Member events that came before the delegate showed: the event watch and the pod informer are two streams, and the
   * member's scheduler can report on a new delegate (FailedScheduling) before the informer shows it.
   */
  events: CoreV1Event[];
}

/**
 * The creations by member key. Bounded in number and time (appearanceWaitMs), for delegates a relist never showed.
 * The events of pods not created here (the member's own) are never held.
 */
export class Creations {
  #byKey: LRUCache<string, Creation>;

  constructor(appearanceWaitMs: number) {
    this.#byKey = new LRUCache({ ...upTo(20_000), ttl: appearanceWaitMs });
  }

  get(memberKey: string): Creation | undefined { return this.#byKey.get(memberKey); }
  has(memberKey: string): boolean { return this.#byKey.has(memberKey); }

  /** Marks a creation of `memberKey` (before the create is sent: the member may report on it before it returns). */
  begin(memberKey: string, creation: Creation): void { this.#byKey.set(memberKey, creation); }

  /** The creation a delegate change ends, if one waits for its member key: any change of the key ends it. */
  take(c: DelegateChange): Creation | undefined {
    const creation = this.#byKey.get(c.memberKey);
    if (creation) this.#byKey.delete(c.memberKey);
    return creation;
  }

  /** The member says `creation`'s delegate exists: awaited (creating()) for appearanceWaitMs from now, if still current. */
  answered(memberKey: string, creation: Creation): void {
    creation.answered = true;
    if (this.#byKey.get(memberKey) === creation) this.#byKey.set(memberKey, creation);
  }

  /** Ends `creation` unless a later one of the same key replaced it. */
  end(memberKey: string, creation: Creation): void {
    if (this.#byKey.get(memberKey) === creation) this.#byKey.delete(memberKey);
  }

  /** Holds a member event about `memberKey` until its delegate shows, if a creation waits for it (the latest few). */
  hold(memberKey: string, e: CoreV1Event): void {
    const held = this.#byKey.get(memberKey)?.events;
    if (held && held.push(e) > EARLY_EVENTS_PER_POD) held.shift();
  }
}

/**
 * Whether a delegate's change is its appearance as this provider's create left it (at the version that create answered
 * with): the controller that asked for it has had its answer (PodChange.created).
 */
export function isOwnAppearance(c: DelegateChange, creation: Creation | undefined): boolean {
  return creation?.rv !== undefined && creation.rv === c.appearedAt && creation.hostKey === c.hostKey;
}
