import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { GROUPS, queryOf, route, verbOf } from '../../../src/kube/client.ts';

const H = 'https://h';

type Case = [method: string, path: string, verb: string];

function check(cases: Case[]): void {
  for (const [method, path, verb] of cases) {
    assert.equal(verbOf(method, H + path), verb, `${method} ${path}`);
  }
}

describe('verbOf', () => {
  it('labels core namespaced resources', () => {
    check([
      ['GET', '/api/v1/namespaces/ns/pods', 'list'],
      ['GET', '/api/v1/namespaces/ns/pods?labelSelector=a%3Db&limit=500', 'list'],
      ['GET', '/api/v1/namespaces/ns/pods?watch=true&resourceVersion=12', 'watch'],
      ['GET', '/api/v1/namespaces/ns/pods/p', 'get'],
      ['POST', '/api/v1/namespaces/ns/pods', 'create'],
      ['PUT', '/api/v1/namespaces/ns/pods/p', 'update'],
      ['PATCH', '/api/v1/namespaces/ns/pods/p', 'patch'],
      ['DELETE', '/api/v1/namespaces/ns/pods/p', 'delete'],
      ['DELETE', '/api/v1/namespaces/ns/pods?labelSelector=a%3Db', 'deletecollection'],
    ]);
  });

  it('labels core cluster-scoped resources', () => {
    check([
      ['GET', '/api/v1/nodes', 'list'],
      ['GET', '/api/v1/nodes?watch=true', 'watch'],
      ['GET', '/api/v1/nodes/n', 'get'],
      ['POST', '/api/v1/nodes', 'create'],
      ['PUT', '/api/v1/nodes/n', 'update'],
      ['PATCH', '/api/v1/nodes/n', 'patch'],
      ['DELETE', '/api/v1/nodes/n', 'delete'],
      ['DELETE', '/api/v1/nodes', 'deletecollection'],
    ]);
  });

  it('labels cluster-wide lists and watches of namespaced resources', () => {
    check([
      ['GET', '/api/v1/pods', 'list'],
      ['GET', '/api/v1/pods?watch=true', 'watch'],
      ['GET', '/api/v1/pods?labelSelector=clusterlet.io%2Forigin%3Dhost&watch=true&allowWatchBookmarks=true', 'watch'],
    ]);
    assert.equal(verbOf('GET', 'https://h/api/v1/pods?watch=true'), 'watch');
  });

  it('labels namespaces themselves', () => {
    check([
      ['GET', '/api/v1/namespaces', 'list'],
      ['GET', '/api/v1/namespaces?watch=true', 'watch'],
      ['GET', '/api/v1/namespaces/ns', 'get'],
      ['POST', '/api/v1/namespaces', 'create'],
      ['PUT', '/api/v1/namespaces/ns', 'update'],
      ['PATCH', '/api/v1/namespaces/ns', 'patch'],
      ['DELETE', '/api/v1/namespaces/ns', 'delete'],
    ]);
  });

  it('labels group APIs, namespaced and cluster-scoped', () => {
    check([
      ['GET', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases', 'list'],
      ['GET', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases?watch=true', 'watch'],
      ['GET', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/clusterlet-m1', 'get'],
      ['POST', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases', 'create'],
      ['PUT', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/clusterlet-m1', 'update'],
      ['PATCH', '/apis/apps/v1/namespaces/ns/deployments/d', 'patch'],
      ['DELETE', '/apis/apps/v1/namespaces/ns/deployments/d', 'delete'],
      ['DELETE', '/apis/apps/v1/namespaces/ns/deployments', 'deletecollection'],
      ['POST', '/apis/events.k8s.io/v1/namespaces/default/events', 'create'],
      ['GET', '/apis/events.k8s.io/v1/events', 'list'],
      ['GET', '/apis/rbac.authorization.k8s.io/v1/clusterroles', 'list'],
      ['GET', '/apis/rbac.authorization.k8s.io/v1/clusterroles?watch=true', 'watch'],
      ['GET', '/apis/rbac.authorization.k8s.io/v1/clusterroles/admin', 'get'],
      ['DELETE', '/apis/rbac.authorization.k8s.io/v1/clusterroles/admin', 'delete'],
      ['DELETE', '/apis/rbac.authorization.k8s.io/v1/clusterroles', 'deletecollection'],
      ['GET', '/apis/discovery.k8s.io/v1/endpointslices', 'list'],
    ]);
  });

  it('labels subresources of namespaced objects', () => {
    check([
      ['GET', '/api/v1/namespaces/ns/pods/p/status', 'get'],
      ['PATCH', '/api/v1/namespaces/ns/pods/p/status', 'patch'],
      ['PUT', '/api/v1/namespaces/ns/pods/p/status', 'update'],
      ['GET', '/api/v1/namespaces/ns/pods/p/log?container=c&follow=true', 'get'],
      ['POST', '/api/v1/namespaces/ns/pods/p/eviction', 'create'],
      ['POST', '/api/v1/namespaces/ns/pods/p/binding', 'create'],
      ['GET', '/apis/apps/v1/namespaces/ns/deployments/d/scale', 'get'],
      ['PATCH', '/apis/apps/v1/namespaces/ns/deployments/d/scale', 'patch'],
    ]);
  });

  it('labels subresources of cluster-scoped objects', () => {
    check([
      ['GET', '/api/v1/nodes/n/status', 'get'],
      ['PATCH', '/api/v1/nodes/n/status', 'patch'],
      ['PUT', '/api/v1/nodes/n/status', 'update'],
      ['GET', '/api/v1/nodes/n/proxy/metrics', 'get'],
      ['PUT', '/api/v1/namespaces/ns/finalize', 'update'],
      ['PATCH', '/api/v1/namespaces/ns/status', 'patch'],
      ['GET', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/x.example.com/status', 'get'],
    ]);
  });

  // A three-segment path under /namespaces/<name>/ is a namespaced collection, except a Namespace's own subresources.
  it('labels subresources of a Namespace object', () => {
      check([
        ['GET', '/api/v1/namespaces/ns/status', 'get'],
        ['GET', '/api/v1/namespaces/ns/finalize', 'get'],
      ]);
    });

  it('accepts any method case', () => {
    check([
      ['get', '/api/v1/nodes/n', 'get'],
      ['post', '/api/v1/nodes', 'create'],
      ['patch', '/api/v1/nodes/n/status', 'patch'],
      ['delete', '/api/v1/nodes', 'deletecollection'],
    ]);
  });

  it('does not take watch=false for a watch', () => {
    check([['GET', '/api/v1/pods?watch=false', 'list']]);
  });

  it('ignores the host and port', () => {
    assert.equal(verbOf('GET', 'https://h:6443/api/v1/namespaces/ns/pods/p'), 'get');
  });
});

describe('route', () => {
  const cases: [keyof typeof GROUPS, string, Record<string, unknown>, string][] = [
    ['core', 'createNamespacedPod', { namespace: 'ns', body: {} }, 'POST /api/v1/namespaces/ns/pods'],
    ['core', 'readNamespacedPod', { namespace: 'ns', name: 'p' }, 'GET /api/v1/namespaces/ns/pods/p'],
    ['core', 'patchNamespacedPodStatus', { namespace: 'ns', name: 'p' }, 'PATCH /api/v1/namespaces/ns/pods/p/status'],
    ['core', 'deleteNamespacedPod', { namespace: 'ns', name: 'p' }, 'DELETE /api/v1/namespaces/ns/pods/p'],
    ['core', 'deleteCollectionNamespacedPod', { namespace: 'ns' }, 'DELETE /api/v1/namespaces/ns/pods'],
    ['core', 'listPodForAllNamespaces', {}, 'GET /api/v1/pods'],
    ['core', 'listNamespacedEvent', { namespace: 'ns' }, 'GET /api/v1/namespaces/ns/events'],
    ['core', 'createNamespacedServiceAccountToken', { namespace: 'ns', name: 'sa' }, 'POST /api/v1/namespaces/ns/serviceaccounts/sa/token'],
    ['core', 'replaceNamespacedServiceAccount', { namespace: 'ns', name: 'sa' }, 'PUT /api/v1/namespaces/ns/serviceaccounts/sa'],
    ['core', 'readNode', { name: 'n' }, 'GET /api/v1/nodes/n'],
    ['core', 'patchNodeStatus', { name: 'n' }, 'PATCH /api/v1/nodes/n/status'],
    ['core', 'deleteNamespace', { name: 'ns' }, 'DELETE /api/v1/namespaces/ns'],
    ['coordination', 'patchNamespacedLease', { namespace: 'kube-node-lease', name: 'n' }, 'PATCH /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n'],
    ['certificates', 'replaceCertificateSigningRequestApproval', { name: 'c' }, 'PUT /apis/certificates.k8s.io/v1/certificatesigningrequests/c/approval'],
    ['authentication', 'createTokenReview', { body: {} }, 'POST /apis/authentication.k8s.io/v1/tokenreviews'],
    ['authorization', 'createSubjectAccessReview', { body: {} }, 'POST /apis/authorization.k8s.io/v1/subjectaccessreviews'],
  ];
  it('maps client-node method names to HTTP method and path', () => {
    for (const [group, method, param, want] of cases) {
      const r = route(GROUPS[group], method, param);
      assert.equal(`${r.method} ${r.path}`, want, method);
    }
  });

  it('encodes names', () => {
    assert.equal(route(GROUPS.core, 'readNamespacedConfigMap', { namespace: 'ns', name: 'a/b' }).path, '/api/v1/namespaces/ns/configmaps/a%2Fb');
  });

  it('refuses a kind it does not know, rather than guessing a path', () => {
    assert.throws(() => route(GROUPS.core, 'createNamespacedDeployment', { namespace: 'ns' }), /no route for createNamespacedDeployment/);
  });
});

describe('queryOf', () => {
  it('sends every parameter but the path and body ones, continue under its wire name', () => {
    assert.equal(queryOf({ namespace: 'ns', name: 'p', body: {}, labelSelector: 'a=b', limit: 500, _continue: 'tok', watch: true, x: undefined }),
      '?labelSelector=a%3Db&limit=500&continue=tok&watch=true');
  });

  it('is empty when there is nothing to send', () => {
    assert.equal(queryOf({ namespace: 'ns', name: 'p' }), '');
  });
});
