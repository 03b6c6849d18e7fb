// A keyed work queue in the manner of client-go's, with priorities: a key is queued once however often it is added
// (at the highest priority it was added with), a key added while being processed waits in the queue and runs again
// afterwards (never concurrently with itself), failures are retried with capped exponential backoff, and at most
// `workers` keys run at once (plus `urgent.workers` for urgent keys). Keys of a higher priority run first; within one
// priority, in the order they were added.
import { backoffDelay } from './backoff.ts';
import { metrics, queueDepths } from '../metrics.ts';
import type { Logger } from '../log.ts';
import { settle } from './settle.ts';

export interface HandlerResult {
  /** Process the key again after this many ms (a poll the handler asks for, not a failure). */
  requeueAfterMs?: number;
}
export type Handler = (key: string) => Promise<HandlerResult | void>;

export interface WorkQueueOptions {
  name: string;
  workers: number;
  /**
   * Workers only keys of `priority` or above run on, besides `workers` (which they may take too): urgent work that is
   * mostly waiting on a request (a deletion) never waits for a worker that other work holds.
   */
  urgent?: { priority: Priority; workers: number };
  baseDelayMs?: number;
  maxDelayMs?: number;
  log?: Logger;
  /**
   * The name of each priority (by its number) in clusterlet_queue_wait_seconds' `priority` label: a queue that puts
   * some keys first has its other keys wait by design, and its waits are read lane by lane. Default: the number.
   */
  priorityNames?: readonly string[];
}

/** A key's priority: a small integer ≥ 0, higher runs first. */
export type Priority = number;

/** The names of a queue's priorities by number (WorkQueueOptions.priorityNames), from a name → priority table. */
export function priorityNames(priorities: Record<string, Priority>): string[] {
  const names: string[] = [];
  for (const [name, p] of Object.entries(priorities)) names[p] = name;
  return names;
}

/**
 * A queued key: its priority, when it was first queued (a sequence number: earlier runs first), and since when it
 * may run (performance.now(): queued, or its earlier run ended), for clusterlet_queue_wait_seconds.
 */
interface Entry { key: string; priority: Priority; seq: number; since: number }

/** A settled() call waiting: for keys of `priority` and above, until `timer` (if any) gives up. */
interface SettledWaiter { priority: Priority; resolve: () => void; timer?: NodeJS.Timeout }

export class WorkQueue {
  readonly name: string;
  /** Queued keys, best first; an entry no longer in #queued (raised since) is skipped when it comes up. */
  #heap = new EntryHeap();
  #queued = new Map<string, Entry>();
  /** Keys added while being processed: queued again, at their place, once that run ends. */
  #waiting = new Map<string, Entry>();
  /** Keys under way → the priority they run at. */
  #processing = new Map<string, Priority>();
  /** Keys queued, waiting or under way, by priority: what settled() waits on. */
  #load: number[] = [];
  #settledWaiters = new Set<SettledWaiter>();
  /** How many of the keys under way are urgent (see WorkQueueOptions.urgent). */
  #urgentRunning = 0;
  #seq = 0;
  #failures = new Map<string, number>();
  #timers = new Map<string, NodeJS.Timeout>();
  #due = new Map<string, { at: number; priority: Priority }>();
  #handler: Handler | undefined;
  #workers: number;
  #opts: WorkQueueOptions;
  #shutdown = false;
  #idleWaiters: (() => void)[] = [];
  #waitLabels = new Map<Priority, string>();

  constructor(opts: WorkQueueOptions) {
    if (!(opts.workers >= 1)) throw new Error(`work queue ${opts.name}: workers must be ≥ 1`);
    this.name = opts.name;
    this.#workers = opts.workers;
    this.#opts = opts;
    // Its depth is read when /metrics is scraped, not written at every add and take.
    queueDepths.add(this);
  }

