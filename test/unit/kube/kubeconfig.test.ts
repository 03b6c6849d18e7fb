import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  KubeconfigError, inClusterAccess, loadKubeconfigFile, parseKubeconfig, type ClusterAccess,
} from '../../../src/kube/kubeconfig.ts';

const SECRET = 'sEcReT-t0ken-value';
const b64 = (s: string) => Buffer.from(s).toString('base64');
const V1 = 'client.authentication.k8s.io/v1';

let dir: string;
before(() => { dir = mkdtempSync(join(tmpdir(), 'clusterlet-kubeconfig-')); });
after(() => rmSync(dir, { recursive: true, force: true }));

/** A fresh subdirectory of the test's temp dir. */
let seq = 0;
function sub(): string {
  const d = join(dir, `t${seq++}`);
  mkdirSync(d);
  return d;
}

interface Spec { cluster?: Record<string, unknown>; user?: Record<string, unknown> | null; namespace?: string }
/** A one-context kubeconfig (context "main", cluster "c", user "u") as YAML (JSON is YAML). */
function kubeconfig(spec: Spec = {}): string {
  return JSON.stringify({
    apiVersion: 'v1', kind: 'Config', 'current-context': 'main',
    clusters: [{ name: 'c', cluster: { server: 'https://127.0.0.1:6443/', ...spec.cluster } }],
    contexts: [{ name: 'main', context: { cluster: 'c', ...(spec.user === null ? {} : { user: 'u' }), namespace: spec.namespace } }],
    users: spec.user === null ? [] : [{ name: 'u', user: spec.user ?? { token: SECRET } }],
  });
}

function parse(text: string, extra: { context?: string; baseDir?: string; now?: () => number; execTimeoutMs?: number } = {}): ClusterAccess {
  return parseKubeconfig(text, { source: '/cfg/kubeconfig', baseDir: extra.baseDir ?? '/cfg', ...extra });
}

/** The KubeconfigError `fn` throws or rejects with. */
async function kubeconfigError(fn: () => unknown): Promise<KubeconfigError> {
  try {
    await fn();
  } catch (e) {
    assert.ok(e instanceof KubeconfigError, `expected a KubeconfigError, got ${String(e)}`);
    return e;
  }
  return assert.fail('expected a KubeconfigError');
}

/** A clock the test moves by hand. */
function clock(start = Date.parse('2030-01-01T00:00:00Z')) {
  const c = { t: start, now: () => c.t };
  return c;
}

