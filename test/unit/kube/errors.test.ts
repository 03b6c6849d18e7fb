import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ApiException } from '@kubernetes/client-node';
import { KubeError, ignoreNotFound, isKind, toKubeError } from '../../../src/kube/errors.ts';
import type { KubeErrorKind } from '../../../src/kube/errors.ts';

function status(code: number, reason: string, message: string): string {
  return JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code });
}

function apiError(code: number, reason: string, message: string): ApiException<string> {
  return new ApiException(code, `HTTP ${code}`, status(code, reason, message), { 'content-type': 'application/json' });
}

function connectionError(code: string): Error {
  const cause = Object.assign(new Error(`connect ${code} 127.0.0.1:6443`), { code });
  return new TypeError('fetch failed', { cause });
}

describe('toKubeError', () => {
  it('maps an ApiException with a Status body to kind, reason and message', () => {
    const err = apiError(404, 'NotFound', 'pods "p" not found');
    const k = toKubeError(err);
    assert.ok(k instanceof KubeError);
    assert.equal(k.kind, 'NotFound');
    assert.equal(k.code, 404);
    assert.equal(k.reason, 'NotFound');
    assert.equal(k.message, 'pods "p" not found');
    assert.equal(k.cause, err);
  });

  it('maps every status code it knows', () => {
    const cases: [number, string, KubeErrorKind][] = [
      [400, 'BadRequest', 'BadRequest'],
      [401, 'Unauthorized', 'Unauthorized'],
      [403, 'Forbidden', 'Forbidden'],
      [404, 'NotFound', 'NotFound'],
      [410, 'Expired', 'Gone'],
      [422, 'Invalid', 'Invalid'],
      [429, 'TooManyRequests', 'TooManyRequests'],
      [500, 'InternalError', 'Unavailable'],
      [503, 'ServiceUnavailable', 'Unavailable'],
      [504, 'Timeout', 'Unavailable'],
      [405, 'MethodNotAllowed', 'Unknown'],
      [415, 'UnsupportedMediaType', 'Unknown'],
    ];
    for (const [code, reason, kind] of cases) {
      const k = toKubeError(apiError(code, reason, 'm'));
      assert.equal(k.kind, kind, `${code} ${reason}`);
      assert.equal(k.code, code);
      assert.equal(k.reason, reason);
    }
  });

  it('tells AlreadyExists from Conflict on 409', () => {
    const exists = toKubeError(apiError(409, 'AlreadyExists', 'pods "p" already exists'));
    assert.equal(exists.kind, 'AlreadyExists');
    assert.equal(exists.message, 'pods "p" already exists');
    const conflict = toKubeError(apiError(409, 'Conflict',
      'Operation cannot be fulfilled on pods "p": the object has been modified; please apply your changes to the latest version and try again'));
    assert.equal(conflict.kind, 'Conflict');
    assert.equal(conflict.reason, 'Conflict');
    // A UID precondition failure is a 409 Conflict too.
    assert.equal(toKubeError(apiError(409, 'Conflict', 'Precondition failed: UID in precondition: a, UID in object meta: b')).kind,
      'Conflict');
  });

  it('accepts a body that is already an object', () => {
    const body = { kind: 'Status', reason: 'Forbidden', message: 'pods is forbidden: User "x" cannot list', code: 403 };
    const k = toKubeError(new ApiException(403, 'Forbidden', body, {}));
    assert.equal(k.kind, 'Forbidden');
    assert.equal(k.reason, 'Forbidden');
    assert.equal(k.message, body.message);
  });

  it('uses a body that is not JSON as the message', () => {
    const k = toKubeError(new ApiException(502, 'Bad Gateway', '<html>bad gateway</html>', {}));
    assert.equal(k.kind, 'Unavailable');
    assert.equal(k.code, 502);
    assert.equal(k.reason, '');
    assert.equal(k.message, '<html>bad gateway</html>');
  });

  it('falls back to the exception message without a body', () => {
    const err = new ApiException(500, 'Internal Server Error', undefined, {});
    const k = toKubeError(err);
    assert.equal(k.kind, 'Unavailable');
    assert.equal(k.message, err.message);
  });

  it('maps a 401 as the client raises it (no body)', () => {
    const k = toKubeError(new ApiException(401, 'Unauthorized', undefined, {}));
    assert.equal(k.kind, 'Unauthorized');
    assert.equal(k.code, 401);
    assert.equal(k.reason, '');
  });

  // A body that parses to something other than an object (JSON null) is kept as the message.
  it('maps an ApiException whose body is JSON null', () => {
    const k = toKubeError(new ApiException(500, 'x', 'null', {}));
    assert.equal(k.kind, 'Unavailable');
  });

  it('maps a connection error to Unavailable, with the cause code as reason', () => {
    const err = connectionError('ECONNREFUSED');
    const k = toKubeError(err);
    assert.equal(k.kind, 'Unavailable');
    assert.equal(k.code, 0);
    assert.equal(k.reason, 'ECONNREFUSED');
    assert.equal(k.message, 'fetch failed');
    assert.equal(k.cause, err);
    assert.equal(toKubeError(connectionError('ETIMEDOUT')).kind, 'Unavailable');
  });

  it('maps a system error carrying its own code to Unavailable', () => {
    const k = toKubeError(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }));
    assert.equal(k.kind, 'Unavailable');
    assert.equal(k.reason, 'ECONNRESET');
  });

  it('maps an object with a statusCode', () => {
    const gone = toKubeError({ statusCode: 410 });
    assert.equal(gone.kind, 'Gone');
    assert.equal(gone.code, 410);
    const notFound = toKubeError({ statusCode: 404, message: 'not found' });
    assert.equal(notFound.kind, 'NotFound');
    assert.equal(notFound.message, 'not found');
    assert.equal(toKubeError({ statusCode: 409 }).kind, 'Conflict');
    assert.equal(toKubeError({ statusCode: 503 }).kind, 'Unavailable');
  });

  it('returns a KubeError unchanged', () => {
    const k = new KubeError('Invalid', 422, 'Invalid', 'spec.containers: Required value');
    assert.equal(toKubeError(k), k);
  });

  it('maps values that are not errors', () => {
    assert.equal(toKubeError('boom').message, 'boom');
    assert.equal(toKubeError('boom').kind, 'Unavailable');
    assert.equal(toKubeError(undefined).kind, 'Unavailable');
    assert.equal(toKubeError(null).kind, 'Unavailable');
  });
});

