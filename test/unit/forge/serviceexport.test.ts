import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Service } from '@kubernetes/client-node';
import { forgeServiceExport, serviceExportMatches, wantsExport } from '../../../src/forge/serviceexport.ts';

const owner = { hostName: 'host-uid', node: 'clusterlet-eu' };

/** A member copy as the member API server returns it. */
function copy(annotations: Record<string, string> | undefined, uid: string | null = 'copy-uid'): V1Service {
  return { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'eu-shop', uid: uid ?? undefined, annotations,
    labels: { 'clusterlet.io/origin': 'host-uid', 'clusterlet.io/node': 'clusterlet-eu' } } };
}

describe('forgeServiceExport', () => {
  const table: [string, V1Service, boolean][] = [
    ['annotated "true"', copy({ 'clusterlet.io/service-export': 'true', 'clusterlet.io/proxy-namespace': 'shop' }), true],
    ['not annotated', copy({ 'clusterlet.io/proxy-namespace': 'shop' }), false],
    ['no annotations at all', copy(undefined), false],
    ['annotated with another value', copy({ 'clusterlet.io/service-export': 'yes' }), false],
    ['annotated "false"', copy({ 'clusterlet.io/service-export': 'false' }), false],
    ['a copy not created yet (no UID to own it by)', copy({ 'clusterlet.io/service-export': 'true' }, null), false],
  ];
  for (const [name, svc, exported] of table) {
    it(`${name}: ${exported ? 'exported' : 'none'}`, () => {
      assert.equal(forgeServiceExport(svc, owner) !== undefined, exported);
      if (svc.metadata?.uid) assert.equal(wantsExport(svc), exported);
    });
  }

  it('same name and namespace as the copy, owned by it and by this node, naming the host namespace', () => {
    assert.deepEqual(forgeServiceExport(copy({ 'clusterlet.io/service-export': 'true', 'clusterlet.io/proxy-namespace': 'shop' }), owner), {
      apiVersion: 'multicluster.x-k8s.io/v1alpha1', kind: 'ServiceExport',
      metadata: {
        name: 'web', namespace: 'eu-shop',
        labels: { 'clusterlet.io/origin': 'host-uid', 'clusterlet.io/node': 'clusterlet-eu' },
        annotations: { 'clusterlet.io/proxy-namespace': 'shop' },
        ownerReferences: [{ apiVersion: 'v1', kind: 'Service', name: 'web', uid: 'copy-uid' }],
      },
      spec: {},
    });
  });
});

describe('serviceExportMatches', () => {
  const desired = forgeServiceExport(copy({ 'clusterlet.io/service-export': 'true', 'clusterlet.io/proxy-namespace': 'shop' }), owner)!;
  const stored = { ...desired, metadata: { ...desired.metadata, uid: 'x', resourceVersion: '3', labels: { ...desired.metadata!.labels, extra: 'a' } },
    status: { conditions: [] } };
  const table: [string, typeof desired, boolean][] = [
    ['as stored (server fields, status, someone\'s extra label)', stored, true],
    ['another node\'s', { ...stored, metadata: { ...stored.metadata, labels: { ...stored.metadata.labels, 'clusterlet.io/node': 'other' } } }, false],
    ['owned by an older copy', { ...stored, metadata: { ...stored.metadata, ownerReferences: [{ apiVersion: 'v1', kind: 'Service', name: 'web', uid: 'old' }] } }, false],
    ['without its annotation', { ...stored, metadata: { ...stored.metadata, annotations: {} } }, false],
  ];
  for (const [name, actual, matches] of table) {
    it(`${name}: ${matches ? 'matches' : 'differs'}`, () => assert.equal(serviceExportMatches(desired, actual), matches));
  }
});