describe('parseKubeconfig', () => {
  it('selects current-context and exposes its cluster, namespace and static token', async () => {
    const a = parse(kubeconfig({ namespace: 'team-a', cluster: { 'tls-server-name': 'api.internal', 'proxy-url': 'http://proxy:3128' } }));
    assert.equal(a.source, '/cfg/kubeconfig');
    assert.equal(a.contextName, 'main');
    assert.equal(a.server, 'https://127.0.0.1:6443');
    assert.equal(a.namespace, 'team-a');
    assert.equal(a.tlsServerName, 'api.internal');
    assert.equal(a.proxyURL, 'http://proxy:3128');
    assert.equal(a.insecureSkipTLSVerify, false);
    assert.equal(a.ca, undefined);
    assert.deepEqual(await a.credentials(), { token: SECRET });
  });

  it('reads real kubeconfig YAML, keeping a server path prefix and insecure-skip-tls-verify', () => {
    const yaml = [
      'apiVersion: v1', 'kind: Config', 'current-context: prod',
      'clusters:', '- name: p', '  cluster:', '    server: https://lb.example.com/k8s/clusters/c-1//', '    insecure-skip-tls-verify: true',
      'contexts:', '- name: prod', '  context:', '    cluster: p',
    ].join('\n');
    const a = parse(yaml);
    assert.equal(a.server, 'https://lb.example.com/k8s/clusters/c-1');
    assert.equal(a.insecureSkipTLSVerify, true);
  });

  it('decodes -data fields from base64', async () => {
    const a = parse(kubeconfig({
      cluster: { 'certificate-authority-data': b64('CA PEM') },
      user: { 'client-certificate-data': b64('CERT PEM'), 'client-key-data': b64('KEY PEM') },
    }));
    assert.equal(a.ca?.toString(), 'CA PEM');
    const creds = await a.credentials();
    assert.equal(creds.cert?.toString(), 'CERT PEM');
    assert.equal(creds.key?.toString(), 'KEY PEM');
    assert.equal(creds.token, undefined);
  });

  it('reads file fields relative to the kubeconfig directory, and absolute ones as given', async () => {
    const d = sub();
    mkdirSync(join(d, 'certs'));
    writeFileSync(join(d, 'ca.pem'), 'CA FROM FILE');
    writeFileSync(join(d, 'certs', 'c.pem'), 'CERT FROM FILE');
    const keyPath = join(sub(), 'k.pem');
    writeFileSync(keyPath, 'KEY FROM FILE');
    writeFileSync(join(d, 'config'), kubeconfig({
      cluster: { 'certificate-authority': 'ca.pem' },
      user: { 'client-certificate': 'certs/c.pem', 'client-key': keyPath },
    }));
    const a = loadKubeconfigFile(join(d, 'config'));
    assert.equal(a.source, join(d, 'config'));
    assert.equal(a.ca?.toString(), 'CA FROM FILE');
    const creds = await a.credentials();
    assert.equal(creds.cert?.toString(), 'CERT FROM FILE');
    assert.equal(creds.key?.toString(), 'KEY FROM FILE');
  });

  it('prefers -data over the file field, without reading the file', async () => {
    const a = parse(kubeconfig({
      cluster: { 'certificate-authority-data': b64('DATA CA'), 'certificate-authority': 'missing-ca.pem' },
    }));
    assert.equal(a.ca?.toString(), 'DATA CA');
  });

  it('names the source, field, path and errno of an unreadable file', async () => {
    const d = sub();
    writeFileSync(join(d, 'config'), kubeconfig({ user: { 'client-certificate-data': b64('C'), 'client-key': 'nope.pem' } }));
    const e = await kubeconfigError(() => loadKubeconfigFile(join(d, 'config')));
    assert.equal(e.message, `kubeconfig ${join(d, 'config')}: users[0].user.client-key: file ${join(d, 'nope.pem')} not readable (ENOENT)`);
  });

  it('reports a missing kubeconfig file by its path', async () => {
    const e = await kubeconfigError(() => loadKubeconfigFile(join(dir, 'absent')));
    assert.match(e.message, /absent: file not readable \(ENOENT\)/);
  });

  it('lets the context argument override current-context', async () => {
    const text = JSON.stringify({
      'current-context': 'a',
      clusters: [{ name: 'ca', cluster: { server: 'https://a:6443' } }, { name: 'cb', cluster: { server: 'https://b:6443' } }],
      contexts: [{ name: 'a', context: { cluster: 'ca', user: 'ua' } }, { name: 'b', context: { cluster: 'cb', user: 'ub', namespace: 'nb' } }],
      users: [{ name: 'ua', user: { token: 'token-a' } }, { name: 'ub', user: { token: 'token-b' } }],
    });
    const a = parse(text);
    assert.equal(a.server, 'https://a:6443');
    const b = parse(text, { context: 'b' });
    assert.equal(b.contextName, 'b');
    assert.equal(b.server, 'https://b:6443');
    assert.equal(b.namespace, 'nb');
    assert.deepEqual(await b.credentials(), { token: 'token-b' });
  });

  it('names a missing context, cluster or user and the field that referenced it', async () => {
    let e = await kubeconfigError(() => parse(kubeconfig(), { context: 'staging' }));
    assert.match(e.message, /^kubeconfig \/cfg\/kubeconfig: context \(override\): context "staging" not found in contexts$/);
    e = await kubeconfigError(() => parse(kubeconfig().replace('"current-context":"main"', '"current-context":"gone"')));
    assert.match(e.message, /current-context: context "gone" not found in contexts/);
    e = await kubeconfigError(() => parse(kubeconfig().replace('"cluster":"c"', '"cluster":"other"')));
    assert.match(e.message, /contexts\[0\]\.context\.cluster: cluster "other" not found in clusters/);
    e = await kubeconfigError(() => parse(kubeconfig().replace('"user":"u"', '"user":"bob"')));
    assert.match(e.message, /contexts\[0\]\.context\.user: user "bob" not found in users/);
    e = await kubeconfigError(() => parse(kubeconfig().replace('"current-context":"main",', '')));
    assert.match(e.message, /current-context: not set/);
  });

  it('rejects a cluster without a server, or with a non-http(s) one', async () => {
    let e = await kubeconfigError(() => parse(kubeconfig({ cluster: { server: null } })));
    assert.match(e.message, /clusters\[0\]\.cluster\.server: missing/);
    e = await kubeconfigError(() => parse(kubeconfig({ cluster: { server: 'ftp://x' } })));
    assert.match(e.message, /clusters\[0\]\.cluster\.server: not a valid http\(s\) URL/);
  });

  it('gives no credentials when the context has no user', async () => {
    assert.deepEqual(await parse(kubeconfig({ user: null })).credentials(), {});
  });

  it('supports username/password basic auth', async () => {
    const a = parse(kubeconfig({ user: { username: 'admin', password: 'pw' } }));
    assert.deepEqual(await a.credentials(), { basic: { username: 'admin', password: 'pw' } });
  });

  it('rejects auth-provider at load time, pointing at exec plugins', async () => {
    const e = await kubeconfigError(() => parse(kubeconfig({ user: { 'auth-provider': { name: 'gcp', config: { 'access-token': SECRET } } } })));
    assert.match(e.message, /users\[0\]\.user\.auth-provider: auth-provider "gcp" is not supported; use an exec credential plugin/);
    assert.match(e.message, /kubelogin, gke-gcloud-auth-plugin/);
  });

  it('rejects a client certificate without its key', async () => {
    const e = await kubeconfigError(() => parse(kubeconfig({ user: { 'client-certificate-data': b64('C') } })));
    assert.match(e.message, /users\[0\]\.user: client-certificate and client-key must be given together/);
  });
});

