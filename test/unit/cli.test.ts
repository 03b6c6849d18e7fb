// The CLI's contract for bad input: exit code 2 and a message naming the field (and the file).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseConfig, type Config } from '../../src/config.ts';

const CLI = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'clusterlet-cli-'));
const kubeconfig = join(dir, 'kc.yaml');
writeFileSync(kubeconfig, 'apiVersion: v1\nkind: Config\nclusters: []\nusers: []\ncontexts: []\n');

function run(args: string[]): { code: number | null; out: string } {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 20_000 });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

const GOOD = `apiVersion: v1
kind: Config
current-context: c
clusters: [{ name: c, cluster: { server: "https://127.0.0.1:1" } }]
users: [{ name: u, user: { token: t } }]
contexts: [{ name: c, context: { cluster: c, user: u } }]
`;
const AUTH_PROVIDER = GOOD.replace('{ token: t }', '{ auth-provider: { name: oidc, config: {} } }');

function config(name: string, text: string): string {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}

describe('clusterlet CLI', () => {
  it('--help documents every flag and exits 0', () => {
    const r = run(['--help']);
    assert.equal(r.code, 0);
    for (const flag of ['--host-kubeconfig', '--member-kubeconfig', '--member-name', '--nodename', '--provider-config',
      '--pod-sync-workers', '--log-level', '--node-ip', '--kubelet-port', '--health-port', '--host-qps', '--member-qps',
      '--serving-cert', '--tls-cert-file', '--tls-key-file', '--client-ca-file', '--authentication-mode', '--export-namespaces']) {
      assert.ok(r.out.includes(flag), `help mentions ${flag}`);
    }
  });

  const cases: [string, string[], RegExp][] = [
    ['an unknown flag', ['--member-kubeconfig', kubeconfig, '--bogus'], /--bogus/],
    ['a missing member kubeconfig file', ['--member-kubeconfig', join(dir, 'nope.yaml')], /--member-kubeconfig: file ".*nope\.yaml" does not exist/],
    ['a missing host kubeconfig file', ['--host-kubeconfig', join(dir, 'gone'), '--member-kubeconfig', kubeconfig], /--host-kubeconfig: file/],
    ['no member at all', [], /--member-kubeconfig: no member given/],
    ['a bad member name', ['--member-kubeconfig', kubeconfig, '--member-name', 'Bad_Name'], /--member-name/],
    ['a non-numeric worker count', ['--member-kubeconfig', kubeconfig, '--pod-sync-workers', 'lots'], /--pod-sync-workers: "lots" must be an integer/],
    ['a bad log level', ['--member-kubeconfig', kubeconfig, '--log-level', 'loud'], /--log-level/],
    ['a host kubeconfig with no current context', ['--host-kubeconfig', kubeconfig, '--member-kubeconfig', kubeconfig],
      /kubeconfig .*kc\.yaml: .*current-context/],
    ['a member kubeconfig with a legacy auth-provider', ['--host-kubeconfig', config('host.yaml', GOOD), '--member-kubeconfig', config('ap.yaml', AUTH_PROVIDER)],
      /kubeconfig .*ap\.yaml: users\[0\]\.user\.auth-provider: .*"oidc" is not supported/],
    ['a provider config with an unknown field', ['--provider-config', config('unknown.yaml', `members:\n- name: a\n  kubeconfig: ${kubeconfig}\n  colour: red\n`)],
      /unknown\.yaml: members\[0\]\.colour: unknown field/],
    ['a provider config whose member kubeconfig is missing', ['--provider-config', config('missing.yaml', 'members:\n- name: a\n  kubeconfig: /does/not/exist\n')],
      /missing\.yaml: members\[0\]\.kubeconfig: file "\/does\/not\/exist" does not exist/],
    ['a provider config with duplicate members', ['--provider-config', config('dup.yaml', `members:\n- name: a\n  kubeconfig: ${kubeconfig}\n- name: a\n  kubeconfig: ${kubeconfig}\n`)],
      /dup\.yaml: members\[1\]\.name: duplicate member "a"/],
    ['a provider config with a bad taint', ['--provider-config', config('taint.yaml', `members:\n- name: a\n  kubeconfig: ${kubeconfig}\n  taints: [{ key: x, effect: Sometimes }]\n`)],
      /taint\.yaml: members\[0\]\.taints\[0\]/],
    ['a provider config that is not YAML', ['--provider-config', config('broken.yaml', 'members: [\n')], /broken\.yaml: \(yaml\)/],
    ['a bad serving-certificate mode', ['--member-kubeconfig', kubeconfig, '--serving-cert', 'borrowed'], /--serving-cert: "borrowed" is not one of file, csr, self-signed/],
    ['--serving-cert=file without files', ['--member-kubeconfig', kubeconfig, '--serving-cert', 'file'], /--serving-cert: file needs --tls-cert-file and --tls-key-file/],
    ['a certificate without its key', ['--member-kubeconfig', kubeconfig, '--tls-cert-file', kubeconfig], /--tls-key-file: give both/],
    ['a missing certificate file', ['--member-kubeconfig', kubeconfig, '--tls-cert-file', join(dir, 'no.crt'), '--tls-key-file', kubeconfig], /--tls-cert-file: file/],
    ['files with another serving mode', ['--member-kubeconfig', kubeconfig, '--tls-cert-file', kubeconfig, '--tls-key-file', kubeconfig, '--serving-cert', 'csr'],
      /--tls-cert-file: not used with --serving-cert=csr/],
    ['a missing client CA file', ['--member-kubeconfig', kubeconfig, '--client-ca-file', join(dir, 'ca.crt')], /--client-ca-file: file/],
    ['a bad authentication mode', ['--member-kubeconfig', kubeconfig, '--authentication-mode', 'trust-me'], /--authentication-mode: "trust-me" is not one of webhook, none/],
    ['a member kubelet port out of range', ['--provider-config', config('port.yaml', `members:\n- name: a\n  kubeconfig: ${kubeconfig}\n  kubeletPort: 70000\n`)],
      /port\.yaml: members\[0\]\.kubeletPort: "70000" must be an integer from 1 to 65535/],
    ['a namespace template without {namespace}', ['--provider-config', config('tpl.yaml', `members:\n- name: a\n  kubeconfig: ${kubeconfig}\n  namespaceMapping: { template: fixed }\n`)],
      /tpl\.yaml: members\[0\]\.namespaceMapping\.template/],
    ['a member name whose default node name is too long', ['--member-kubeconfig', kubeconfig, '--member-name', 'm'.repeat(60)],
      /--member-name: the default node name "clusterlet-m{60}": 71 characters: a node name is at most 63/],
    ['a namespace override that is no namespace name', ['--provider-config', config('ovr.yaml', `members:\n- name: a\n  kubeconfig: ${kubeconfig}\n  namespaceMapping: { overrides: { team-a: Team_A } }\n`)],
      /ovr\.yaml: members\[0\]\.namespaceMapping\.overrides\.team-a: "Team_A" is not a namespace name/],
    ['a bad name in --export-namespaces', ['--member-kubeconfig', kubeconfig, '--export-namespaces', 'results,Team_A'],
      /--export-namespaces: "Team_A" is not a DNS-1123 label/],
    ['exportNamespaces that is not a list', ['--provider-config', config('exp-map.yaml', `exportNamespaces: results\nmembers:\n- name: a\n  kubeconfig: ${kubeconfig}\n`)],
      /exp-map\.yaml: exportNamespaces: must be a list of namespace names/],
    ['a bad name in exportNamespaces', ['--provider-config', config('exp-bad.yaml', `exportNamespaces: [ok, 7]\nmembers:\n- name: a\n  kubeconfig: ${kubeconfig}\n`)],
      /exp-bad\.yaml: exportNamespaces\[1\]: 7 is not a DNS-1123 label/],
  ];
  for (const [what, args, message] of cases) {
    it(`exits 2 naming the field for ${what}`, () => {
      const r = run(args);
      assert.equal(r.code, 2, r.out);
      assert.match(r.out, message);
    });
  }
});

