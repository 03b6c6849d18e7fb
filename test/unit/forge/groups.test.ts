// Groups of member nodes, each shown as a virtual node: their ids (recorded on the node), which group a member node is
// in per granularity, the virtual node's name, and the node affinity that keeps a delegate in its group.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Affinity, V1Node, V1PodSpec } from '@kubernetes/client-node';
import {
  CLUSTER_GRANULARITY, constrainAffinity, constrainSpec, describeForeignNode, describeGroup, groupConstraint, groupId, groupNamePrefixes,
  groupOf, inGroup, memberGroups, nodeNameClash, ownGroup, parseGroupId, virtualNodeName, type GroupConstraint, type NamedMember,
  type NodeGranularity, type NodeGroup,
} from '../../../src/forge/groups.ts';

const POOL = 'example.com/pool';
const BASE = 'clusterlet-eu1';

function node(name: string, labels: Record<string, string> = {}): V1Node {
  return { metadata: { name, labels: { 'kubernetes.io/hostname': name, ...labels } } };
}

const pool = (value: string, label = POOL): NodeGroup => ({ kind: 'pool', label, value });
const memberNode = (n: string): NodeGroup => ({ kind: 'node', node: n });

/** What a node name and a label value must be: a DNS-1123 name of at most 63 characters. */
const NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
/** A DNS-1123 subdomain, as the API server checks a node name: each dot-separated part a DNS label. */
const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

describe('groupId and parseGroupId', () => {
  const cases: [string, NodeGroup, string][] = [
    ['the whole member', { kind: 'cluster' }, 'cluster'],
    ['a pool', pool('gpu'), 'pool:example.com/pool=gpu'],
    ['a pool of an empty label value', pool(''), 'pool:example.com/pool='],
    ['a pool of an unprefixed label', pool('a', 'tier'), 'pool:tier=a'],
    ['a member node', memberNode('worker-1'), 'node:worker-1'],
    ['a member node of a dotted name', memberNode('ip-10-0-0-1.eu-west-1.compute.internal'), 'node:ip-10-0-0-1.eu-west-1.compute.internal'],
  ];
  for (const [name, group, id] of cases) {
    it(`${name}: ${id}, and back`, () => {
      assert.equal(groupId(group), id);
      assert.deepEqual(parseGroupId(id), group);
    });
  }

  const bad: [string, string | undefined][] = [
    ['no annotation', undefined],
    ['empty', ''],
    ['a node without a name', 'node:'],
    ['a pool without a label', 'pool:=gpu'],
    ['a pool without "="', 'pool:example.com/pool'],
    ['an unknown kind', 'zone:eu-1a'],
    ['"cluster" with more', 'cluster:x'],
    ['upper case', 'Cluster'],
  ];
  for (const [name, id] of bad) {
    it(`${name} (${JSON.stringify(id)}) names no group`, () => assert.equal(parseGroupId(id), undefined));
  }
});

describe('groupOf and inGroup', () => {
  const gpu1 = node('gpu-1', { [POOL]: 'gpu' });
  const bare = node('cpu-1');
  const cases: [string, V1Node, NodeGranularity, NodeGroup | undefined][] = [
    ['cluster: every node is in the one group', bare, CLUSTER_GRANULARITY, { kind: 'cluster' }],
    ['node: its own group', gpu1, { mode: 'node' }, memberNode('gpu-1')],
    ['node: a node without a name is in none', { metadata: {} }, { mode: 'node' }, undefined],
    ['pool: the group of its label value', gpu1, { mode: 'pool', label: POOL }, pool('gpu')],
    ['pool: an empty label value is a value', node('x', { [POOL]: '' }), { mode: 'pool', label: POOL }, pool('')],
    ['pool: a node without the label is in none', bare, { mode: 'pool', label: POOL }, undefined],
    ['pool: a node with another label only is in none', node('y', { tier: 'gpu' }), { mode: 'pool', label: POOL }, undefined],
  ];
  for (const [name, n, g, want] of cases) {
    it(name, () => {
      assert.deepEqual(groupOf(n, g), want);
      if (want) assert.equal(inGroup(n, want), true, 'a node is in the group groupOf gives');
    });
  }

  it('inGroup: by label value for a pool, by name for a node, always for the whole member', () => {
    assert.equal(inGroup(gpu1, pool('gpu')), true);
    assert.equal(inGroup(gpu1, pool('cpu')), false);
    assert.equal(inGroup(gpu1, pool('gpu', 'other.example/pool')), false);
    assert.equal(inGroup(bare, pool('gpu')), false);
    assert.equal(inGroup(gpu1, memberNode('gpu-1')), true);
    assert.equal(inGroup(gpu1, memberNode('gpu-2')), false);
    assert.equal(inGroup(bare, { kind: 'cluster' }), true);
  });
});

