// `npm run bench` / `make bench`: starts the local clusters and clusterlet, runs the benchmark, prints a
// markdown table and writes JSON to bench/results/ (markdown to latest.md). Options: --sizes 10,100,1000,10000
// --pairs 3 --out FILE.json (writes FILE.json and FILE.md instead) --modes direct,offloaded,hostOnly (which ways each
// pair runs: e.g. --modes offloaded measures clusterlet's own costs in a third of the time); after the sizes, the many-members run
// (bench/members.ts): --members 10 --pods-per-member 500 (--members 0 skips it); then the many-nodes run (bench/nodes.ts):
// --nodes-members 10 --nodes-per-member 50 --nodes-window-s 180 --nodes-pods-per-node 1 (--nodes-members 0 skips it,
// --nodes-pods-per-node 0 its Deployment). --clusterlet-flags="..." adds flags to
// clusterlet's (e.g. --clusterlet-flags=--api-access=member, to compare a default with another; the = is needed).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { HOST_FLOOR_NODE, Harness } from '../test/harness/harness.ts';
import { MODES, runBench, toMarkdown, type BenchResult, type Mode } from './bench.ts';
import { startBenchClusterlet } from './clusterlet.ts';
import { membersMarkdown, runMembers, type MembersResult } from './members.ts';
import { nodesMarkdown, runNodes, type NodesResult } from './nodes.ts';

const { values } = parseArgs({ options: {
  sizes: { type: 'string', default: '10,100,1000,10000' },
  pairs: { type: 'string', default: '3' },
  out: { type: 'string' },
  members: { type: 'string', default: '10' },
  'pods-per-member': { type: 'string', default: '500' },
  'nodes-members': { type: 'string', default: '10' },
  'nodes-per-member': { type: 'string', default: '50' },
  'nodes-window-s': { type: 'string', default: '180' },
  'nodes-pods-per-node': { type: 'string', default: '1' },
  modes: { type: 'string', default: MODES.join(',') },
  'clusterlet-flags': { type: 'string', default: '' },
} });
const extraFlags = values['clusterlet-flags'].split(' ').filter(Boolean);
const modes = values.modes.split(',') as Mode[];
for (const m of modes) if (!MODES.includes(m)) throw new Error(`--modes: ${m} is not one of ${MODES.join(', ')}`);
const sizes = values.sizes.split(',').map(Number);
const pairs = Number(values.pairs);
const log = (l: string): void => { process.stderr.write(`[bench] ${l}\n`); };
type Result = BenchResult & { members?: MembersResult; nodes?: NodesResult };

const h = await Harness.start({ componentQPS: 2000, log, hostFloorNode: true });
// clusterlet's Leases (which replica leads the member) live in namespace clusterlet, as manifests/host installs it.
await h.createLeaseNamespace();
const cl = await startBenchClusterlet(h, ['--member-kubeconfig', h.member.kubeconfig, '--member-name', 'member', ...extraFlags], 'clusterlet.log',
  'the bench');
const stop = async (): Promise<void> => { await cl.stop(); await h.stop(); };
process.once('SIGINT', () => { stop().catch((err: unknown) => console.error('stopping failed:', err)).finally(() => process.exit(130)); });

try {
  await cl.ready(60_000);
  const dir = fileURLToPath(new URL('./results/', import.meta.url));
  mkdirSync(dir, { recursive: true });
  let file = values.out;
  const markdown = (r: Result): string => toMarkdown(r) + (r.members ? membersMarkdown(r.members) : '') + (r.nodes ? nodesMarkdown(r.nodes) : '');
  const write = (r: Result): void => {
    file ??= join(dir, `bench-${r.startedAt.replace(/[:.]/g, '-')}.json`);
    writeFileSync(file, JSON.stringify(r, null, 2));
    // With --out, the markdown goes beside it, and the committed latest.md stays as it is.
    writeFileSync(values.out ? file.replace(/(\.json)?$/, '.md') : join(dir, 'latest.md'), markdown(r));
  };
  const result: Result = await runBench({ harness: h, sizes, pairs, clusterletPid: cl.pid,
    metricsURL: `http://127.0.0.1:${cl.healthPort}/metrics`, virtualNode: 'clusterlet-member', hostOnlyNode: HOST_FLOOR_NODE.name, log,
    onProgress: write, clusterletExited: cl.exited, modes });
  write(result);
  if (Number(values.members) > 0) {
    // The size runs' clusterlet goes: the many-members run starts one of its own, leading only its members.
    await cl.stop();
    result.members = await runMembers({ harness: h, members: Number(values.members), podsPerMember: Number(values['pods-per-member']),
      log, onProgress: (members) => write({ ...result, members }) });
    write(result);
    // Its members' control planes, idle from now on, would take CPU from the many-nodes run.
    for (const c of h.extraMembers) await c.stop();
  }
  if (Number(values['nodes-members']) > 0) {
    await cl.stop();
    result.nodes = await runNodes({ harness: h, members: Number(values['nodes-members']), nodesPerMember: Number(values['nodes-per-member']),
      windowMs: Number(values['nodes-window-s']) * 1000, podsPerNode: Number(values['nodes-pods-per-node']), log,
      onProgress: (nodes) => write({ ...result, nodes }) });
    write(result);
  }
  process.stdout.write(markdown(result));
  log(`results: ${file}`);
} finally {
  await stop();
}
