// --member-source=clusterprofile and its flags, the provider file, and a profile as a MemberConfig.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadAccessProviders, parseConfig, profileMemberConfig, type Config } from '../../src/config.ts';

const dir = mkdtempSync(join(tmpdir(), 'clusterlet-cp-config-'));
const kubeconfig = join(dir, 'kc.yaml');
writeFileSync(kubeconfig, 'apiVersion: v1\nkind: Config\n');

function run(argv: string[], env: NodeJS.ProcessEnv = {}): Config {
  const r = parseConfig(argv, env);
  assert.equal(r.kind, 'run');
  return (r as { config: Config }).config;
}

function file(text: string): string {
  const p = join(dir, `p${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(p, text);
  return p;
}

describe('--member-source', () => {
  it('config (default): no ClusterProfiles, and their flags are refused', () => {
    assert.equal(run(['--member-kubeconfig', kubeconfig]).clusterProfiles, undefined);
    assert.throws(() => parseConfig(['--member-kubeconfig', kubeconfig, '--clusterprofile-namespace', 'x'], {}),
      { name: 'ConfigError', field: '--clusterprofile-namespace', message: /only used with --member-source=clusterprofile/ });
    assert.throws(() => parseConfig(['--member-source', 'ocm'], {}), { field: '--member-source' });
  });

  it('clusterprofile: no static member needed; namespace from $POD_NAMESPACE, the built-in provider, --member-qps', () => {
    const c = run(['--member-source=clusterprofile', '--member-qps', '7', '--storage-reclaim-policy', 'Retain', '--api-access', 'member'],
      { POD_NAMESPACE: 'fleet' });
    assert.deepEqual(c.members, []);
    assert.deepEqual(c.clusterProfiles, {
      namespace: 'fleet', selector: '', qps: 7, burst: 400, storage: { memberClassName: undefined, reclaimPolicy: 'Retain' },
      apiAccess: { mode: 'member' },
      providers: [{ name: 'kubeconfig-secretreader', profileSourcedCLIArgsPolicy: 'Ignore', profileSourcedEnvVarsPolicy: 'Ignore' }],
    });
    assert.equal(run(['--member-source=clusterprofile']).clusterProfiles!.namespace, 'clusterlet');
  });

  it('--nodes is every profile member\'s granularity; unset, none (cluster)', () => {
    assert.deepEqual(run(['--member-source=clusterprofile', '--nodes=pool=node.kubernetes.io/instance-type']).clusterProfiles!.nodes,
      { mode: 'pool', label: 'node.kubernetes.io/instance-type' });
    assert.deepEqual(run(['--member-source=clusterprofile', '--nodes', 'node']).clusterProfiles!.nodes, { mode: 'node' });
    assert.ok(!('nodes' in run(['--member-source=clusterprofile']).clusterProfiles!));
    assert.throws(() => parseConfig(['--member-source=clusterprofile', '--nodes=pool='], {}),
      { name: 'ConfigError', field: '--nodes', message: /cluster, node, pool=<label key>/ });
  });

  it('clusterprofile in addition to static members, with a selector and a namespace', () => {
    const c = run(['--member-source=clusterprofile', '--member-kubeconfig', kubeconfig, '--clusterprofile-namespace', 'fleet',
      '--clusterprofile-selector', 'env=prod,tier in (a, b)']);
    assert.equal(c.members.length, 1);
    assert.equal(c.clusterProfiles!.namespace, 'fleet');
    assert.equal(c.clusterProfiles!.selector, 'env=prod,tier in (a, b)');
    assert.throws(() => parseConfig(['--member-source=clusterprofile', '--clusterprofile-selector', 'env prod'], {}),
      { field: '--clusterprofile-selector' });
    assert.throws(() => parseConfig(['--member-source=clusterprofile', '--clusterprofile-namespace', 'Fleet'], {}),
      { field: '--clusterprofile-namespace' });
  });
});

describe('--provider-config with ClusterProfiles', () => {
  it('may list no members (its other settings still apply); without ClusterProfiles it must list one', () => {
    const cfg = join(dir, 'no-members.yaml');
    writeFileSync(cfg, 'hostName: prod\nmembers: []\n');
    const c = run(['--member-source=clusterprofile', '--provider-config', cfg]);
    assert.deepEqual([c.members, c.hostName], [[], 'prod']);
    assert.throws(() => parseConfig(['--provider-config', cfg], {}), { field: 'members', message: /non-empty list/ });
  });
});

describe('loadAccessProviders (the cluster-inventory-api provider file)', () => {
  it('reads the API\'s JSON format, in order, with its policies', () => {
    const p = file(JSON.stringify({ providers: [
      { name: 'secretreader', execConfig: { apiVersion: 'client.authentication.k8s.io/v1', command: './bin/secretreader-plugin',
        args: null, env: null, provideClusterInfo: true }, profileSourcedCLIArgsPolicy: 'Append' },
      { name: 'kubeconfig-secretreader' },
    ] }));
    const got = loadAccessProviders(p);
    assert.deepEqual(got.map((x) => [x.name, x.profileSourcedCLIArgsPolicy, x.profileSourcedEnvVarsPolicy]),
      [['secretreader', 'Append', 'Ignore'], ['kubeconfig-secretreader', 'Ignore', 'Ignore']]);
    assert.equal(got[0].execConfig!.command, './bin/secretreader-plugin');
    assert.equal(run(['--member-source=clusterprofile', '--clusterprofile-provider-file', p]).clusterProfiles!.providers.length, 2);
  });

  it('names the field of each mistake', () => {
    const bad = (doc: unknown, field: string) => assert.throws(() => loadAccessProviders(file(JSON.stringify(doc))),
      (e: unknown) => e instanceof ConfigError && e.field === field);
    bad({}, 'providers');
    bad({ providers: [{ name: 'oidc' }] }, 'providers[0].execConfig');
    bad({ providers: [{ name: 'a', execConfig: { args: [] } }] }, 'providers[0].execConfig');
    bad({ providers: [{ name: 'kubeconfig-secretreader' }, { name: 'kubeconfig-secretreader' }] }, 'providers[1].name');
    bad({ providers: [{ name: 'kubeconfig-secretreader', profileSourcedEnvVarsPolicy: 'Merge' }] }, 'providers[0].profileSourcedEnvVarsPolicy');
    assert.throws(() => loadAccessProviders(join(dir, 'missing.json')), { field: '--clusterprofile-provider-file' });
  });
});

describe('profileMemberConfig', () => {
  const source = { qps: 5, burst: 10, storage: { reclaimPolicy: 'Retain' as const, memberClassName: 'fast' },
    apiAccess: { mode: 'none' as const, hostServer: 'https://203.0.113.1:6443' } };
  it('a member named after the profile, node clusterlet-<name> or the clusterlet.io/node-name annotation; the flags\' storage, its own class', () => {
    assert.deepEqual(profileMemberConfig({ namespace: 'fleet', name: 'eu', annotations: {} }, source), {
      name: 'eu', nodeName: 'clusterlet-eu', clusterProfile: { namespace: 'fleet', name: 'eu' },
      namespaceMapping: { template: '{namespace}', overrides: {} }, labels: {}, taints: [], qps: 5, burst: 10,
      storage: { className: 'clusterlet-eu', reclaimPolicy: 'Retain', memberClassName: 'fast' },
      apiAccess: { mode: 'none', hostServer: 'https://203.0.113.1:6443' },
    });
    assert.equal(profileMemberConfig({ namespace: 'fleet', name: 'eu', annotations: { 'clusterlet.io/node-name': 'eu.fleet' } }, source)
      .nodeName, 'eu.fleet');
  });

  it('its virtual nodes as --nodes says; none given, none set (cluster)', () => {
    const profile = { namespace: 'fleet', name: 'eu', annotations: {} };
    assert.deepEqual(profileMemberConfig(profile, { ...source, nodes: { mode: 'pool', label: 'topology.kubernetes.io/zone' } }).nodes,
      { mode: 'pool', label: 'topology.kubernetes.io/zone' });
    assert.deepEqual(profileMemberConfig(profile, { ...source, nodes: { mode: 'node' } }).nodes, { mode: 'node' });
    assert.ok(!('nodes' in profileMemberConfig(profile, source)));
  });

  it('refuses what cannot name a member or a node, naming the profile field', () => {
    assert.throws(() => profileMemberConfig({ namespace: 'f', name: 'eu.west', annotations: {} }, source), { field: 'metadata.name' });
    assert.throws(() => profileMemberConfig({ namespace: 'f', name: 'eu', annotations: { 'clusterlet.io/node-name': 'Bad' } }, source),
      { field: 'metadata.annotations[clusterlet.io/node-name]' });
  });
});
