// Multi-Cluster Services export against fake host and member APIs: the ServiceReflector copies a host Service, and
// where the member serves the MCS API a ServiceExport sits next to the copy while the host Service is annotated
// clusterlet.io/service-export=true; nothing where the API is absent; someone else's ServiceExport is never touched.
import { describe, it, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Service } from '@kubernetes/client-node';
import { ServiceExporter, type ServiceExportApi } from '../../../../src/member/reflection/serviceexports.ts';
import type { ServiceExport } from '../../../../src/forge/serviceexport.ts';
import { FakeObjects, labelled } from '../../fakes/objects.ts';
import { HOST, MNS, NS, putDelegate, silent, startServiceNode } from '../../fakes/services.ts';
import { eventually, settle } from '../../fakes/wait.ts';

const EXPORT = 'clusterlet.io/service-export';

const stops: (() => void)[] = [];
afterEach(() => { for (const s of stops.splice(0).reverse()) s(); });

function service(name: string, annotations?: Record<string, string>): V1Service {
  return { metadata: { namespace: NS, name, annotations }, spec: { selector: { app: name }, ports: [{ name: 'http', port: 80 }] } };
}

/** A host, a member whose MCS API is served while `served.now`, and vnode-a's Service reflector and exporter. */
function world(served = { now: true }, rediscoverMs = 10) {
  const host = new FakeObjects();
  const member = new FakeObjects();
  const hostServices = host.informer<V1Service>('Service');
  hostServices.start();
  const services = startServiceNode(member, hostServices, 'vnode-a');
  let lookups = 0;
  const api: ServiceExportApi = {
    served: async () => { lookups++; return served.now; },
    target: () => member.target('ServiceExport', labelled(`clusterlet.io/origin=${HOST}`)),
  };
  const exporter = new ServiceExporter({ name: 'm1', owner: services.owner }, services.r.copies, api, silent, { rediscoverMs, conflictRecheckMs: 10 });
  exporter.start();
  stops.push(() => { exporter.stop(); services.stop(); hostServices.stop(); });
  const delegate = (name: string, labels: Record<string, string>) => putDelegate(member, 'vnode-a', name, labels);
  const copy = (name: string) => member.get<V1Service>('Service', MNS, name);
  const exported = (name: string) => member.get<ServiceExport>('ServiceExport', MNS, name);
  return { host, member, delegate, copy, exported, lookups: () => lookups };
}

describe('ServiceExporter', () => {
  it('exports the copy of an annotated Service (owned by the copy), not that of another', async () => {
    const { host, delegate, copy, exported } = world();
    host.put('Service', service('web', { [EXPORT]: 'true' }));
    host.put('Service', service('api'));
    delegate('web-1', { app: 'web' });
    delegate('api-1', { app: 'api' });
    await eventually('exported', () => exported('web') !== undefined);
    const e = exported('web')!;
    assert.equal(e.apiVersion, 'multicluster.x-k8s.io/v1alpha1');
    assert.equal(e.kind, 'ServiceExport');
    assert.deepEqual(e.metadata?.labels, { 'clusterlet.io/origin': HOST, 'clusterlet.io/node': 'vnode-a' });
    assert.equal(e.metadata?.annotations?.['clusterlet.io/proxy-namespace'], NS);
    assert.deepEqual(e.metadata?.ownerReferences?.map((o) => [o.kind, o.name, o.uid]), [['Service', 'web', copy('web')!.metadata!.uid]]);
    await eventually('api reflected', () => copy('api') !== undefined);
    await settle();
    assert.equal(exported('api'), undefined, 'not annotated: not exported');
  });

  it('removes the export when the annotation goes, and when the copy goes; sets back one someone deleted', async () => {
    const { host, member, delegate, exported } = world();
    host.put('Service', service('web', { [EXPORT]: 'true' }));
    delegate('web-1', { app: 'web' });
    await eventually('exported', () => exported('web') !== undefined);
    member.drop('ServiceExport', MNS, 'web');
    await eventually('made again', () => exported('web') !== undefined);
    host.put('Service', service('web'));
    await eventually('removed with the annotation', () => exported('web') === undefined);
    host.put('Service', service('web', { [EXPORT]: 'true' }));
    await eventually('exported again', () => exported('web') !== undefined);
    member.drop('Pod', MNS, 'web-1');
    await eventually('removed with the copy', () => exported('web') === undefined);
  });

  it('where the member does not serve the API: nothing written, looked up again, exported once it is', async () => {
    const served = { now: false };
    const { host, member, delegate, copy, exported, lookups } = world(served);
    host.put('Service', service('web', { [EXPORT]: 'true' }));
    delegate('web-1', { app: 'web' });
    await eventually('reflected', () => copy('web') !== undefined);
    await eventually('looked up again', () => lookups() >= 3);
    assert.deepEqual(member.calls.filter((c) => c.kind === 'ServiceExport'), [], 'not even read');
    served.now = true;
    await eventually('exported once the API is served', () => exported('web') !== undefined);
  });

  it('never touches a ServiceExport of that name clusterlet did not create', async () => {
    const { host, member, delegate, copy } = world();
    const theirs = member.put('ServiceExport', { apiVersion: 'multicluster.x-k8s.io/v1alpha1', kind: 'ServiceExport',
      metadata: { namespace: MNS, name: 'web', labels: { team: 'mesh' } } });
    host.put('Service', service('web', { [EXPORT]: 'true' }));
    delegate('web-1', { app: 'web' });
    await eventually('reflected', () => copy('web') !== undefined);
    await settle(); // rechecked every 10 ms meanwhile
    assert.deepEqual(member.writes(undefined, 'ServiceExport'), []);
    assert.deepEqual(member.get('ServiceExport', MNS, 'web'), theirs);
    host.put('Service', service('web'));
    await settle();
    assert.deepEqual(member.writes(undefined, 'ServiceExport'), [], 'not removed either');
  });
});
