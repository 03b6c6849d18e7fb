// The health port as it ships: bundled with the build's options (hack/build.ts), which cut express's dependencies
// down (mime-db to a few types, iconv-lite out), and as the sources run it.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { bundleOptions } from '../../hack/build.ts';
import * as sources from '../../src/health.ts';

const dir = mkdtempSync(join(tmpdir(), 'clusterlet-health-'));
after(() => rmSync(dir, { recursive: true, force: true }));

async function bundled(): Promise<typeof sources> {
  await build({ ...bundleOptions(['src/health.ts'], dir), sourcemap: false, logLevel: 'silent' });
  return await import(pathToFileURL(join(dir, 'health.js')).href) as typeof sources;
}

for (const [name, load] of [['bundled', bundled], ['from the sources', async () => sources]] as const) {
  describe(`the health port, ${name}`, () => {
    it('answers /healthz, /readyz and /metrics with their content types, and 404 elsewhere', async () => {
      const { startHealthServer } = await load();
      let ready = false;
      const server: Server = await startHealthServer(0, [{ name: 'host caches', ready: () => ready }]);
      try {
        const get = async (path: string): Promise<[number, string | null, string]> => {
          const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`);
          return [res.status, res.headers.get('content-type'), await res.text()];
        };
        assert.deepEqual(await get('/healthz'), [200, 'text/plain; charset=utf-8', 'ok']);
        assert.deepEqual(await get('/readyz'), [503, 'text/plain; charset=utf-8', 'not ready: host caches\n']);
        ready = true;
        assert.deepEqual(await get('/readyz'), [200, 'text/plain; charset=utf-8', 'ok']);
        const [code, type, text] = await get('/metrics');
        assert.equal(code, 200);
        assert.equal(type, 'text/plain; version=0.0.4; charset=utf-8');
        assert.match(text, /^clusterlet_process_cpu_seconds_total /m);
        const [missing, missingType] = await get('/nope');
        assert.equal(missing, 404);
        assert.equal(missingType, 'text/html; charset=utf-8');
      } finally {
        await new Promise((resolve) => { server.close(resolve); });
      }
    });
  });
}
