// Member → host exports: the ExportReflector against fake member and host APIs, with the host's consent read from
// the fake host's namespaces.
import { describe, it, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { ExportReflector } from '../../../../src/member/reflection/export.ts';
import { HostExportConsent } from '../../../../src/host/reflection/exports.ts';
import { createLogger } from '../../../../src/log.ts';
import { FakeObjects, labelled } from '../../fakes/objects.ts';
import { eventually, settle } from '../../fakes/wait.ts';

const HOST = 'host-1';
const NS = 'results';
const ACCEPT = { 'clusterlet.io/accept-exports': 'true' };


const stops: (() => void)[] = [];
afterEach(() => { for (const s of stops.splice(0)) s(); });

/** A member "m1" with an offloaded namespace, its host namespace (annotated as given), and the exporter between. */
function exports(opts: { allow?: string[]; annotations?: Record<string, string> } = {}) {
  const host = new FakeObjects();
  const member = new FakeObjects();
  host.put('Namespace', { metadata: { name: NS, annotations: opts.annotations } });
  member.put('Namespace', { metadata: { name: NS, labels: { 'clusterlet.io/origin': HOST },
    annotations: { 'clusterlet.io/proxy-namespace': NS } } });
  const consent = new HostExportConsent(host.informer('Namespace'), opts.allow ?? []);
  const exported = labelled('clusterlet.io/export=true,!clusterlet.io/origin');
  const copies = labelled('clusterlet.io/member=m1');
  const exporter = new ExportReflector('m1', {
    sources: { ConfigMap: member.informer('ConfigMap', exported), Secret: member.informer('Secret', exported) },
    targets: { ConfigMap: host.target('ConfigMap', copies), Secret: host.target('Secret', copies) },
    namespaces: member.informer('Namespace', labelled(`clusterlet.io/origin=${HOST}`)),
  }, consent, createLogger('silent'));
  consent.start();
  exporter.start();
  stops.push(() => { exporter.stop(); consent.stop(); });
  const exportedCM = (name: string, data: Record<string, string>): V1ConfigMap =>
    member.put('ConfigMap', { metadata: { namespace: NS, name, labels: { 'clusterlet.io/export': 'true', app: 'x' } }, data });
  const onHost = (name: string): V1ConfigMap | undefined => host.get<V1ConfigMap>('ConfigMap', NS, name);
  return { host, member, exportedCM, onHost };
}

describe('ExportReflector', () => {
  it('exports only with the host namespace\'s consent, and removes the copy when consent is withdrawn', async () => {
    const { host, member, exportedCM, onHost } = exports();
    exportedCM('result', { answer: '42' });
    await settle();
    assert.equal(onHost('result'), undefined, 'no consent, no copy');
    host.put('Namespace', { metadata: { name: NS, annotations: ACCEPT } });
    await eventually('exported once the namespace accepts', () => onHost('result')?.data?.answer === '42');
    const copy = onHost('result')!;
    assert.deepEqual(copy.metadata?.labels, { app: 'x', 'clusterlet.io/member': 'm1' });
    assert.equal(copy.metadata?.annotations?.['clusterlet.io/exported-from'], `m1/${NS}`);
    host.put('Namespace', { metadata: { name: NS } });
    await eventually('removed once consent is withdrawn', () => onHost('result') === undefined);
    assert.ok(member.get('ConfigMap', NS, 'result'), 'the member object stays');
  });

  it('follows updates, and removes the copy when the member object goes', async () => {
    const { member, exportedCM, onHost } = exports({ allow: [NS] });
    exportedCM('result', { answer: '42' });
    await eventually('exported (allow-list)', () => onHost('result')?.data?.answer === '42');
    exportedCM('result', { answer: '43' });
    await eventually('update followed', () => onHost('result')?.data?.answer === '43');
    member.drop('ConfigMap', NS, 'result');
    await eventually('deletion followed', () => onHost('result') === undefined);
  });

  it('sets back a host copy someone changed', async () => {
    const { host, exportedCM, onHost } = exports({ annotations: ACCEPT });
    exportedCM('result', { answer: '42' });
    await eventually('exported', () => onHost('result') !== undefined);
    host.put('ConfigMap', { ...onHost('result'), data: { answer: 'tampered' } });
    await eventually('set back', () => onHost('result')?.data?.answer === '42');
  });

  it('never touches a host object of that name that clusterlet did not create, nor exports unlabelled objects', async () => {
    const { host, member, exportedCM, onHost } = exports({ annotations: ACCEPT });
    host.put('ConfigMap', { metadata: { namespace: NS, name: 'taken' }, data: { owner: 'host-team' } });
    exportedCM('taken', { owner: 'member' });
    member.put('ConfigMap', { metadata: { namespace: NS, name: 'private' }, data: {} });
    exportedCM('result', { answer: '42' });
    await eventually('the positive control exported', () => onHost('result') !== undefined);
    await settle();
    assert.deepEqual(onHost('taken')?.data, { owner: 'host-team' });
    assert.equal(onHost('private'), undefined);
    member.drop('ConfigMap', NS, 'taken');
    await settle();
    assert.deepEqual(onHost('taken')?.data, { owner: 'host-team' }, 'not removed with the member object either');
    assert.deepEqual(host.writes().map((w) => `${w.verb} ${w.key}`), [`create ${NS}/result`]);
  });
});
