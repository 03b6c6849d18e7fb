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
  #length = 0;
  #seq = 0;
  /** Items served in a row from a lane while a less urgent one waited. */
  #passed = 0;

  get length(): number { return this.#length; }

  push(item: T, priority: Priority = 'normal'): void {
    this.#lanes[LANE[priority]]!.push({ item, seq: this.#seq++ });
    this.#length++;
  }

  /** Puts `item` back at the head of its lane (it was shifted, and could not be served after all). */
  unshift(item: T, priority: Priority = 'normal'): void {
    const lane = this.#lanes[LANE[priority]]!;
    lane.unshift({ item, seq: Math.min(this.#seq, ...lane.slice(0, 1).map((e) => e.seq)) - 1 });
    this.#length++;
  }

  /** The first item of the most urgent lane that has one, or, every PASS_LIMIT + 1 items, the oldest of the others. */
  shift(): T | undefined {
    if (this.#length === 0) return undefined;
    const first = this.#lanes.findIndex((l) => l.length > 0);
    let from = first;
    const behind = this.#lanes.slice(first + 1).some((l) => l.length > 0);
    if (!behind) {
      this.#passed = 0;
    } else if (++this.#passed > PASS_LIMIT) {
      this.#passed = 0;
      for (let i = first + 1; i < this.#lanes.length; i++) {
        const head = this.#lanes[i]![0];
        if (head && (from === first || head.seq < this.#lanes[from]![0]!.seq)) from = i;
      }
    }
    this.#length--;
    return this.#lanes[from]!.shift()!.item;
  }

  /** Removes `item` (an aborted request); whether it was there. */
  remove(item: T, priority: Priority = 'normal'): boolean {
    const lane = this.#lanes[LANE[priority]]!;
    const i = lane.findIndex((e) => e.item === item);
    if (i < 0) return false;
    lane.splice(i, 1);
    this.#length--;
    return true;
  }
}
