import { after, before, describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import type { V1Secret } from '@kubernetes/client-node';
import { AccessWatcher, fileSource, followMemberAccess, type AccessHandlers } from '../../../src/member/credentials.ts';
import { secretSource, type SecretReader } from '../../../src/host/credentials.ts';
import type { AccessSource } from '../../../src/provider/access.ts';
import { ClusterClient } from '../../../src/kube/client.ts';
import { loadKubeconfigFile, type ClusterAccess } from '../../../src/kube/kubeconfig.ts';

let dir: string;
before(() => { dir = mkdtempSync(join(tmpdir(), 'clusterlet-credentials-')); });
after(() => rmSync(dir, { recursive: true, force: true }));

const sub = () => mkdtempSync(join(dir, 't'));

function kubeconfig(token: string, cluster: Record<string, unknown> = {}): string {
  return JSON.stringify({
    apiVersion: 'v1', kind: 'Config', 'current-context': 'c',
    clusters: [{ name: 'c', cluster: { server: 'https://127.0.0.1:6443', ...cluster } }],
    users: [{ name: 'u', user: { token } }], contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }],
  });
}

/** Handlers that record what the watcher reports; `next(kind)` resolves at the next report of that kind. */
function recorder() {
  const seen = { changed: [] as ClusterAccess[], failed: [] as Error[], unwatched: [] as Error[] };
  const waiting: { kind: keyof typeof seen; resolve: () => void }[] = [];
  const report = (kind: keyof typeof seen) => {
    for (const w of waiting.filter((x) => x.kind === kind)) { waiting.splice(waiting.indexOf(w), 1); w.resolve(); }
  };
  const handlers: AccessHandlers = {
    changed: (a) => { seen.changed.push(a); report('changed'); },
    failed: (e) => { seen.failed.push(e); report('failed'); },
    unwatched: (e) => { seen.unwatched.push(e); report('unwatched'); },
  };
  const next = (kind: keyof typeof seen) => new Promise<void>((resolve) => waiting.push({ kind, resolve }));
  return { seen, handlers, next };
}

const token = async (a: ClusterAccess) => (await a.credentials()).token;

// File events drive these tests: the periodic read is set far beyond the test timeout.
const EVENTS_ONLY = { intervalMs: 3_600_000, settleMs: 50 };

/** A started watcher on a kubeconfig file (with `token`) in a directory of its own, stopped after the test. */
function watchFile(t: TestContext, token: string) {
  const file = join(sub(), 'member.kubeconfig');
  writeFileSync(file, kubeconfig(token));
  const r = recorder();
  const w = new AccessWatcher(fileSource(file), loadKubeconfigFile(file), r.handlers, EVENTS_ONLY).start();
  t.after(() => w.stop());
  return { file, w, ...r };
}

