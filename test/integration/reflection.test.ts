// ConfigMaps, Secrets and ServiceAccounts follow their pods, and stay in sync; exports come back.
import { describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { clusterID, harness, namespaces, withSuiteClusterlet } from '../support/env.ts';
import { waitUntil } from '../support/wait.ts';
import { cmSpec, condition, eventSpec, podsSpec, secretSpec, offloadedPod as pod } from '../support/objects.ts';
import { PATCH, type ClusterClient } from '../../src/kube/client.ts';

const merge = { contentType: PATCH.merge };
/** Every Secret value this file creates: none may appear in any clusterlet output. */
const secretValues: string[] = [];

function secretValue(): string {
  const v = `s3cr3t-${randomBytes(12).toString('hex')}`;
  secretValues.push(v);
  return v;
}

const b64 = (s: string | Buffer): string => Buffer.from(s).toString('base64');


const named = <T extends { metadata?: { name?: string } }>(items: T[], name: string): T | undefined => items.find((i) => i.metadata?.name === name);

const EXPORT = { 'clusterlet.io/export': 'true' };

describe('ConfigMaps, Secrets and ServiceAccounts follow their pods', () => {
  let host: ClusterClient;
  let member: ClusterClient;
  withSuiteClusterlet((c) => ({ host, member } = c));

  it('mirrors every kind of reference byte for byte before the pod starts, and nothing else', async (t) => {
    const ns = await namespaces(t, 'refs', [host]);
    const big = randomBytes(700 * 1024); // near the 1 MiB object limit once base64-encoded
    await host.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'app-config', labels: { team: 'a' } },
      data: { 'app.yaml': 'mode: fast\n', other: 'x' }, binaryData: { 'blob.bin': b64(randomBytes(64)) } } });
    await host.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'projected-cm' }, data: { p: 'q' } } });
    await host.core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'env-secret' }, stringData: { TOKEN: secretValue() } } });
    await host.core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'projected-secret' }, data: { big: big.toString('base64') } } });
    await host.core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'pull' }, type: 'kubernetes.io/dockerconfigjson',
      stringData: { '.dockerconfigjson': JSON.stringify({ auths: { 'registry.example': { auth: b64(`u:${secretValue()}`) } } }) } } });
    await host.core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'unrelated' }, stringData: { x: secretValue() } } });
    await host.core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'builder' } } });
    await host.core.createNamespacedPod({ namespace: ns, body: pod('user', ns, {
      serviceAccountName: 'builder',
      imagePullSecrets: [{ name: 'pull' }],
      volumes: [
        { name: 'cfg', configMap: { name: 'app-config', items: [{ key: 'app.yaml', path: 'config/app.yaml' }] } },
        { name: 'mix', projected: { sources: [{ configMap: { name: 'projected-cm' } }, { secret: { name: 'projected-secret' } }] } },
      ],
    }, { envFrom: [{ secretRef: { name: 'env-secret' } }], volumeMounts: [{ name: 'cfg', mountPath: '/etc/app' }, { name: 'mix', mountPath: '/etc/mix' }] }) });

    await waitUntil(member, podsSpec(member, ns), (ps) => ps[0]?.status?.phase === 'Running', 60_000, 'delegate Running');
    const [hostCMs, memberCMs] = [await host.core.listNamespacedConfigMap({ namespace: ns }), await member.core.listNamespacedConfigMap({ namespace: ns })];
    for (const name of ['app-config', 'projected-cm']) {
      const h = named(hostCMs.items, name)!;
      const m = named(memberCMs.items, name);
      assert.ok(m, `${name} mirrored`);
      assert.deepEqual(m.data, h.data);
      assert.deepEqual(m.binaryData, h.binaryData);
      assert.equal(m.metadata!.labels!['clusterlet.io/origin'], await clusterID(host));
    }
    assert.equal(named(memberCMs.items, 'app-config')!.metadata!.labels!.team, 'a', 'user labels copied');
    const [hostSecrets, memberSecrets] = [await host.core.listNamespacedSecret({ namespace: ns }), await member.core.listNamespacedSecret({ namespace: ns })];
    for (const name of ['env-secret', 'projected-secret', 'pull']) {
      const h = named(hostSecrets.items, name)!;
      const m = named(memberSecrets.items, name);
      assert.ok(m, `${name} mirrored`);
      assert.deepEqual(m.data, h.data, `${name} byte-identical`);
      assert.equal(m.type, h.type);
    }
    assert.equal(named(memberSecrets.items, 'unrelated'), undefined, 'a Secret no pod uses never leaves the host');
    assert.ok(!memberSecrets.items.some((s) => s.type === 'kubernetes.io/service-account-token'), 'no host token copied');
    const rootCA = named(memberCMs.items, 'kube-root-ca.crt');
    assert.ok(rootCA, 'the member has its own kube-root-ca.crt');
    assert.equal(rootCA.metadata!.labels?.['clusterlet.io/origin'], undefined, 'kube-root-ca.crt is the member\'s, not a copy');
    assert.notEqual(rootCA.data!['ca.crt'], named(hostCMs.items, 'kube-root-ca.crt')!.data!['ca.crt']);
    const sa = await member.core.readNamespacedServiceAccount({ namespace: ns, name: 'builder' });
    assert.equal(sa.metadata!.labels!['clusterlet.io/origin'], await clusterID(host));
  });

  it('follows updates, keeps what another pod still uses, and removes what no pod uses', async (t) => {
    const ns = await namespaces(t, 'sync', [host]);
    await host.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'cfg' }, data: { v: '1' } } });
    await host.core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'shared' }, stringData: { k: secretValue() } } });
    const user = (name: string): V1Pod => pod(name, ns, { volumes: [{ name: 'c', configMap: { name: 'cfg' } }] },
      { env: [{ name: 'K', valueFrom: { secretKeyRef: { name: 'shared', key: 'k' } } }] });
    await host.core.createNamespacedPod({ namespace: ns, body: user('one') });
    await host.core.createNamespacedPod({ namespace: ns, body: user('two') });
    await waitUntil(member, podsSpec(member, ns), (ps) => ps.length === 2 && ps.every((p) => p.status?.phase === 'Running'), 60_000, 'two delegates');
    await host.core.patchNamespacedConfigMap({ namespace: ns, name: 'cfg', body: { data: { v: '2' } } }, merge);
    await waitUntil(member, cmSpec(member, ns), (cms) => named(cms, 'cfg')?.data?.v === '2', 15_000, 'member copy updated');
    await host.core.deleteNamespacedPod({ namespace: ns, name: 'one', gracePeriodSeconds: 0 });
    await waitUntil(member, podsSpec(member, ns), (ps) => ps.length === 1, 30_000, 'one delegate left');
    const secrets = await member.core.listNamespacedSecret({ namespace: ns });
    assert.ok(named(secrets.items, 'shared'), 'the Secret pod "two" still uses stays');
    await host.core.deleteNamespacedPod({ namespace: ns, name: 'two', gracePeriodSeconds: 0 });
    await waitUntil(member, secretSpec(member, ns), (ss) => !named(ss, 'shared'), 60_000, 'Secret removed with its last pod');
    await waitUntil(member, cmSpec(member, ns), (cms) => !named(cms, 'cfg'), 60_000, 'ConfigMap removed with its last pod');
  });

  it('optional missing: runs with an event; mandatory missing: no delegate and a Warning, then runs once it exists', async (t) => {
    const ns = await namespaces(t, 'missing', [host]);
    await host.core.createNamespacedPod({ namespace: ns, body: pod('relaxed', ns,
      { volumes: [{ name: 's', secret: { secretName: 'maybe', optional: true } }] }) });
    await host.core.createNamespacedPod({ namespace: ns, body: pod('strict', ns, {},
      { env: [{ name: 'K', valueFrom: { secretKeyRef: { name: 'later', key: 'k' } } }] }) });
    await waitUntil(host, podsSpec(host, ns), (ps) => named(ps, 'relaxed')?.status?.phase === 'Running', 60_000, 'optional-missing pod Running');
    await waitUntil(host, eventSpec(host, ns), (evs) => evs.some((e) => e.involvedObject?.name === 'relaxed' && /optional secret "maybe"/.test(e.message ?? '')), 30_000, 'event on the relaxed pod');
    const [strict] = await waitUntil(host, { ...podsSpec(host, ns), fieldSelector: 'metadata.name=strict' },
      (ps) => condition(ps[0], 'clusterlet.io/Offloaded')?.status === 'False', 30_000, 'strict pod blocked');
    assert.match(condition(strict, 'clusterlet.io/Offloaded')!.message!, /secret "later" not found/);
    await waitUntil(host, eventSpec(host, ns), (evs) => evs.some((e) => e.type === 'Warning' && e.involvedObject?.name === 'strict' && /secret "later" not found/.test(e.message ?? '')), 30_000, 'Warning naming the Secret');
    const delegates = await member.core.listNamespacedPod({ namespace: ns });
    assert.equal(named(delegates.items, 'strict'), undefined, 'no delegate while the Secret is missing');
    await host.core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'later' }, stringData: { k: secretValue() } } });
    await waitUntil(host, podsSpec(host, ns), (ps) => named(ps, 'strict')?.status?.phase === 'Running', 30_000, 'strict pod Running once the Secret exists');
  });

  it('a same-named ConfigMap in the member that clusterlet did not create is left untouched and reported', async (t) => {
    const ns = await namespaces(t, 'foreign', [host, member]);
    await member.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'settings' }, data: { owner: 'member-team' } } });
    await host.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'settings' }, data: { owner: 'host-team' } } });
    await host.core.createNamespacedPod({ namespace: ns, body: pod('clash', ns, { volumes: [{ name: 'c', configMap: { name: 'settings' } }] }) });
    const [p] = await waitUntil(host, podsSpec(host, ns), (ps) => condition(ps[0], 'clusterlet.io/Offloaded')?.reason === 'MemberObjectConflict', 30_000, 'conflict reported');
    assert.match(condition(p, 'clusterlet.io/Offloaded')!.message!, /configmap .*settings exists in member member and was not created by clusterlet/);
    await waitUntil(host, eventSpec(host, ns), (evs) => evs.some((e) => e.type === 'Warning' && e.reason === 'MemberObjectConflict'), 30_000, 'conflict event');
    const cm = await member.core.readNamespacedConfigMap({ namespace: ns, name: 'settings' });
    assert.deepEqual(cm.data, { owner: 'member-team' }, 'foreign ConfigMap untouched');
    assert.equal(cm.metadata!.labels?.['clusterlet.io/origin'], undefined);
  });

  /** The host namespace accepts member exports (true) or stops accepting them (null). */
  const acceptExports = (ns: string, v: 'true' | null): Promise<unknown> =>
    host.core.patchNamespace({ name: ns, body: { metadata: { annotations: { 'clusterlet.io/accept-exports': v } } } }, merge);

  /** A host namespace with a pod offloaded into it, so that its member namespace exists. */
  async function offloadedNamespace(t: TestContext, prefix: string): Promise<string> {
    const ns = await namespaces(t, prefix, [host]);
    await host.core.createNamespacedPod({ namespace: ns, body: pod('anchor', ns, {}) });
    await waitUntil(member, podsSpec(member, ns), (ps) => ps[0]?.status?.phase === 'Running', 60_000, `delegate Running in ${ns}`);
    return ns;
  }

  it('exports member ConfigMaps labelled clusterlet.io/export=true to the host, following updates and deletion', async (t) => {
    const ns = await offloadedNamespace(t, 'export');
    await acceptExports(ns, 'true');
    await member.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'result', labels: EXPORT }, data: { answer: '42' } } });
    await member.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'private' }, data: { x: 'y' } } });
    const [exported] = await waitUntil(host, cmSpec(host, ns), (cms) => named(cms, 'result')?.data?.answer === '42', 30_000, 'exported to the host');
    assert.ok(exported);
    const copy = named(await waitUntil(host, cmSpec(host, ns), () => true, 5_000, 'host configmaps'), 'result')!;
    assert.equal(copy.metadata!.labels!['clusterlet.io/member'], 'member', 'labelled as ours');
    await member.core.patchNamespacedConfigMap({ namespace: ns, name: 'result', body: { data: { answer: '43' } } }, merge);
    await waitUntil(host, cmSpec(host, ns), (cms) => named(cms, 'result')?.data?.answer === '43', 30_000, 'update followed');
    await member.core.deleteNamespacedConfigMap({ namespace: ns, name: 'result' });
    const after = await waitUntil(host, cmSpec(host, ns), (cms) => !named(cms, 'result'), 30_000, 'deletion followed');
    assert.equal(named(after, 'private'), undefined, 'unlabelled member objects stay in the member');
  });

  it('exports only into host namespaces that accept exports; withdrawing consent removes the copies, nothing else', async (t) => {
    const [open, closed] = await Promise.all([offloadedNamespace(t, 'export-open'), offloadedNamespace(t, 'export-closed')]);
    await acceptExports(open, 'true');
    // A host object clusterlet did not create, named like a labelled member object.
    await host.core.createNamespacedConfigMap({ namespace: closed, body: { metadata: { name: 'taken' }, data: { owner: 'host-team' } } });
    await member.core.createNamespacedConfigMap({ namespace: closed, body: { metadata: { name: 'taken', labels: EXPORT }, data: { owner: 'member' } } });
    await member.core.createNamespacedConfigMap({ namespace: closed, body: { metadata: { name: 'result', labels: EXPORT }, data: { answer: 'closed' } } });
    // Positive control: created after the refused ones, exported once they have been looked at.
    await member.core.createNamespacedConfigMap({ namespace: open, body: { metadata: { name: 'result', labels: EXPORT }, data: { answer: 'open' } } });
    await waitUntil(host, cmSpec(host, open), (cms) => named(cms, 'result')?.data?.answer === 'open', 30_000, 'exported into the accepting namespace');
    const refused = await host.core.listNamespacedConfigMap({ namespace: closed });
    assert.equal(named(refused.items, 'result'), undefined, 'nothing exported into a namespace that does not accept exports');

    await acceptExports(closed, 'true');
    await waitUntil(host, cmSpec(host, closed), (cms) => named(cms, 'result')?.data?.answer === 'closed', 30_000, 'exported once the namespace accepts');
    await acceptExports(closed, null);
    const after = await waitUntil(host, cmSpec(host, closed), (cms) => !named(cms, 'result'), 30_000, 'copy removed once consent is withdrawn');
    assert.deepEqual(named(after, 'taken')?.data, { owner: 'host-team' }, 'the host\'s own object untouched');
    assert.equal(named(after, 'taken')?.metadata?.labels?.['clusterlet.io/member'], undefined);
    assert.equal((await member.core.readNamespacedConfigMap({ namespace: closed, name: 'result' })).data?.answer, 'closed', 'the member object stays');
    const kept = await host.core.readNamespacedConfigMap({ namespace: open, name: 'result' });
    assert.equal(kept.data?.answer, 'open', 'the accepting namespace keeps its copy');
  });

  it('no Secret value appears in any clusterlet output of this run', () => {
    const dir = harness().dir;
    const logs = readdirSync(dir).filter((f) => f.startsWith('clusterlet-') && f.endsWith('.log'));
    assert.ok(logs.length > 0, 'there are clusterlet logs to check');
    assert.ok(secretValues.length >= 4);
    for (const f of logs) {
      const text = readFileSync(join(dir, f), 'utf8');
      for (const v of secretValues) {
        assert.ok(!text.includes(v) && !text.includes(b64(v)), `${f} contains a Secret value`);
      }
    }
  });
});
