// Which host namespaces accept exports: the allow-list or the namespace's own annotation, nothing else; and the
// consent's changes as the host's namespaces change.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Namespace } from '@kubernetes/client-node';
import { HostExportConsent, exportAllowed } from '../../../../src/host/reflection/exports.ts';
import { FakeObjects } from '../../fakes/objects.ts';

const ns = (name: string, annotations?: Record<string, string>, deleting = false): V1Namespace =>
  ({ metadata: { name, annotations, ...(deleting ? { deletionTimestamp: new Date() } : {}) } });

describe('exportAllowed', () => {
  const none = new Set<string>();
  const listed = new Set(['results']);
  const cases: [string, V1Namespace | undefined, ReadonlySet<string>, boolean][] = [
    ['no annotation, empty allow-list', ns('results'), none, false],
    ['annotated "true"', ns('results', { 'clusterlet.io/accept-exports': 'true' }), none, true],
    ['annotated with another value', ns('results', { 'clusterlet.io/accept-exports': 'yes' }), none, false],
    ['annotated "false"', ns('results', { 'clusterlet.io/accept-exports': 'false' }), none, false],
    ['an unrelated annotation', ns('results', { 'clusterlet.io/export': 'true' }), none, false],
    ['in the allow-list', ns('results'), listed, true],
    ['in the allow-list, annotated "false" (the list wins)', ns('results', { 'clusterlet.io/accept-exports': 'false' }), listed, true],
    ['another namespace is in the allow-list', ns('other'), listed, false],
    ['an unknown namespace, even if listed', undefined, listed, false],
    ['a namespace being deleted', ns('results', { 'clusterlet.io/accept-exports': 'true' }, true), listed, false],
  ];
  for (const [what, namespace, allow, want] of cases) {
    it(`${want ? 'accepts' : 'refuses'}: ${what}`, () => assert.equal(exportAllowed(namespace, allow), want));
  }
});

describe('HostExportConsent', () => {
  it('reports a namespace when its consent is given or withdrawn, and nothing else', async () => {
    const host = new FakeObjects();
    host.put('Namespace', { metadata: { name: 'results' } });
    host.put('Namespace', { metadata: { name: 'listed' } });
    const consent = new HostExportConsent(host.informer('Namespace'), ['listed']);
    const changes: string[] = [];
    consent.changes$.subscribe((n) => changes.push(n));
    consent.start();
    await consent.waitSynced();
    assert.deepEqual(changes.splice(0), ['listed'], 'the first list gives the allow-listed namespace');
    assert.equal(consent.accepts('results'), false);
    assert.equal(consent.accepts('listed'), true);
    host.put('Namespace', { metadata: { name: 'results', labels: { a: 'b' } } });
    host.put('Namespace', { metadata: { name: 'results', annotations: { 'clusterlet.io/accept-exports': 'true' } } });
    assert.equal(consent.accepts('results'), true);
    host.put('Namespace', { metadata: { name: 'listed', labels: { a: 'b' } } });
    host.drop('Namespace', '', 'results');
    assert.equal(consent.accepts('results'), false);
    assert.deepEqual(changes, ['results', 'results'], 'given, then gone: a label changes nothing');
    consent.stop();
  });
});
