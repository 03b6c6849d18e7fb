// The kubelet API server's TLS with its client CA and authentication (src/host/api/server.ts, tls.ts ClientCA,
// auth.ts), over real connections: a client certificate counts only once the client CA is loaded, only if that
// CA (as it is now) signed it, and never because Node trusts its issuer by default.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { getCACertificates, setDefaultCACertificates } from 'node:tls';
import { pino } from 'pino';
import { NO_CA_HOST, NO_CSR_HOST } from '../../fakes/hostapi.ts';
import { Auth, type ReviewClient } from '../../../../src/host/api/auth.ts';
import type { VirtualNode } from '../../../../src/host/api/nodes.ts';
import { KubeletServer } from '../../../../src/host/api/server.ts';
import { ClientCA, ServingCertificate } from '../../../../src/host/api/tls.ts';
import { makeCA, signCert, type KeyPair } from '../../../harness/pki.ts';
import { freePort, pollUntil } from '../../../harness/net.ts';

const hasOpenssl = ((): boolean => { try { execFileSync('openssl', ['version']); return true; } catch { return false; } })();
const log = pino({ level: 'silent' });

/** An intermediate CA signed by `ca`, in `dir/<name>-ca.{crt,key}`. */
async function intermediateCA(dir: string, ca: KeyPair, name: string): Promise<KeyPair> {
  const run = promisify(execFile);
  const [key, csr, cert, ext] = ['key', 'csr', 'crt', 'ext'].map((e) => join(dir, `${name}-ca.${e}`));
  await run('openssl', ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', key]);
  await run('openssl', ['req', '-new', '-key', key, '-out', csr, '-subj', `/CN=${name}-ca`]);
  await run('sh', ['-c', `printf 'basicConstraints=critical,CA:TRUE\\nkeyUsage=critical,keyCertSign,cRLSign\\n' > ${ext}`]);
  await run('openssl', ['x509', '-req', '-in', csr, '-CA', ca.cert, '-CAkey', ca.key, '-set_serial', '0x1234', '-days', '30', '-out', cert, '-extfile', ext]);
  return { cert, key };
}

describe('kubelet API server: client certificates', { skip: !hasOpenssl && 'openssl not installed' }, () => {
  const defaultRoots = getCACertificates('default');
  const users: string[] = [];
  const reviews: ReviewClient = {
    async tokenReview(token) {
      return { spec: { token }, status: token.startsWith('good') ? { authenticated: true, user: { username: token, groups: [] } } : { authenticated: false } };
    },
    async subjectAccessReview(r) {
      users.push(r.spec!.user!);
      return { ...r, status: { allowed: true } };
    },
  };
  let dir: string;
  let caFile: string;
  let port: number;
  let serving: ServingCertificate;
  let clientCA: ClientCA;
  let server: KubeletServer;
  const ca: Record<'host' | 'rotated' | 'foreign', KeyPair> = {} as never;
  const cert: Record<'good' | 'chained' | 'next' | 'foreign', { cert: string; key: string }> = {} as never;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'clusterlet-server-'));
    ca.host = await makeCA(dir, 'host');
    ca.rotated = await makeCA(dir, 'rotated');
    ca.foreign = await makeCA(dir, 'foreign');
    const inter = await intermediateCA(dir, ca.host, 'inter');
    const pem = async (p: KeyPair, chain: string[] = []): Promise<{ cert: string; key: string }> => ({
      cert: (await Promise.all([p.cert, ...chain].map((f) => readFile(f, 'utf8')))).join(''), key: await readFile(p.key, 'utf8'),
    });
    cert.good = await pem(await signCert(dir, ca.host, { file: 'good', cn: 'apiserver-client', orgs: ['kubelet-api'], usage: 'client' }));
    cert.chained = await pem(await signCert(dir, inter, { file: 'chained', cn: 'via-intermediate', usage: 'client' }), [inter.cert]);
    cert.next = await pem(await signCert(dir, ca.rotated, { file: 'next', cn: 'after-rotation', usage: 'client' }));
    cert.foreign = await pem(await signCert(dir, ca.foreign, { file: 'foreign', cn: 'mallory', orgs: ['system:masters'], usage: 'client' }));
    // The foreign CA stands for any CA Node trusts by default (Mozilla's roots, NODE_EXTRA_CA_CERTS, the system store).
    setDefaultCACertificates([...defaultRoots, await readFile(ca.foreign.cert, 'utf8')]);

    serving = new ServingCertificate({ mode: 'self-signed', nodeNames: ['vn'], nodeIP: '127.0.0.1', host: NO_CSR_HOST, log });
    await serving.start();
    caFile = join(dir, 'client-ca.crt');
    clientCA = new ClientCA({ file: caFile, host: NO_CA_HOST, log, refreshMs: 50 });
    await clientCA.start();
    port = await freePort();
    const node = { name: 'vn', port } as VirtualNode;
    server = new KubeletServer({ ports: [port], address: '127.0.0.1', dir: { nodes: () => [node] }, serving, clientCA,
      auth: new Auth(reviews, { clientCA }), log });
    server.start();
    await pollUntil('the kubelet API listening', async () => server.listening || undefined, 5000, 20);
  });
  after(async () => {
    server.stop();
    clientCA.stop();
    serving.stop();
    setDefaultCACertificates(defaultRoots);
    await rm(dir, { recursive: true, force: true });
  });

  /**
   * GET /healthz, on a new connection unless `agent` (keep-alive) has one open; the status, and the user the
   * request was authorised as (each name once: later decisions come from the cache).
   */
  function get(creds: { cert?: { cert: string; key: string }; token?: string }, agent?: Agent):
    Promise<{ status: number; user?: string; reused?: boolean }> {
    const before = users.length;
    return new Promise((resolve, reject) => {
      const req = request({
        host: '127.0.0.1', port, path: '/healthz', agent: agent ?? false, rejectUnauthorized: false, ...creds.cert,
        headers: creds.token ? { Authorization: `Bearer ${creds.token}` } : {},
      }, (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, user: users.length > before ? users.at(-1) : undefined,
          ...(agent ? { reused: req.reusedSocket } : {}) }));
      });
      req.on('error', reject);
      req.end();
    });
  }

  /** Writes the bundle of `cas` as the client CA file and waits until the server uses it. */
  async function installCA(...cas: KeyPair[]): Promise<void> {
    const changed = new Promise<void>((resolve) => clientCA.onChange(() => resolve()));
    await writeFile(caFile, (await Promise.all(cas.map((c) => readFile(c.cert, 'utf8')))).join(''));
    await changed;
  }

  /** A keep-alive agent (one connection at a time), destroyed when the suite ends. */
  const agents: Agent[] = [];
  const keepAlive = (): Agent => { const a = new Agent({ keepAlive: true, maxSockets: 1 }); agents.push(a); return a; };
  after(() => { for (const a of agents) a.destroy(); });
  /** Opened before the client CA is loaded, used again after. */
  let early: Agent;

  it('before the client CA is loaded: every certificate → 401 (even one Node trusts by default), a bearer token → 200', async () => {
    assert.equal(clientCA.current, undefined);
    assert.deepEqual(await get({ cert: cert.foreign }), { status: 401, user: undefined });
    assert.deepEqual(await get({ cert: cert.good }), { status: 401, user: undefined });
    assert.deepEqual(await get({}), { status: 401, user: undefined });
    assert.deepEqual(await get({ token: 'good' }), { status: 200, user: 'good' });
    assert.deepEqual(await get({ cert: cert.foreign, token: 'good-too' }), { status: 200, user: 'good-too' }, 'the token, not the certificate');
    early = keepAlive();
    assert.deepEqual(await get({ cert: cert.good }, early), { status: 401, user: undefined, reused: false });
  });

  it('once loaded: the CA\'s certificates → authenticated (directly or through an intermediate); an unrelated CA\'s → 401', { timeout: 10_000 }, async () => {
    await installCA(ca.host);
    assert.deepEqual(await get({ cert: cert.good }), { status: 200, user: 'apiserver-client' });
    assert.deepEqual(await get({ cert: cert.chained }), { status: 200, user: 'via-intermediate' });
    assert.deepEqual(await get({ cert: cert.foreign }), { status: 401, user: undefined });
    assert.deepEqual(await get({ cert: cert.next }), { status: 401, user: undefined });
    // A connection made before: its handshake had no CA to verify with, so it is refused once more and closed.
    assert.deepEqual(await get({ cert: cert.good }, early), { status: 401, user: undefined, reused: true });
    assert.deepEqual(await get({ cert: cert.good }, early), { status: 200, user: undefined, reused: false }, 'on a new connection');
  });

  it('a rotated client CA is used without a restart, also on connections made before', { timeout: 10_000 }, async () => {
    const [direct, chained] = [keepAlive(), keepAlive()];
    assert.equal((await get({ cert: cert.good }, direct)).status, 200);
    assert.equal((await get({ cert: cert.chained }, chained)).status, 200);

    // During the rotation the bundle holds both CAs.
    await installCA(ca.rotated, ca.host);
    assert.deepEqual(await get({ cert: cert.next }), { status: 200, user: 'after-rotation' });
    assert.deepEqual(await get({ cert: cert.good }, direct), { status: 200, user: undefined, reused: true }, 'its CA is still in the bundle');
    // Node does not show the server the intermediate a client sent: such a certificate needs a handshake with the new bundle.
    assert.deepEqual(await get({ cert: cert.chained }, chained), { status: 401, user: undefined, reused: true }, 'through an intermediate');
    assert.deepEqual(await get({ cert: cert.chained }, chained), { status: 200, user: undefined, reused: false }, 'the same on a new connection');

    await installCA(ca.rotated);
    assert.deepEqual(await get({ cert: cert.good }, direct), { status: 401, user: undefined, reused: true }, 'its CA left the bundle');
    assert.deepEqual(await get({ cert: cert.good }, direct), { status: 401, user: undefined, reused: false }, 'also on a new connection');
    assert.equal((await get({ cert: cert.chained })).status, 401);
    assert.equal((await get({ cert: cert.next })).status, 200);
    assert.equal((await get({ cert: cert.foreign })).status, 401);
  });
});
