import { createServer } from 'node:net';
import { request } from 'node:https';
import { readFileSync } from 'node:fs';

/** A port that was free a moment ago on every address. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    // On every address, not 127.0.0.1 alone: the KWOK servers listen on the test network's address, and a port free
    // on loopback only was handed out again to clusterlet's kubelet API (which binds every address: it could not
    // listen, and the node proxy reached a KWOK server instead, 404 for everything).
    srv.listen(0, () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export interface TlsClient { ca?: string; cert?: string; key?: string }

/** GET over HTTPS; resolves with the status code (0 when the connection failed). */
export function httpsStatus(url: string, tls: TlsClient, timeoutMs = 2000): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const req = request(url, {
      ca: tls.ca ? readFileSync(tls.ca) : undefined,
      cert: tls.cert ? readFileSync(tls.cert) : undefined,
      key: tls.key ? readFileSync(tls.key) : undefined,
      rejectUnauthorized: Boolean(tls.ca),
      timeout: timeoutMs,
    }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => { body += c; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', () => resolve({ status: 0, body }));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve({ status: 0, body: '' }));
    req.end();
  });
}

/**
 * Waits until `check` returns a value, re-checking every `intervalMs`; throws `what` on timeout.
 * For readiness endpoints of processes we start, which have nothing to watch.
 */
export async function pollUntil<T>(what: string, check: () => Promise<T | undefined>, timeoutMs: number,
  intervalMs = 100, alive?: () => string | undefined): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    const dead = alive?.();
    if (dead) throw new Error(`${what}: ${dead}`);
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
