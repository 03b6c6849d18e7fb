// The API access forge: the delegate's token volumes and env per mode, the token Secret, names at their limits.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod, V1PodSpec, V1Volume } from '@kubernetes/client-node';
import {
  accessModeOf, applyApiAccess, forgeTokenSecret, hostServiceEnv, MAX_TOKEN_SECONDS, parseHostEndpoint, refreshTime, tokenNeeds,
  tokenSecretName, tokenSecretState, type DelegateApiAccess,
} from '../../../src/forge/apiaccess.ts';
import { forgeDelegatePod } from '../../../src/forge/pod.ts';
import { ctx, hostPod, tokenMount, tokenVolume } from './fixtures.ts';

const endpoint = { host: '203.0.113.10', port: 6443 };
const host: DelegateApiAccess = { mode: 'host', secretName: 'web.clusterlet-token', endpoint };

/** A user's own projection: a token for another audience next to a ConfigMap. */
const vaultVolume: V1Volume = {
  name: 'vault-token',
  projected: { sources: [
    { serviceAccountToken: { audience: 'vault', expirationSeconds: 600, path: 'vault-token' } },
    { configMap: { name: 'vault-ca', items: [{ key: 'ca', path: 'vault-ca.crt' }] } },
  ] },
};

function spec(volumes: V1Volume[], extra: Partial<V1PodSpec> = {}): V1PodSpec {
  return {
    serviceAccountName: 'web',
    containers: [{ name: 'app', image: 'app', volumeMounts: volumes.map((v) => ({ name: v.name, mountPath: `/m/${v.name}` })),
      env: [{ name: 'KUBERNETES_SERVICE_PORT', value: '8443' }] }],
    initContainers: [{ name: 'init', image: 'init' }],
    volumes,
    ...extra,
  };
}

function applied(s: V1PodSpec, access: DelegateApiAccess): V1PodSpec {
  const copy = { ...s };
  applyApiAccess(copy, access);
  return copy;
}

