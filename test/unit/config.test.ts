// Config checks that need no process: node names, namespace mappings and their inverse.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadProviderConfig, parseConfig } from '../../src/config.ts';
import { checkMemberNamespace, memberNamespace, type NamespaceMapping } from '../../src/forge/namespace.ts';

const dir = mkdtempSync(join(tmpdir(), 'clusterlet-config-'));
const kubeconfig = join(dir, 'kc.yaml');
writeFileSync(kubeconfig, 'apiVersion: v1\nkind: Config\n');
const defaults = { qps: 1, burst: 1 };
const long = (n: number, c = 'a'): string => c.repeat(n);

function providerFile(member: string): string {
  const p = join(dir, `c${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(p, `members:\n- name: a\n  kubeconfig: ${kubeconfig}\n${member}`);
  return p;
}

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ConfigError, String(err));
    return err;
  }
  assert.fail('no ConfigError');
}

describe('node names', () => {
  const flags = (...extra: string[]) => () => parseConfig(['--member-kubeconfig', kubeconfig, ...extra], {});

  it('accepts a default of 63 characters', () => {
    const r = parseConfig(['--member-kubeconfig', kubeconfig, '--member-name', long(52)], {});
    assert.equal(r.kind === 'run' && r.config.members[0].nodeName, `clusterlet-${long(52)}`);
  });

  it('a long member name whose default node name is too long names --member-name', () => {
    const err = configError(flags('--member-name', long(60)));
    assert.equal(err.field, '--member-name');
    assert.match(err.message, /default node name "clusterlet-a{60}": 71 characters: a node name is at most 63.*set --nodename/);
  });

  it('a --nodename too long or not a DNS subdomain names --nodename', () => {
    assert.match(configError(flags('--nodename', long(64))).message, /^--nodename: node name "a{64}": 64 characters/);
    assert.match(configError(flags('--nodename', 'Node_1')).message, /^--nodename: .*not a DNS-1123 subdomain/);
    assert.match(configError(flags('--nodename', 'a..b')).message, /^--nodename: .*not a DNS-1123 subdomain/);
  });

  it('in the provider config: the default names members[i].name, a given one members[i].nodeName', () => {
    const byName = configError(() => loadProviderConfig(providerFile(`- name: ${long(60, 'b')}\n  kubeconfig: ${kubeconfig}\n`), defaults));
    assert.equal(byName.field, 'members[1].name');
    assert.match(byName.message, /71 characters.*set members\[1\]\.nodeName/);
    const byNode = configError(() => loadProviderConfig(providerFile(`  nodeName: ${long(64)}\n`), defaults));
    assert.equal(byNode.field, 'members[0].nodeName');
    const ok = loadProviderConfig(providerFile(`- name: ${long(60, 'b')}\n  kubeconfig: ${kubeconfig}\n  nodeName: short\n`), defaults);
    assert.equal(ok.members[1].nodeName, 'short');
  });
});

describe('two members never share a virtual node', () => {
  const two = (a: string, b: string) => () => loadProviderConfig(providerFile(`${a}- name: ${b}\n  kubeconfig: ${kubeconfig}\n`), defaults);

  it('a member shown per pool whose pools can take another member\'s node name exits 2 naming both members, the node and the field', () => {
    // Member a's node is clusterlet-a: its pool "west" would be clusterlet-a-west, member a-west's node.
    const err = configError(two('  nodes: { pool: pool }\n', 'a-west'));
    assert.equal(err.field, 'members[1].nodeName');
    assert.match(err.message, /members "a" and "a-west" can share node "clusterlet-a-west": .*member a, shown per pool, names its pools clusterlet-a-<value>/);
    // Member b's member node "1" would be clusterlet-b-1, member c's node; the third member names the second.
    const third = configError(() => loadProviderConfig(providerFile(`- name: b\n  kubeconfig: ${kubeconfig}\n  nodes: node\n`
      + `- name: c\n  kubeconfig: ${kubeconfig}\n  nodeName: clusterlet-b-1\n`), defaults));
    assert.equal(third.field, 'members[2].nodeName');
    assert.match(third.message, /members "b" and "c" can share node "clusterlet-b-1"/);
  });

  it('the same node name twice names the second', () => {
    const err = configError(two('', 'b\n  nodeName: clusterlet-a'));
    assert.equal(err.field, 'members[1].nodeName');
    assert.match(err.message, /duplicate node name "clusterlet-a"/);
  });

  it('accepts names that cannot meet: members shown whole, or another member\'s name not <nodeName>-…', () => {
    assert.equal(two('', 'a-west')().members.length, 2);
    assert.equal(two('  nodes: { pool: pool }\n', 'aa\n  nodes: node')().members.length, 2);
  });
});

describe('namespace mapping at load time', () => {
  const cases: [string, string, RegExp][] = [
    ['an override that is not a DNS-1123 label', '  namespaceMapping: { overrides: { team-a: Team_A } }\n',
      /members\[0\]\.namespaceMapping\.overrides\.team-a: "Team_A" is not a namespace name/],
    ['an override longer than 63', `  namespaceMapping: { overrides: { team-a: ${long(64)} } }\n`,
      /overrides\.team-a: "a{64}" is not a namespace name/],
    ['two overrides onto one member namespace', '  namespaceMapping: { overrides: { team-a: shared, team-b: shared } }\n',
      /overrides\.team-b: maps to "shared" as "team-a" does/],
    ['a template with uppercase characters', '  namespaceMapping: { template: "{namespace}-FromProd" }\n',
      /namespaceMapping\.template: "\{namespace\}-FromProd" has characters a namespace name cannot hold/],
    ['a template with a dot', '  namespaceMapping: { template: "prod.{namespace}" }\n', /namespaceMapping\.template: .*cannot hold/],
    ['a template starting with "-"', '  namespaceMapping: { template: "-{namespace}" }\n', /namespaceMapping\.template: .*start or end with "-"/],
    ['a template whose fixed part is too long', `  namespaceMapping: { template: "{namespace}-${long(62)}" }\n`,
      /namespaceMapping\.template: .*at least 64 characters: a namespace name is at most 63/],
  ];
  for (const [what, yaml, message] of cases) {
    it(`refuses ${what}`, () => {
      assert.match(configError(() => loadProviderConfig(providerFile(yaml), defaults)).message, message);
    });
  }

  it('accepts a valid mapping', () => {
    const { members } = loadProviderConfig(
      providerFile('  namespaceMapping: { template: "{namespace}-from-prod", overrides: { team-a: team-a-eu } }\n'), defaults);
    assert.deepEqual(members[0].namespaceMapping, { template: '{namespace}-from-prod', overrides: { 'team-a': 'team-a-eu' } });
  });
});

describe('checkMemberNamespace', () => {
  const suffix: NamespaceMapping = { template: '{namespace}-from-hostcluster', overrides: { short: 'short-eu', odd: 'Odd' } };

  it('maps a host namespace whose member namespace can exist', () => {
    assert.deepEqual(checkMemberNamespace(suffix, 'team-a'), { namespace: 'team-a-from-hostcluster' });
    assert.deepEqual(checkMemberNamespace(suffix, 'short'), { namespace: 'short-eu' });
  });

  it('reports a member namespace too long, naming the host namespace, the template and the limit', () => {
    const host = long(55);
    assert.deepEqual(checkMemberNamespace(suffix, host), {
      namespace: `${host}-from-hostcluster`,
      reason: 'NamespaceTooLong',
      error: `host namespace "${host}" maps to member namespace "${host}-from-hostcluster" (template "{namespace}-from-hostcluster"), ` +
        '72 characters: a namespace name is at most 63; give it another name with a namespaceMapping override (or change the '
        + 'template) and restart clusterlet',
    });
  });

  it('reports an invalid name, naming the override', () => {
    const r = checkMemberNamespace(suffix, 'odd');
    assert.equal(r.error !== undefined && r.reason, 'InvalidNamespace');
    assert.match(r.error ?? '', /^host namespace "odd" maps to member namespace "Odd" \(override "odd": "Odd"\), not a DNS-1123 label/);
  });

  it('a host namespace named like an Object.prototype property uses the template', () => {
    assert.equal(memberNamespace(suffix, 'constructor'), 'constructor-from-hostcluster');
  });
});

describe('host identity and member probes', () => {
  const run = (args: string[]) => {
    const r = parseConfig(['--member-kubeconfig', kubeconfig, ...args], {});
    assert.equal(r.kind, 'run');
    return (r as Extract<typeof r, { kind: 'run' }>).config;
  };
  it('no host name given: undefined, resolved at start to the host cluster ID', () => {
    assert.equal(run([]).hostName, undefined);
    assert.equal(run(['--host-name', 'prod-eu']).hostName, 'prod-eu');
  });
  it('a host name that cannot be a label value exits 2 naming the flag', () => {
    assert.equal(configError(() => run(['--host-name', 'Prod_EU'])).field, '--host-name');
  });
  it('probes: every 10 s, unreachable after 3 failures, unless the flags say otherwise', () => {
    assert.deepEqual([run([]).probePeriodSeconds, run([]).probeFailureThreshold], [10, 3]);
    const c = run(['--probe-period-seconds', '2', '--probe-failure-threshold', '5']);
    assert.deepEqual([c.probePeriodSeconds, c.probeFailureThreshold], [2, 5]);
    assert.equal(configError(() => run(['--probe-failure-threshold', '0'])).field, '--probe-failure-threshold');
    assert.equal(configError(() => run(['--probe-period-seconds', 'x'])).field, '--probe-period-seconds');
  });
});

describe('--reflect-host-endpoints', () => {
  const run = (args: string[]) => {
    const r = parseConfig(['--member-kubeconfig', kubeconfig, ...args], {});
    assert.equal(r.kind, 'run');
    return (r as Extract<typeof r, { kind: 'run' }>).config;
  };
  const fromFile = (text: string) => {
    const r = parseConfig(['--provider-config', providerFile(text)], {});
    return (r as Extract<typeof r, { kind: 'run' }>).config;
  };
  it('off by default; on with the flag, or with reflectHostEndpoints: true in the file', () => {
    assert.equal(run([]).reflectHostEndpoints, false);
    assert.equal(run(['--reflect-host-endpoints']).reflectHostEndpoints, true);
    assert.equal(fromFile('reflectHostEndpoints: true\n').reflectHostEndpoints, true);
    assert.equal(fromFile('reflectHostEndpoints: false\n').reflectHostEndpoints, false);
  });
  it('a value in the file other than true or false names the field', () => {
    assert.equal(configError(() => fromFile('reflectHostEndpoints: maybe\n')).field, 'reflectHostEndpoints');
    assert.equal(configError(() => run(['--reflect-host-endpoints=yes'])).field, '--reflect-host-endpoints');
  });
});

describe('leader election flags', () => {
  const run = (args: string[], env: NodeJS.ProcessEnv = {}) => {
    const r = parseConfig(['--member-kubeconfig', kubeconfig, ...args], env);
    assert.equal(r.kind, 'run');
    return (r as Extract<typeof r, { kind: 'run' }>).config;
  };
  it('on by default, timed as kube-controller-manager (15 s / 10 s / 2 s), in namespace clusterlet, as the hostname', () => {
    const le = run([]).leaderElection!;
    assert.deepEqual([le.leaseDurationMs, le.renewDeadlineMs, le.retryPeriodMs], [15_000, 10_000, 2_000]);
    assert.equal(le.namespace, 'clusterlet');
    assert.equal(le.identity, hostname());
    assert.equal(le.pod, undefined);
  });
  it('in a pod: namespace and identity from POD_NAMESPACE and POD_NAME, the Pod (with POD_UID) owns the presence Lease', () => {
    const le = run([], { POD_NAMESPACE: 'ops', POD_NAME: 'clusterlet-7d9-x2', POD_UID: 'u-1' }).leaderElection!;
    assert.deepEqual([le.namespace, le.identity, le.pod], ['ops', 'clusterlet-7d9-x2', { name: 'clusterlet-7d9-x2', uid: 'u-1' }]);
    const flagged = run(['--leader-elect-namespace', 'ha', '--leader-elect-identity', 'r1'], { POD_NAMESPACE: 'ops', POD_NAME: 'p' });
    assert.deepEqual([flagged.leaderElection!.namespace, flagged.leaderElection!.identity], ['ha', 'r1']);
  });
  it('--leader-elect=false turns it off; a bare --leader-elect keeps it on', () => {
    assert.equal(run(['--leader-elect=false']).leaderElection, undefined);
    assert.ok(run(['--leader-elect']).leaderElection);
    assert.equal(configError(() => run(['--leader-elect=maybe'])).field, '--leader-elect');
  });
  it('durations as 15s, 500ms, 1m or seconds; the usual order of the three is required, naming the flag', () => {
    const le = run(['--leader-elect-lease-duration', '1m', '--leader-elect-renew-deadline', '20', '--leader-elect-retry-period', '500ms'])
      .leaderElection!;
    assert.deepEqual([le.leaseDurationMs, le.renewDeadlineMs, le.retryPeriodMs], [60_000, 20_000, 500]);
    assert.equal(configError(() => run(['--leader-elect-lease-duration', '15 sec'])).field, '--leader-elect-lease-duration');
    assert.equal(configError(() => run(['--leader-elect-renew-deadline', '15s'])).field, '--leader-elect-renew-deadline');
    assert.equal(configError(() => run(['--leader-elect-retry-period', '10s'])).field, '--leader-elect-retry-period');
    assert.equal(configError(() => run(['--leader-elect-namespace', 'Not_A_Name'])).field, '--leader-elect-namespace');
  });
});

describe('storage', () => {
  const flags = (...extra: string[]) => parseConfig(['--member-kubeconfig', kubeconfig, '--member-name', 'eu', ...extra], {});
  const storage = (r: ReturnType<typeof parseConfig>) => (r.kind === 'run' ? r.config.members.map((m) => m.storage) : []);
  const file = (yaml: string, ...extra: string[]) => parseConfig(['--provider-config', providerFile(yaml), ...extra], {});

  it('by default: the host class clusterlet-<member>, the member\'s default class, Delete', () => {
    assert.deepEqual(storage(flags()), [{ className: 'clusterlet-eu', memberClassName: undefined, reclaimPolicy: 'Delete' }]);
  });

  it('flags: --storage-class, --member-storage-class, --storage-reclaim-policy', () => {
    assert.deepEqual(storage(flags('--storage-class', 'eu-disks', '--member-storage-class', 'fast-ssd', '--storage-reclaim-policy', 'Retain')),
      [{ className: 'eu-disks', memberClassName: 'fast-ssd', reclaimPolicy: 'Retain' }]);
  });

  it('bad values exit 2 naming the flag', () => {
    assert.equal(configError(() => flags('--storage-reclaim-policy', 'Recycle')).field, '--storage-reclaim-policy');
    assert.equal(configError(() => flags('--storage-class', 'Disks_1')).field, '--storage-class');
    assert.equal(configError(() => flags('--member-storage-class', 'a..b')).field, '--member-storage-class');
    const both = configError(() => file('', '--storage-class', 'x'));
    assert.equal(both.field, '--storage-class');
    assert.match(both.message, /set storage.storageClassName per member/);
  });

  it('in the file, per member, over the flags\' defaults', () => {
    const yaml = `  storage:\n    storageClassName: a-disks\n    reclaimPolicy: Retain\n- name: b\n  kubeconfig: ${kubeconfig}\n`
      + `- name: c\n  kubeconfig: ${kubeconfig}\n  storage:\n    memberStorageClassName: slow\n`;
    assert.deepEqual(storage(file(yaml, '--member-storage-class', 'fast', '--storage-reclaim-policy', 'Delete')), [
      { className: 'a-disks', memberClassName: 'fast', reclaimPolicy: 'Retain' },
      { className: 'clusterlet-b', memberClassName: 'fast', reclaimPolicy: 'Delete' },
      { className: 'clusterlet-c', memberClassName: 'slow', reclaimPolicy: 'Delete' },
    ]);
  });

  it('bad values in the file name the field', () => {
    const cases: [string, string][] = [
      ['  storage: yes\n', 'members[0].storage'],
      ['  storage:\n    className: x\n', 'members[0].storage.className'],
      ['  storage:\n    reclaimPolicy: delete\n', 'members[0].storage.reclaimPolicy'],
      ['  storage:\n    memberStorageClassName: Fast\n', 'members[0].storage.memberStorageClassName'],
      [`  storage:\n    storageClassName: shared\n- name: b\n  kubeconfig: ${kubeconfig}\n  storage:\n    storageClassName: shared\n`,
        'members[1].storage.storageClassName'],
    ];
    for (const [yaml, field] of cases) assert.equal(configError(() => file(yaml)).field, field, yaml);
  });
});

describe('--api-protocol', () => {
  const run = (...extra: string[]) => parseConfig(['--member-kubeconfig', kubeconfig, ...extra], {});
  it('is HTTPS/1.1 by default; http2 on request', () => {
    const byDefault = run();
    assert.equal(byDefault.kind === 'run' && byDefault.config.apiProtocol, 'http1.1');
    const h2 = run('--api-protocol', 'http2');
    assert.equal(h2.kind === 'run' && h2.config.apiProtocol, 'http2');
  });

  it('anything else names the flag and the choices', () => {
    const err = configError(() => run('--api-protocol', 'spdy'));
    assert.equal(err.field, '--api-protocol');
    assert.match(err.message, /"spdy" is not one of http1\.1, http2/);
  });
});

describe('API access of offloaded pods (--api-access, --host-api-server, apiAccess and hostAPI per member)', () => {
  const flags = (...extra: string[]) => parseConfig(['--member-kubeconfig', kubeconfig, ...extra], {});
  const file = (yaml: string, ...extra: string[]) => parseConfig(['--provider-config', providerFile(yaml), ...extra], {});
  const access = (r: ReturnType<typeof parseConfig>) => (r.kind === 'run' ? r.config.members.map((m) => m.apiAccess) : []);

  it('host mode by default, its endpoint left to the host kubeconfig; the flags set both', () => {
    assert.deepEqual(access(flags()), [{ mode: 'host' }]);
    assert.deepEqual(access(flags('--api-access', 'none', '--host-api-server', 'https://203.0.113.7:6443')),
      [{ mode: 'none', hostServer: 'https://203.0.113.7:6443' }]);
  });

  it('in the file, per member, over the flags\' defaults', () => {
    const yaml = `  apiAccess: member\n- name: b\n  kubeconfig: ${kubeconfig}\n  hostAPI:\n    server: https://host.example:443\n`;
    assert.deepEqual(access(file(yaml, '--host-api-server', 'https://[2001:db8::1]:6443')), [
      { mode: 'member', hostServer: 'https://[2001:db8::1]:6443' },
      { mode: 'host', hostServer: 'https://host.example:443' },
    ]);
  });

  it('bad values name the flag or the field', () => {
    assert.equal(configError(() => flags('--api-access', 'cluster')).field, '--api-access');
    assert.match(configError(() => flags('--host-api-server', 'http://h:80')).message, /not an https URL/);
    assert.match(configError(() => flags('--host-api-server', 'https://h:6443/k8s')).message, /has a path/);
    const cases: [string, string][] = [
      ['  apiAccess: yes\n', 'members[0].apiAccess'],
      ['  hostAPI: https://h\n', 'members[0].hostAPI'],
      ['  hostAPI:\n    url: https://h\n', 'members[0].hostAPI.url'],
      ['  hostAPI:\n    server: h:6443\n', 'members[0].hostAPI.server'],
    ];
    for (const [yaml, field] of cases) assert.equal(configError(() => file(yaml)).field, field, yaml);
  });
});

