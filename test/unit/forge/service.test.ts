import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Service, V1ServiceSpec } from '@kubernetes/client-node';
import {
  forgeMemberService, isHeadless, memberServiceMatches, needsRecreate, reflectable, selects,
} from '../../../src/forge/service.ts';

const ctx = { hostName: 'host-uid', nodeName: 'clusterlet-eu', memberNamespace: 'eu-shop', hostNamespace: 'shop' };

/** A host Service as the host API server returns it (defaults filled in, clusterIP allocated). */
function hostService(spec: Partial<V1ServiceSpec>, meta: V1Service['metadata'] = {}): V1Service {
  return {
    apiVersion: 'v1', kind: 'Service',
    metadata: { name: 'web', namespace: 'shop', uid: 'svc-uid', resourceVersion: '42', ...meta },
    spec: {
      type: 'ClusterIP', clusterIP: '10.96.0.17', clusterIPs: ['10.96.0.17'], ipFamilies: ['IPv4'], ipFamilyPolicy: 'SingleStack',
      internalTrafficPolicy: 'Cluster', sessionAffinity: 'None', selector: { app: 'web' },
      ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080 }], ...spec,
    },
    status: { loadBalancer: {} },
  };
}

/** The copy as the member API server returns it: its own clusterIP and families, defaults filled in. */
function asStored(copy: V1Service, clusterIP = '10.20.0.9'): V1Service {
  const spec = copy.spec!;
  return {
    ...copy,
    metadata: { ...copy.metadata, uid: 'copy-uid', resourceVersion: '7' },
    spec: {
      ...spec, clusterIP: spec.clusterIP ?? clusterIP, clusterIPs: [spec.clusterIP ?? clusterIP], ipFamilies: ['IPv4'],
      ipFamilyPolicy: 'SingleStack', internalTrafficPolicy: 'Cluster', sessionAffinity: spec.sessionAffinity ?? 'None',
      ports: spec.ports?.map((p) => ({ protocol: 'TCP', targetPort: p.port, ...p })),
    },
  };
}

describe('forgeMemberService', () => {
  it('same name in the member namespace, owned, with the user\'s labels and annotations but not kubectl\'s last-applied', () => {
    const copy = forgeMemberService(hostService({}, { labels: { team: 'a' }, annotations: {
      note: 'x', 'kubectl.kubernetes.io/last-applied-configuration': '{"big":"json"}' } }), ctx);
    assert.deepEqual(copy.metadata, {
      name: 'web', namespace: 'eu-shop',
      labels: { team: 'a', 'clusterlet.io/origin': 'host-uid', 'clusterlet.io/node': 'clusterlet-eu' },
      annotations: { note: 'x', 'clusterlet.io/proxy-namespace': 'shop' },
    });
  });

  const cases: [string, Partial<V1ServiceSpec>, V1ServiceSpec][] = [
    ['ClusterIP: ports and selector, never the host\'s clusterIP or IP families', {},
      { type: 'ClusterIP', selector: { app: 'web' }, ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080 }], sessionAffinity: 'None' }],
    ['headless stays headless', { clusterIP: 'None', clusterIPs: ['None'] },
      { type: 'ClusterIP', clusterIP: 'None', selector: { app: 'web' }, ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080 }], sessionAffinity: 'None' }],
    ['NodePort becomes ClusterIP, without its nodePorts or traffic policy',
      { type: 'NodePort', externalTrafficPolicy: 'Local', ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 'http', nodePort: 30080 }] },
      { type: 'ClusterIP', selector: { app: 'web' }, ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 'http' }], sessionAffinity: 'None' }],
    ['LoadBalancer becomes ClusterIP, without its load-balancer settings or external IPs',
      { type: 'LoadBalancer', loadBalancerClass: 'x', loadBalancerSourceRanges: ['10.0.0.0/8'], externalIPs: ['1.2.3.4'],
        allocateLoadBalancerNodePorts: true, healthCheckNodePort: 31000, ports: [{ port: 443, protocol: 'TCP', targetPort: 8443, nodePort: 30443, appProtocol: 'https' }] },
      { type: 'ClusterIP', selector: { app: 'web' }, ports: [{ protocol: 'TCP', port: 443, targetPort: 8443, appProtocol: 'https' }], sessionAffinity: 'None' }],
    ['publishNotReadyAddresses and ClientIP session affinity with its timeout',
      { publishNotReadyAddresses: true, sessionAffinity: 'ClientIP', sessionAffinityConfig: { clientIP: { timeoutSeconds: 600 } } },
      { type: 'ClusterIP', selector: { app: 'web' }, ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080 }],
        publishNotReadyAddresses: true, sessionAffinity: 'ClientIP', sessionAffinityConfig: { clientIP: { timeoutSeconds: 600 } } }],
  ];
  for (const [name, spec, want] of cases) {
    it(name, () => {
      const copy = forgeMemberService(hostService(spec), ctx);
      assert.deepEqual(copy.spec, want);
      assert.equal(copy.status, undefined);
    });
  }
});

