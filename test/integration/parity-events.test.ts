// virtual-kubelet's conventions: its event reasons for a missing ConfigMap or Secret (internal/podutils/env.go) on
// the proxy's events, next to our Offloaded condition, and its /pods and /runningpods/ (node/api/server.go): host pods
// by their host name, namespace and UID; /runningpods/ the pods the back end runs, so a pod whose mandatory ConfigMap
// is missing is in /pods and not in /runningpods/ until it exists (virtual-kubelet's e2e
// TestCreatePodWithMandatoryInexistentConfigMap asserts the same of its /runningpods/).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { CoreV1Event, V1Pod } from '@kubernetes/client-node';
import { harness, namespaces, startSuiteClusterlet, type ClusterletProcess } from '../support/env.ts';
import { waitUntil } from '../support/wait.ts';
import { condition, eventSpec, podsSpec, offloadedPod as pod } from '../support/objects.ts';
import { freePort, httpsStatus, pollUntil } from '../harness/net.ts';
import type { Credentials } from '../harness/cluster.ts';
import type { ClusterClient } from '../../src/kube/client.ts';
import { toKubeError } from '../../src/kube/errors.ts';

const NODE = 'clusterlet-member';


const named = (ps: V1Pod[], name: string): V1Pod | undefined => ps.find((p) => p.metadata?.name === name);

