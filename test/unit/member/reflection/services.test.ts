// Host Services follow offloaded pods into the member, against fake host and member APIs: a Service is copied while
// it selects one of this node's delegates, follows the host, is set back when someone changes it, and goes with the
// last delegate it selects or with the host Service; a member Service clusterlet did not create is never touched.
import { describe, it, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import type { V1EndpointSlice, V1Service, V1ServiceSpec } from '@kubernetes/client-node';
import { CONFLICT_REASON } from '../../../../src/member/reflection/services.ts';
import type { ServiceWarning } from '../../../../src/provider/reflection.ts';
import type { EventSubject } from '../../../../src/kube/events.ts';
import { FakeObjects, labelled } from '../../fakes/objects.ts';
import { HOST, MNS, NS, putDelegate, startServiceNode } from '../../fakes/services.ts';
import { eventually, settle } from '../../fakes/wait.ts';

const stops: (() => void)[] = [];
afterEach(() => { for (const s of stops.splice(0).reverse()) s(); });

function service(name: string, spec: Partial<V1ServiceSpec> = {}, ns = NS): V1Service {
  return { metadata: { namespace: ns, name }, spec: {
    type: 'ClusterIP', clusterIP: '10.96.0.10', selector: { app: name }, ports: [{ name: 'http', port: 80, protocol: 'TCP', targetPort: 8080 }], ...spec,
  } };
}

/** A host and a member; the host's Services are one informer every node shares. */
function world() {
  const host = new FakeObjects();
  const member = new FakeObjects();
  const hostServices = host.informer<V1Service>('Service');
  hostServices.start();
  stops.push(() => hostServices.stop());

  /** The ServiceReflector of virtual node `nodeName`, with the Warnings it wrote. */
  function node(nodeName: string) {
    const warnings: { about: EventSubject; reason: string; message: string }[] = [];
    const warn: ServiceWarning = async (about, ev) => { warnings.push({ about, reason: ev.reason, message: ev.message }); };
    const { r, stop } = startServiceNode(member, hostServices, nodeName, { warn, conflictRecheckMs: 10 });
    stops.push(stop);
    return { r, warnings, delegate: (name: string, labels: Record<string, string>) => delegate(nodeName, name, labels) };
  }
  /** Virtual node `nodeName`'s delegate of a host pod `name` with `labels`. */
  const delegate = (nodeName: string, name: string, labels: Record<string, string>) => putDelegate(member, nodeName, name, labels);
  const copy = (name: string): V1Service | undefined => member.get<V1Service>('Service', MNS, name);
  return { host, member, node, delegate, copy };
}

describe('ServiceReflector', () => {
  it('reflects a Service into the mapped member namespace only once it selects one of this node\'s delegates', async () => {
    const { host, member, node, copy } = world();
    host.put('Service', service('web', {}));
    const a = node('vnode-a');
    a.delegate('db-0', { app: 'db' });
    await settle();
    assert.equal(copy('web'), undefined, 'no delegate selected');
    a.delegate('web-1', { app: 'web', 'pod-template-hash': 'abc' });
    await eventually('reflected', () => copy('web') !== undefined);
    const c = copy('web')!;
    assert.deepEqual(c.spec, { type: 'ClusterIP', selector: { app: 'web' }, ports: [{ name: 'http', port: 80, protocol: 'TCP', targetPort: 8080 }] });
    assert.deepEqual(c.metadata?.labels, { 'clusterlet.io/origin': HOST, 'clusterlet.io/node': 'vnode-a' });
    assert.equal(c.metadata?.annotations?.['clusterlet.io/proxy-namespace'], NS);
    assert.equal(member.get('Service', NS, 'web'), undefined, 'never in the host namespace\'s name when the mapping says otherwise');
    assert.equal(copy('db'), undefined);
  });

  it('follows the host Service\'s changes', async () => {
    const { host, node, copy } = world();
    host.put('Service', service('web'));
    node('vnode-a').delegate('web-1', { app: 'web' });
    await eventually('reflected', () => copy('web') !== undefined);
    host.put('Service', service('web', { ports: [{ name: 'http', port: 8000, protocol: 'TCP', targetPort: 8080 }], publishNotReadyAddresses: true }));
    await eventually('the port followed', () => copy('web')?.spec?.ports?.[0].port === 8000);
    assert.equal(copy('web')?.spec?.publishNotReadyAddresses, true);
  });

  it('removes the copy with the last delegate it selects, and when the delegate\'s labels stop matching', async () => {
    const { host, member, node, copy } = world();
    host.put('Service', service('web'));
    const a = node('vnode-a');
    a.delegate('web-1', { app: 'web' });
    a.delegate('web-2', { app: 'web' });
    await eventually('reflected', () => copy('web') !== undefined);
    member.drop('Pod', MNS, 'web-1');
    await settle();
    assert.ok(copy('web'), 'web-2 is still selected');
    member.drop('Pod', MNS, 'web-2');
    await eventually('removed with the last delegate', () => copy('web') === undefined);

    const d = a.delegate('web-3', { app: 'web' });
    await eventually('reflected again', () => copy('web') !== undefined);
    member.put('Pod', { ...d, metadata: { ...d.metadata, labels: { ...d.metadata!.labels, app: 'other' } } });
    await eventually('removed once the labels no longer match', () => copy('web') === undefined);
  });

  it('removes the copy when the host Service is deleted, or stops being reflectable', async () => {
    const { host, node, copy } = world();
    host.put('Service', service('web'));
    host.put('Service', service('api', { selector: { app: 'web' } }));
    node('vnode-a').delegate('web-1', { app: 'web' });
    await eventually('both reflected', () => copy('web') !== undefined && copy('api') !== undefined);
    host.drop('Service', NS, 'web');
    await eventually('removed with the host Service', () => copy('web') === undefined);
    host.put('Service', service('api', { selector: undefined }));
    await eventually('removed once it has no selector', () => copy('api') === undefined);
  });

  it('never reflects an ExternalName Service or one without a selector', async () => {
    const { host, member, node } = world();
    host.put('Service', service('alias', { type: 'ExternalName', externalName: 'db.example.com', clusterIP: undefined, selector: { app: 'web' } }));
    host.put('Service', service('manual', { selector: undefined }));
    // A positive control in the same setup: an ordinary Service of the same pods is reflected.
    host.put('Service', service('web', {}));
    node('vnode-a').delegate('web-1', { app: 'web' });
    await eventually('the control reflected', () => member.get<V1Service>('Service', MNS, 'web') !== undefined);
    await settle();
    assert.deepEqual(member.writes('create', 'Service').map((w) => w.key), [`${MNS}/web`]);
  });

  it('never touches a same-named member Service clusterlet did not create: a Warning on the host Service, once', async () => {
    const { host, member, node, copy } = world();
    member.put('Service', { metadata: { namespace: MNS, name: 'web' }, spec: { selector: { app: 'theirs' }, ports: [{ port: 5432 }] } });
    const hostSvc = host.put('Service', service('web'));
    const a = node('vnode-a');
    a.delegate('web-1', { app: 'web' });
    await eventually('the conflict reported', () => a.warnings.length > 0);
    assert.deepEqual(a.warnings, [{
      about: { apiVersion: 'v1', kind: 'Service', namespace: NS, name: 'web', uid: hostSvc.metadata!.uid },
      reason: CONFLICT_REASON,
      message: 'service m1-shop/web exists in member m1 and was not created by clusterlet; it is left untouched '
        + '(offloaded pods there reach that Service by this name)',
    }]);
    await settle(); // rechecked every 10 ms meanwhile
    assert.equal(a.warnings.length, 1, 'reported once');
    assert.deepEqual(copy('web')?.spec, { selector: { app: 'theirs' }, ports: [{ port: 5432 }] });
    assert.deepEqual(member.writes(undefined, 'Service'), [], 'neither written nor deleted');
    // The member's own Service goes: the recheck reflects the host's.
    member.drop('Service', MNS, 'web');
    await eventually('reflected once the name is free', () => copy('web')?.metadata?.labels?.['clusterlet.io/origin'] === HOST);
  });

  it('sets back a copy someone changed, and makes again one someone deleted', async () => {
    const { host, member, node, copy } = world();
    host.put('Service', service('web'));
    node('vnode-a').delegate('web-1', { app: 'web' });
    await eventually('reflected', () => copy('web') !== undefined);
    const c = copy('web')!;
    member.put('Service', { ...c, spec: { ...c.spec, selector: { app: 'hijacked' }, ports: [{ port: 1 }] } });
    await eventually('set back', () => copy('web')?.spec?.selector?.app === 'web' && copy('web')?.spec?.ports?.[0].port === 80);
    member.drop('Service', MNS, 'web');
    await eventually('made again', () => copy('web') !== undefined);
  });

  it('keeps a headless Service headless, and recreates the copy between headless and ClusterIP', async () => {
    const { host, node, copy } = world();
    host.put('Service', service('web', { clusterIP: 'None' }));
    node('vnode-a').delegate('web-0', { app: 'web' });
    await eventually('reflected headless', () => copy('web')?.spec?.clusterIP === 'None');
    const headlessUID = copy('web')!.metadata!.uid;
    // A Service's clusterIP never changes: ClusterIP again means a new copy.
    host.put('Service', service('web'));
    await eventually('recreated with a cluster IP of the member\'s', () => copy('web') !== undefined && copy('web')!.spec?.clusterIP === undefined);
    const clusterUID = copy('web')!.metadata!.uid;
    assert.notEqual(clusterUID, headlessUID);
    host.put('Service', service('web', { clusterIP: 'None' }));
    await eventually('recreated headless', () => copy('web')?.spec?.clusterIP === 'None');
    assert.notEqual(copy('web')!.metadata!.uid, clusterUID);
  });

  it('another node\'s delegates do not make this node reflect a Service', async () => {
    const { host, member, node, delegate, copy } = world();
    host.put('Service', service('web'));
    // A positive control: a Service that selects this node's own delegate is reflected in the same setup.
    host.put('Service', service('db', { selector: { app: 'db' } }));
    node('vnode-a').delegate('db-0', { app: 'db' });
    delegate('vnode-b', 'web-b', { app: 'web' });
    await eventually('the control reflected', () => copy('db') !== undefined);
    await settle();
    assert.equal(copy('web'), undefined);
    assert.deepEqual(member.writes(undefined, 'Service').map((w) => w.key), [`${MNS}/db`]);
  });

  it('a copy keeps its owner and stays while another node\'s delegate is selected; the owner removes it after the last', async () => {
    const { host, member, node, copy } = world();
    host.put('Service', service('web'));
    node('vnode-a').delegate('web-a', { app: 'web' });
    await eventually('reflected by vnode-a', () => copy('web') !== undefined);
    node('vnode-b').delegate('web-b', { app: 'web' });
    host.put('Service', service('web', { ports: [{ name: 'http', port: 81, protocol: 'TCP', targetPort: 8080 }] }));
    await eventually('kept current', () => copy('web')?.spec?.ports?.[0].port === 81);
    assert.equal(copy('web')!.metadata!.labels!['clusterlet.io/node'], 'vnode-a', 'the copy keeps its owner');
    member.drop('Pod', MNS, 'web-a');
    await settle();
    assert.ok(copy('web'), 'vnode-b\'s delegate is still selected');
    member.drop('Pod', MNS, 'web-b');
    await eventually('removed after the last delegate of the host', () => copy('web') === undefined);
    await settle();
    assert.equal(copy('web'), undefined, 'and stays away');
  });

  it('removes at start a copy of its own that selects no delegate; another node\'s copy is its business', async () => {
    const { host, member, node, copy } = world();
    host.put('Service', service('stale'));
    host.put('Service', service('others'));
    const own = (name: string, n: string): void => { member.put('Service', { metadata: { namespace: MNS, name,
      labels: { 'clusterlet.io/origin': HOST, 'clusterlet.io/node': n }, annotations: { 'clusterlet.io/proxy-namespace': NS } },
    spec: { selector: { app: name }, ports: [{ port: 80 }] } }); };
    own('stale', 'vnode-a');
    own('others', 'vnode-z');
    node('vnode-a');
    await eventually('the stale copy removed', () => copy('stale') === undefined);
    await settle();
    assert.ok(copy('others'));
  });
});

/** A host EndpointSlice of Service `service`: one endpoint per [pod name, IP]. */
function hostSlice(name: string, service: string, pods: [string, string][]): V1EndpointSlice {
  return { metadata: { namespace: NS, name, labels: { 'kubernetes.io/service-name': service } }, addressType: 'IPv4',
    ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
    endpoints: pods.map(([pod, ip]) => ({ addresses: [ip], conditions: { ready: true }, nodeName: 'kwok-1',
      targetRef: { kind: 'Pod', namespace: NS, name: pod } })) };
}

/** Reflectors with the endpoints part on (or off), over one host and one member; `podsLater`: the test starts the pods. */
function endpointsWorld(on: boolean, podsLater = false) {
  const host = new FakeObjects();
  const member = new FakeObjects();
  const hostServices = host.informer<V1Service>('Service');
  const hostSlices = host.informer<V1EndpointSlice>('EndpointSlice');
  hostServices.start();
  hostSlices.start();
  stops.push(() => { hostServices.stop(); hostSlices.stop(); });
  const copies = member.target<V1EndpointSlice>('EndpointSlice', labelled(`clusterlet.io/origin=${HOST},endpointslice.kubernetes.io/managed-by=clusterlet.io`));
  const { startPods, stop } = startServiceNode(member, hostServices, 'vnode-a', { podsLater, endpoints: on ? { hostSlices, copies } : undefined });
  stops.push(stop);
  const delegate = (nodeName: string, name: string, labels: Record<string, string>) => putDelegate(member, nodeName, name, labels);
  const sliceCopy = (hostName: string) => member.get<V1EndpointSlice>('EndpointSlice', MNS, `clusterlet-${hostName}`);
  const addresses = (hostName: string) => sliceCopy(hostName)?.endpoints?.flatMap((e) => e.addresses).sort();
  return { host, member, delegate, sliceCopy, addresses, startPods };
}

describe('ServiceReflector with the host endpoints', () => {
  it('copies the host slices of a reflected Service, without the endpoints the member lists itself (any node\'s delegates)', async () => {
    const { host, member, delegate, sliceCopy, addresses } = endpointsWorld(true);
    host.put('Service', service('web'));
    host.put('EndpointSlice', hostSlice('web-abc', 'web', [['web-1', '10.20.0.1'], ['web-2', '10.20.0.2'], ['web-h', '10.10.0.7']]));
    host.put('EndpointSlice', hostSlice('api-xyz', 'api', [['api-h', '10.10.0.9']]));
    delegate('vnode-a', 'web-1', { app: 'web' });
    delegate('vnode-b', 'web-2', { app: 'web' });
    await eventually('the slice copied', () => sliceCopy('web-abc') !== undefined);
    assert.deepEqual(addresses('web-abc'), ['10.10.0.7'], 'the delegates of this and another node left out');
    const c = sliceCopy('web-abc')!;
    assert.deepEqual(c.metadata?.labels, { 'clusterlet.io/origin': HOST, 'clusterlet.io/node': 'vnode-a',
      'kubernetes.io/service-name': 'web', 'endpointslice.kubernetes.io/managed-by': 'clusterlet.io' });
    assert.equal(c.endpoints?.[0].targetRef, undefined, 'no host pod reference');
    assert.deepEqual(c.metadata?.ownerReferences?.map((o) => [o.kind, o.name, o.uid]),
      [['Service', 'web', member.get<V1Service>('Service', MNS, 'web')!.metadata!.uid]], 'owned by the Service copy');
    await settle();
    assert.equal(member.get('EndpointSlice', MNS, 'clusterlet-api-xyz'), undefined, 'api is not reflected: no slices');
  });

  it('follows the host slice, removes the copy of a slice that went, and every copy with the Service copy', async () => {
    const { host, delegate, sliceCopy, addresses } = endpointsWorld(true);
    host.put('Service', service('web'));
    host.put('EndpointSlice', hostSlice('web-abc', 'web', [['web-h1', '10.10.0.7'], ['web-h2', '10.10.0.8']]));
    host.put('EndpointSlice', hostSlice('web-def', 'web', [['web-h3', '10.10.0.9']]));
    delegate('vnode-a', 'web-1', { app: 'web' });
    await eventually('both copied', () => sliceCopy('web-abc') !== undefined && sliceCopy('web-def') !== undefined);
    host.put('EndpointSlice', hostSlice('web-abc', 'web', [['web-h1', '10.10.0.7']]));
    await eventually('the update followed', () => JSON.stringify(addresses('web-abc')) === JSON.stringify(['10.10.0.7']));
    host.drop('EndpointSlice', NS, 'web-def');
    await eventually('the copy of the slice that went is removed', () => sliceCopy('web-def') === undefined);
    assert.ok(sliceCopy('web-abc'));
    host.drop('Service', NS, 'web');
    await eventually('every copy goes with the Service copy', () => sliceCopy('web-abc') === undefined);
  });

  it('a copy someone edits is set back', async () => {
    const { host, member, delegate, sliceCopy, addresses } = endpointsWorld(true);
    host.put('Service', service('web'));
    host.put('EndpointSlice', hostSlice('web-abc', 'web', [['web-h1', '10.10.0.7']]));
    delegate('vnode-a', 'web-1', { app: 'web' });
    await eventually('copied', () => sliceCopy('web-abc') !== undefined);
    member.put('EndpointSlice', { ...sliceCopy('web-abc')!, endpoints: [{ addresses: ['1.2.3.4'] }] });
    await eventually('set back', () => JSON.stringify(addresses('web-abc')) === JSON.stringify(['10.10.0.7']));
  });

  it('removes at start a slice copy of its own whose Service is not reflected, even when the member pods sync last', async () => {
    const { member, sliceCopy, startPods } = endpointsWorld(true, true);
    member.put('EndpointSlice', { metadata: { namespace: MNS, name: 'clusterlet-web-abc', labels: { 'clusterlet.io/origin': HOST,
      'clusterlet.io/node': 'vnode-a', 'kubernetes.io/service-name': 'web', 'endpointslice.kubernetes.io/managed-by': 'clusterlet.io' },
    annotations: { 'clusterlet.io/proxy-namespace': NS } }, addressType: 'IPv4', endpoints: [{ addresses: ['10.10.0.7'] }] });
    await settle();
    assert.ok(sliceCopy('web-abc'), 'kept while the member pods have not synced');
    startPods();
    await eventually('the stale slice copy removed', () => sliceCopy('web-abc') === undefined);
  });

  it('switch off: no slice written', async () => {
    const { host, member, delegate } = endpointsWorld(false);
    host.put('Service', service('web'));
    host.put('EndpointSlice', hostSlice('web-abc', 'web', [['web-h1', '10.10.0.7']]));
    delegate('vnode-a', 'web-1', { app: 'web' });
    await eventually('the Service reflected', () => member.get('Service', MNS, 'web') !== undefined);
    await settle();
    assert.deepEqual(member.writes(undefined, 'EndpointSlice'), []);
  });
});