describe('applyApiAccess', () => {
  it('host: the kube-api-access projection reads its token, CA and namespace from the token Secret, at the same paths and mode', () => {
    const out = applied(spec([tokenVolume]), host);
    assert.deepEqual(out.volumes, [{
      name: tokenVolume.name,
      projected: { defaultMode: 420, sources: [
        { secret: { name: 'web.clusterlet-token', items: [{ key: 'token-kube-api-access-7xk2p-0', path: 'token' }] } },
        { secret: { name: 'web.clusterlet-token', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
        { secret: { name: 'web.clusterlet-token', items: [{ key: 'namespace', path: 'namespace' }] } },
      ] },
    }]);
    assert.equal(out.automountServiceAccountToken, false, 'the member\'s admission adds no token of its own');
    assert.deepEqual(out.containers[0].volumeMounts, [{ name: tokenVolume.name, mountPath: `/m/${tokenVolume.name}` }]);
  });

  it('host: every container gets the kubelet\'s env of the kubernetes Service, at the host; a container\'s own value wins', () => {
    const out = applied(spec([tokenVolume]), host);
    const env = (i: number, init = false) => Object.fromEntries(((init ? out.initContainers : out.containers)?.[i].env ?? [])
      .map((e) => [e.name, e.value]));
    assert.deepEqual(env(0, true), {
      KUBERNETES_SERVICE_HOST: '203.0.113.10', KUBERNETES_SERVICE_PORT: '6443', KUBERNETES_SERVICE_PORT_HTTPS: '6443',
      KUBERNETES_PORT: 'tcp://203.0.113.10:6443', KUBERNETES_PORT_443_TCP: 'tcp://203.0.113.10:6443',
      KUBERNETES_PORT_443_TCP_PROTO: 'tcp', KUBERNETES_PORT_443_TCP_PORT: '6443', KUBERNETES_PORT_443_TCP_ADDR: '203.0.113.10',
    });
    assert.equal(env(0).KUBERNETES_SERVICE_PORT, '8443');
    assert.equal(out.containers[0].env?.filter((e) => e.name === 'KUBERNETES_SERVICE_PORT').length, 1);
  });

  it('host: a custom-audience projection gets its own token key; its other sources stay', () => {
    const out = applied(spec([vaultVolume]), host);
    assert.deepEqual(out.volumes?.[0].projected?.sources, [
      { secret: { name: 'web.clusterlet-token', items: [{ key: 'token-vault-token-0', path: 'vault-token' }] } },
      { configMap: { name: 'vault-ca', items: [{ key: 'ca', path: 'vault-ca.crt' }] } },
    ]);
    assert.deepEqual(tokenNeeds(spec([tokenVolume, vaultVolume])), [
      { key: 'token-kube-api-access-7xk2p-0', expirationSeconds: 3607 },
      { key: 'token-vault-token-0', audience: 'vault', expirationSeconds: 600 },
    ]);
  });

  it('host: a downward API source keeps its other items; the namespace item comes from the Secret', () => {
    const v: V1Volume = { name: 'kube-api-access-x', projected: { sources: [
      { serviceAccountToken: { path: 'token' } },
      { downwardAPI: { items: [
        { path: 'namespace', fieldRef: { fieldPath: 'metadata.namespace' }, mode: 0o400 },
        { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
      ] } },
    ] } };
    assert.deepEqual(applied(spec([v]), host).volumes?.[0].projected?.sources, [
      { secret: { name: 'web.clusterlet-token', items: [{ key: 'token-kube-api-access-x-0', path: 'token' }] } },
      { secret: { name: 'web.clusterlet-token', items: [{ key: 'namespace', path: 'namespace', mode: 0o400 }] } },
      { downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] } },
    ]);
    assert.deepEqual(tokenNeeds(spec([v])), [{ key: 'token-kube-api-access-x-0', expirationSeconds: 3600 }]);
  });

  it('host: a projection asking for more than 48 h gets a token of 48 h (the most the host\'s TokenRequest policy admits)', () => {
    const week: V1Volume = { name: 'long', projected: { sources: [{ serviceAccountToken: { path: 'token', expirationSeconds: 7 * 86400 } }] } };
    assert.deepEqual(tokenNeeds(spec([week])), [{ key: 'token-long-0', expirationSeconds: MAX_TOKEN_SECONDS }]);
    assert.equal(MAX_TOKEN_SECONDS, 172800);
  });

  it('host: a pod without a token (automount off) gets nothing, no env either; a legacy token secret goes', () => {
    const none = applied(spec([], { automountServiceAccountToken: false }), host);
    assert.equal(none.automountServiceAccountToken, false);
    assert.equal(none.containers[0].env?.length, 1);
    const legacy: V1Volume = { name: 'web-token-abcde', secret: { secretName: 'web-token-abcde' } };
    const out = applied(spec([legacy, tokenVolume]), host);
    assert.deepEqual(out.volumes?.map((v) => v.name), [tokenVolume.name]);
    assert.deepEqual(out.containers[0].volumeMounts?.map((m) => m.name), [tokenVolume.name]);
  });

  it('member: the host\'s kube-api-access volume goes, a user\'s own token projection stays', () => {
    const out = applied(spec([tokenVolume, vaultVolume]), { mode: 'member' });
    assert.deepEqual(out.volumes, [vaultVolume]);
    assert.equal(out.automountServiceAccountToken, undefined, 'the member mounts its own token');
    assert.equal(out.containers[0].env?.length, 1, 'no host env');
  });

  it('none: no token at all: the kube-api-access volume goes, token sources go from the user\'s projections', () => {
    const onlyToken: V1Volume = { name: 'just-token', projected: { sources: [{ serviceAccountToken: { path: 't' } }] } };
    const out = applied(spec([tokenVolume, vaultVolume, onlyToken]), { mode: 'none' });
    assert.deepEqual(out.volumes, [{ name: 'vault-token', projected: { sources: [vaultVolume.projected!.sources![1]] } }]);
    assert.deepEqual(out.containers[0].volumeMounts?.map((m) => m.name), ['vault-token']);
    assert.equal(out.automountServiceAccountToken, false);
  });

  it('forgeDelegatePod applies the context\'s mode to init, app and ephemeral containers; the proxy is not changed', () => {
    const proxy = hostPod();
    const before = structuredClone(proxy);
    const d = forgeDelegatePod(proxy, { ...ctx, apiAccess: host });
    assert.deepEqual(proxy, before);
    for (const c of [...d.spec?.initContainers ?? [], ...d.spec?.containers ?? []]) {
      assert.ok(c.env?.some((e) => e.name === 'KUBERNETES_SERVICE_HOST' && e.value === '203.0.113.10'), c.name);
      assert.ok(c.volumeMounts?.some((m) => m.name === tokenMount.name), c.name);
    }
    assert.equal(d.spec?.volumes?.find((v) => v.name === tokenVolume.name)?.projected?.sources?.[0].secret?.name, 'web.clusterlet-token');
  });
});

describe('the mode, the endpoint and the names', () => {
  it('the annotation chooses the mode; a bad one is an error naming it', () => {
    const pod = (a?: string): V1Pod => ({ metadata: { annotations: a === undefined ? {} : { 'clusterlet.io/api-access': a } } });
    assert.deepEqual(accessModeOf(pod(), 'host'), { mode: 'host' });
    assert.deepEqual(accessModeOf(pod('member'), 'host'), { mode: 'member' });
    assert.deepEqual(accessModeOf(pod('none'), 'member'), { mode: 'none' });
    assert.match((accessModeOf(pod('Host'), 'host') as { error: string }).error, /clusterlet\.io\/api-access: "Host" is not one of host, member, none/);
  });

  it('parseHostEndpoint: host and port of an https URL, IPv6 unbracketed, 443 by default; no path, no http', () => {
    const cases: [string, unknown][] = [
      ['https://203.0.113.10:6443', { host: '203.0.113.10', port: 6443 }],
      ['https://api.example.com', { host: 'api.example.com', port: 443 }],
      ['https://[2001:db8::1]:6443/', { host: '2001:db8::1', port: 6443 }],
    ];
    for (const [server, want] of cases) assert.deepEqual(parseHostEndpoint(server), want, server);
    for (const bad of ['http://h:80', 'https://h/prefix', 'not a url']) assert.ok('error' in parseHostEndpoint(bad), bad);
    assert.equal(hostServiceEnv({ host: '2001:db8::1', port: 6443 }).find((e) => e.name === 'KUBERNETES_PORT')?.value,
      'tcp://[2001:db8::1]:6443');
  });

  it('tokenSecretName: <pod>.clusterlet-token; at the 253-character limit, cut and made unique, still a valid name', () => {
    assert.equal(tokenSecretName('web-1'), 'web-1.clusterlet-token');
    const a = tokenSecretName(`${'a'.repeat(240)}-x1`);
    const b = tokenSecretName(`${'a'.repeat(240)}-x2`);
    for (const n of [a, b]) {
      assert.ok(n.length <= 253, `${n.length}`);
      assert.match(n, /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/);
    }
    assert.notEqual(a, b);
    assert.match(tokenSecretName(`${'b'.repeat(230)}.${'c'.repeat(22)}`), /^b+-[0-9a-f]{10}\.clusterlet-token$/);
  });

  it('refreshTime: at 80 % of the lifetime, or after a day at the latest', () => {
    const t0 = new Date('2026-12-01T00:00:00Z');
    assert.equal(refreshTime(t0, new Date(t0.getTime() + 3600_000)).toISOString(), '2026-12-01T00:48:00.000Z');
    assert.equal(refreshTime(t0, new Date(t0.getTime() + 365 * 86400_000)).toISOString(), '2026-12-02T00:00:00.000Z');
  });

  it('the token Secret: owner labels, role, data base64, and annotations that let a restarted process refresh it', () => {
    const needs = [{ key: 'token-kube-api-access-x-0', expirationSeconds: 3607 }];
    const s = forgeTokenSecret({
      name: 'web.clusterlet-token', namespace: 'team-x', ownerLabels: { 'clusterlet.io/origin': 'h', 'clusterlet.io/node': 'n' },
      proxy: { namespace: 'team-x', name: 'web', uid: 'u1' }, serviceAccount: 'web', needs, tokens: { 'token-kube-api-access-x-0': 'T' },
      ca: 'PEM', refreshAt: new Date('2026-12-01T00:48:00Z'),
    });
    assert.deepEqual(s.metadata?.labels, { 'clusterlet.io/origin': 'h', 'clusterlet.io/node': 'n', 'clusterlet.io/role': 'host-token',
      'clusterlet.io/proxy-uid': 'u1' });
    assert.deepEqual(s.data, { 'ca.crt': 'UEVN', namespace: 'dGVhbS14', 'token-kube-api-access-x-0': 'VA==' });
    assert.deepEqual(tokenSecretState(s), { proxy: { namespace: 'team-x', name: 'web', uid: 'u1' }, serviceAccount: 'web', needs,
      refreshAt: new Date('2026-12-01T00:48:00Z') });
    assert.equal(tokenSecretState({ ...s, metadata: { ...s.metadata, annotations: { ...s.metadata?.annotations, 'clusterlet.io/tokens': '{' } } }), undefined);
  });
});