describe('virtual-kubelet parity: event reasons, /pods and /runningpods/', () => {
  let cl: ClusterletProcess;
  let host: ClusterClient;
  let port: number;
  /** A caller the host's CA signed, in system:masters: authenticated and authorised by the host, as kubectl would be. */
  let admin: Credentials;

  before(async () => {
    port = await freePort();
    ({ host, cl } = await startSuiteClusterlet(['--kubelet-port', String(port), '--node-ip', harness().nodeAddress]));
    admin = await harness().host.clientCert('parity-admin', 'parity-admin', ['system:masters']);
  });
  after(async () => {
    await cl.stop();
    // The node stays registered with this file's port: removed, so the next file's clusterlet registers it afresh.
    await host.core.deleteNode({ name: NODE }).catch((err: unknown) => {
      if (toKubeError(err).kind !== 'NotFound') throw err;
    });
  });

  /** A PodList from the kubelet API, straight from clusterlet's port. */
  async function kubeletPods(path: '/pods' | '/runningpods/'): Promise<V1Pod[]> {
    const res = await httpsStatus(`https://${harness().nodeAddress}:${port}${path}`, admin, 10_000);
    assert.equal(res.status, 200, `GET ${path}: ${res.body}`);
    const list = JSON.parse(res.body) as { kind: string; items: V1Pod[] };
    assert.equal(list.kind, 'PodList');
    return list.items;
  }

  it('the four reasons in the four situations, on the proxy\'s events; Offloaded=False with the mandatory ones', async (t) => {
    const ns = await namespaces(t, 'vk-reasons', [host]);
    const cases = [
      { name: 'mandatory-cm', reason: 'MandatoryConfigMapNotFound', text: 'configmap "absent-cm" not found',
        body: pod('mandatory-cm', ns, {}, { envFrom: [{ configMapRef: { name: 'absent-cm' } }] }) },
      { name: 'mandatory-secret', reason: 'MandatorySecretNotFound', text: 'secret "absent-secret" not found',
        body: pod('mandatory-secret', ns, {}, { env: [{ name: 'K', valueFrom: { secretKeyRef: { name: 'absent-secret', key: 'k' } } }] }) },
      { name: 'optional-cm', reason: 'OptionalConfigMapNotFound', text: 'configmap "maybe-cm" not found',
        body: pod('optional-cm', ns, { volumes: [{ name: 'c', configMap: { name: 'maybe-cm', optional: true } }] }) },
      { name: 'optional-secret', reason: 'OptionalSecretNotFound', text: 'secret "maybe-secret" not found',
        body: pod('optional-secret', ns, {}, { envFrom: [{ secretRef: { name: 'maybe-secret', optional: true } }] }) },
    ];
    for (const c of cases) await host.core.createNamespacedPod({ namespace: ns, body: c.body });

    const matches = (e: CoreV1Event, c: typeof cases[number]): boolean => e.involvedObject?.name === c.name && e.reason === c.reason;
    const events = await waitUntil(host, eventSpec(host, ns), (es) => cases.every((c) => es.some((e) => matches(e, c))),
      60_000, 'the four reasons');
    const proxies = await waitUntil(host, podsSpec(host, ns),
      (ps) => ['optional-cm', 'optional-secret'].every((n) => named(ps, n)?.status?.phase === 'Running')
        && ['mandatory-cm', 'mandatory-secret'].every((n) => condition(named(ps, n), 'clusterlet.io/Offloaded')?.status === 'False'),
      60_000, 'optional ones Running, mandatory ones not offloaded');
    for (const c of cases) {
      const e = events.find((x) => matches(x, c))!;
      const proxy = named(proxies, c.name)!;
      assert.equal(e.type, 'Warning', `${c.name}: a Warning, as virtual-kubelet's`);
      assert.ok(e.message?.includes(c.text), `${c.name}: "${e.message}" names the object`);
      assert.equal(e.involvedObject!.uid, proxy.metadata!.uid, `${c.name}: on the proxy`);
      assert.equal(e.source?.component, 'clusterlet');
      if (c.name.startsWith('mandatory')) {
        const offloaded = condition(proxy, 'clusterlet.io/Offloaded')!;
        assert.equal(offloaded.reason, c.reason, `${c.name}: the condition keeps the reason`);
        assert.ok(offloaded.message?.includes(c.text));
        assert.equal(proxy.status?.phase, 'Pending');
        assert.equal(proxy.status?.reason, c.reason, `${c.name}: kubectl get shows it`);
      } else {
        assert.notEqual(condition(proxy, 'clusterlet.io/Offloaded')?.status, 'False', `${c.name}: offloaded`);
      }
    }
  });

  it('/pods and /runningpods/ report host pods by host name and UID; one missing its mandatory ConfigMap runs only once it exists', async (t) => {
    const ns = await namespaces(t, 'vk-running', [host]);
    await host.core.createNamespacedPod({ namespace: ns, body: pod('plain', ns) });
    await host.core.createNamespacedPod({ namespace: ns, body: pod('waiting', ns, {}, { envFrom: [{ configMapRef: { name: 'later' } }] }) });
    const proxies = await waitUntil(host, podsSpec(host, ns), (ps) => named(ps, 'plain')?.status?.phase === 'Running'
      && condition(named(ps, 'waiting'), 'clusterlet.io/Offloaded')?.reason === 'MandatoryConfigMapNotFound', 60_000, 'plain Running, waiting blocked');
    const uid = (name: string): string => named(proxies, name)!.metadata!.uid!;
    const ours = (ps: V1Pod[]): string[] => ps.filter((p) => p.metadata?.namespace === ns)
      .map((p) => `${p.metadata!.name}/${p.metadata!.uid}`).sort();

    assert.deepEqual(ours(await kubeletPods('/pods')), [`plain/${uid('plain')}`, `waiting/${uid('waiting')}`],
      '/pods: every host pod of the node, with its host UID');
    assert.deepEqual(ours(await kubeletPods('/runningpods/')), [`plain/${uid('plain')}`],
      '/runningpods/: the pods that run; not the one without a delegate, as in virtual-kubelet');

    await host.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'later' }, data: { K: 'v' } } });
    await waitUntil(host, podsSpec(host, ns), (ps) => named(ps, 'waiting')?.status?.phase === 'Running', 60_000, 'waiting Running once its ConfigMap exists');
    await pollUntil('the pod in /runningpods/ with its host UID', async () =>
      ours(await kubeletPods('/runningpods/')).includes(`waiting/${uid('waiting')}`) ? true : undefined, 15_000, 200);
  });
});
