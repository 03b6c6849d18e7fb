#!/usr/bin/env node
// What parsing its pod watch events costs clusterlet, on the events of a real offloaded Deployment: the host's proxy
// pods and the member's delegates, from creation to deletion, as clusterlet's two pod watches see them. Each stream is
// replayed into an Informer's store (latest object per key), parsed as clusterlet parses it
// (src/kube/eventline.ts, then revive), without and with the store's specs reused (`knownSpec`), the two interleaved
// over the rounds; it reports µs per event, and checks that both give the same objects.
// With --foreign, the member's stream is replayed as the member's own pods (not delegates: another host's owner) through
// the member pod informer: the shape of each pod made after revive and its spec never reused (as before ecbdaed),
// against MemberPodShapes (src/member/podshapes.ts): the shape made before revive, and kept while the spec bytes stay.
//   node bench/tools/eventcost.ts [--pods 50] [--rounds 200] [--save FILE.json] [--load FILE.json] [--foreign]
import { readFileSync, writeFileSync } from 'node:fs';
import { isDeepStrictEqual, parseArgs } from 'node:util';
import { AppsV1Api, type V1Pod } from '@kubernetes/client-node';
import { Harness } from '../../test/harness/harness.ts';
import { ClusterClient } from '../../src/kube/client.ts';
import { loadKubeconfigFile } from '../../src/kube/kubeconfig.ts';
import { Subject } from 'rxjs';
import { parseEventLine, type KnownSpec } from '../../src/kube/eventline.ts';
import { Informer, storedSpecs, type InformerOptions } from '../../src/kube/informer.ts';
import { memberPodShape } from '../../src/forge/foreign.ts';
import { MemberPodShapes } from '../../src/member/podshapes.ts';
import type { ListWatchEvent } from '../../src/kube/listwatch.ts';
import { revive } from '../../src/kube/revive.ts';
import { startBenchClusterlet } from '../clusterlet.ts';
import { deployment, median, ReadyTracker } from '../bench.ts';

const { values } = parseArgs({ options: {
  pods: { type: 'string', default: '50' }, rounds: { type: 'string', default: '200' },
  save: { type: 'string' }, load: { type: 'string' }, foreign: { type: 'boolean', default: false },
} });
const log = (l: string): void => { process.stderr.write(`[eventcost] ${l}\n`); };

type Streams = Record<'proxies' | 'delegates', string[]>;

/** The watch event lines of a Deployment of `n` offloaded from creation to deletion, as clusterlet's watches get them. */
async function capture(n: number): Promise<Streams> {
  const h = await Harness.start({ log });
  await h.createLeaseNamespace();
  const cl = await startBenchClusterlet(h, ['--member-kubeconfig', h.member.kubeconfig, '--member-name', 'member'],
    'clusterlet.log', 'eventcost');
  try {
    await cl.ready(60_000);
    const host = new ClusterClient(loadKubeconfigFile(h.host.kubeconfig), { cluster: 'eventcost-host', qps: 500, burst: 1000 });
    const member = new ClusterClient(loadKubeconfigFile(h.member.kubeconfig), { cluster: 'eventcost-member', qps: 500, burst: 1000 });
    const ns = 'eventcost';
    await host.core.createNamespace({ body: { metadata: { name: ns } } });
    const streams: Streams = { proxies: [], delegates: [] };
    const stop = new AbortController();
    // Without cutManagedFields the client parses each line whole; stringified again it is the line, key for key.
    const watch = (client: ClusterClient, path: string, lines: string[]): Promise<void> =>
      client.watch(path, {}, { signal: stop.signal, idleMs: 600_000,
        onEvent: (type, object) => { if (type !== 'BOOKMARK') lines.push(JSON.stringify({ type, object })); } });
    const watches = [watch(host, `/api/v1/namespaces/${ns}/pods`, streams.proxies),
      watch(member, `/api/v1/namespaces/${ns}/pods`, streams.delegates)];
    const proxies = new ReadyTracker(host, ns);
    await proxies.start();
    const apps = h.host.kubeConfig().makeApiClient(AppsV1Api);
    await apps.createNamespacedDeployment({ namespace: ns, body: deployment('eventcost', n, 'clusterlet-member') });
    await proxies.until(n, 120_000, 'proxies Ready');
    await apps.deleteNamespacedDeployment({ namespace: ns, name: 'eventcost', propagationPolicy: 'Background' });
    await proxies.empty(120_000, 'proxies gone');
    proxies.stop();
    stop.abort();
    await Promise.allSettled(watches);
    return streams;
  } finally {
    await cl.stop();
    await h.stop();
  }
}

