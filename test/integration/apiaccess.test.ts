// Offloaded pods talk to the host's API as their host ServiceAccount (docs/api-access.md): the token in the delegate's
// member Secret is one the host API server accepts as the proxy's ServiceAccount, bound to the proxy; it is refreshed,
// dies with the proxy, carries a projection's audience; the delegate's env points at the host; the other modes do
// what they say. What a container does with the token is in e2e/containers.ts, on real nodes.
import { after, before, describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig, type V1Pod, type V1Secret, type V1Volume } from '@kubernetes/client-node';
import { clusterletArgs, harness, namespaces, startClusterlet, startSuiteClusterlet, uniqueName, type ClusterletProcess } from '../support/env.ts';
import { kubectl } from '../support/kubectl.ts';
import { identityKubeconfig } from '../support/identity.ts';
import { pollUntil, waitUntil } from '../support/wait.ts';
import { condition, eventSpec, isReady, offloadedPod, podsSpec, secretSpec, waitVirtualNodeSchedulable } from '../support/objects.ts';
import type { ClusterClient } from '../../src/kube/client.ts';

const run = promisify(execFile);
/** Every token the tests read from a member Secret: none may appear in clusterlet's output. */
const tokensSeen: string[] = [];
const TOKEN_KEY = (volume: string) => `token-${volume}-0`;