  /** Keys waiting to be processed (those whose earlier run is still under way included). */
  get depth(): number { return this.#queued.size + this.#waiting.size; }

  start(handler: Handler): void {
    this.#handler = handler;
    this.#pump();
  }

  /**
   * Queues the key at `priority`, or raises it there if it waits at a lower one: it keeps its place among the keys
   * of its priority, and never moves down.
   */
  add(key: string, priority: Priority = 0): void {
    if (this.#shutdown) return;
    const due = this.#due.get(key);
    if (due) {
      clearTimeout(this.#timers.get(key));
      this.#timers.delete(key);
      this.#due.delete(key);
      priority = Math.max(priority, due.priority);
    }
    const waiting = this.#waiting.get(key);
    if (waiting) {
      if (waiting.priority < priority) {
        this.#count(waiting.priority, -1);
        this.#count(priority, 1);
        waiting.priority = priority;
      }
      return;
    }
    const queued = this.#queued.get(key);
    if (queued && queued.priority >= priority) return;
    if (queued) this.#count(queued.priority, -1);
    this.#count(priority, 1);
    const entry = { key, priority, seq: queued?.seq ?? this.#seq++, since: queued?.since ?? performance.now() };
    if (this.#processing.has(key)) {
      this.#waiting.set(key, entry);
      return;
    }
    this.#enqueue(entry);
    this.#pump();
  }

  /**
   * Adds the key after `ms`, unless it is added sooner. Of two pending deadlines the sooner wins (with the higher of
   * their priorities). A key queued already is left alone: it runs soon anyway.
   */
  addAfter(key: string, ms: number, priority: Priority = 0): void {
    if (this.#shutdown || this.#queued.has(key) || this.#waiting.has(key)) return;
    const at = Date.now() + ms;
    const pending = this.#due.get(key);
    if (pending !== undefined) {
      pending.priority = Math.max(pending.priority, priority);
      if (pending.at <= at) return;
      priority = pending.priority;
      clearTimeout(this.#timers.get(key));
    }
    const t = setTimeout(() => this.add(key), ms);
    t.unref();
    this.#timers.set(key, t);
    this.#due.set(key, { at, priority });
  }

  /** Number of consecutive failures of a key. */
  failures(key: string): number { return this.#failures.get(key) ?? 0; }

  /** Resolves when nothing is queued or running (keys waiting on a retry timer do not count). */
  idle(): Promise<void> {
    if (this.#isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /**
   * Resolves once no key of `priority` or above is queued or running, or after `withinMs` at the most: for work that
   * should give way to this queue's for a while (keys waiting on a retry timer do not count). A wait that timed out
   * is forgotten, so that waiters never pile up on a queue that stays busy. Never resolves after shutdown.
   */
  settled(priority: Priority, withinMs = Infinity): Promise<void> {
    if (this.#shutdown) return new Promise(() => undefined);
    if (this.#loadFrom(priority) === 0 || withinMs <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const w: SettledWaiter = { priority, resolve };
      if (Number.isFinite(withinMs)) {
        w.timer = setTimeout(() => { this.#settledWaiters.delete(w); resolve(); }, withinMs);
        w.timer.unref();
      }
      this.#settledWaiters.add(w);
    });
  }

  shutdown(): void {
    this.#shutdown = true;
    for (const w of this.#settledWaiters) clearTimeout(w.timer);
    this.#settledWaiters.clear();
    for (const t of this.#timers.values()) clearTimeout(t);
    this.#timers.clear();
    this.#due.clear();
    this.#heap = new EntryHeap();
    this.#queued.clear();
    this.#waiting.clear();
    // Its series go with it (a member removed, a lead lost): a gauge left behind would show work that is not there.
    // Queues that share a name (the nodes of a member's pools or member nodes) share their series: the last one's go.
    queueDepths.delete(this);
    if ([...queueDepths].some((q) => q.name === this.name)) return;
    metrics.queueDepth.remove({ queue: this.name });
    metrics.syncLatency.remove({ queue: this.name });
    for (const priority of this.#waitLabels.values()) metrics.queueWait.remove({ queue: this.name, priority });
  }

  /** The `priority` label of `priority`'s waits (WorkQueueOptions.priorityNames); each one used is kept for shutdown. */
  #waitLabel(priority: Priority): string {
    let label = this.#waitLabels.get(priority);
    if (label === undefined) {
      label = this.#opts.priorityNames?.[priority] ?? String(priority);
      this.#waitLabels.set(priority, label);
    }
    return label;
  }

  #isIdle(): boolean { return this.depth === 0 && this.#processing.size === 0; }

  #count(priority: Priority, delta: number): void {
    this.#load[priority] = (this.#load[priority] ?? 0) + delta;
  }

  #loadFrom(priority: Priority): number {
    let n = 0;
    for (let p = Math.max(0, priority); p < this.#load.length; p++) n += this.#load[p] ?? 0;
    return n;
  }

  #wakeSettled(): void {
    for (const w of this.#settledWaiters) {
      if (this.#loadFrom(w.priority) > 0) continue;
      this.#settledWaiters.delete(w);
      clearTimeout(w.timer);
      w.resolve();
    }
  }

  #enqueue(entry: Entry): void {
    this.#queued.set(entry.key, entry);
    this.#heap.push(entry);
  }

  #pump(): void {
    const handler = this.#handler;
    for (let entry = this.#heap.peek(); handler && entry; entry = this.#heap.peek()) {
      const urgent = this.#isUrgent(entry.priority);
      if (!this.#hasWorkerFor(urgent)) break;
      this.#heap.pop();
      if (this.#queued.get(entry.key) !== entry) continue; // raised since: its newer entry stands
      this.#queued.delete(entry.key);
      metrics.queueWait.observe({ queue: this.name, priority: this.#waitLabel(entry.priority) }, (performance.now() - entry.since) / 1000);
      this.#processing.set(entry.key, entry.priority);
      if (urgent) this.#urgentRunning++;
      settle(this.#run(handler, entry.key, entry.priority), this.#opts.log ?? console, `work queue ${this.name}: a run failed`);
    }
    if (this.#isIdle()) {
      for (const w of this.#idleWaiters.splice(0)) w();
    }
  }

  #isUrgent(priority: Priority): boolean {
    return this.#opts.urgent !== undefined && priority >= this.#opts.urgent.priority;
  }

  /** Whether a key may start now: any on `workers`, an urgent one on its own workers too. */
  #hasWorkerFor(urgent: boolean): boolean {
    const all = this.#workers + (this.#opts.urgent?.workers ?? 0);
    if (this.#processing.size >= all) return false;
    return urgent || this.#processing.size - this.#urgentRunning < this.#workers;
  }

  async #run(handler: Handler, key: string, priority: Priority): Promise<void> {
    const end = metrics.syncLatency.startTimer({ queue: this.name });
    try {
      const res = await handler(key);
      this.#failures.delete(key);
      if (res?.requeueAfterMs !== undefined) this.addAfter(key, res.requeueAfterMs, priority);
    } catch (err) {
      const n = (this.#failures.get(key) ?? 0) + 1;
      this.#failures.set(key, n);
      const delay = backoffDelay(n - 1, this.#opts.baseDelayMs ?? 500, this.#opts.maxDelayMs ?? 60_000);
      this.#opts.log?.warn({ queue: this.name, key, attempt: n, retryInMs: delay, err: (err as Error).message },
        'sync failed; will retry');
      this.addAfter(key, delay, priority);
    } finally {
      if (!this.#shutdown) end();
      this.#processing.delete(key);
      if (this.#isUrgent(priority)) this.#urgentRunning--;
      this.#count(priority, -1);
      const waiting = this.#waiting.get(key);
      if (waiting) {
        this.#waiting.delete(key);
        // It waited for its own run, not for a worker: its wait starts now, as client-go's does.
        waiting.since = performance.now();
        this.#enqueue(waiting);
      }
      this.#wakeSettled();
      this.#pump();
    }
  }
}

/** A binary heap of entries: the highest priority first, then the lowest sequence number. */
class EntryHeap {
  #a: Entry[] = [];

  push(e: Entry): void {
    const a = this.#a;
    // Up from the new last place: each parent that `e` goes before moves down into the hole, then `e` fills it.
    let i = a.length;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = a[parent];
      if (!before(e, p)) break;
      a[i] = p;
      i = parent;
    }
    a[i] = e;
  }

  peek(): Entry | undefined { return this.#a[0]; }

  pop(): Entry | undefined {
    const a = this.#a;
    const top = a[0];
    const last = a.pop();
    if (a.length === 0 || !last) return top;
    // Down from the root for `last`: the better child moves up into the hole while it goes before `last`.
    const n = a.length;
    let i = 0;
    for (let l = 1; l < n; l = 2 * i + 1) {
      let c = l;
      let child = a[l];
      if (l + 1 < n) {
        const right = a[l + 1];
        if (before(right, child)) { c = l + 1; child = right; }
      }
      if (!before(child, last)) break;
      a[i] = child;
      i = c;
    }
    a[i] = last;
    return top;
  }
}

const before = (x: Entry, y: Entry): boolean => x.priority > y.priority || (x.priority === y.priority && x.seq < y.seq);