describe('which host Services are reflected, and which delegates they select', () => {
  const reflected: [string, Partial<V1ServiceSpec>, boolean][] = [
    ['a ClusterIP Service with a selector', {}, true],
    ['a headless one', { clusterIP: 'None' }, true],
    ['a LoadBalancer', { type: 'LoadBalancer' }, true],
    ['no selector (endpoints written by hand)', { selector: undefined }, false],
    ['an empty selector', { selector: {} }, false],
    ['ExternalName', { type: 'ExternalName', externalName: 'db.example.com', clusterIP: undefined }, false],
  ];
  for (const [name, spec, want] of reflected) it(`${name}: ${want}`, () => assert.equal(reflectable(hostService(spec)), want));

  const selecting: [string, Record<string, string> | undefined, Record<string, string>, boolean][] = [
    ['every term matches', { app: 'web', tier: 'fe' }, { app: 'web', tier: 'fe', 'pod-template-hash': 'x' }, true],
    ['one term differs', { app: 'web', tier: 'fe' }, { app: 'web', tier: 'be' }, false],
    ['a term missing', { app: 'web', tier: 'fe' }, { app: 'web' }, false],
    ['a term on clusterlet\'s own keys', { 'clusterlet.io/node': 'clusterlet-eu' }, { 'clusterlet.io/node': 'clusterlet-eu' }, false],
    ['an empty selector', {}, { app: 'web' }, false],
    ['no selector', undefined, { app: 'web' }, false],
  ];
  for (const [name, selector, labels, want] of selecting) it(`selects: ${name}: ${want}`, () => assert.equal(selects(selector, labels), want));
});

describe('memberServiceMatches and needsRecreate', () => {
  const desired = forgeMemberService(hostService({ sessionAffinity: 'ClientIP', sessionAffinityConfig: { clientIP: { timeoutSeconds: 10800 } } }), ctx);

  it('a stored copy matches what it was made from, whatever the member filled in', () => {
    assert.ok(memberServiceMatches(desired, asStored(desired)));
    const bare = forgeMemberService({ metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [{ port: 80 }] } }, ctx);
    assert.ok(memberServiceMatches(bare, asStored(bare)), 'defaults (TCP, targetPort = port, affinity None) are no difference');
    const affinity = forgeMemberService(hostService({ sessionAffinity: 'ClientIP' }), ctx);
    const stored = asStored(affinity);
    stored.spec!.sessionAffinityConfig = { clientIP: { timeoutSeconds: 10800 } };
    assert.ok(memberServiceMatches(affinity, stored), 'the default affinity timeout is no difference');
  });

  const changed: [string, (s: V1Service) => void][] = [
    ['a port changed', (s) => { s.spec!.ports![0].port = 81; }],
    ['a target port changed', (s) => { s.spec!.ports![0].targetPort = 9090; }],
    ['a port added', (s) => { s.spec!.ports!.push({ name: 'metrics', port: 9100, protocol: 'TCP', targetPort: 9100 }); }],
    ['the selector changed', (s) => { s.spec!.selector = { app: 'other' }; }],
    ['the type changed (by someone)', (s) => { s.spec!.type = 'NodePort'; }],
    ['headless', (s) => { s.spec!.clusterIP = 'None'; }],
    ['publishNotReadyAddresses', (s) => { s.spec!.publishNotReadyAddresses = true; }],
    ['the affinity timeout', (s) => { s.spec!.sessionAffinityConfig = { clientIP: { timeoutSeconds: 60 } }; }],
    ['a label', (s) => { s.metadata!.labels = { ...s.metadata!.labels, team: 'b' }; }],
    ['an annotation', (s) => { s.metadata!.annotations = { ...s.metadata!.annotations, note: 'y' }; }],
  ];
  for (const [name, change] of changed) {
    it(`does not match: ${name}`, () => {
      const actual = asStored(desired);
      change(actual);
      assert.equal(memberServiceMatches(desired, actual), false);
    });
  }

  it('recreated only between headless and ClusterIP, both ways', () => {
    const headless = forgeMemberService(hostService({ clusterIP: 'None' }), ctx);
    assert.ok(isHeadless(headless));
    assert.equal(needsRecreate(desired, asStored(headless)), true);
    assert.equal(needsRecreate(headless, asStored(desired)), true);
    assert.equal(needsRecreate(headless, asStored(headless)), false);
    const ported = forgeMemberService(hostService({ ports: [{ port: 81, protocol: 'TCP', targetPort: 8081 }] }), ctx);
    assert.equal(needsRecreate(ported, asStored(desired)), false, 'a port change is an update');
  });
});
