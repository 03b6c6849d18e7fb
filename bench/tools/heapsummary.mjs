// Sums a .heapsnapshot's self sizes by node type and constructor name, and lists the largest single objects
// with a path of retainers: which part of clusterlet (or of a library) holds the idle heap.
//   node bench/tools/heapsummary.mjs FILE.heapsnapshot [top]
import { readFileSync } from 'node:fs';

const snap = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const top = Number(process.argv[3] ?? 25);
const { node_fields: nf, node_types: [types], edge_fields: ef, edge_types: [edgeTypes] } = snap.snapshot.meta;
const N = nf.length, E = ef.length;
const { nodes, edges, strings } = snap;
const at = (i, f) => nodes[i * N + nf.indexOf(f)];
const count = nodes.length / N;
const firstEdge = new Uint32Array(count + 1);
for (let i = 0; i < count; i++) firstEdge[i + 1] = firstEdge[i] + at(i, 'edge_count');
const retainer = new Int32Array(count).fill(-1);
const retainerEdge = new Int32Array(count).fill(-1);
for (let i = 0; i < count; i++) {
  for (let e = firstEdge[i]; e < firstEdge[i + 1]; e++) {
    const to = edges[e * E + ef.indexOf('to_node')] / N;
    const type = edgeTypes[edges[e * E + ef.indexOf('type')]];
    if (retainer[to] === -1 && type !== 'weak') { retainer[to] = i; retainerEdge[to] = e; }
  }
}
const label = (i) => `${types[at(i, 'type')]}:${String(strings[at(i, 'name')]).slice(0, 60).replace(/\s+/g, ' ')}`;
const byKey = new Map();
let total = 0;
for (let i = 0; i < count; i++) {
  const size = at(i, 'self_size');
  total += size;
  const t = types[at(i, 'type')];
  const key = t === 'object' || t === 'closure' || t === 'native' ? `${t}:${strings[at(i, 'name')]}`.slice(0, 80) : t;
  const cur = byKey.get(key) ?? [0, 0];
  byKey.set(key, [cur[0] + size, cur[1] + 1]);
}
const mb = (b) => (b / 1048576).toFixed(2);
console.log(`total self size ${mb(total)} MB in ${count} nodes`);
for (const [k, [s, c]] of [...byKey].sort((a, b) => b[1][0] - a[1][0]).slice(0, top)) console.log(`${mb(s).padStart(7)} MB ${String(c).padStart(7)}  ${k}`);
console.log('\nlargest objects, with a chain of first retainers:');
const order = [...Array(count).keys()].sort((a, b) => at(b, 'self_size') - at(a, 'self_size')).slice(0, 12);
for (const i of order) {
  const chain = [];
  for (let j = retainer[i], k = 0; j !== -1 && k < 8; j = retainer[j], k++) chain.push(label(j));
  console.log(`${mb(at(i, 'self_size'))} MB ${label(i)}\n    <- ${chain.join(' <- ')}`);
}
