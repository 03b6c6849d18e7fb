// The kubelet API of the virtual node — logs, exec, attach, port-forward, pods and usage — reached
// through the HOST API server as a user would (kubectl), and its authentication and authorisation, also
// before its client CA is loaded.
// The member's KWOK serves its nodes' kubelet API from files and local commands (test/harness/kwok-api.ts).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { appendFile, copyFile, mkdtemp, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { connect } from 'node:net';
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { connect as tlsConnect, type PeerCertificate } from 'node:tls';
import { CertificatesV1Api, type V1CertificateSigningRequest, type V1Pod } from '@kubernetes/client-node';
import {
  client, clusterletArgs, harness, namespaces, startClusterlet, startKubeletApiClusterlet, stopAndForgetNode, type ClusterletProcess,
} from '../support/env.ts';
import { kubectl, kubectlRun, kubectlStream } from '../support/kubectl.ts';
import { grantNodesProxy, serviceAccountToken } from '../support/callers.ts';
import { attachShows, criLine } from '../support/kwok.ts';
import { waitUntil } from '../support/wait.ts';
import { podSpec, runOffloadedPod, waitVirtualNodeSchedulable } from '../support/objects.ts';
import { freePort, pollUntil } from '../harness/net.ts';
import { makeCA, signCert, type KeyPair } from '../harness/pki.ts';
import { KWOK_ECHO_PORT } from '../harness/kwok-api.ts';
import type { ClusterClient } from '../../src/kube/client.ts';
import { newServingKey, selfSignedCertificate } from '../../src/host/api/x509.ts';

const NODE = 'clusterlet-member';

/** The certificate served at ip:port, verified against `caFile` (rejects when it does not verify). */
function peerCertificate(ip: string, port: number, caFile: string): Promise<PeerCertificate> {
  return new Promise((resolve, reject) => {
    const sock = tlsConnect({ host: ip, port, ca: readFileSync(caFile), rejectUnauthorized: true, servername: '' }, () => {
      const c = sock.getPeerCertificate();
      sock.destroy();
      resolve(c);
    });
    sock.on('error', reject);
  });
}

