// A keyed work queue in the manner of client-go's: a key is queued once however often it is added,
// a key added while being processed is processed again afterwards (never concurrently with itself),
// failures are retried with capped exponential backoff, and at most `workers` keys run at once.
import { backoffDelay } from './backoff.ts';
import { metrics } from '../metrics.ts';
import type { Logger } from '../log.ts';

export interface HandlerResult {
  /** Process the key again after this many ms (a poll the handler asks for, not a failure). */
  requeueAfterMs?: number;
}
export type Handler = (key: string) => Promise<HandlerResult | void>;

export interface WorkQueueOptions {
  name: string;
  workers: number;
  baseDelayMs?: number;
  maxDelayMs?: number;
  log?: Logger;
}

export class WorkQueue {
  readonly name: string;
  #queue: string[] = [];
  #queued = new Set<string>();
  #processing = new Set<string>();
  #dirty = new Set<string>();
  #failures = new Map<string, number>();
  #timers = new Map<string, NodeJS.Timeout>();
  #due = new Map<string, number>();
  #handler: Handler | undefined;
  #active = 0;
  #workers: number;
  #opts: WorkQueueOptions;
  #shutdown = false;
  #idleWaiters: (() => void)[] = [];

  constructor(opts: WorkQueueOptions) {
    if (!(opts.workers >= 1)) throw new Error(`work queue ${opts.name}: workers must be ≥ 1`);
    this.name = opts.name;
    this.#workers = opts.workers;
    this.#opts = opts;
  }

  get depth(): number { return this.#queue.length; }

  start(handler: Handler): void {
    this.#handler = handler;
    this.#pump();
  }

  add(key: string): void {
    if (this.#shutdown) return;
    const t = this.#timers.get(key);
    if (t) { clearTimeout(t); this.#timers.delete(key); this.#due.delete(key); }
    if (this.#processing.has(key)) { this.#dirty.add(key); return; }
    if (this.#queued.has(key)) return;
    this.#queued.add(key);
    this.#queue.push(key);
    metrics.queueDepth.set({ queue: this.name }, this.#queue.length);
    this.#pump();
  }

  /** Adds the key after `ms`, unless it is added sooner. Of two pending deadlines the sooner wins. */
  addAfter(key: string, ms: number): void {
    if (this.#shutdown) return;
    const due = Date.now() + ms;
    const pending = this.#due.get(key);
    if (pending !== undefined && pending <= due) return;
    clearTimeout(this.#timers.get(key));
    const t = setTimeout(() => { this.#timers.delete(key); this.#due.delete(key); this.add(key); }, ms);
    t.unref();
    this.#timers.set(key, t);
    this.#due.set(key, due);
  }

  /** Number of consecutive failures of a key. */
  failures(key: string): number { return this.#failures.get(key) ?? 0; }

  /** Resolves when nothing is queued or running (keys waiting on a retry timer do not count). */
  idle(): Promise<void> {
    if (this.#queue.length === 0 && this.#active === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  shutdown(): void {
    this.#shutdown = true;
    for (const t of this.#timers.values()) clearTimeout(t);
    this.#timers.clear();
    this.#due.clear();
    this.#queue = [];
    this.#queued.clear();
  }

  #pump(): void {
    while (this.#handler && this.#active < this.#workers && this.#queue.length > 0) {
      const key = this.#queue.shift()!;
      this.#queued.delete(key);
      this.#processing.add(key);
      this.#active++;
      metrics.queueDepth.set({ queue: this.name }, this.#queue.length);
      void this.#run(key);
    }
    if (this.#queue.length === 0 && this.#active === 0) {
      for (const w of this.#idleWaiters.splice(0)) w();
    }
  }

  async #run(key: string): Promise<void> {
    const end = metrics.syncLatency.startTimer({ queue: this.name });
    try {
      const res = await this.#handler!(key);
      this.#failures.delete(key);
      if (res?.requeueAfterMs !== undefined) this.addAfter(key, res.requeueAfterMs);
    } catch (err) {
      const n = (this.#failures.get(key) ?? 0) + 1;
      this.#failures.set(key, n);
      const delay = backoffDelay(n - 1, this.#opts.baseDelayMs ?? 500, this.#opts.maxDelayMs ?? 60_000);
      this.#opts.log?.warn({ queue: this.name, key, attempt: n, retryInMs: delay, err: (err as Error).message },
        'sync failed; will retry');
      this.addAfter(key, delay);
    } finally {
      end();
      this.#processing.delete(key);
      this.#active--;
      if (this.#dirty.delete(key)) this.add(key);
      this.#pump();
    }
  }
}
