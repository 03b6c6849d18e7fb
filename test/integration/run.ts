// Integration suite entry: starts the local host + member clusters once, runs every
// test/integration/*.test.ts against them in this process, and stops them (also on SIGINT/SIGTERM
// or a failing test), leaving no process and no temp dir behind.
import { after, before } from 'node:test';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { setHarness, setUpIdentities, stopSpawned } from '../support/env.ts';
import { Harness } from '../harness/harness.ts';

const dir = fileURLToPath(new URL('.', import.meta.url));
const only = process.env.TEST_ONLY?.split(',');
const files = readdirSync(dir).filter((f) => f.endsWith('.test.ts'))
  .filter((f) => !only || only.some((o) => f.includes(o))).sort();

let harness: Harness | undefined;
const shutdown = async (): Promise<void> => {
  await stopSpawned();
  await harness?.stop();
};
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => { shutdown().catch((err: unknown) => console.error('shutdown failed:', err)).finally(() => process.exit(130)); });
}

before(async () => {
  harness = await Harness.start();
  setHarness(harness);
  // clusterlet runs under the manifests' RBAC identities, so a missing permission fails a test.
  await setUpIdentities(harness);
}, { timeout: 60 * 60_000 });

after(async () => { await shutdown(); }, { timeout: 120_000 });

for (const f of files) await import(new URL(f, import.meta.url).href);
