import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { namespaceGone } from '../../../src/member/pod/namespaces.ts';
import { KubeError } from '../../../src/kube/errors.ts';

describe('namespaceGone', () => {
  const forbidden = (m: string): KubeError => new KubeError('Forbidden', 403, 'Forbidden', m);
  const cases: [string, KubeError, boolean][] = [
    ['the member terminating this namespace', forbidden('pods "a" is forbidden: unable to create new content in namespace shop because it is being terminated'), true],
    ['the namespace not found', new KubeError('NotFound', 404, 'NotFound', 'namespaces "shop" not found'), true],
    ['another namespace terminating', forbidden('pods "a" is forbidden: unable to create new content in namespace shopping because it is being terminated'), false],
    ['a webhook\'s refusal that says "terminated"', forbidden('admission webhook "x" denied the request: because it is being terminated'), false],
    ['a pod not found', new KubeError('NotFound', 404, 'NotFound', 'pods "shop" not found'), false],
  ];
  for (const [what, err, gone] of cases) it(`${what}: ${gone}`, () => assert.equal(namespaceGone(err, 'shop'), gone));
});
