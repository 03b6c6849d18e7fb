import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { fromHost, hostRefOf, ownedBy, ownerLabels } from '../../../src/forge/owner.ts';

const owner = { hostName: '0b7e-uid', node: 'clusterlet-eu' };
function pod(labels: Record<string, string>, annotations: Record<string, string> = {
  'clusterlet.io/proxy-namespace': 'web', 'clusterlet.io/proxy-name': 'p' }): V1Pod {
  return { metadata: { name: 'p', namespace: 'web', labels, annotations } };
}

describe('ownership of member objects', () => {
  const cases: [string, Record<string, string>, boolean, boolean][] = [
    ['this host, this node', { ...ownerLabels(owner), 'clusterlet.io/proxy-uid': 'u1' }, true, true],
    ['this host, another node', { 'clusterlet.io/origin': owner.hostName, 'clusterlet.io/node': 'clusterlet-us', 'clusterlet.io/proxy-uid': 'u1' }, false, true],
    ['another host, the same node name', { 'clusterlet.io/origin': 'other-uid', 'clusterlet.io/node': owner.node, 'clusterlet.io/proxy-uid': 'u1' }, false, false],
    ['the old default host', { 'clusterlet.io/origin': 'host', 'clusterlet.io/node': owner.node, 'clusterlet.io/proxy-uid': 'u1' }, false, false],
    ['nobody\'s', {}, false, false],
  ];
  for (const [name, labels, owned, host] of cases) {
    it(`${name}: owned ${owned}, from this host ${host}`, () => {
      const p = pod(labels);
      assert.equal(ownedBy(p.metadata, owner), owned);
      assert.equal(fromHost(p.metadata, owner.hostName), host);
      assert.deepEqual(hostRefOf(p, owner), owned ? { namespace: 'web', name: 'p', uid: 'u1' } : undefined);
    });
  }
  it('a delegate without its proxy annotations maps to no proxy', () => {
    assert.equal(hostRefOf(pod({ ...ownerLabels(owner), 'clusterlet.io/proxy-uid': 'u1' }, {}), owner), undefined);
  });
});
