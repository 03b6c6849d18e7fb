// HTTPS/1.1 requests through undici's Pool, behind the same interface as H1Pool (h1.ts): the transport the benchmark
// compares with clusterlet's own client (CLUSTERLET_HTTP_CLIENT=undici; docs/performance.md, 'undici'). undici has no
// request priorities: every request waits for a connection in the order it came.
import type { Readable } from 'node:stream';
import { Pool } from 'undici';
import type { H1Origin, H1PoolOptions } from './h1.ts';
import type { ApiRequest, Exchange } from './h2.ts';

export class UndiciPool {
  #pool: Pool;
  #closed = false;

  constructor(origin: H1Origin, opts: H1PoolOptions) {
    const url = `${origin.secure ? 'https' : 'http'}://${origin.hostname.includes(':') ? `[${origin.hostname}]` : origin.hostname}:${origin.port}`;
    this.#pool = new Pool(url, {
      connections: Number.isFinite(opts.maxSockets ?? Infinity) ? opts.maxSockets : null,
      keepAliveTimeout: opts.idleMs, keepAliveMaxTimeout: opts.idleMs,
      // Timeouts are the caller's (ApiRequest.timeoutMs); a watch's body may be silent for minutes.
      headersTimeout: 0, bodyTimeout: 0, pipelining: 1, allowH2: false,
      connect: origin.secure
        ? { secureContext: origin.secureContext, servername: origin.servername, rejectUnauthorized: origin.rejectUnauthorized ?? true }
        : undefined,
    });
  }

  /** Sends `r`; resolves with the answer's head once it has come (its body follows on `body`). */
  async request(r: ApiRequest): Promise<Exchange> {
    if (this.#closed) throw new Error('connection pool closed');
    const timeout = r.timeoutMs !== undefined ? AbortSignal.timeout(r.timeoutMs) : undefined;
    const signal = timeout && r.signal ? AbortSignal.any([timeout, r.signal]) : timeout ?? r.signal;
    const res = await this.#pool.request({ method: r.method as 'GET', path: r.path, headers: r.headers, body: r.body, signal });
    const body = res.body as unknown as Readable;
    const contentType = res.headers['content-type'];
    let idle: NodeJS.Timeout | undefined;
    body.on('close', () => { if (idle) clearTimeout(idle); });
    return {
      status: res.statusCode,
      contentType: Array.isArray(contentType) ? contentType[0] : contentType ?? '',
      body,
      destroy: (err) => { body.destroy(err); },
      onIdle: (ms, onIdle) => {
        const arm = (): void => {
          if (idle) clearTimeout(idle);
          idle = setTimeout(onIdle, ms);
          idle.unref();
        };
        body.on('data', arm);
        arm();
      },
      onError: (handler) => { body.on('error', handler); },
    };
  }

  /** Takes no new request; closes the connections once the requests under way have ended. */
  close(): void {
    this.#closed = true;
    void this.#pool.close().catch(() => undefined);
  }
}
