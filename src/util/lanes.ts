// Waiting lines by priority, for the requests that wait on a cluster's rate limit or for one of its connections:
// the writes a user waits on (a proxy's status, the node's lease) go before the ones nobody waits on (events).
// First in, first out within a lane. A more urgent lane never starves the others: after PASS_LIMIT items served
// from it in a row while a less urgent one waited, the one that has waited longest among the less urgent goes.

/** How urgent a request is. `high`: what a user or a controller of the host waits on (a proxy's status, a lease);
 * `low`: what may come late (events); `normal`: the rest. */
export type Priority = 'high' | 'normal' | 'low';

const LANE = { high: 0, normal: 1, low: 2 } as const satisfies Record<Priority, number>;
type Lane = (typeof LANE)[Priority];

/** Items served from a more urgent lane in a row, while a less urgent one waits, before one of those goes. */
export const PASS_LIMIT = 8;

interface Entry<T> { item: T; seq: number; lane: Lane }

/** Items waiting in lanes, the most urgent lane served first (see PASS_LIMIT). */
export class Lanes<T> {
  /** One lane per priority, by LANE. */
  #lanes: [Entry<T>[], Entry<T>[], Entry<T>[]] = [[], [], []];
  #seq = 0;
  /** Items served in a row from a lane while a less urgent one waited. */
  #passed = 0;

  get length(): number { return this.#lanes[0].length + this.#lanes[1].length + this.#lanes[2].length; }

  push(item: T, priority: Priority = 'normal'): void {
    const lane = LANE[priority];
    this.#lanes[lane].push({ item, seq: this.#seq++, lane });
  }

  /** The first item of the most urgent lane that has one, or, every PASS_LIMIT + 1 items, the oldest of the others. */
  shift(): T | undefined {
    // The first item of the most urgent lane that has one, and the one that has waited longest of the lanes below.
    let first: Entry<T> | undefined;
    let behind: Entry<T> | undefined;
    for (const lane of this.#lanes) {
      const head = lane[0];
      if (!head) continue;
      if (!first) first = head;
      else if (!behind || head.seq < behind.seq) behind = head;
    }
    if (!first) return undefined;
    let taken = first;
    if (!behind) {
      this.#passed = 0;
    } else if (++this.#passed > PASS_LIMIT) {
      this.#passed = 0;
      taken = behind;
    }
    this.#lanes[taken.lane].shift();
    return taken.item;
  }

  /** Removes `item` (an aborted request); whether it was there. */
  remove(item: T, priority: Priority = 'normal'): boolean {
    const lane = this.#lanes[LANE[priority]];
    const i = lane.findIndex((e) => e.item === item);
    if (i < 0) return false;
    lane.splice(i, 1);
    return true;
  }
}
