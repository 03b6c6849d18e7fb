// Waiting lines by priority, for the requests that wait on a cluster's rate limit or for one of its connections:
// the writes a user waits on (a proxy's status, the node's lease) go before the ones nobody waits on (events).
// First in, first out within a lane.

/** How urgent a request is. `high`: what a user or a controller of the host waits on (a proxy's status, a lease);
 * `low`: what may come late (events); `normal`: the rest. */
export type Priority = 'high' | 'normal' | 'low';

const LANE: Record<Priority, number> = { high: 0, normal: 1, low: 2 };

/** Items waiting in lanes, the most urgent lane served first. */
export class Lanes<T> {
  #lanes: T[][] = [[], [], []];
  #length = 0;

  get length(): number { return this.#length; }

  push(item: T, priority: Priority = 'normal'): void {
    this.#lanes[LANE[priority]]!.push(item);
    this.#length++;
  }

  /** Puts `item` back at the head of its lane (it was shifted, and could not be served after all). */
  unshift(item: T, priority: Priority = 'normal'): void {
    this.#lanes[LANE[priority]]!.unshift(item);
    this.#length++;
  }

  /** The first item of the most urgent lane that has one. */
  shift(): T | undefined {
    if (this.#length === 0) return undefined;
    for (const lane of this.#lanes) {
      if (lane.length) {
        this.#length--;
        return lane.shift();
      }
    }
    return undefined;
  }

  /** Removes `item` (an aborted request); whether it was there. */
  remove(item: T, priority: Priority = 'normal'): boolean {
    const lane = this.#lanes[LANE[priority]]!;
    const i = lane.indexOf(item);
    if (i < 0) return false;
    lane.splice(i, 1);
    this.#length--;
    return true;
  }
}
