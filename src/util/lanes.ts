// Waiting lines by priority, for the requests that wait on a cluster's rate limit or for one of its connections:
// the writes a user waits on (a proxy's status, the node's lease) go before the ones nobody waits on (events).
// First in, first out within a lane. A more urgent lane never starves the others: after PASS_LIMIT items served
// from it in a row while a less urgent one waited, the one that has waited longest among the less urgent goes.

/** How urgent a request is. `high`: what a user or a controller of the host waits on (a proxy's status, a lease);
 * `low`: what may come late (events); `normal`: the rest. */
export type Priority = 'high' | 'normal' | 'low';

const LANE: Record<Priority, number> = { high: 0, normal: 1, low: 2 };

/** Items served from a more urgent lane in a row, while a less urgent one waits, before one of those goes. */
export const PASS_LIMIT = 8;

interface Entry<T> { item: T; seq: number }

/** Items waiting in lanes, the most urgent lane served first (see PASS_LIMIT). */
export class Lanes<T> {
  #lanes: Entry<T>[][] = [[], [], []];
  #seq = 0;
  /** Items served in a row from a lane while a less urgent one waited. */
  #passed = 0;

  get length(): number { return this.#lanes[0]!.length + this.#lanes[1]!.length + this.#lanes[2]!.length; }

  push(item: T, priority: Priority = 'normal'): void {
    this.#lanes[LANE[priority]]!.push({ item, seq: this.#seq++ });
  }

  /** The first item of the most urgent lane that has one, or, every PASS_LIMIT + 1 items, the oldest of the others. */
  shift(): T | undefined {
    const first = this.#lanes.findIndex((l) => l.length > 0);
    if (first < 0) return undefined;
    // The lane, below the first, whose head has waited longest.
    let behind = -1;
    for (let i = first + 1; i < this.#lanes.length; i++) {
      const head = this.#lanes[i]![0];
      if (head && (behind < 0 || head.seq < this.#lanes[behind]![0]!.seq)) behind = i;
    }
    let from = first;
    if (behind < 0) {
      this.#passed = 0;
    } else if (++this.#passed > PASS_LIMIT) {
      this.#passed = 0;
      from = behind;
    }
    return this.#lanes[from]!.shift()!.item;
  }

  /** Removes `item` (an aborted request); whether it was there. */
  remove(item: T, priority: Priority = 'normal'): boolean {
    const lane = this.#lanes[LANE[priority]]!;
    const i = lane.findIndex((e) => e.item === item);
    if (i < 0) return false;
    lane.splice(i, 1);
    return true;
  }
}
