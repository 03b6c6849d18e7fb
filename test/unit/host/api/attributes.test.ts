// Request → authorisation attributes, as the kubelet's auth filter maps them (pkg/kubelet/server/auth.go).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { requestAttributes, verbOf } from '../../../../src/host/api/attributes.ts';

describe('kubelet API authorisation attributes', () => {
  const cases: [string, string, string, string[]][] = [
    ['GET', '/stats/summary', 'get', ['stats']],
    ['POST', '/stats/summary', 'create', ['stats']],
    ['GET', '/stats', 'get', ['stats']],
    ['GET', '/statistics', 'get', ['proxy']],
    ['GET', '/metrics', 'get', ['metrics']],
    ['GET', '/metrics/resource', 'get', ['metrics']],
    ['GET', '/metrics/cadvisor', 'get', ['metrics']],
    ['GET', '/logs/', 'get', ['log']],
    ['GET', '/logs/syslog', 'get', ['log']],
    ['GET', '/containerLogs/ns/pod/c', 'get', ['proxy']],
    ['POST', '/exec/ns/pod/c', 'create', ['proxy']],
    ['GET', '/exec/ns/pod/c', 'get', ['proxy']],
    ['POST', '/portForward/ns/pod', 'create', ['proxy']],
    ['GET', '/pods', 'get', ['pods', 'proxy']],
    ['GET', '/pods/', 'get', ['pods', 'proxy']],
    ['GET', '/podsx', 'get', ['proxy']],
    ['GET', '/runningpods/', 'get', ['pods', 'proxy']],
    ['GET', '/healthz', 'get', ['healthz', 'proxy']],
    ['GET', '/configz', 'get', ['configz', 'proxy']],
    ['GET', '/checkpoint/ns/pod/c', 'get', ['checkpoint']],
    ['PUT', '/anything', 'update', ['proxy']],
    ['PATCH', '/anything', 'patch', ['proxy']],
    ['DELETE', '/anything', 'delete', ['proxy']],
    ['HEAD', '/pods', '', ['pods', 'proxy']],
  ];
  for (const [method, path, verb, subresources] of cases) {
    it(`${method} ${path} → ${verb || '(no verb)'} nodes/${subresources.join('|')}`, () => {
      assert.deepEqual(requestAttributes(method, path), { verb, subresources });
    });
  }

  it('verbs: only the five the kubelet knows', () => {
    assert.equal(verbOf('get'), 'get');
    assert.equal(verbOf('OPTIONS'), '');
    assert.equal(verbOf(undefined), '');
  });
});