describe('memberGroups', () => {
  const nodes = [
    node('n3', { [POOL]: 'gpu' }),
    node('n1', { [POOL]: 'cpu' }),
    node('n2', { [POOL]: 'gpu' }),
    node('n4'),
  ];
  const summary = (m: ReturnType<typeof memberGroups>) =>
    [...m].map(([id, g]) => [id, groupId(g.group), g.nodes.map((n) => n.metadata!.name)]);

  it('pool: one group per label value, sorted by id, its nodes together; a node without the label in none', () => {
    assert.deepEqual(summary(memberGroups(nodes, { mode: 'pool', label: POOL })), [
      ['pool:example.com/pool=cpu', 'pool:example.com/pool=cpu', ['n1']],
      ['pool:example.com/pool=gpu', 'pool:example.com/pool=gpu', ['n3', 'n2']],
    ]);
  });

  it('node: one group per member node, sorted by id', () => {
    assert.deepEqual(summary(memberGroups(nodes, { mode: 'node' })), [
      ['node:n1', 'node:n1', ['n1']], ['node:n2', 'node:n2', ['n2']], ['node:n3', 'node:n3', ['n3']], ['node:n4', 'node:n4', ['n4']],
    ]);
  });

  it('ids are sorted by code units (upper case before lower case), not by locale', () => {
    const ids = [...memberGroups([node('b'), node('B'), node('a')], { mode: 'node' }).keys()];
    assert.deepEqual(ids, ['node:B', 'node:a', 'node:b']);
  });

  it('cluster: always the one group, with every node, even with none', () => {
    assert.deepEqual(summary(memberGroups(nodes, CLUSTER_GRANULARITY)), [['cluster', 'cluster', ['n3', 'n1', 'n2', 'n4']]]);
    assert.deepEqual(summary(memberGroups([], CLUSTER_GRANULARITY)), [['cluster', 'cluster', []]]);
  });

  it('pool and node: no nodes, no groups', () => {
    assert.equal(memberGroups([], { mode: 'pool', label: POOL }).size, 0);
    assert.equal(memberGroups([node('n4')], { mode: 'pool', label: POOL }).size, 0);
    assert.equal(memberGroups([], { mode: 'node' }).size, 0);
  });

  it('does not keep the array it is given', () => {
    const list = [node('n1')];
    const groups = memberGroups(list, CLUSTER_GRANULARITY);
    list.push(node('n2'));
    assert.equal(groups.get('cluster')!.nodes.length, 1);
  });
});