describe('isKind', () => {
  it('matches any of the kinds given', () => {
    const err = apiError(409, 'AlreadyExists', 'exists');
    assert.equal(isKind(err, 'AlreadyExists'), true);
    assert.equal(isKind(err, 'NotFound', 'AlreadyExists'), true);
    assert.equal(isKind(err, 'Conflict'), false);
    assert.equal(isKind(connectionError('ECONNREFUSED'), 'Unavailable'), true);
  });
});

describe('ignoreNotFound', () => {
  it('resolves the value of a call that succeeds', async () => {
    assert.equal(await ignoreNotFound(async () => 42), 42);
  });

  it('resolves undefined on NotFound', async () => {
    assert.equal(await ignoreNotFound(async () => { throw apiError(404, 'NotFound', 'gone'); }), undefined);
    assert.equal(await ignoreNotFound(async () => { throw { statusCode: 404 }; }), undefined);
  });

  it('rethrows other errors as KubeError', async () => {
    await assert.rejects(ignoreNotFound(async () => { throw apiError(403, 'Forbidden', 'no'); }),
      (err: unknown) => err instanceof KubeError && err.kind === 'Forbidden' && err.message === 'no');
    await assert.rejects(ignoreNotFound(async () => { throw connectionError('ECONNREFUSED'); }),
      (err: unknown) => err instanceof KubeError && err.kind === 'Unavailable');
  });

  it('treats a Gone as an error', async () => {
    await assert.rejects(ignoreNotFound(async () => { throw { statusCode: 410 }; }),
      (err: unknown) => err instanceof KubeError && err.kind === 'Gone');
  });
});
