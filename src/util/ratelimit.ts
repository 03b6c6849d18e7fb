import { Lanes, type Priority } from './lanes.ts';

/** Token bucket: `qps` tokens per second, up to `burst` banked. `take()` waits for a token, FIFO within a priority. */
export class TokenBucket {
  readonly qps: number;
  readonly burst: number;
  #tokens: number;
  #last = performance.now();
  #waiters = new Lanes<() => void>();
  #timer: NodeJS.Timeout | undefined;

  constructor(qps: number, burst: number) {
    if (!(qps > 0) || !(burst >= 1)) throw new Error(`invalid rate limit qps=${qps} burst=${burst}`);
    this.qps = qps;
    this.burst = burst;
    this.#tokens = burst;
  }

  take(priority: Priority = 'normal'): Promise<void> {
    this.#refill();
    if (this.#waiters.length === 0 && this.#tokens >= 1) {
      this.#tokens -= 1;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      this.#waiters.push(resolve, priority);
      this.#schedule();
    });
  }

  #refill(): void {
    const now = performance.now();
    this.#tokens = Math.min(this.burst, this.#tokens + ((now - this.#last) / 1000) * this.qps);
    this.#last = now;
  }

  #schedule(): void {
    if (this.#timer) return;
    const wait = Math.max(1, ((1 - this.#tokens) / this.qps) * 1000);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#refill();
      while (this.#tokens >= 1) {
        const next = this.#waiters.shift();
        if (!next) break;
        this.#tokens -= 1;
        next();
      }
      if (this.#waiters.length) this.#schedule();
    }, wait);
  }
}