/**
 * Parses every line of `lines` as a pod watch of clusterlet's does (eventline with `known` over the store, `shape`
 * before revive), into an Informer's store; the objects stored, in order.
 */
function replayInto(lines: Buffer[], known: ((store: () => Informer<V1Pod>) => KnownSpec) | undefined,
  shape?: (p: V1Pod) => V1Pod, opts: InformerOptions<V1Pod> = {}): unknown[] {
  const source = new Subject<ListWatchEvent<V1Pod>>();
  const pods: Informer<V1Pod> = new Informer('replay', source, opts).start();
  const specs = known?.(() => pods);
  const out: unknown[] = [];
  pods.events$.subscribe((e) => out.push(e.object));
  source.next({ type: 'SYNC', items: [] });
  for (const b of lines) {
    const ev = parseEventLine(b, 0, b.length, specs) as { type: 'ADDED' | 'MODIFIED' | 'DELETED'; object: V1Pod };
    source.next({ type: ev.type, object: revive<V1Pod>(shape ? shape(ev.object) : ev.object) });
  }
  pods.stop();
  return out;
}

/** The proxies' or delegates' events, without and with the store's specs reused. */
const replay = (lines: Buffer[], reuse: boolean): unknown[] => replayInto(lines, reuse ? storedSpecs : undefined);

/**
 * The member's pods replayed as its own (not this host's delegates) into the member pod informer's store: `shapes`
 * as clusterlet does now, else as before ecbdaed (revived whole, shaped by the informer, specs never reused).
 */
function replayForeign(lines: Buffer[], shapes: boolean): unknown[] {
  const owner = { hostName: 'another-host', node: 'another-node' };
  if (!shapes) return replayInto(lines, storedSpecs, undefined, { transform: (p) => memberPodShape(p, owner) });
  const s = new MemberPodShapes(owner);
  return replayInto(lines, (store) => s.knownSpec(storedSpecs(store)), (p) => s.shape(p));
}

const streams: Streams = values.load ? JSON.parse(readFileSync(values.load, 'utf8')) as Streams : await capture(Number(values.pods));
if (values.save) writeFileSync(values.save, JSON.stringify(streams));
const rounds = Number(values.rounds);

/**
 * `run(bytes, false)` against `run(bytes, true)`, alternating which goes first each round: whether both store the same
 * objects, and the median µs per event of each.
 */
function compare(bytes: Buffer[], run: (lines: Buffer[], on: boolean) => unknown[]): { same: boolean; off: number; on: number } {
  const same = isDeepStrictEqual(run(bytes, false), run(bytes, true));
  const times: [number[], number[]] = [[], []];
  for (let r = 0; r < rounds; r++) {
    for (const on of r % 2 === 0 ? [false, true] : [true, false]) {
      const t0 = performance.now();
      run(bytes, on);
      times[on ? 1 : 0].push(((performance.now() - t0) * 1000) / bytes.length);
    }
  }
  return { same, off: median(times[0]), on: median(times[1]) };
}

if (values.foreign) {
  const bytes = streams.delegates.map((l) => Buffer.from(l));
  const c = compare(bytes, replayForeign);
  log(`member pods as the member's own: ${bytes.length} events, same objects: ${c.same}; µs per event, median of ${rounds} ` +
    `rounds: shaped after revive ${c.off.toFixed(1)}, MemberPodShapes ${c.on.toFixed(1)}`);
} else {
  for (const [what, lines] of Object.entries(streams)) {
    const bytes = lines.map((l) => Buffer.from(l));
    const c = compare(bytes, replay);
    const avgBytes = bytes.reduce((s, b) => s + b.length, 0) / bytes.length;
    log(`${what}: ${lines.length} events (${avgBytes.toFixed(0)} bytes each with managedFields), same objects: ${c.same}; ` +
      `µs per event, median of ${rounds} rounds: without knownSpec ${c.off.toFixed(1)}, with it ${c.on.toFixed(1)}`);
  }
}