describe('token files', () => {
  it('re-reads a changed token file, at most once per 10 s, trimmed; invalidate() forces a re-read', async () => {
    const d = sub();
    const file = join(d, 'token');
    writeFileSync(file, ' first-token\n');
    writeFileSync(join(d, 'config'), kubeconfig({ user: { tokenFile: 'token' } }));
    const c = clock();
    const a = loadKubeconfigFile(join(d, 'config'), undefined, { now: c.now });
    assert.deepEqual(await a.credentials(), { token: 'first-token' });

    writeFileSync(file, 'second-token\n');
    utimesSync(file, new Date(Date.now() + 5_000), new Date(Date.now() + 5_000));
    c.t += 9_999;
    assert.equal((await a.credentials()).token, 'first-token', 'checked again before 10 s passed');
    c.t += 1;
    assert.equal((await a.credentials()).token, 'second-token');

    writeFileSync(file, 'third-token');
    utimesSync(file, new Date(Date.now() + 9_000), new Date(Date.now() + 9_000));
    assert.equal((await a.credentials()).token, 'second-token');
    a.invalidate();
    assert.equal((await a.credentials()).token, 'third-token');
  });

  it('keeps the last good token when the file is emptied or disappears', async () => {
    const d = sub();
    writeFileSync(join(d, 'token'), 'kept-token');
    const c = clock();
    const a = parse(kubeconfig({ user: { tokenFile: 'token' } }), { baseDir: d, now: c.now });
    writeFileSync(join(d, 'token'), ' \n');
    a.invalidate();
    assert.equal((await a.credentials()).token, 'kept-token');
    rmSync(join(d, 'token'));
    c.t += 60_000;
    assert.equal((await a.credentials()).token, 'kept-token');
  });

  it('fails at load when the only token source, the file, is unreadable or empty', async () => {
    const d = sub();
    let e = await kubeconfigError(() => parse(kubeconfig({ user: { tokenFile: 'token' } }), { baseDir: d }));
    assert.equal(e.message, `kubeconfig /cfg/kubeconfig: users[0].user.tokenFile: file ${join(d, 'token')} not readable (ENOENT)`);
    writeFileSync(join(d, 'token'), '  \n');
    e = await kubeconfigError(() => parse(kubeconfig({ user: { tokenFile: 'token' } }), { baseDir: d }));
    assert.match(e.message, /users\[0\]\.user\.tokenFile: file .* is empty/);
  });

  it('as client-go, uses a readable token file over a static token, and the static token otherwise', async () => {
    const d = sub();
    const a = parse(kubeconfig({ user: { token: 'static-token', tokenFile: 'token' } }), { baseDir: d });
    assert.equal((await a.credentials()).token, 'static-token');
    writeFileSync(join(d, 'token'), 'file-token');
    a.invalidate();
    assert.equal((await a.credentials()).token, 'file-token');
  });
});