describe('virtualNodeName', () => {
  const HASHED = (prefix: string) => new RegExp(`^${prefix.replace(/[.]/g, '\\.')}-[0-9a-f]{8}$`);

  it('the whole member: the member\'s own node name', () => {
    assert.equal(virtualNodeName(BASE, { kind: 'cluster' }), BASE);
  });

  const plain: [string, NodeGroup, string][] = [
    ['a pool value', pool('gpu'), `${BASE}-gpu`],
    ['a pool value with dots and dashes', pool('a100-80gb.v2'), `${BASE}-a100-80gb.v2`],
    ['a member node', memberNode('worker-1'), `${BASE}-worker-1`],
    ['a dotted member node', memberNode('ip-10-0-0-1.ec2.internal'), `${BASE}-ip-10-0-0-1.ec2.internal`],
  ];
  for (const [name, group, want] of plain) {
    it(`plain: ${name}`, () => assert.equal(virtualNodeName(BASE, group), want));
  }

  const changed: [string, string, string][] = [
    ['upper case', 'GPU', `${BASE}-gpu`],
    ['an underscore', 'gpu_large', `${BASE}-gpu-large`],
    ['a leading underscore', '_spot', `${BASE}-spot`],
    ['a trailing underscore', 'spot_', `${BASE}-spot`],
    ['mixed', 'A100_80GB', `${BASE}-a100-80gb`],
  ];
  for (const [name, value, prefix] of changed) {
    it(`a value that had to change (${name}: ${value}) gets a hash suffix`, () => {
      assert.match(virtualNodeName(BASE, pool(value)), HASHED(prefix));
    });
  }

  it('an empty pool value, or one of nothing usable: the hash alone', () => {
    assert.match(virtualNodeName(BASE, pool('')), HASHED(BASE));
    assert.match(virtualNodeName(BASE, pool('___')), HASHED(BASE));
  });

  it('values that clean to the same text still get distinct names', () => {
    const names = ['gpu', 'GPU', 'Gpu', 'gpu_', '_gpu', 'g_pu', 'g-pu'].map((v) => virtualNodeName(BASE, pool(v)));
    assert.equal(new Set(names).size, names.length, names.join(' '));
  });

  it('the same value always gets the same name', () => {
    assert.equal(virtualNodeName(BASE, pool('GPU_Large')), virtualNodeName(BASE, pool('GPU_Large')));
  });

  it('a very long value is cut to 63 characters, and two sharing a long prefix stay distinct', () => {
    const prefix = 'a'.repeat(70);
    const a = virtualNodeName(BASE, pool(`${prefix}-one`));
    const b = virtualNodeName(BASE, pool(`${prefix}-two`));
    assert.ok(a.length <= 63 && b.length <= 63, `${a.length} ${b.length}`);
    assert.notEqual(a, b);
    assert.ok(a.startsWith(`${BASE}-aaaa`), a);
    assert.match(a, /-[0-9a-f]{8}$/);
    // A value that fits only just: plain; one character more: cut.
    const room = 63 - BASE.length - 1;
    assert.equal(virtualNodeName(BASE, pool('b'.repeat(room))), `${BASE}-${'b'.repeat(room)}`);
    const over = virtualNodeName(BASE, pool('b'.repeat(room + 1)));
    assert.equal(over.length, 63);
    assert.match(over, /^clusterlet-eu1-b+-[0-9a-f]{8}$/);
  });

  it('a cut that ends on a dash or dot does not end the name part with it', () => {
    const room = 63 - BASE.length - 8 - 2;
    const value = `${'c'.repeat(room - 1)}.-x${'y'.repeat(20)}`;
    const name = virtualNodeName(BASE, pool(value));
    assert.match(name, /^clusterlet-eu1-c+-[0-9a-f]{8}$/, name);
  });

  const values = ['gpu', 'GPU', 'gpu_large', '', '___', '-x-', '.x.', 'x.y', 'a'.repeat(200), `${'Z_'.repeat(40)}`,
    'v1.2.3', 'ÄÖÜ', 'a b c', 'x'.repeat(48), 'x'.repeat(49)];
  for (const v of values) {
    it(`always a valid name of at most 63 characters: pool ${JSON.stringify(v.length > 20 ? `${v.slice(0, 20)}…` : v)}`, () => {
      for (const g of [pool(v), ...(v ? [memberNode(v)] : [])]) {
        const name = virtualNodeName(BASE, g);
        assert.ok(name.length <= 63, `${name.length}: ${name}`);
        assert.match(name, NAME);
      }
    });
  }

  // Kubernetes' DNS-1123 subdomain (a node name): no empty part between dots, no part beginning or ending with "-".
  // A label value may have "..", ".-" or "-." inside; kept as they are, the name is no valid node name.
  for (const v of ['a..b', 'a.-b', 'a-.b']) {
    it(`a pool value with "${v}" inside gives a valid node name (DNS-1123 subdomain)`, () => {
        assert.match(virtualNodeName(BASE, pool(v)), SUBDOMAIN);
      });
  }

  it('a long member node name (the config allows up to 63) still gives names of at most 63 characters', () => {
      const base = `clusterlet-${'m'.repeat(49)}`; // 60 characters, a valid nodeName
      for (const g of [pool('gpu'), pool('GPU'), memberNode('worker-1')]) {
        const name = virtualNodeName(base, g);
        assert.ok(name.length <= 63, `${name.length}: ${name}`);
        assert.notEqual(name, base);
      }
    });
});

