// Authentication and authorisation of kubelet API callers (src/host/api/auth.ts) against a fake host.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import type { V1SubjectAccessReview } from '@kubernetes/client-node';
import { Auth, bearerToken, webSocketProtocolToken, type ClientCABundle, type ReviewClient } from '../../../../src/host/api/auth.ts';
import type { ApiError } from '../../../../src/host/api/errors.ts';
import { makeCA, signCert } from '../../../harness/pki.ts';

const hasOpenssl = ((): boolean => { try { execFileSync('openssl', ['version']); return true; } catch { return false; } })();

function fakeHost(allowed: (spec: NonNullable<V1SubjectAccessReview['spec']>) => boolean) {
  const calls = { tokens: 0, reviews: [] as string[] };
  const client: ReviewClient = {
    async tokenReview(token) {
      calls.tokens++;
      if (token === 'boom') throw new Error('host down');
      return { spec: { token }, status: token === 'good' ? { authenticated: true, user: { username: 'alice', groups: ['devs'] } } : { authenticated: false } };
    },
    async subjectAccessReview(r) {
      const a = r.spec!.resourceAttributes!;
      calls.reviews.push(`${r.spec!.user} ${a.verb} ${a.resource}/${a.subresource} ${a.name}`);
      return { ...r, status: { allowed: allowed(r.spec!) } };
    },
  };
  return { client, calls };
}

const req = (headers: Record<string, string>): IncomingMessage => ({ headers, socket: {} } as unknown as IncomingMessage);

/**
 * A request on a TLS connection whose client presented `certFile`; `authorized` is what the handshake
 * concluded (with Node's default roots it can be true for a certificate of any CA the process trusts).
 */
function tlsReq(certFile: string, authorized: boolean, headers: Record<string, string> = {}): IncomingMessage {
  const x = new X509Certificate(readFileSync(certFile));
  const subject = Object.fromEntries(x.subject.split('\n').map((kv) => kv.split('=') as [string, string]));
  const socket: Partial<TLSSocket> = {
    authorized, authorizationError: authorized ? undefined : new Error('UNABLE_TO_VERIFY_LEAF_SIGNATURE'),
    getPeerX509Certificate: () => x,
    getPeerCertificate: (() => ({ subject })) as TLSSocket['getPeerCertificate'],
  };
  return { headers, socket } as unknown as IncomingMessage;
}
const statusOf = async (p: Promise<unknown>): Promise<number> => p.then(() => 200, (err: ApiError) => err.status);