const PLUGIN = `
import { appendFileSync, readFileSync } from 'node:fs';
const [log, mode] = process.argv.slice(2);
appendFileSync(log, JSON.stringify({ info: JSON.parse(process.env.KUBERNETES_EXEC_INFO), foo: process.env.FOO,
  parent: process.env.CLUSTERLET_TEST_PARENT, overridden: process.env.CLUSTERLET_TEST_OVERRIDE, args: process.argv.slice(2) }) + '\\n');
const run = readFileSync(log, 'utf8').trim().split('\\n').length;
const apiVersion = process.env.API_VERSION;
const print = (status) => process.stdout.write(JSON.stringify({ apiVersion, kind: 'ExecCredential', status }));
if (mode === 'fail') { process.stderr.write('boom: cannot log in\\n'); process.exit(3); }
else if (mode === 'garbage') { process.stdout.write('not json ${SECRET}'); process.stderr.write('some warning'); }
else if (mode === 'slow') setTimeout(() => {}, 30_000);
else if (mode === 'cert') print({ clientCertificateData: 'EXEC CERT', clientKeyData: 'EXEC KEY' });
else if (mode === 'wait') setTimeout(() => print({ token: 'exec-token-pid-' + process.pid }), 200);
else print({ token: 'exec-token-' + run, expirationTimestamp: process.env.EXPIRY });
`;