/** A GET straight to clusterlet's kubelet port, with a bearer token or a client certificate (files or PEM). */
function httpsGet(url: string, creds: { token?: string; cert?: { cert: string; key: string }; pem?: { cert: string; key: string } }):
  Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, {
      rejectUnauthorized: false,
      headers: creds.token ? { Authorization: `Bearer ${creds.token}` } : {},
      ...(creds.cert ? { cert: readFileSync(creds.cert.cert), key: readFileSync(creds.cert.key) } : {}),
      ...(creds.pem ? { cert: creds.pem.cert, key: creds.pem.key } : {}),
      timeout: 10_000,
    }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => { body += c; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url}: timeout`)));
    req.on('error', reject);
    req.end();
  });
}

/**
 * A CA unrelated to the host, and a client certificate it signed for a would-be cluster admin (O=system:masters):
 * what a stranger could bring.
 */
async function foreignAdmin(): Promise<{ ca: KeyPair; cert: KeyPair }> {
  const dir = await mkdtemp(join(harness().dir, 'foreign-ca-'));
  const ca = await makeCA(dir, 'foreign');
  return { ca, cert: await signCert(dir, ca, { file: 'foreign-admin', cn: 'mallory', orgs: ['system:masters'], usage: 'client' }) };
}

describe('kubelet API through the host API server', () => {
  let cl: ClusterletProcess;
  let host: ClusterClient;
  let member: ClusterClient;
  let port: number;
  /** The run's test network: the API server's node proxy refuses loopback addresses. */
  let nodeIP: string;

  let startedAt: number;

  before(async () => {
    startedAt = Math.floor(Date.now() / 1000) * 1000;
    ({ host, member, cl, port, nodeIP } = await startKubeletApiClusterlet());
  });
  after(() => stopAndForgetNode(cl, host, NODE));

  async function runningPod(t: Parameters<typeof namespaces>[0], prefix: string, name: string, extra: Partial<Parameters<typeof podSpec>[1]> = {}): Promise<string> {
    const ns = await namespaces(t, prefix, [host]);
    await runOffloadedPod(host, member, ns, name, extra, NODE);
    return ns;
  }

  it('serves the certificate the host issues for its kubelet-serving CSR, once approved', async () => {
    // Until then it serves a self-signed one (the API server here does not verify kubelet certificates).
    const ours = (c: V1CertificateSigningRequest): boolean => c.spec.signerName === 'kubernetes.io/kubelet-serving'
      && new Date(c.metadata!.creationTimestamp!).getTime() >= startedAt;
    const csr = (await waitUntil(host, {
      path: '/apis/certificates.k8s.io/v1/certificatesigningrequests', model: 'V1CertificateSigningRequest', resource: 'certificatesigningrequests',
      list: (p) => harness().host.kubeConfig().makeApiClient(CertificatesV1Api).listCertificateSigningRequest(p),
    }, (cs) => cs.some(ours), 30_000, 'the kubelet-serving CSR')).find(ours)!;
    assert.deepEqual(csr.spec.usages, ['digital signature', 'server auth']);
    const request = Buffer.from(csr.spec.request, 'base64').toString();
    assert.match(request, /BEGIN CERTIFICATE REQUEST/);
    // As the cluster's approver (or an admin) would.
    await kubectl(harness().host, 'certificate', 'approve', csr.metadata!.name!);
    // Served once issued: the TLS handshake verifies with the host's CA, for the node's IP.
    const served = await pollUntil('clusterlet serving the issued certificate', async () => {
      const c = await peerCertificate(nodeIP, port, harness().host.caFile).catch(() => undefined);
      return c;
    }, 30_000, 200);
    assert.equal(served.subject.CN, `system:node:${NODE}`);
    assert.equal(served.subject.O, 'system:nodes');
    assert.match(served.subjectaltname ?? '', new RegExp(`IP Address:${nodeIP.replace(/\./g, '\\.')}`));
    assert.match(served.subjectaltname ?? '', new RegExp(`DNS:${NODE}`));
  });

  it('kubectl logs returns the delegate\'s log, with --tail, --timestamps and --since', async (t) => {
    const ns = await runningPod(t, 'kapi-logs', 'logger');
    const file = harness().member.kwok.logs('main');
    const old = new Date(Date.now() - 3600_000);
    const now = new Date();
    await writeFile(file, criLine(old, 'line 1 (an hour ago)') + criLine(old, 'line 2 (an hour ago)') + criLine(now, 'line 3 (now)'));

    const all = await kubectl(harness().host, 'logs', '-n', ns, 'logger');
    assert.equal(all, 'line 1 (an hour ago)\nline 2 (an hour ago)\nline 3 (now)\n');
    assert.equal(await kubectl(harness().host, 'logs', '-n', ns, 'logger', '--tail=1'), 'line 3 (now)\n');
    assert.equal(await kubectl(harness().host, 'logs', '-n', ns, 'logger', '--since=10m'), 'line 3 (now)\n');
    const stamped = await kubectl(harness().host, 'logs', '-n', ns, 'logger', '--timestamps', '--tail=2');
    assert.match(stamped, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z line 2 \(an hour ago\)\n\S+ line 3 \(now\)\n$/);
    assert.equal(await kubectl(harness().host, 'logs', '-n', ns, 'logger', '--limit-bytes=6'), 'line 1');
  });

  it('kubectl logs -f sees lines appended later, and stops when kubectl goes', async (t) => {
    const ns = await runningPod(t, 'kapi-follow', 'follower');
    const file = harness().member.kwok.logs('main');
    await writeFile(file, criLine(new Date(), 'first'));
    const f = kubectlStream(['logs', '-f', '-n', ns, 'follower']);
    try {
      await f.waitFor(/first\n/);
      await appendFile(file, criLine(new Date(), 'second, appended'));
      await f.waitFor(/second, appended\n/);
    } finally {
      f.child.kill();
    }
    await pollUntil('clusterlet aborting the member log stream', async () =>
      cl.logs().includes('the caller went away; member log stream aborted') ? true : undefined, 15_000);
  });

  it('/pods lists the node\'s pods; /stats/summary and /metrics/resource list the node, pods and containers (node proxy)', async (t) => {
    if (harness().network.unavailable) return t.skip(harness().network.unavailable);
    const ns = await runningPod(t, 'kapi-stats', 'busy', { annotations: { 'kwok.x-k8s.io/usage-cpu': '250m', 'kwok.x-k8s.io/usage-memory': '64Mi' } });
    const proxy = `/api/v1/nodes/${NODE}/proxy`;
    const pods = JSON.parse(await kubectl(harness().host, 'get', '--raw', `${proxy}/pods`)) as { kind: string; items: V1Pod[] };
    assert.equal(pods.kind, 'PodList');
    assert.ok(pods.items.some((p) => p.metadata?.namespace === ns && p.metadata.name === 'busy'), '/pods lists the pod');
    assert.ok(pods.items.every((p) => p.spec?.nodeName === NODE), 'only this node\'s pods');

    interface Summary { node: { nodeName: string; cpu: { usageCoreNanoSeconds: number }; memory: { workingSetBytes: number } };
      pods: { podRef: { namespace: string; name: string; uid: string }; containers: { name: string; cpu: { usageCoreNanoSeconds: number }; memory: { workingSetBytes: number } }[] }[] }
    // KWOK starts counting a pod's usage when its metrics are first read: ask until the pod shows up with usage.
    const summary = await pollUntil('the pod in /stats/summary with its usage', async () => {
      const sum = JSON.parse(await kubectl(harness().host, 'get', '--raw', `${proxy}/stats/summary`)) as Summary;
      const p = sum.pods.find((x) => x.podRef.namespace === ns && x.podRef.name === 'busy');
      return p && p.containers[0]?.memory.workingSetBytes > 0 ? sum : undefined;
    }, 30_000, 500);
    assert.equal(summary.node.nodeName, NODE);
    const pod = summary.pods.find((x) => x.podRef.namespace === ns && x.podRef.name === 'busy');
    assert.ok(pod, `summary lists the pod: ${JSON.stringify(summary)}`);
    assert.equal(pod.containers[0].name, 'main');
    assert.equal(pod.containers[0].memory.workingSetBytes, 64 * 2 ** 20, 'memory from the member, in host names');
    assert.ok(summary.node.memory.workingSetBytes >= 64 * 2 ** 20, 'node memory is the sum of its pods');

    const text = await kubectl(harness().host, 'get', '--raw', `${proxy}/metrics/resource`);
    assert.match(text, new RegExp(`^container_memory_working_set_bytes\\{container="main",namespace="${ns}",pod="busy"\\} 67108864 \\d+$`, 'm'));
    assert.match(text, new RegExp(`^container_cpu_usage_seconds_total\\{container="main",namespace="${ns}",pod="busy"\\} `, 'm'));
    assert.match(text, /^node_cpu_usage_seconds_total \S+ \d+$/m);
    assert.match(text, /^node_memory_working_set_bytes \S+ \d+$/m);
  });

  it('authenticates and authorises callers: none → 401, no nodes/proxy → 403, granted → 200', async (t) => {
    const ns = await namespaces(t, 'kapi-auth', [host]);
    await grantNodesProxy(t, host, ns, 'prober');
    const token = (name: string): Promise<string> => serviceAccountToken(host, ns, name);

    const url = `https://${nodeIP}:${port}/pods`;
    assert.equal((await httpsGet(url, {})).status, 401, 'no credentials');
    assert.equal((await httpsGet(url, { token: 'not-a-token' })).status, 401, 'a token the host does not know');
    const denied = await httpsGet(url, { token: await token('nobody') });
    assert.equal(denied.status, 403, 'a service account without nodes/proxy');
    assert.match(denied.body, /Forbidden \(user=system:serviceaccount:.*:nobody, verb=get, resource=nodes, subresource\(s\)=\[pods proxy\]\)/);
    const ok = await httpsGet(url, { token: await token('prober') });
    assert.equal(ok.status, 200, `a service account with nodes/proxy: ${ok.body}`);
    assert.equal((JSON.parse(ok.body) as { kind: string }).kind, 'PodList');
    assert.equal((await httpsGet(`https://${nodeIP}:${port}/stats/summary`, { token: await token('prober') })).status, 403,
      'nodes/proxy does not grant nodes/stats');

    // Client certificates: one the host's CA signed authenticates (then RBAC decides), a stranger's does not.
    const signed = await harness().host.clientCert(`kapi-${ns}`, `kapi-user-${ns}`, ['kapi-testers']);
    assert.equal((await httpsGet(url, { cert: signed })).status, 403, 'a host-signed certificate without RBAC');
    const masters = await harness().host.clientCert(`kapi-admin-${ns}`, 'kapi-admin', ['system:masters']);
    assert.equal((await httpsGet(url, { cert: masters })).status, 200, 'a host-signed certificate in system:masters');
    const k = newServingKey();
    const stranger = { cert: selfSignedCertificate(k.keyObject, { subject: { commonName: 'mallory', organizations: ['system:masters'] }, dns: [], ips: [] }), key: k.key };
    assert.equal((await httpsGet(url, { pem: stranger })).status, 401, 'a certificate the host did not sign');
    const foreign = await foreignAdmin();
    const refused = await httpsGet(url, { cert: foreign.cert });
    assert.equal(refused.status, 401, `a certificate of a CA unrelated to the host: ${refused.body.slice(0, 200)}`);
  });

  it('kubectl exec runs a command with its output, exit status and stdin', async (t) => {
    const ns = await runningPod(t, 'kapi-exec', 'shell');
    const ok = await kubectlRun(['exec', '-n', ns, 'shell', '--', 'sh', '-c', 'echo out; echo err >&2']);
    assert.deepEqual(ok, { code: 0, stdout: 'out\n', stderr: 'err\n' });
    const failed = await kubectlRun(['exec', '-n', ns, 'shell', '--', 'sh', '-c', 'echo before; exit 3']);
    assert.equal(failed.stdout, 'before\n');
    assert.notEqual(failed.code, 0, 'a failing command fails kubectl');
    assert.match(failed.stderr, /exit (status|code) 3/, 'the member\'s status reaches the caller');
    // KWOK never closes a command's stdin (its exec copies into the pipe without closing it), so the command
    // reads what it needs rather than to the end; the end of stdin is covered by test/unit/api/remotecommand.test.ts.
    const piped = await kubectlRun(['exec', '-i', '-n', ns, 'shell', '--', 'sh', '-c', 'head -n 2; echo done'], 'hello\nworld\n');
    assert.deepEqual(piped, { code: 0, stdout: 'hello\nworld\ndone\n', stderr: '' }, 'stdin reaches the command');
    const missing = await kubectlRun(['exec', '-n', ns, 'shell', '-c', 'nope', '--', 'true']);
    assert.notEqual(missing.code, 0);
    assert.match(missing.stderr, /container nope is not valid|not found/);
  });

  it('kubectl attach streams the container\'s output', async (t) => {
    const ns = await runningPod(t, 'kapi-attach', 'attached');
    const file = harness().member.kwok.attach('main');
    await writeFile(file, '');
    const a = kubectlStream(['attach', '-n', ns, 'attached', '-c', 'main']);
    try {
      await attachShows(a.out);
      await appendFile(file, criLine(new Date(), 'after the first'));
      await a.waitFor(/after the first\n/);
    } finally {
      a.child.kill();
    }
  });

  it('kubectl port-forward carries bytes both ways, on several connections', async (t) => {
    const ns = await runningPod(t, 'kapi-pf', 'echo');
    const local = await freePort();
    // The member's KWOK forwards port 7000 to `cat`: what goes in comes back.
    const pf = kubectlStream(['port-forward', '-n', ns, 'pod/echo', `${local}:${KWOK_ECHO_PORT}`, '--address', '127.0.0.1']);
    try {
      await pf.waitFor(new RegExp(`Forwarding from 127.0.0.1:${local}`));
      for (const text of ['ping\n', 'a second connection\n']) {
        const sock = connect(local, '127.0.0.1');
        const got = new Promise<string>((resolve, reject) => {
          let buf = '';
          sock.on('data', (d: Buffer) => { buf += d.toString(); if (buf === text) resolve(buf); });
          sock.on('error', reject);
          sock.on('close', () => reject(new Error(`closed after ${JSON.stringify(buf)}`)));
        });
        sock.write(text);
        assert.equal(await got, text);
        sock.destroy();
      }
      // A larger transfer: back-pressure and framing over several data frames.
      const big = Buffer.alloc(512 * 1024, 'x');
      const sock = connect(local, '127.0.0.1');
      const echoed = new Promise<number>((resolve, reject) => {
        let n = 0;
        sock.on('data', (d: Buffer) => { n += d.length; if (n >= big.length) resolve(n); });
        sock.on('error', reject);
      });
      sock.write(big);
      assert.equal(await echoed, big.length);
      sock.destroy();
    } finally {
      pf.child.kill();
    }
  });
});

