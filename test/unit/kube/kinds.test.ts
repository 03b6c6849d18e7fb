// The table of kinds reflection reads and writes: each kind's calls send the requests client-node's typed client
// sends for them, and kinds of other groups are reached under their group version.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { KINDS } from '../../../src/kube/kinds.ts';
import { GROUPS, queryOf, route } from '../../../src/kube/client.ts';

describe('KINDS', () => {
  /** The requests a kind's calls send, through a client that only records them. */
  async function requests(kind: 'ConfigMap' | 'Secret' | 'ServiceAccount' | 'Service'): Promise<unknown[][]> {
    const sent: unknown[][] = [];
    const c = { request: async (method: string, path: string, opts?: { body?: unknown }) => { sent.push([method, path, opts?.body]); } };
    const api = KINDS[kind] as unknown as Record<'list' | 'read' | 'create' | 'replace' | 'remove', (...a: unknown[]) => Promise<unknown>>;
    await api.list(c, { labelSelector: 'a=b', resourceVersion: '5', _continue: 'x' });
    await api.read(c, 'n s', 'a/b');
    await api.create(c, 'ns', { metadata: { name: 'a' } });
    await api.replace(c, 'ns', 'a', { metadata: { name: 'a' } });
    await api.remove(c, 'ns', 'a', 'u1');
    return sent;
  }

  /** What the typed client sends for the same calls (client-node's method names). */
  function typed(kind: string): unknown[][] {
    const call = (method: string, param: Record<string, unknown>): unknown[] => {
      const r = route(GROUPS.core, method, param);
      return [r.method, r.path + queryOf(param), param.body];
    };
    return [
      call(`list${kind}ForAllNamespaces`, { labelSelector: 'a=b', resourceVersion: '5', _continue: 'x' }),
      call(`readNamespaced${kind}`, { namespace: 'n s', name: 'a/b' }),
      call(`createNamespaced${kind}`, { namespace: 'ns', body: { metadata: { name: 'a' } } }),
      call(`replaceNamespaced${kind}`, { namespace: 'ns', name: 'a', body: { metadata: { name: 'a' } } }),
      call(`deleteNamespaced${kind}`, { namespace: 'ns', name: 'a', body: { preconditions: { uid: 'u1' } } }),
    ];
  }

  it('sends for a core kind the requests the typed client sends', async () => {
    for (const kind of ['ConfigMap', 'Secret', 'ServiceAccount', 'Service'] as const) {
      assert.deepEqual(await requests(kind), typed(kind), kind);
    }
  });

  it('reaches a kind of another group under its group version', () => {
    assert.equal(KINDS.EndpointSlice.path, '/apis/discovery.k8s.io/v1/endpointslices');
    assert.equal(KINDS.ServiceExport.path, '/apis/multicluster.x-k8s.io/v1alpha1/serviceexports');
  });
});