describe('AccessWatcher on a kubeconfig file', { timeout: 10_000 }, () => {
  it('a rewritten file: changed with the new access', async (t) => {
    const { file, ...r } = watchFile(t, 'old');
    const changed = r.next('changed');
    writeFileSync(file, kubeconfig('new'));
    await changed;
    assert.equal(r.seen.changed.length, 1);
    assert.equal(await token(r.seen.changed[0]), 'new');
    assert.deepEqual(r.seen.failed, []);
  });

  it('an unparsable rewrite: reported once with the file and field, the old access kept; a good one then taken', async (t) => {
    const { file, w, ...r } = watchFile(t, 'old');
    const failed = r.next('failed');
    writeFileSync(file, kubeconfig('new', { server: 'ftp://example' }));
    await failed;
    assert.match(r.seen.failed[0].message, new RegExp(`kubeconfig ${file}: clusters\\[0\\]\\.cluster\\.server: not a valid http\\(s\\) URL`));
    assert.doesNotMatch(r.seen.failed[0].message, /new/, 'no token in the message');
    await w.check();
    assert.equal(r.seen.failed.length, 1, 'the same problem is reported once');
    assert.deepEqual(r.seen.changed, [], 'nothing to change to');

    const changed = r.next('changed');
    writeFileSync(file, kubeconfig('fixed'));
    await changed;
    assert.equal(await token(r.seen.changed[0]), 'fixed');
  });

  it('the same content written again, or a missing file, changes nothing', async () => {
    const file = join(sub(), 'member.kubeconfig');
    writeFileSync(file, kubeconfig('same'));
    const r = recorder();
    const w = new AccessWatcher(fileSource(file), loadKubeconfigFile(file), r.handlers);
    writeFileSync(file, kubeconfig('same'));
    await w.check();
    assert.deepEqual(r.seen.changed, []);
    rmSync(file);
    await w.check();
    assert.deepEqual(r.seen.changed, []);
    assert.match(r.seen.failed[0].message, /file not readable \(ENOENT\)/);
  });

  it('a Secret volume update (the ..data symlink swapped) is seen', async (t) => {
    const d = sub();
    const version = (name: string, tok: string) => {
      mkdirSync(join(d, name));
      writeFileSync(join(d, name, 'member.kubeconfig'), kubeconfig(tok));
    };
    version('..2026_11_22_1', 'v1');
    symlinkSync('..2026_11_22_1', join(d, '..data'));
    symlinkSync('..data/member.kubeconfig', join(d, 'member.kubeconfig'));
    const file = join(d, 'member.kubeconfig');
    const r = recorder();
    const w = new AccessWatcher(fileSource(file), loadKubeconfigFile(file), r.handlers, EVENTS_ONLY).start();
    t.after(() => w.stop());
    const changed = r.next('changed');
    // As the kubelet's atomic writer does it.
    version('..2026_11_22_2', 'v2');
    symlinkSync('..2026_11_22_2', join(d, '..data_tmp'));
    renameSync(join(d, '..data_tmp'), join(d, '..data'));
    await changed;
    assert.equal(await token(r.seen.changed[0]), 'v2');
  });

  it('a changed CA file the kubeconfig names is seen by the periodic read', async () => {
    const d = sub();
    const file = join(d, 'member.kubeconfig');
    writeFileSync(join(d, 'ca.crt'), 'first CA');
    writeFileSync(file, kubeconfig('t', { 'certificate-authority': 'ca.crt' }));
    const r = recorder();
    const w = new AccessWatcher(fileSource(file), loadKubeconfigFile(file), r.handlers);
    await w.check();
    assert.equal(r.seen.changed.length, 0);
    writeFileSync(join(d, 'ca.crt'), 'second CA');
    await w.check();
    assert.equal(r.seen.changed.length, 1);
    assert.equal(r.seen.changed[0].ca?.toString(), 'second CA');
  });

  it('a directory that cannot be watched is reported; reads go on', async (t) => {
    const file = join(dir, 'no-such-dir', 'member.kubeconfig');
    const r = recorder();
    const source: AccessSource = { ...fileSource(file), read: async () => { throw new Error('unused'); } };
    const w = new AccessWatcher(source, { digest: 'x' } as ClusterAccess, r.handlers, EVENTS_ONLY).start();
    t.after(() => w.stop());
    assert.match(r.seen.unwatched[0]?.message ?? '', /cannot watch .*no-such-dir \(.*ENOENT.*\); reading .* every 3600 s instead/);
  });
});

describe('AccessWatcher on a host Secret', () => {
  function host(secret: () => V1Secret): SecretReader {
    return { core: { readNamespacedSecret: async () => secret() } };
  }
  const ref = { namespace: 'clusterlet', name: 'eu-1', key: 'kubeconfig' };
  const data = (text: string) => ({ kubeconfig: Buffer.from(text).toString('base64') });

  it('a changed Secret: changed; a Secret without the key: reported with the Secret, the old access kept', async () => {
    let secret: V1Secret = { data: data(kubeconfig('one')) };
    const source = secretSource(host(() => secret), ref);
    const r = recorder();
    const w = new AccessWatcher(source, await source.read(), r.handlers);
    await w.check();
    assert.deepEqual(r.seen.changed, []);
    secret = { data: data(kubeconfig('two')) };
    await w.check();
    assert.equal(await token(r.seen.changed[0]), 'two');
    secret = { data: {} };
    await w.check();
    assert.equal(r.seen.failed[0].message, 'Secret clusterlet/eu-1 has no key "kubeconfig"');
    secret = { data: data(kubeconfig('three', { server: 42 })) };
    await w.check();
    assert.equal(r.seen.failed[1].message,
      'kubeconfig Secret clusterlet/eu-1 key kubeconfig: clusters[0].cluster.server: must be a string, not number');
    assert.equal(r.seen.changed.length, 1);
  });
});

describe('followMemberAccess', { timeout: 10_000 }, () => {
  it("moves the member's client to the new access, and logs a kubeconfig it cannot use with its source", async (t) => {
    const file = join(sub(), 'member.kubeconfig');
    writeFileSync(file, kubeconfig('old'));
    const lines: { msg: string; source?: string; err?: string }[] = [];
    const log = pino({ level: 'info' }, new Writable({ write(chunk: Buffer, _enc, done) { lines.push(JSON.parse(chunk.toString())); done(); } }));
    const client = new ClusterClient(loadKubeconfigFile(file), { cluster: 'm', qps: 10, burst: 10 });
    const w = followMemberAccess(fileSource(file), client, log, EVENTS_ONLY);
    t.after(() => w.stop());

    writeFileSync(file, kubeconfig('new', { server: 'https://10.0.0.1:6443' }));
    await w.check();
    assert.equal(client.server, 'https://10.0.0.1:6443');
    assert.equal(await token(client.access), 'new');

    writeFileSync(file, 'users: [');
    await w.check();
    assert.equal(client.server, 'https://10.0.0.1:6443', 'old access kept');
    const err = lines.find((l) => l.msg.includes('cannot be used'));
    assert.equal(err?.source, file);
    assert.match(err?.err ?? '', /not valid YAML/);
  });
});
