// The plain-HTTP health port: /healthz (the process serves), /readyz (host caches synced and every
// member's controllers started), /metrics (Prometheus).
import express from 'express';
import type { Server } from 'node:http';
import { registry } from './metrics.ts';

export interface ReadinessCheck { name: string; ready(): boolean }

export function startHealthServer(port: number, checks: ReadinessCheck[]): Promise<Server> {
  const app = express();
  app.disable('x-powered-by');
  app.get('/healthz', (_req, res) => { res.type('text').send('ok'); });
  app.get('/readyz', (_req, res) => {
    const failing = checks.filter((c) => !c.ready()).map((c) => c.name);
    if (failing.length) res.status(503).type('text').send(`not ready: ${failing.join(', ')}\n`);
    else res.type('text').send('ok');
  });
  app.get('/metrics', (_req, res, next) => {
    registry.metrics().then((text) => { res.type(registry.contentType).send(text); }, next);
  });
  return new Promise((resolve, reject) => {
    const server = app.listen(port, () => resolve(server));
    server.on('error', reject);
  });
}