describe('virtual nodes per member, pool or node (--nodes, nodes per member)', () => {
  const flags = (...extra: string[]) => parseConfig(['--member-kubeconfig', kubeconfig, ...extra], {});
  const file = (yaml: string, ...extra: string[]) => parseConfig(['--provider-config', providerFile(yaml), ...extra], {});
  const nodes = (r: ReturnType<typeof parseConfig>) => (r.kind === 'run' ? r.config.members.map((m) => m.nodes) : []);

  it('unset by default (cluster); the flag gives cluster, node or pool=<label key>', () => {
    const byDefault = flags();
    assert.ok(byDefault.kind === 'run' && !('nodes' in byDefault.config.members[0]));
    assert.deepEqual(nodes(flags('--nodes', 'cluster')), [{ mode: 'cluster' }]);
    assert.deepEqual(nodes(flags('--nodes=node')), [{ mode: 'node' }]);
    assert.deepEqual(nodes(flags('--nodes=pool=node.kubernetes.io/instance-type')),
      [{ mode: 'pool', label: 'node.kubernetes.io/instance-type' }]);
    assert.deepEqual(nodes(flags('--nodes=pool=Pool_1.x')), [{ mode: 'pool', label: 'Pool_1.x' }]);
  });

  it('in the file, per member, over the flag\'s default; unset stays unset', () => {
    const yaml = '  nodes: node\n'
      + `- name: b\n  kubeconfig: ${kubeconfig}\n  nodes: { pool: topology.kubernetes.io/zone }\n`
      + `- name: c\n  kubeconfig: ${kubeconfig}\n  nodes: cluster\n`
      + `- name: d\n  kubeconfig: ${kubeconfig}\n`;
    assert.deepEqual(nodes(file(yaml)), [{ mode: 'node' }, { mode: 'pool', label: 'topology.kubernetes.io/zone' }, { mode: 'cluster' },
      undefined]);
    assert.deepEqual(nodes(file(yaml, '--nodes=pool=pool')).at(-1), { mode: 'pool', label: 'pool' });
    assert.deepEqual(loadProviderConfig(providerFile('  nodes: { pool: pool }\n'), defaults).members[0].nodes, { mode: 'pool', label: 'pool' });
  });

  it('bad values in the file name members[i].nodes and say the three forms', () => {
    const cases = ['  nodes: pools\n', '  nodes: { pool: "" }\n', '  nodes: { pool: a b }\n', '  nodes: { pool: x, extra: 1 }\n',
      '  nodes: { pool: 1 }\n', '  nodes: {}\n', '  nodes: [node]\n', `  nodes: { pool: ${long(64)} }\n`, '  nodes: { pool: a/b/c }\n',
      '  nodes: { pool: Example.com/x }\n', '  nodes: { pool: -x }\n'];
    for (const yaml of cases) {
      const err = configError(() => file(yaml));
      assert.equal(err.field, 'members[0].nodes', yaml);
      assert.match(err.message, /cluster, node, \{ pool: <label key> \}/, yaml);
    }
    assert.match(configError(() => file('  nodes: { pool: a b }\n')).message, /pool "a b" is not a label key/);
  });

  it('bad flag values name --nodes and say the three forms', () => {
    for (const v of ['pool=', 'zone', 'pool', 'pool=a b', 'nodes', '']) {
      const err = configError(() => flags(`--nodes=${v}`));
      assert.equal(err.field, '--nodes', v);
      assert.match(err.message, /cluster, node, pool=<label key>/, v);
    }
    assert.equal(configError(() => file('', '--nodes=zone')).field, '--nodes');
  });
});