describe('exec credential plugins', () => {
  function setup(mode: string, extra: { expiry?: string; apiVersion?: string; provideClusterInfo?: boolean } = {}) {
    const d = sub();
    const script = join(d, 'plugin.mjs');
    writeFileSync(script, PLUGIN);
    const log = join(d, 'runs.log');
    const exec = {
      apiVersion: extra.apiVersion ?? V1, command: process.execPath, args: [script, log, mode], interactiveMode: 'Never',
      provideClusterInfo: extra.provideClusterInfo ?? false,
      env: [{ name: 'FOO', value: 'bar' }, { name: 'CLUSTERLET_TEST_OVERRIDE', value: 'from-kubeconfig' },
        { name: 'API_VERSION', value: extra.apiVersion ?? V1 }, ...(extra.expiry ? [{ name: 'EXPIRY', value: extra.expiry }] : [])],
    };
    const text = kubeconfig({ user: { exec }, cluster: { 'certificate-authority-data': b64('CA PEM'), 'tls-server-name': 'api' } });
    const runs = () => {
      try {
        return readFileSync(log, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
      } catch {
        return [];
      }
    };
    return { text, runs, dir: d };
  }

  it('runs the plugin with args, merged env and KUBERNETES_EXEC_INFO, and caches the token until 10 s before expiry', async () => {
    const c = clock();
    const expiry = new Date(c.t + 60_000).toISOString();
    const { text, runs } = setup('token', { expiry });
    process.env.CLUSTERLET_TEST_PARENT = 'from-parent';
    process.env.CLUSTERLET_TEST_OVERRIDE = 'from-parent';
    try {
      const a = parse(text, { now: c.now });
      assert.deepEqual(await a.credentials(), { token: 'exec-token-1' });
      const [run] = runs();
      assert.equal(run.foo, 'bar');
      assert.equal(run.parent, 'from-parent');
      assert.equal(run.overridden, 'from-kubeconfig');
      assert.equal(run.args[1], 'token');
      assert.deepEqual(run.info, { apiVersion: V1, kind: 'ExecCredential', spec: { interactive: false } });

      c.t += 49_999;
      assert.equal((await a.credentials()).token, 'exec-token-1');
      assert.equal(runs().length, 1);
      c.t += 1;
      assert.equal((await a.credentials()).token, 'exec-token-2');
      assert.equal(runs().length, 2);
    } finally {
      delete process.env.CLUSTERLET_TEST_PARENT;
      delete process.env.CLUSTERLET_TEST_OVERRIDE;
    }
  });

  it('caches a token without expiry until invalidate(), which re-runs the plugin', async () => {
    const c = clock();
    const { text, runs } = setup('token');
    const a = parse(text, { now: c.now });
    assert.equal((await a.credentials()).token, 'exec-token-1');
    c.t += 365 * 86_400_000;
    assert.equal((await a.credentials()).token, 'exec-token-1');
    a.invalidate();
    assert.equal((await a.credentials()).token, 'exec-token-2');
    assert.equal(runs().length, 2);
  });

  it('passes cluster info when provideClusterInfo is set (v1beta1)', async () => {
    const { text, runs } = setup('token', { apiVersion: 'client.authentication.k8s.io/v1beta1', provideClusterInfo: true });
    assert.equal((await parse(text).credentials()).token, 'exec-token-1');
    assert.deepEqual(runs()[0].info, {
      apiVersion: 'client.authentication.k8s.io/v1beta1', kind: 'ExecCredential',
      spec: { interactive: false, cluster: {
        server: 'https://127.0.0.1:6443', 'tls-server-name': 'api', 'insecure-skip-tls-verify': false,
        'certificate-authority-data': b64('CA PEM'),
      } },
    });
  });

  it('shares one running plugin between concurrent calls', async () => {
    const { text, runs } = setup('wait');
    const a = parse(text);
    const [x, y] = await Promise.all([a.credentials(), a.credentials()]);
    assert.match(x.token ?? '', /^exec-token-pid-\d+$/);
    assert.equal(y.token, x.token);
    assert.equal(runs().length, 1);
  });

  it('after invalidate(), neither shares nor caches a run that started before it', async () => {
    const { text, runs } = setup('wait');
    const a = parse(text);
    const before = a.credentials();
    a.invalidate();
    const after = a.credentials();
    const stale = (await before).token;
    const fresh = (await a.credentials()).token;
    assert.notEqual(fresh, stale);
    assert.equal(fresh, (await after).token);
    assert.equal(runs().length, 2);
  });

  it('returns a client certificate and key from the plugin', async () => {
    const { text } = setup('cert');
    const creds = await parse(text).credentials();
    assert.equal(creds.cert?.toString(), 'EXEC CERT');
    assert.equal(creds.key?.toString(), 'EXEC KEY');
    assert.equal(creds.token, undefined);
  });

  it('rejects with the command and stderr when the plugin fails, and runs it again next time', async () => {
    const { text, runs } = setup('fail');
    const a = parse(text);
    const e = await kubeconfigError(() => a.credentials());
    assert.equal(e.message,
      `kubeconfig /cfg/kubeconfig: users[0].user.exec: exec plugin "${process.execPath}" exited with code 3; stderr: boom: cannot log in`);
    await kubeconfigError(() => a.credentials());
    assert.equal(runs().length, 2);
  });

  it('rejects output that is not JSON without echoing it', async () => {
    const { text } = setup('garbage');
    const e = await kubeconfigError(() => parse(text).credentials());
    assert.match(e.message, /printed something other than JSON; stderr: some warning$/);
    assert.ok(!e.message.includes(SECRET));
  });

  it('kills a plugin that outlives the timeout', async () => {
    const { text } = setup('slow');
    const e = await kubeconfigError(() => parse(text, { execTimeoutMs: 300 }).credentials());
    assert.match(e.message, /exec plugin ".*" timed out after 0.3 s/);
  });

  it('resolves a relative command path against the kubeconfig directory', async () => {
    const d = sub();
    writeFileSync(join(d, 'cred.sh'), `#!/bin/sh\necho '{"apiVersion":"${V1}","kind":"ExecCredential","status":{"token":"sh-token"}}'\n`);
    chmodSync(join(d, 'cred.sh'), 0o755);
    writeFileSync(join(d, 'config'), kubeconfig({ user: { exec: { apiVersion: V1, command: './cred.sh' } } }));
    assert.equal((await loadKubeconfigFile(join(d, 'config')).credentials()).token, 'sh-token');
  });

  it('rejects unsupported exec apiVersions at load', async () => {
    const e = await kubeconfigError(() => parse(kubeconfig({
      user: { exec: { apiVersion: 'client.authentication.k8s.io/v1alpha1', command: 'x' } } })));
    assert.match(e.message, /users\[0\]\.user\.exec\.apiVersion: must be one of/);
  });
});

describe('inClusterAccess', () => {
  function root(files: Record<string, string>): string {
    const d = sub();
    for (const [name, content] of Object.entries(files)) writeFileSync(join(d, name), content);
    return d;
  }

  it('builds the server from the service env (IPv6 bracketed) and reads token, ca.crt and namespace', async () => {
    const r = root({ token: 'sa-token\n', 'ca.crt': 'CLUSTER CA', namespace: 'kube-system\n' });
    const a = inClusterAccess({ root: r, env: { KUBERNETES_SERVICE_HOST: 'fd00:10:96::1', KUBERNETES_SERVICE_PORT: '443' } });
    assert.equal(a.source, 'in-cluster');
    assert.equal(a.server, 'https://[fd00:10:96::1]:443');
    assert.equal(a.ca?.toString(), 'CLUSTER CA');
    assert.equal(a.namespace, 'kube-system');
    assert.equal(a.insecureSkipTLSVerify, false);
    assert.deepEqual(await a.credentials(), { token: 'sa-token' });
    const v4 = inClusterAccess({ root: r, env: { KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '6443' } });
    assert.equal(v4.server, 'https://10.96.0.1:6443');
  });

  it('picks up a rotated service account token', async () => {
    const r = root({ token: 'old-sa-token' });
    const c = clock();
    const a = inClusterAccess({ root: r, now: c.now, env: { KUBERNETES_SERVICE_HOST: '10.0.0.1', KUBERNETES_SERVICE_PORT: '443' } });
    assert.equal((await a.credentials()).token, 'old-sa-token');
    writeFileSync(join(r, 'token'), 'new-sa-token');
    utimesSync(join(r, 'token'), new Date(Date.now() + 5_000), new Date(Date.now() + 5_000));
    c.t += 10_000;
    assert.equal((await a.credentials()).token, 'new-sa-token');
  });

  it('throws when not in a cluster or without a token', async () => {
    let e = await kubeconfigError(() => inClusterAccess({ root: root({ token: 't' }), env: {} }));
    assert.match(e.message, /not running in a cluster/);
    e = await kubeconfigError(() => inClusterAccess({ root: root({}), env: { KUBERNETES_SERVICE_HOST: 'h', KUBERNETES_SERVICE_PORT: '1' } }));
    assert.match(e.message, /^kubeconfig in-cluster: token: file .*token not readable \(ENOENT\)$/);
  });
});

describe('secrets stay out of errors', () => {
  it('never puts a token, password or key in a thrown message', async () => {
    const cases: (() => unknown)[] = [
      // A YAML syntax error right after the token: js-yaml's own message would quote that line.
      () => parse(`current-context: main\nusers:\n- name: u\n  user:\n    token: ${SECRET}\n      bad: [\n`),
      () => parse(kubeconfig({ user: { token: SECRET, username: 'admin', password: SECRET } })),
      () => parse(kubeconfig({ user: { token: SECRET } }).replace('"cluster":"c"', '"cluster":"nope"')),
      () => parse(kubeconfig({ user: { token: SECRET, 'auth-provider': { name: 'oidc', config: { 'id-token': SECRET } } } })),
      () => parse(kubeconfig({ user: { 'client-certificate-data': b64(SECRET), 'client-key-data': `${SECRET}!!` } })),
      () => parse(kubeconfig({ user: { token: SECRET }, cluster: { server: `https://${SECRET}@` } })),
      () => parse(kubeconfig({ user: { token: 42 } })),
    ];
    for (const [i, fn] of cases.entries()) {
      const e = await kubeconfigError(fn);
      assert.ok(!e.message.includes(SECRET), `case ${i}: ${e.message}`);
      assert.ok(e.message.startsWith('kubeconfig /cfg/kubeconfig: '), `case ${i}: ${e.message}`);
    }
  });
});
