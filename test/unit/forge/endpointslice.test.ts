// Host EndpointSlices → member copies (forge/endpointslice.ts): what the member sees of a Service's host-side endpoints.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Endpoint, V1EndpointSlice } from '@kubernetes/client-node';
import {
  MANAGED_BY, MANAGED_BY_LABEL, SERVICE_NAME_LABEL, endpointSliceMatches, forgeMemberEndpointSlice, memberSliceName,
} from '../../../src/forge/endpointslice.ts';
import { HOST_ENDPOINTSLICE_ANNOTATION, NODE_LABEL, ORIGIN_LABEL, PROXY_NAMESPACE_ANNOTATION } from '../../../src/forge/keys.ts';

const owner = { hostName: 'host-uid', node: 'clusterlet-eu' };
const onVirtualNode = (e: V1Endpoint): boolean => e.targetRef?.name?.startsWith('offloaded-') ?? false;
const ctx = { owner, memberNamespace: 'shop-eu', listedByMember: onVirtualNode };

function hostSlice(endpoints: V1Endpoint[], labels: Record<string, string> = { [SERVICE_NAME_LABEL]: 'db' }): V1EndpointSlice {
  return {
    metadata: { name: 'db-x7k2p', namespace: 'shop', labels: { ...labels, [MANAGED_BY_LABEL]: 'endpointslice-controller.k8s.io' },
      uid: 'u1', resourceVersion: '42', ownerReferences: [{ apiVersion: 'v1', kind: 'Service', name: 'db', uid: 's1' }] },
    addressType: 'IPv4',
    ports: [{ name: 'pg', port: 5432, protocol: 'TCP' }],
    endpoints,
  };
}

const onHost: V1Endpoint = {
  addresses: ['10.244.1.7'], conditions: { ready: true, serving: true, terminating: false }, hostname: 'db-0',
  nodeName: 'host-node-1', zone: 'zone-a', targetRef: { kind: 'Pod', namespace: 'shop', name: 'db-0', uid: 'p1' },
};
const offloaded: V1Endpoint = { addresses: ['10.0.3.9'], conditions: { ready: true }, nodeName: 'clusterlet-eu',
  targetRef: { kind: 'Pod', namespace: 'shop', name: 'offloaded-1', uid: 'p2' } };

describe('forgeMemberEndpointSlice', () => {
  it('copies the host endpoints into the mapped namespace, managed by clusterlet and owned by (host, node)', () => {
    const s = forgeMemberEndpointSlice(hostSlice([onHost]), ctx)!;
    assert.deepEqual(s.metadata, {
      name: 'clusterlet-db-x7k2p', namespace: 'shop-eu',
      labels: { [ORIGIN_LABEL]: 'host-uid', [NODE_LABEL]: 'clusterlet-eu', [SERVICE_NAME_LABEL]: 'db', [MANAGED_BY_LABEL]: MANAGED_BY },
      annotations: { [PROXY_NAMESPACE_ANNOTATION]: 'shop', [HOST_ENDPOINTSLICE_ANNOTATION]: 'db-x7k2p' },
    });
    assert.equal(s.addressType, 'IPv4');
    assert.deepEqual(s.ports, [{ name: 'pg', port: 5432, protocol: 'TCP' }]);
    // The host's node and pod references mean nothing in the member; hostname (per-pod DNS) and zone stay.
    assert.deepEqual(s.endpoints, [{ addresses: ['10.244.1.7'], conditions: { ready: true, serving: true, terminating: false },
      hostname: 'db-0', zone: 'zone-a' }]);
  });

  it('leaves out the endpoints the member lists itself (its own delegates)', () => {
    assert.deepEqual(forgeMemberEndpointSlice(hostSlice([onHost, offloaded]), ctx)!.endpoints!.map((e) => e.addresses[0]), ['10.244.1.7']);
    assert.deepEqual(forgeMemberEndpointSlice(hostSlice([offloaded]), ctx)!.endpoints, []);
  });

  it('a slice of no Service is not copied', () => {
    assert.equal(forgeMemberEndpointSlice(hostSlice([onHost], {}), ctx), undefined);
  });

  it('names stay within the API limit', () => {
    assert.equal(memberSliceName('x'.repeat(253)).length, 253);
  });
});

describe('endpointSliceMatches', () => {
  const desired = forgeMemberEndpointSlice(hostSlice([onHost]), ctx)!;
  const cases: [string, (s: V1EndpointSlice) => void, boolean][] = [
    ['the same, with server fields', (s) => { s.metadata!.resourceVersion = '7'; s.metadata!.labels!.extra = 'x'; }, true],
    ['an address changed', (s) => { s.endpoints![0].addresses = ['10.244.1.8']; }, false],
    ['readiness changed', (s) => { s.endpoints![0].conditions!.ready = false; }, false],
    ['a port changed', (s) => { s.ports![0].port = 5433; }, false],
    ['an endpoint more', (s) => { s.endpoints!.push({ addresses: ['10.244.2.2'] }); }, false],
    ['our label gone', (s) => { delete s.metadata!.labels![MANAGED_BY_LABEL]; }, false],
  ];
  for (const [name, change, want] of cases) {
    it(`${name} → ${want}`, () => {
      const actual = structuredClone(desired);
      change(actual);
      assert.equal(endpointSliceMatches(desired, actual), want);
    });
  }
  it('a protocol left out matches the TCP the server defaults it to', () => {
    const unset = structuredClone(desired);
    unset.ports![0].protocol = undefined;
    assert.equal(endpointSliceMatches(unset, desired), true);
  });
});
