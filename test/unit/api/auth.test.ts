// Authentication and authorisation of kubelet API callers (src/api/auth.ts) against a fake host.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import type { V1SubjectAccessReview } from '@kubernetes/client-node';
import { Auth, bearerToken, type ReviewClient } from '../../../src/api/auth.ts';
import type { ApiError } from '../../../src/api/errors.ts';

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

  it('bearer tokens from the Authorization header', () => {
    assert.equal(bearerToken('Bearer abc.def'), 'abc.def');
    assert.equal(bearerToken('bearer  xyz '), 'xyz');
    assert.equal(bearerToken('Basic abc'), undefined);
    assert.equal(bearerToken(undefined), undefined);
  });
});
