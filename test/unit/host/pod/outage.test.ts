// After a member outage the proxies converge to their delegates' status, with hundreds of pods: whatever the host
// wrote on them meanwhile (its node-lifecycle controller marks every pod of a NotReady node Ready=False), and
// whatever the member's own node-lifecycle controller did to the delegates once its API server was back.
import { describe, it, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { FakeHost } from '../../fakes/host.ts';
import { FakeProvider } from '../../fakes/provider.ts';
import { NODE, startController as start, stopControllers } from '../../fakes/podcontroller.ts';
import { eventually } from '../../fakes/wait.ts';
import { advanceTo, flush, mockTime, T0 } from '../../fakes/clock.ts';

const NS = 'web';
const N = 300;
const names = Array.from({ length: N }, (_, i) => `p${i}`);

const running = (ready: 'True' | 'False' = 'True'): V1PodStatus => ({
  phase: 'Running', podIP: '10.1.0.5', startTime: new Date('2026-01-01T00:00:00Z'),
  conditions: [{ type: 'Ready', status: ready }, { type: 'ContainersReady', status: 'True' }],
  containerStatuses: [{ name: 'app', image: 'a', imageID: '', ready: true, restartCount: 0, state: { running: {} } }],
});
const proxy = (name: string): V1Pod => ({
  metadata: { name, namespace: NS, uid: `uid-${name}` },
  spec: { nodeName: NODE, containers: [{ name: 'app', image: 'a' }] },
  status: { phase: 'Pending' },
});

/** What MarkPodsNotReady does to a pod on the host: its Ready condition False, the rest as it is. */
function markNotReady(host: FakeHost, name: string): void {
  const p = structuredClone(host.get(NS, name)!);
  p.status!.conditions = p.status!.conditions!.map((c) => c.type === 'Ready' ? { ...c, status: 'False', reason: 'NodeNotReady' } : c);
  host.put(p);
}
const readyOnHost = (host: FakeHost): number => names.filter((n) => host.condition(NS, n, 'Ready')?.status === 'True').length;

/** Lets the fakes answer until `done` (a bounded number of rounds: time does not move). */
async function flushUntil(done: () => boolean): Promise<void> {
  for (let i = 0; i < 50 && !done(); i++) await flush();
}

/** N proxies whose delegates run, all Ready on the host. */
async function allReady(): Promise<{ host: FakeHost; provider: FakeProvider }> {
  const host = new FakeHost();
  const provider = new FakeProvider();
  for (const n of names) {
    const p = host.put(proxy(n));
    provider.pods.set(`${NS}/${n}`, { proxyUID: p.metadata!.uid!, terminating: false, phase: 'Running', status: running() });
  }
  start(host, provider, 20);
  await flushUntil(() => readyOnHost(host) === N);
  assert.equal(readyOnHost(host), N, 'all Ready');
  return { host, provider };
}

afterEach(stopControllers);

describe(`PodController after a member outage, ${N} pods`, () => {
  it('marked NotReady on the host during the outage, while clusterlet resyncs and after its rechecks: every proxy Ready again', async (t) => {
    mockTime(t);
    const { host, provider } = await allReady();
    provider.reachable = false;
    for (const n of names) markNotReady(host, n);
    await flush();
    assert.equal(readyOnHost(host), 0, 'left NotReady while the member does not answer');
    provider.reachable = true;
    provider.resyncs.next();
    // The host's lifecycle controller, still at it, marks them again while the resync writes them back…
    for (const n of names) { markNotReady(host, n); await new Promise((r) => setImmediate(r)); }
    await flushUntil(() => readyOnHost(host) === N);
    assert.equal(readyOnHost(host), N, 'Ready again during the resync');
    // …and once more after the rechecks of every proxy (4 s and 10 s after the resync): only its writes say so.
    await advanceTo(t, T0 + 11_000, 1000);
    for (const n of names) markNotReady(host, n);
    await flushUntil(() => readyOnHost(host) === N);
    assert.equal(readyOnHost(host), N, 'Ready again after the rechecks');
  });

  it('delegates marked NotReady in the member when it is back, then Ready again: the proxies follow both ways', async () => {
    const { host, provider } = await allReady();
    provider.resyncs.next();
    const set = (ready: 'True' | 'False') => {
      for (const n of names) provider.set(`${NS}/${n}`, { ...provider.pods.get(`${NS}/${n}`)!, status: running(ready) });
    };
    set('False');
    await eventually(`all ${N} NotReady (now ${N - readyOnHost(host)})`, () => readyOnHost(host) === 0);
    set('True');
    await eventually(`all ${N} Ready again (now ${readyOnHost(host)})`, () => readyOnHost(host) === N);
  });
});