describe('groupConstraint', () => {
  it('a pool: its label In its value; a node: metadata.name In its name; the whole member: none', () => {
    assert.deepEqual(groupConstraint(pool('gpu')), { matchExpression: { key: POOL, operator: 'In', values: ['gpu'] } });
    assert.deepEqual(groupConstraint(memberNode('w1')), { matchField: { key: 'metadata.name', operator: 'In', values: ['w1'] } });
    assert.equal(groupConstraint({ kind: 'cluster' }), undefined);
  });
});

describe('constrainAffinity', () => {
  const inPool = groupConstraint(pool('gpu'))!;
  const onNode = groupConstraint(memberNode('w1'))!;
  const poolReq = { key: POOL, operator: 'In', values: ['gpu'] };
  const nodeReq = { key: 'metadata.name', operator: 'In', values: ['w1'] };
  const zone = { key: 'topology.kubernetes.io/zone', operator: 'In', values: ['eu-1a'] };
  const disk = { key: 'disk', operator: 'Exists' };
  const required = (...nodeSelectorTerms: object[]): V1Affinity =>
    ({ nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms } } });
  const preferred = [{ weight: 10, preference: { matchExpressions: [zone] } }];
  const podAffinity = { requiredDuringSchedulingIgnoredDuringExecution: [{ topologyKey: 'kubernetes.io/hostname',
    labelSelector: { matchLabels: { app: 'db' } } }] };
  const podAntiAffinity = { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 1,
    podAffinityTerm: { topologyKey: 'kubernetes.io/hostname' } }] };

  const cases: [string, V1Affinity | undefined, GroupConstraint, V1Affinity][] = [
    ['no affinity: one term of the constraint', undefined, inPool, required({ matchExpressions: [poolReq] })],
    ['no node affinity: one term', {}, inPool, required({ matchExpressions: [poolReq] })],
    ['a required selector without terms: one term', required(), inPool, required({ matchExpressions: [poolReq] })],
    ['a node group: a field requirement', undefined, onNode, required({ matchFields: [nodeReq] })],
    ['one term: constrained, its own requirements first', required({ matchExpressions: [zone] }), inPool,
      required({ matchExpressions: [zone, poolReq] })],
    ['two terms (ORed): both constrained', required({ matchExpressions: [zone] }, { matchExpressions: [disk] }), inPool,
      required({ matchExpressions: [zone, poolReq] }, { matchExpressions: [disk, poolReq] })],
    ['a term of fields only, for a pool: the label requirement beside them',
      required({ matchFields: [{ key: 'metadata.name', operator: 'NotIn', values: ['w9'] }] }), inPool,
      required({ matchFields: [{ key: 'metadata.name', operator: 'NotIn', values: ['w9'] }], matchExpressions: [poolReq] })],
    ['a node group: matchFields added to each term, expressions kept', required({ matchExpressions: [zone] },
      { matchFields: [{ key: 'metadata.name', operator: 'NotIn', values: ['w9'] }] }), onNode,
    required({ matchExpressions: [zone], matchFields: [nodeReq] },
      { matchFields: [{ key: 'metadata.name', operator: 'NotIn', values: ['w9'] }, nodeReq] })],
    ['preferred terms and pod (anti-)affinity kept as they are',
      { nodeAffinity: { preferredDuringSchedulingIgnoredDuringExecution: preferred }, podAffinity, podAntiAffinity }, inPool,
      { nodeAffinity: { preferredDuringSchedulingIgnoredDuringExecution: preferred,
        requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [poolReq] }] } }, podAffinity, podAntiAffinity }],
  ];
  for (const [name, affinity, c, want] of cases) {
    it(name, () => {
      const before = structuredClone(affinity);
      assert.deepEqual(constrainAffinity(affinity, c), want);
      assert.deepEqual(affinity, before, 'the affinity given is not changed');
    });
  }

  it('constrainSpec: a copy with the constrained affinity; the spec itself unchanged; no constraint, the same spec', () => {
    const spec: V1PodSpec = { containers: [{ name: 'c', image: 'i' }], affinity: required({ matchExpressions: [zone] }) };
    const before = structuredClone(spec);
    const out = constrainSpec(spec, inPool);
    assert.deepEqual(out.affinity, required({ matchExpressions: [zone, poolReq] }));
    assert.deepEqual(out.containers, spec.containers);
    assert.deepEqual(spec, before);
    assert.equal(constrainSpec(spec, undefined), spec);
  });
});