describe('kubelet API before its client CA is loaded', () => {
  let cl: ClusterletProcess;
  let host: ClusterClient;
  let port: number;
  let caFile: string;
  let foreign: { ca: KeyPair; cert: KeyPair };

  before(async () => {
    host = client(harness().host);
    port = await freePort();
    foreign = await foreignAdmin();
    // The client CA file is there but still empty (as while whatever provisions it has not written it).
    caFile = join(harness().dir, `client-ca-${port}.crt`);
    await writeFile(caFile, '');
    // NODE_EXTRA_CA_CERTS puts the foreign CA among the CAs Node trusts by default, as Mozilla's roots and the
    // system store are: a certificate from any of them must not count as a client certificate of the host.
    cl = startClusterlet(clusterletArgs(harness().member, ['--kubelet-port', String(port), '--node-ip', harness().nodeAddress,
      '--client-ca-file', caFile]), { NODE_EXTRA_CA_CERTS: foreign.ca.cert });
    await waitVirtualNodeSchedulable(host);
  });
  after(() => stopAndForgetNode(cl, host, NODE));

  it('refuses client certificates (401) and accepts bearer tokens until the CA is loaded; then the host\'s certificates only', async (t) => {
    const ns = await namespaces(t, 'kapi-noca', [host]);
    await grantNodesProxy(t, host, ns, 'prober');
    const url = `https://${harness().nodeAddress}:${port}/pods`;
    const admin = await harness().host.clientCert(`kapi-admin-${ns}`, 'kapi-admin', ['system:masters']);

    const before = await httpsGet(url, { cert: foreign.cert });
    assert.equal(before.status, 401, `a certificate of a CA unrelated to the host, trusted by Node by default: ${before.body.slice(0, 200)}`);
    assert.match(before.body, /not accepted until the client CA is loaded/);
    assert.equal((await httpsGet(url, { cert: admin })).status, 401, 'even a host-signed certificate, until the CA is loaded');
    const ok = await httpsGet(url, { token: await serviceAccountToken(host, ns, 'prober') });
    assert.equal(ok.status, 200, `a bearer token with nodes/proxy: ${ok.body}`);

    await copyFile(harness().host.caFile, caFile);
    await pollUntil('the client CA loaded (a host-signed certificate accepted)', async () =>
      (await httpsGet(url, { cert: admin })).status === 200 ? true : undefined, 30_000, 500);
    const after = await httpsGet(url, { cert: foreign.cert });
    assert.equal(after.status, 401, `the unrelated CA's certificate, once the CA is loaded: ${after.body.slice(0, 200)}`);
  });
});
