// `kubectl debug` on an offloaded pod, as a user runs it against the host: the ephemeral container the host API
// server adds to the proxy is added to the delegate in the member (same image and target), its status comes back
// into the proxy's ephemeralContainerStatuses, and `kubectl attach` reaches it through the kubelet API.
// The member's KWOK gives ephemeral containers a running status (test/harness/kwok/stages.yaml) and serves attach
// from files (test/harness/kwok-api.ts).
import { describe, it, before, after, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { appendFile, writeFile } from 'node:fs/promises';
import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import { harness, namespaces, startKubeletApiClusterlet, stopAndForgetNode, type ClusterletProcess } from '../support/env.ts';
import { kubectl } from '../support/kubectl.ts';
import { waitUntil } from '../support/wait.ts';
import { podSpec, podsSpec } from '../support/objects.ts';
import { pollUntil } from '../harness/net.ts';
import type { ClusterClient } from '../../src/kube/client.ts';

const NODE = 'clusterlet-member';

/**
 * Runs a kubectl that attaches to `container` (against the host), and writes lines to the file the member's KWOK
 * serves as its attach output (followed from its end) until kubectl shows one; resolves with kubectl's output.
 */
async function attachedOutput(args: string[], container: string): Promise<string> {
  const file = harness().member.kwok.attach(container);
  await writeFile(file, '');
  const child = spawn(harness().bin.kubectl, ['--kubeconfig', harness().host.kubeconfig, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
  child.stderr.on('data', (d: Buffer) => { out += d.toString(); });
  try {
    let n = 0;
    await pollUntil(`kubectl ${args.join(' ')} shows the container's output`, async () => {
      await appendFile(file, `${new Date().toISOString()} stdout F from ${container} ${++n}\n`);
      return new RegExp(`from ${container} \\d+\n`).test(out) ? true : undefined;
    }, 30_000, 300);
  } finally {
    child.kill();
  }
  return out;
}

const runningStatusOf = (pod: V1Pod | undefined, name: string): V1ContainerStatus | undefined =>
  pod?.status?.ephemeralContainerStatuses?.find((s) => s.name === name && s.state?.running);

describe('kubectl debug (ephemeral containers)', () => {
  let cl: ClusterletProcess;
  let host: ClusterClient;
  let member: ClusterClient;

  // The host API server reaches the kubelet API (attach) at the node's address.
  before(async () => {
    ({ host, member, cl } = await startKubeletApiClusterlet());
  });
  after(() => stopAndForgetNode(cl, host, NODE));

  /** A namespace with pod `target` offloaded, Running on the host and in the member. */
  async function runningOffloadedPod(t: TestContext): Promise<string> {
    const ns = await namespaces(t, 'debug', [host]);
    await host.core.createNamespacedPod({ namespace: ns, body: podSpec('target', {
      namespace: ns, tolerate: true, nodeSelector: { 'kubernetes.io/hostname': NODE } }) });
    await waitUntil(host, podsSpec(host, ns), (ps) => ps[0]?.status?.phase === 'Running', 60_000, 'target Running');
    await waitUntil(member, podsSpec(member, ns), (ps) => ps[0]?.status?.phase === 'Running', 30_000, 'delegate Running');
    return ns;
  }

  async function podsOf(c: ClusterClient, ns: string): Promise<V1Pod[]> {
    return (await c.core.listNamespacedPod({ namespace: ns })).items;
  }

  it('adds the ephemeral container to the delegate, shows its status on the proxy, and attaches to it', async (t) => {
    const ns = await runningOffloadedPod(t);
    const [before] = await podsOf(member, ns);
    await kubectl(harness().host, 'debug', 'target', '--image=busybox', '--target=main', '-n', ns);
    const proxy = await host.core.readNamespacedPod({ namespace: ns, name: 'target' });
    const [added] = proxy.spec!.ephemeralContainers ?? [];
    assert.ok(added, 'kubectl debug added an ephemeral container to the proxy');
    assert.equal(added.targetContainerName, 'main');

    const [delegate] = await waitUntil(member, podsSpec(member, ns),
      (ps) => ps[0]?.spec?.ephemeralContainers?.some((c) => c.name === added.name) ?? false, 30_000, 'the ephemeral container in the delegate');
    const inMember = delegate.spec!.ephemeralContainers!.find((c) => c.name === added.name)!;
    assert.deepEqual({ image: inMember.image, target: inMember.targetContainerName, stdin: inMember.stdin, tty: inMember.tty },
      { image: 'busybox', target: 'main', stdin: added.stdin, tty: added.tty }, 'the same container, targeting the same name');
    assert.equal(delegate.metadata!.uid, before.metadata!.uid, 'added to the running delegate, not a new one');

    const [debugged] = await waitUntil(host, podsSpec(host, ns), (ps) => runningStatusOf(ps[0], added.name!) !== undefined,
      30_000, 'the ephemeral container running on the proxy');
    assert.equal(runningStatusOf(debugged, added.name!)?.image, 'busybox');
    assert.equal(debugged.status?.phase, 'Running');

    // kubectl attach: host API server → the virtual node's kubelet API → the member's attach of the delegate.
    const out = await attachedOutput(['attach', '-n', ns, 'target', '-c', added.name!], added.name!);
    assert.doesNotMatch(out, /error|not valid/i);
  });

  it('kubectl debug -i waits until the debugger runs, then attaches to it; a second debugger joins the first', async (t) => {
    const ns = await runningOffloadedPod(t);
    await kubectl(harness().host, 'debug', 'target', '--image=busybox', '--target=main', '-n', ns, '-c', 'first');
    // -i: kubectl waits for the container's running status on the proxy (it would wait forever without one).
    const out = await attachedOutput(['debug', 'target', '--image=busybox', '--target=main', '-n', ns, '-c', 'second', '-i'], 'second');
    assert.doesNotMatch(out, /error/i);
    const [delegate] = await podsOf(member, ns);
    assert.deepEqual(delegate.spec?.ephemeralContainers?.map((c) => c.name), ['first', 'second']);
    const [proxy] = await podsOf(host, ns);
    assert.deepEqual(['first', 'second'].map((name) => runningStatusOf(proxy, name)?.name), ['first', 'second']);
  });
});