describe('describeGroup', () => {
  const cases: [NodeGroup, string][] = [
    [{ kind: 'cluster' }, 'member eu1'],
    [pool('gpu'), 'member eu1 (pool example.com/pool=gpu)'],
    [memberNode('worker-1'), 'member eu1 (node worker-1)'],
  ];
  for (const [group, want] of cases) it(want, () => assert.equal(describeGroup('eu1', group), want));
});

describe('nodeNameClash', () => {
  const pool = { mode: 'pool' as const, label: 'pool' };
  const perNode = { mode: 'node' as const };
  const long = 'c'.repeat(56);
  // [case, a, b, clash (a fragment of its message) or undefined]
  const cases: [string, NamedMember, NamedMember, RegExp | undefined][] = [
    ['two members shown whole, one name a prefix of the other', { name: 'eu', nodeName: 'clusterlet-eu' },
      { name: 'eu-west', nodeName: 'clusterlet-eu-west' }, undefined],
    ['a pool of one is the other\'s node name', { name: 'eu', nodeName: 'clusterlet-eu', nodes: pool },
      { name: 'eu-west', nodeName: 'clusterlet-eu-west' },
      /^members "eu" and "eu-west" can share node "clusterlet-eu-west": it is member eu-west's node name, and member eu, shown per pool, names its pools clusterlet-eu-<value>; give one/],
    ['the same, given the other way round', { name: 'eu-west', nodeName: 'clusterlet-eu-west' },
      { name: 'eu', nodeName: 'clusterlet-eu', nodes: pool }, /can share node "clusterlet-eu-west"/],
    ['a member node of one is the other\'s node name', { name: 'eu', nodeName: 'clusterlet-eu', nodes: perNode },
      { name: 'eu-west', nodeName: 'clusterlet-eu-west', nodes: pool }, /member eu, shown per member node, names its member nodes clusterlet-eu-<member node>/],
    ['grouped, but the other\'s name does not start with its name and a dash', { name: 'eu', nodeName: 'clusterlet-eu', nodes: pool },
      { name: 'eu2', nodeName: 'clusterlet-eu2', nodes: pool }, undefined],
    ['grouped, the other shown whole under a name it cannot reach', { name: 'eu', nodeName: 'clusterlet-eu', nodes: pool },
      { name: 'us', nodeName: 'clusterlet-us' }, undefined],
    ['both grouped, one\'s names reach the other\'s node name', { name: 'a', nodeName: 'x', nodes: pool },
      { name: 'b', nodeName: 'x-y', nodes: perNode }, /can share node "x-y"/],
    ['both grouped, the hashed names of a long node name reach the other\'s', { name: 'a', nodeName: long, nodes: pool },
      { name: 'b', nodeName: 'c'.repeat(54), nodes: pool }, /can share a virtual node: member a names its pools c{56}-<value> and member b its pools c{54}-<value>/],
    ['a long node name\'s hashed names reach a name that is not its own and a dash', { name: 'a', nodeName: long, nodes: pool },
      { name: 'b', nodeName: `${'c'.repeat(54)}-x` }, /can share node "c{54}-x"/],
  ];
  for (const [name, a, b, want] of cases) {
    it(name, () => {
      const got = nodeNameClash(a, b);
      if (want === undefined) assert.equal(got, undefined);
      else assert.match(got ?? '(none)', want);
    });
  }

  it('every name virtualNodeName gives a group starts with one of groupNamePrefixes', () => {
    for (const base of ['clusterlet-eu', long, 'c'.repeat(62), `${'c'.repeat(53)}-.x`]) {
      for (const value of ['west', 'West_1', 'v'.repeat(70), 'a.b', '--']) {
        const n = virtualNodeName(base, { kind: 'pool', label: 'pool', value });
        assert.ok(groupNamePrefixes(base).some((p) => n.startsWith(p)), `${n} of ${base}`);
      }
    }
  });
});

describe('ownGroup', () => {
  const hostNode = (name: string, labels: Record<string, string>, group?: string): V1Node =>
    ({ metadata: { name, labels, ...group !== undefined ? { annotations: { 'clusterlet.io/node-group': group } } : {} } });
  const eu = { 'clusterlet.io/member': 'eu' };
  // [case, node, the group clusterlet owns it as, or undefined]
  const cases: [string, V1Node, NodeGroup | undefined][] = [
    ['the member\'s own node name, recording no group (an earlier version\'s)', hostNode('clusterlet-eu', eu), { kind: 'cluster' }],
    ['the member\'s own node name, recording the whole member', hostNode('clusterlet-eu', eu, 'cluster'), { kind: 'cluster' }],
    ['a pool\'s node, recording its pool', hostNode('clusterlet-eu-west', eu, 'pool:pool=west'), { kind: 'pool', label: 'pool', value: 'west' }],
    ['a node of an earlier granularity that names it alike', hostNode('clusterlet-eu-west', eu, 'node:west'), { kind: 'node', node: 'west' }],
    ['another member\'s node', hostNode('clusterlet-eu', { 'clusterlet.io/member': 'us' }), undefined],
    ['another member\'s node, under the name of our pool', hostNode('clusterlet-eu-west', { 'clusterlet.io/member': 'eu-west' }, 'cluster'), undefined],
    ['our label, a group that is not this name\'s', hostNode('clusterlet-eu-west', eu, 'pool:pool=east'), undefined],
    ['our label, the whole member\'s group under another name', hostNode('clusterlet-eu-west', eu, 'cluster'), undefined],
    ['our label, no group, not the member\'s own name', hostNode('clusterlet-eu-west', eu), undefined],
    ['no clusterlet label at all', hostNode('clusterlet-eu', {}), undefined],
  ];
  for (const [name, n, want] of cases) it(name, () => assert.deepEqual(ownGroup(n, 'eu', 'clusterlet-eu'), want));

  it('says whose a foreign node is', () => {
    assert.match(describeForeignNode(hostNode('x', {}), 'eu'), /host node "x" exists and is not a clusterlet virtual node \(it has no clusterlet.io\/member label\)/);
    assert.match(describeForeignNode(hostNode('x', { 'clusterlet.io/member': 'us' }), 'eu'), /host node "x" exists and is member us's virtual node/);
    assert.match(describeForeignNode(hostNode('x', eu, 'pool:p=y'), 'eu'), /carries member eu's label but records group "pool:p=y"/);
  });
});
