// What the pod controller says runs (its `running()`, what /runningpods/ lists), and how a pod waiting for a missing
// mandatory ConfigMap shows on its proxy: virtual-kubelet's reason on the Warning event, the Offloaded condition and
// the pod's status reason.
import { describe, it, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { FakeHost } from '../../fakes/host.ts';
import { FakeProvider, PodRejectedError } from '../../fakes/provider.ts';
import { NODE, startController as start, stopControllers } from '../../fakes/podcontroller.ts';
import { eventually } from '../../fakes/wait.ts';

const NS = 'web';

const proxy = (name: string): V1Pod => ({
  metadata: { name, namespace: NS, uid: `host-uid-${name}` },
  spec: { nodeName: NODE, containers: [{ name: 'app', image: 'a' }] },
  status: { phase: 'Pending' },
});

afterEach(stopControllers);

describe('PodController.running and a missing mandatory ConfigMap', () => {
  it('lists the host pods whose own delegate runs, as the host has them; not one the back end has no pod for', async () => {
    const host = new FakeHost();
    const provider = new FakeProvider();
    const web = host.put(proxy('web'));
    provider.pods.set(`${NS}/web`, { proxyUID: web.metadata!.uid!, terminating: false, phase: 'Running', status: { phase: 'Running' } });
    // A delegate of an earlier pod of the same name, and one whose proxy is gone: neither is a host pod that runs.
    host.put(proxy('replaced'));
    provider.pods.set(`${NS}/replaced`, { proxyUID: 'host-uid-earlier', terminating: false, phase: 'Running', status: {} });
    provider.pods.set(`${NS}/orphan`, { proxyUID: 'host-uid-orphan', terminating: false, phase: 'Running', status: {} });
    // And one the back end refuses on every attempt (retried with backoff): it has no delegate.
    host.put(proxy('waiting'));
    provider.createErrors = Array.from({ length: 100 }, () => new PodRejectedError('MandatoryConfigMapNotFound', 'configmap "cfg" not found'));
    const c = start(host, provider);
    await eventually('waiting refused', () => provider.count('create') >= 1);
    assert.deepEqual(c.running().map((p) => [p.metadata?.namespace, p.metadata?.name, p.metadata?.uid]),
      [[NS, 'web', 'host-uid-web']]);
  });

  it('a pod rejected for a missing mandatory ConfigMap: Warning MandatoryConfigMapNotFound, Offloaded=False with it, and not running', async () => {
    const host = new FakeHost();
    const provider = new FakeProvider();
    host.put(proxy('waiting'));
    const missing = new PodRejectedError('MandatoryConfigMapNotFound', 'configmap "cfg" not found in namespace web; the pod starts once it exists');
    provider.createErrors = Array.from({ length: 100 }, () => missing);
    const c = start(host, provider);
    await eventually('the Warning event', () => [...host.events.values()]
      .some((e) => e.type === 'Warning' && e.reason === 'MandatoryConfigMapNotFound' && /configmap "cfg" not found/.test(e.message ?? '')));
    const offloaded = host.condition(NS, 'waiting', 'clusterlet.io/Offloaded');
    assert.equal(offloaded?.status, 'False');
    assert.equal(offloaded?.reason, 'MandatoryConfigMapNotFound');
    assert.equal(host.get(NS, 'waiting')!.status!.reason, 'MandatoryConfigMapNotFound', 'kubectl get shows it');
    assert.deepEqual(c.running(), []);
  });
});
