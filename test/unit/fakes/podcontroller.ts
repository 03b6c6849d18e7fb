// The pod controller as its unit tests start it: over a FakeHost and a FakeProvider, for the virtual node NODE of
// member `eu`. stopControllers (each test file's afterEach) stops every one started.
import { PodController, type PodControllerOptions } from '../../../src/host/pod/controller.ts';
import { createLogger } from '../../../src/log.ts';
import type { FakeHost } from './host.ts';
import type { FakeProvider } from './provider.ts';

export const NODE = 'clusterlet-eu';

const started: PodController[] = [];

export function startController(host: FakeHost, provider: FakeProvider, workers = 2, opts: Partial<PodControllerOptions> = {}): PodController {
  const c = new PodController(host.client(), provider, createLogger('silent'), { nodeName: NODE, member: 'eu', workers, ...opts });
  c.start();
  started.push(c);
  return c;
}

export function stopControllers(): void {
  for (const c of started.splice(0)) c.stop();
}