describe('host API access of offloaded pods', () => {
  let host: ClusterClient;
  let member: ClusterClient;
  let cl: ClusterletProcess;
  // Tokens refreshed every 3 s at the latest, so that a refresh is seen within the test.
  const flags = ['--host-token-max-age', '3s'];
  before(async () => ({ host, member, cl } = await startSuiteClusterlet(flags)));
  after(async () => { await cl.stop(); });

  /** A host namespace with ServiceAccount `builder` that may list pods there (nothing else). */
  async function withBuilder(t: TestContext, prefix: string): Promise<string> {
    const ns = await namespaces(t, prefix, [host, member]);
    await host.core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'builder' } } });
    await kubectl(harness().host, '-n', ns, 'create', 'role', 'pod-reader', '--verb=list,get', '--resource=pods');
    await kubectl(harness().host, '-n', ns, 'create', 'rolebinding', 'builder-reads', '--role=pod-reader',
      `--serviceaccount=${ns}:builder`);
    return ns;
  }

  /** Creates the pod once its ServiceAccount's token can be had (the host's admission needs the SA to exist). */
  async function offload(ns: string, pod: V1Pod): Promise<V1Pod> {
    return host.core.createNamespacedPod({ namespace: ns, body: pod });
  }

  async function tokenSecret(ns: string, name: string, pred: (s: V1Secret) => boolean = () => true): Promise<V1Secret> {
    const wanted = (x: V1Secret): boolean => x.metadata?.name === `${name}.clusterlet-token` && pred(x);
    const ss = await waitUntil(member, secretSpec(member, ns), (all) => all.some(wanted), 60_000, `token Secret of ${name}`);
    const found = ss.find(wanted);
    assert.ok(found);
    return found;
  }

  const decoded = (s: V1Secret, key: string): string => {
    const v = Buffer.from(s.data?.[key] ?? '', 'base64').toString('utf8');
    if (key.startsWith('token-') && v) tokensSeen.push(v);
    return v;
  };

  async function review(token: string, audiences?: string[]) {
    const r = await host.authentication.createTokenReview({ body: { spec: { token, ...(audiences ? { audiences } : {}) } } });
    return r.status ?? {};
  }

  /** kubectl against the host with nothing but the token (no kubeconfig user): as a process in the delegate would. */
  async function canI(token: string, ns: string, ...what: string[]): Promise<string> {
    const args = ['--kubeconfig', '/dev/null', '--server', harness().host.server, '--certificate-authority', harness().host.caFile,
      '--token', token, 'auth', 'can-i', ...what, '-n', ns];
    const out = await run(harness().bin.kubectl, args).catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? '' }));
    return out.stdout.trim();
  }

  it('host (default): a token the host accepts as the proxy\'s ServiceAccount, bound to the proxy, with host RBAC; env at the host', async (t) => {
    const ns = await withBuilder(t, 'api-host');
    const proxy = await offload(ns, offloadedPod('builder-0', ns, { serviceAccountName: 'builder' }));
    const delegates = await waitUntil(member, podsSpec(member, ns), (ps) => ps.length === 1, 60_000, 'the delegate');
    const secret = await tokenSecret(ns, 'builder-0');
    const volume = proxy.spec?.volumes?.find((v) => v.name.startsWith('kube-api-access-'))?.name ?? '';
    const token = decoded(secret, TOKEN_KEY(volume));
    assert.ok(token.length > 0, `the Secret holds ${TOKEN_KEY(volume)}: ${Object.keys(secret.data ?? {}).join(', ')}`);
    assert.equal(decoded(secret, 'namespace'), ns);
    assert.match(decoded(secret, 'ca.crt'), /BEGIN CERTIFICATE/);

    const status = await review(token);
    assert.equal(status.authenticated, true, status.error);
    assert.equal(status.user?.username, `system:serviceaccount:${ns}:builder`);
    assert.deepEqual(status.user?.extra?.['authentication.kubernetes.io/pod-name'], ['builder-0']);
    assert.deepEqual(status.user?.extra?.['authentication.kubernetes.io/pod-uid'], [proxy.metadata?.uid]);
    assert.equal(await canI(token, ns, 'list', 'pods'), 'yes', 'the host Role of the ServiceAccount');
    assert.equal(await canI(token, ns, 'list', 'secrets'), 'no');

    // The delegate mounts it where the kubelet would have, and its env names the host API server.
    const d = delegates[0];
    const mounted = d.spec?.volumes?.find((v) => v.name === volume);
    assert.deepEqual(mounted?.projected?.sources?.map((s) => s.secret?.name), Array(3).fill('builder-0.clusterlet-token'));
    assert.equal(d.spec?.automountServiceAccountToken, false);
    const env = Object.fromEntries((d.spec?.containers[0].env ?? []).map((e) => [e.name, e.value]));
    const server = new URL(harness().host.server);
    assert.equal(env.KUBERNETES_SERVICE_HOST, server.hostname);
    assert.equal(env.KUBERNETES_SERVICE_PORT, server.port);

    // Refreshed before it ages (3 s here): a new token, valid as well.
    const refreshed = await tokenSecret(ns, 'builder-0', (s) => decoded(s, TOKEN_KEY(volume)) !== token);
    const next = decoded(refreshed, TOKEN_KEY(volume));
    assert.equal((await review(next)).authenticated, true);

    // The proxy goes: its tokens die with it, and so does the Secret.
    await host.core.deleteNamespacedPod({ name: 'builder-0', namespace: ns, gracePeriodSeconds: 0 });
    await waitUntil(host, podsSpec(host, ns), (ps) => ps.length === 0, 60_000, 'proxy gone');
    // The API server learns of the deletion through its informers: refused soon after.
    await pollUntil(() => review(next), (r) => r.authenticated !== true, 30_000, 'the token of a deleted pod refused');
    await waitUntil(member, secretSpec(member, ns), (ss) => !ss.some((s) => s.metadata?.name === 'builder-0.clusterlet-token'),
      60_000, 'token Secret deleted');
  });

  it('a projection with an audience gets a token for that audience', async (t) => {
    const ns = await withBuilder(t, 'api-aud');
    const vault: V1Volume = { name: 'vault-token', projected: { sources: [
      { serviceAccountToken: { audience: 'vault.example', expirationSeconds: 600, path: 'token' } },
    ] } };
    await offload(ns, offloadedPod('aud', ns, { serviceAccountName: 'builder', volumes: [vault] },
      { volumeMounts: [{ name: 'vault-token', mountPath: '/var/run/secrets/vault' }] }));
    const secret = await tokenSecret(ns, 'aud');
    const token = decoded(secret, TOKEN_KEY('vault-token'));
    const status = await review(token, ['vault.example']);
    assert.equal(status.authenticated, true, status.error);
    assert.deepEqual(status.audiences, ['vault.example']);
    assert.equal((await review(token)).authenticated ?? false, false, 'not a token for the API server\'s own audience');
  });

  it('member and none (annotation): no host token; member lets the member mount its own, none mounts nothing', async (t) => {
    const ns = await withBuilder(t, 'api-modes');
    const annotated = (name: string, mode: string): V1Pod => {
      const p = offloadedPod(name, ns, { serviceAccountName: 'builder' });
      p.metadata = { ...p.metadata, annotations: { 'clusterlet.io/api-access': mode } };
      return p;
    };
    await offload(ns, annotated('as-member', 'member'));
    await offload(ns, annotated('as-none', 'none'));
    const ds = await waitUntil(member, podsSpec(member, ns), (ps) => ps.length === 2, 60_000, 'two delegates');
    const byName = (n: string) => ds.find((d) => d.metadata?.name === n);
    const memberVolume = byName('as-member')?.spec?.volumes?.find((v) => v.name.startsWith('kube-api-access-'));
    assert.ok(memberVolume?.projected?.sources?.some((s) => s.serviceAccountToken), 'the member\'s admission mounted its own token');
    assert.equal(byName('as-member')?.spec?.containers[0].env?.some((e) => e.name === 'KUBERNETES_SERVICE_HOST') ?? false, false);
    assert.equal(byName('as-none')?.spec?.volumes?.some((v) => v.projected?.sources?.some((s) => s.serviceAccountToken)) ?? false, false);
    assert.equal(byName('as-none')?.spec?.automountServiceAccountToken, false);
    const secrets = (await member.core.listNamespacedSecret({ namespace: ns })).items;
    assert.deepEqual(secrets.filter((s) => s.metadata?.name?.endsWith('.clusterlet-token')), []);
  });

  it('a refresh the host refuses (the ServiceAccount deleted) is a Warning on the proxy, retried', async (t) => {
    const ns = await withBuilder(t, 'api-refuse');
    await offload(ns, offloadedPod('lost-sa', ns, { serviceAccountName: 'builder' }));
    await tokenSecret(ns, 'lost-sa');
    await host.core.deleteNamespacedServiceAccount({ namespace: ns, name: 'builder' });
    const events = await waitUntil(host, eventSpec(host, ns), (es) => es.some((e) => e.reason === 'HostTokenRefreshFailed'
      && e.involvedObject.name === 'lost-sa' && (e.count ?? 1) >= 2), 60_000, 'HostTokenRefreshFailed, counted again');
    const e = events.find((x) => x.reason === 'HostTokenRefreshFailed');
    assert.equal(e?.type, 'Warning');
    assert.match(e?.message ?? '', /could not refresh the host ServiceAccount token .*builder/);
  });

  it('the host\'s TokenRequest policy (manifests/host) refuses clusterlet\'s identity a token not bound to a pod, one over 48 h, one in kube-system', async (t) => {
    const ns = await withBuilder(t, 'api-policy');
    const proxy = await offload(ns, offloadedPod('bound-to', ns, { serviceAccountName: 'builder' }));
    const kc = new KubeConfig();
    kc.loadFromFile(identityKubeconfig(harness().host, 'host'));
    const asClusterlet = kc.makeApiClient(CoreV1Api);
    const asAdmin = harness().host.kubeConfig().makeApiClient(CoreV1Api);
    const pod = { apiVersion: 'v1', kind: 'Pod', name: 'bound-to', uid: proxy.metadata!.uid! };
    /** A TokenRequest's answer: the token's expiry, or the refusal's status code and message. */
    const request = (api: CoreV1Api, spec: Record<string, unknown>, namespace = ns, name = 'builder') =>
      api.createNamespacedServiceAccountToken({ namespace, name, body: { spec: { audiences: [], ...spec } } })
        .then((r) => ({ code: 201, message: String(r.status?.expirationTimestamp) }),
          (err: { code?: number; body?: unknown }) => ({ code: err.code ?? 0, message: String(err.body) }));

    const unbound = await request(asClusterlet, { expirationSeconds: 3600 });
    assert.equal(unbound.code, 403, unbound.message);
    assert.match(unbound.message, /clusterlet-token-requests.*denied.*bound to a Pod/);
    const long = await request(asClusterlet, { expirationSeconds: 7 * 86400, boundObjectRef: pod });
    assert.equal(long.code, 403, long.message);
    assert.match(long.message, /last at most 48h/);
    // Refused before the API server looks the pod up: the namespace alone decides.
    const system = await request(asClusterlet, { expirationSeconds: 3600, boundObjectRef: { ...pod, name: 'coredns-0' } }, 'kube-system', 'default');
    assert.equal(system.code, 403, system.message);
    assert.match(system.message, /no token for a ServiceAccount of kube-system/);
    // What clusterlet asks passes (its tokens in the tests above too); other users' requests are not the policy's.
    assert.equal((await request(asClusterlet, { expirationSeconds: 48 * 3600, boundObjectRef: pod })).code, 201);
    assert.equal((await request(asAdmin, { expirationSeconds: 7 * 86400 })).code, 201);

    // A kube-system pod offloaded in host mode: no delegate, and the proxy says why.
    const sys = offloadedPod(uniqueName('sys'), 'kube-system');
    await host.core.createNamespacedPod({ namespace: 'kube-system', body: sys });
    t.after(() => host.core.deleteNamespacedPod({ namespace: 'kube-system', name: sys.metadata!.name!, gracePeriodSeconds: 0 }).then(() => undefined));
    const [refused] = await waitUntil(host, podsSpec(host, 'kube-system'), (ps) => ps.some((p) => p.metadata?.name === sys.metadata!.name
      && condition(p, 'clusterlet.io/Offloaded')?.reason === 'HostTokenForbidden'), 60_000, 'the kube-system pod refused its host token')
      .then((ps) => ps.filter((p) => p.metadata?.name === sys.metadata!.name));
    assert.match(condition(refused, 'clusterlet.io/Offloaded')?.message ?? '',
      /the host's admission refused a token of host ServiceAccount kube-system\/default: .*kube-system.*set clusterlet.io\/api-access: member/);
  });

  /** A JWT's claims (its payload, decoded; not verified: TokenReview does that). */
  const claims = (token: string): { aud?: string[]; exp?: number; iat?: number; sub?: string } =>
    JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as { aud?: string[]; exp?: number; iat?: number; sub?: string };

  it('a restart trusts the proxy, not the Secret: edited annotations (a cloud audience, a year) change no token', async (t) => {
    const ns = await withBuilder(t, 'api-trust');
    const vault: V1Volume = { name: 'vault-token', projected: { sources: [
      { serviceAccountToken: { audience: 'vault.example', expirationSeconds: 1800, path: 'token' } },
    ] } };
    await offload(ns, offloadedPod('trust', ns, { serviceAccountName: 'builder', volumes: [vault] },
      { volumeMounts: [{ name: 'vault-token', mountPath: '/var/run/secrets/vault' }] }));
    const before = decoded(await tokenSecret(ns, 'trust'), TOKEN_KEY('vault-token'));
    // clusterlet stopped, a member admin edits what the Secret says of itself (due now), and clusterlet starts again.
    // (Another ServiceAccount the host refuses by itself: a token bound to the pod is for the pod's ServiceAccount.)
    await cl.stop();
    const secret = await member.core.readNamespacedSecret({ namespace: ns, name: 'trust.clusterlet-token' });
    const edited = await member.core.replaceNamespacedSecret({ namespace: ns, name: 'trust.clusterlet-token', body: { ...secret,
      metadata: { ...secret.metadata, annotations: { ...secret.metadata?.annotations,
        'clusterlet.io/tokens': JSON.stringify([{ key: TOKEN_KEY('vault-token'), audience: 'sts.amazonaws.com', expirationSeconds: 31_536_000 }]),
        'clusterlet.io/refresh-at': new Date(0).toISOString() } } } });
    cl = startClusterlet(clusterletArgs(harness().member, flags));
    await waitVirtualNodeSchedulable(host);
    const after = await tokenSecret(ns, 'trust', (s) => s.metadata?.resourceVersion !== edited.metadata?.resourceVersion
      && decoded(s, TOKEN_KEY('vault-token')) !== before);
    const token = decoded(after, TOKEN_KEY('vault-token'));
    const c = claims(token);
    assert.deepEqual(c.aud, ['vault.example'], 'the projection\'s audience');
    assert.equal((c.exp ?? 0) - (c.iat ?? 0), 1800, 'the projection\'s lifetime');
    assert.equal(c.sub, `system:serviceaccount:${ns}:builder`);
    const status = await review(token, ['vault.example']);
    assert.equal(status.authenticated, true, status.error);
    assert.equal(status.user?.username, `system:serviceaccount:${ns}:builder`);
    assert.match(after.metadata?.annotations?.['clusterlet.io/tokens'] ?? '', /"audience":"vault.example","expirationSeconds":1800/);
  });

  it('the delegates\' member namespace deleted by hand: made again, every delegate runs again and every proxy is Running and Ready', async (t) => {
    const ns = await withBuilder(t, 'api-nsgone');
    const names = ['a', 'b', 'c'];
    for (const n of names) await offload(ns, offloadedPod(n, ns, { serviceAccountName: 'builder' }));
    const running = (ps: V1Pod[]): boolean => ps.length === 3 && ps.every((p) => p.status?.phase === 'Running' && isReady(p));
    await waitUntil(host, podsSpec(host, ns), running, 60_000, 'three proxies Running and Ready');
    const first = await waitUntil(member, podsSpec(member, ns), running, 60_000, 'three delegates Running');
    await member.core.deleteNamespace({ name: ns });
    const again = await waitUntil(member, podsSpec(member, ns), (ps) => running(ps)
      && ps.every((p) => !first.some((f) => f.metadata?.uid === p.metadata?.uid)), 120_000, 'three new delegates Running');
    assert.equal(again.length, 3);
    await tokenSecret(ns, 'a');
    const proxies = await waitUntil(host, podsSpec(host, ns), (ps) => running(ps)
      && ps.every((p) => p.status?.containerStatuses?.[0]?.restartCount === 1), 60_000, 'three proxies Running and Ready, one restart each');
    for (const p of proxies) assert.equal(condition(p, 'clusterlet.io/Offloaded')?.status ?? 'True', 'True');
  });

  it('no token appears in any clusterlet output of this run', () => {
    const dir = harness().dir;
    const logs = readdirSync(dir).filter((f) => f.startsWith('clusterlet-') && f.endsWith('.log'));
    assert.ok(logs.length > 0, 'there are clusterlet logs to check');
    assert.ok(tokensSeen.length >= 3, `tokens seen: ${tokensSeen.length}`);
    for (const f of logs) {
      const text = readFileSync(join(dir, f), 'utf8');
      // A JWT's signature is unique to it: enough to recognise one, whole or cut.
      for (const t of tokensSeen) assert.ok(!text.includes(t.split('.')[2] ?? t), `${f} contains a token`);
    }
  });
});