describe('kubelet API auth', () => {
  it('no credentials, an unknown token or a failing review → 401; a known token → the user (cached)', async () => {
    const { client, calls } = fakeHost(() => true);
    const auth = new Auth(client);
    assert.equal(await statusOf(auth.authenticate(req({}))), 401);
    assert.equal(await statusOf(auth.authenticate(req({ authorization: 'Bearer bad' }))), 401);
    assert.equal(await statusOf(auth.authenticate(req({ authorization: 'Bearer boom' }))), 401);
    assert.deepEqual(await auth.authenticate(req({ authorization: 'Bearer good' })), { username: 'alice', uid: undefined, groups: ['devs'], extra: undefined });
    await auth.authenticate(req({ authorization: 'Bearer good' }));
    assert.equal(calls.tokens, 3, 'the second "good" came from the cache');
  });

  it('a WebSocket\'s token as a subprotocol (base64url.bearer.authorization.k8s.io.<token>), taken out once it authenticates', async () => {
    const { client } = fakeHost(() => true);
    const auth = new Auth(client);
    const carrying = (token: string, others = ', v5.channel.k8s.io'): IncomingMessage => req({ upgrade: 'websocket',
      'sec-websocket-protocol': `base64url.bearer.authorization.k8s.io.${Buffer.from(token).toString('base64url')}${others}` });
    const ok = carrying('good');
    assert.equal((await auth.authenticate(ok)).username, 'alice');
    assert.equal(ok.headers['sec-websocket-protocol'], 'v5.channel.k8s.io', 'the token is not offered on to negotiation');
    const bad = carrying('bad');
    assert.equal(await statusOf(auth.authenticate(bad)), 401);
    assert.match(bad.headers['sec-websocket-protocol'] as string, /bearer/, 'left as it was');
    assert.equal(await statusOf(auth.authenticate(carrying('good', ''))), 401, 'the only subprotocol: none would be left to answer');
    assert.equal(webSocketProtocolToken(carrying('good', '')).refused, 'missing additional subprotocol');
    assert.equal(webSocketProtocolToken(req({ upgrade: 'websocket', 'sec-websocket-protocol': 'base64url.bearer.authorization.k8s.io.a=b, x' })).refused,
      'invalid base64.bearer.authorization token encoding');
    assert.equal(webSocketProtocolToken(req({ upgrade: 'websocket', 'sec-websocket-protocol':
      'base64url.bearer.authorization.k8s.io.Zw, base64url.bearer.authorization.k8s.io.Zw, x' })).refused, 'multiple base64.bearer.authorization tokens specified');
    assert.deepEqual(webSocketProtocolToken(req({ 'sec-websocket-protocol': 'base64url.bearer.authorization.k8s.io.Z29vZA, x' })), { others: [] },
      'only WebSocket handshakes carry it');
  });

  it('allowed when any subresource is; 403 naming them otherwise; decisions cached', async () => {
    const { client, calls } = fakeHost((s) => s.resourceAttributes?.subresource === 'proxy' && s.user === 'alice');
    const auth = new Auth(client);
    const alice = { username: 'alice', groups: [] };
    await auth.authorize(alice, 'GET', '/pods', 'vn');
    assert.deepEqual(calls.reviews, ['alice get nodes/pods vn', 'alice get nodes/proxy vn']);
    await auth.authorize(alice, 'GET', '/pods', 'vn');
    assert.equal(calls.reviews.length, 2, 'cached');
    await assert.rejects(auth.authorize(alice, 'GET', '/stats/summary', 'vn'),
      (e: ApiError) => e.status === 403 && /Forbidden \(user=alice, verb=get, resource=nodes, subresource\(s\)=\[stats\]\)/.test(e.message));
    await assert.rejects(auth.authorize({ username: 'bob', groups: [] }, 'POST', '/exec/ns/p/c', 'vn'), (e: ApiError) => e.status === 403);
    assert.equal(calls.reviews.at(-1), 'bob create nodes/proxy vn');
    await assert.rejects(auth.authorize(alice, 'OPTIONS', '/pods', 'vn'), (e: ApiError) => e.status === 403, 'no verb, never allowed');
  });

  describe('client certificates', { skip: !hasOpenssl && 'openssl not installed' }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'clusterlet-auth-'));
    let hostCA: X509Certificate;
    let rotatedCA: X509Certificate;
    let good: string;
    let foreign: string;
    before(async () => {
      const host = await makeCA(dir, 'host');
      const rotated = await makeCA(dir, 'rotated');
      const other = await makeCA(dir, 'other');
      hostCA = new X509Certificate(readFileSync(host.cert));
      rotatedCA = new X509Certificate(readFileSync(rotated.cert));
      good = (await signCert(dir, host, { file: 'good', cn: 'kube-apiserver-kubelet-client', orgs: ['kubelet-api-admins'], usage: 'client' })).cert;
      foreign = (await signCert(dir, other, { file: 'foreign', cn: 'mallory', orgs: ['system:masters'], usage: 'client' })).cert;
    });
    after(() => rmSync(dir, { recursive: true, force: true }));
    const bundle = (...certificates: X509Certificate[]): ClientCABundle => ({ certificates });

    it('before the client CA is loaded: a certificate → 401, even one TLS accepted; a bearer token still works', async () => {
      const { client } = fakeHost(() => true);
      for (const auth of [new Auth(client, { clientCA: bundle() }), new Auth(client)]) {
        for (const cert of [good, foreign]) {
          await assert.rejects(auth.authenticate(tlsReq(cert, true)),
            (e: ApiError) => e.status === 401 && /not accepted until the client CA is loaded/.test(e.message));
        }
        assert.equal((await auth.authenticate(tlsReq(foreign, true, { authorization: 'Bearer good' }))).username, 'alice');
        assert.equal((await auth.authenticate(req({ authorization: 'Bearer good' }))).username, 'alice');
      }
    });

    it('a certificate of an unrelated CA → 401, whatever the handshake said', async () => {
      const auth = new Auth(fakeHost(() => true).client, { clientCA: bundle(hostCA) });
      await assert.rejects(auth.authenticate(tlsReq(foreign, false)),
        (e: ApiError) => e.status === 401 && /not verified by the client CA \(.*UNABLE_TO_VERIFY_LEAF_SIGNATURE/.test(e.message));
      await assert.rejects(auth.authenticate(tlsReq(foreign, true)),
        (e: ApiError) => e.status === 401 && /not verified by the current client CA/.test(e.message));
    });

    it('a certificate the client CA signed → its CN and O (plus system:authenticated); refused once a rotation drops that CA', async () => {
      const ca = { certificates: [hostCA] };
      const auth = new Auth(fakeHost(() => true).client, { clientCA: ca });
      assert.deepEqual(await auth.authenticate(tlsReq(good, true)),
        { username: 'kube-apiserver-kubelet-client', groups: ['kubelet-api-admins', 'system:authenticated'] });
      await assert.rejects(auth.authenticate(tlsReq(good, false)), (e: ApiError) => e.status === 401, 'TLS did not verify it');
      ca.certificates = [rotatedCA, hostCA];
      assert.equal((await auth.authenticate(tlsReq(good, true))).username, 'kube-apiserver-kubelet-client', 'a bundle with both during the rotation');
      ca.certificates = [rotatedCA];
      await assert.rejects(auth.authenticate(tlsReq(good, true)),
        (e: ApiError) => e.status === 401 && /not verified by the current client CA/.test(e.message), 'a connection made before the rotation');
    });
  });

  it('bearer tokens from the Authorization header', () => {
    assert.equal(bearerToken('Bearer abc.def'), 'abc.def');
    assert.equal(bearerToken('bearer  xyz '), 'xyz');
    assert.equal(bearerToken('Basic abc'), undefined);
    assert.equal(bearerToken(undefined), undefined);
  });
});