describe('export namespaces (the allow-list of host namespaces that accept exports)', () => {
  const parse = (args: string[]): Config => {
    const r = parseConfig(args, {});
    assert.equal(r.kind, 'run');
    return r.config;
  };
  let files = 0;
  const file = (extra: string): string => config(`exp-${++files}.yaml`,
    `${extra}members:\n- name: a\n  kubeconfig: ${kubeconfig}\n`);

  it('is empty by default: only annotated namespaces accept exports', () => {
    assert.deepEqual(parse(['--member-kubeconfig', kubeconfig]).exportNamespaces, []);
    assert.deepEqual(parse(['--provider-config', file('')]).exportNamespaces, []);
  });
  it('--export-namespaces: a comma-separated list, blanks and duplicates dropped', () => {
    assert.deepEqual(parse(['--member-kubeconfig', kubeconfig, '--export-namespaces', 'results, team-a,,results']).exportNamespaces,
      ['results', 'team-a']);
    assert.deepEqual(parse(['--member-kubeconfig', kubeconfig, '--export-namespaces', '']).exportNamespaces, []);
  });
  it('exportNamespaces in the provider config', () => {
    assert.deepEqual(parse(['--provider-config', file('exportNamespaces: [results, team-a]\n')]).exportNamespaces, ['results', 'team-a']);
  });
  it('the flag overrides the file', () => {
    const f = file('exportNamespaces: [results]\n');
    assert.deepEqual(parse(['--provider-config', f, '--export-namespaces', 'other']).exportNamespaces, ['other']);
    assert.deepEqual(parse(['--provider-config', f, '--export-namespaces', '']).exportNamespaces, []);
  });
});
