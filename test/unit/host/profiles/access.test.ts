import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AccessProviderConfig } from '../../../../src/config.ts';
import {
  chooseAccessProvider, execUser, profileAccessSource, type ExecProvider,
} from '../../../../src/host/profiles/access.ts';
import type { ClusterProfile } from '../../../../src/host/profiles/api.ts';
import { NS, fakeSecrets, kubeconfigText, profile } from '../../fakes/profiles.ts';

const builtin: AccessProviderConfig = { name: 'kubeconfig-secretreader', profileSourcedCLIArgsPolicy: 'Ignore',
  profileSourcedEnvVarsPolicy: 'Ignore' };
const exec = (name: string, extra: Partial<AccessProviderConfig> = {}): ExecProvider => ({
  name, execConfig: { apiVersion: 'client.authentication.k8s.io/v1', command: 'plugin', args: ['--a'], env: [{ name: 'X', value: 'own' }] },
  profileSourcedCLIArgsPolicy: 'Ignore', profileSourcedEnvVarsPolicy: 'Ignore', ...extra,
});

const offering = (access: { name: string; server: string }[], credential: { name: string; server: string }[] = []): ClusterProfile => ({
  metadata: { name: 'eu', namespace: NS },
  status: {
    accessProviders: access.map((a) => ({ name: a.name, cluster: { server: a.server } })),
    credentialProviders: credential.map((a) => ({ name: a.name, cluster: { server: a.server } })),
  },
});

describe('chooseAccessProvider', () => {
  it('takes the first of the consumer\'s providers, in its order, that the profile offers', () => {
    const p = offering([{ name: 'a', server: 'https://a' }, { name: 'b', server: 'https://b' }]);
    const got = chooseAccessProvider(p, [exec('c'), exec('b'), exec('a')]);
    assert.equal(got.provider.name, 'b');
    assert.equal(got.access.cluster!.server, 'https://b');
  });

  it('reads the deprecated credentialProviders, and prefers accessProviders of the same name', () => {
    assert.equal(chooseAccessProvider(offering([], [{ name: 'a', server: 'https://old' }]), [exec('a')]).access.cluster!.server, 'https://old');
    const both = offering([{ name: 'a', server: 'https://new' }], [{ name: 'a', server: 'https://old' }]);
    assert.equal(chooseAccessProvider(both, [exec('a')]).access.cluster!.server, 'https://new');
  });

  it('names what the profile offers and what clusterlet uses when nothing matches', () => {
    assert.throws(() => chooseAccessProvider(offering([{ name: 'oidc', server: 'https://x' }]), [builtin]),
      { reason: 'NoAccessProvider', message: /\(oidc\).*\(clusterlet uses: kubeconfig-secretreader\)/ });
    assert.throws(() => chooseAccessProvider(offering([]), [builtin]), { message: /lists no access providers/ });
  });
});

describe('execUser', () => {
  const cluster = { server: 'https://x', extensions: [
    { name: 'clusterprofiles.multicluster.x-k8s.io/exec/additional-args', extension: ['--cluster=eu'] },
    { name: 'clusterprofiles.multicluster.x-k8s.io/exec/additional-envs', extension: { X: 'profile', Y: 'y' } },
  ] };
  const env = (u: Record<string, unknown>) => Object.fromEntries(((u.exec as { env: { name: string; value: string }[] }).env).map((e) => [e.name, e.value]));

  it('ignores the profile\'s additional args and env by default (the provider file decides), never interactive', () => {
    const u = execUser(exec('p'), cluster);
    assert.deepEqual((u.exec as { args: string[] }).args, ['--a']);
    assert.deepEqual(env(u), { X: 'own' });
    assert.equal((u.exec as { interactiveMode: string }).interactiveMode, 'Never');
  });

  it('appends args with Append; AppendIfNotExists keeps the file\'s env values, Replace takes the profile\'s', () => {
    const u = execUser(exec('p', { profileSourcedCLIArgsPolicy: 'Append', profileSourcedEnvVarsPolicy: 'AppendIfNotExists' }), cluster);
    assert.deepEqual((u.exec as { args: string[] }).args, ['--a', '--cluster=eu']);
    assert.deepEqual(env(u), { X: 'own', Y: 'y' });
    assert.deepEqual(env(execUser(exec('p', { profileSourcedEnvVarsPolicy: 'Replace' }), cluster)), { X: 'profile', Y: 'y' });
  });

  it('AppendIfNotExists keeps clusterlet\'s own environment too; no policy lets a profile set PATH, NODE_OPTIONS, LD_*', () => {
    const withEnv = (extension: Record<string, string>) => ({ server: 'https://x', extensions: [
      { name: 'clusterprofiles.multicluster.x-k8s.io/exec/additional-envs', extension }] });
    assert.ok(process.env.HOME, 'the test runs with HOME set');
    assert.deepEqual(env(execUser(exec('p', { profileSourcedEnvVarsPolicy: 'AppendIfNotExists' }), withEnv({ HOME: '/tmp/x', Y: 'y' }))),
      { X: 'own', Y: 'y' });
    for (const name of ['PATH', 'NODE_OPTIONS', 'LD_PRELOAD']) {
      for (const policy of ['AppendIfNotExists', 'Replace'] as const) {
        assert.throws(() => execUser(exec('p', { profileSourcedEnvVarsPolicy: policy }), withEnv({ [name]: '/tmp/evil' })),
          { reason: 'InvalidAccessProvider', message: new RegExp(`may not set ${name}`) });
      }
    }
  });
});

describe('profileAccessSource', () => {
  const secrets = fakeSecrets({ [`${NS}/eu-kubeconfig`]: { value: kubeconfigText('s3cret') } });

  it('built-in kubeconfig-secretreader: the profile\'s server with the Secret\'s user', async () => {
    const src = profileAccessSource({ namespace: NS, name: 'eu' }, { host: secrets, providers: [builtin], profile: () => profile('eu') });
    const access = await src.read();
    assert.equal(access.server, 'https://eu.example:6443');
    assert.deepEqual(await access.credentials(), { token: 's3cret' });
    assert.match(access.source, /ClusterProfile fleet\/eu \(access provider kubeconfig-secretreader\)/);
  });

  it('a new token in the Secret is a new access (the member\'s watcher moves its client to it)', async () => {
    const data = { value: kubeconfigText('one') };
    const src = profileAccessSource({ namespace: NS, name: 'eu' },
      { host: fakeSecrets({ [`${NS}/eu-kubeconfig`]: data }), providers: [builtin], profile: () => profile('eu') });
    const first = (await src.read()).digest;
    assert.equal((await src.read()).digest, first);
    data.value = kubeconfigText('two');
    assert.notEqual((await src.read()).digest, first);
  });

  it('says what is missing: the Secret, its key, the extension, credentials of the user; refuses exec in the Secret', async () => {
    const read = (p: ClusterProfile, s = secrets) => profileAccessSource({ namespace: NS, name: 'eu' },
      { host: s, providers: [builtin], profile: () => p }).read();
    await assert.rejects(read(profile('eu'), fakeSecrets({})), { reason: 'CredentialsUnavailable', message: /Secret fleet\/eu-kubeconfig: .*not found/ });
    await assert.rejects(read(profile('eu'), fakeSecrets({ [`${NS}/eu-kubeconfig`]: { other: 'x' } })), { message: /has no key "value"/ });
    const noExt = profile('eu');
    delete noExt.status!.accessProviders![0].cluster!.extensions;
    await assert.rejects(read(noExt), { reason: 'InvalidAccessProvider', message: /must give the kubeconfig Secret's name and key/ });
    const execKubeconfig = JSON.stringify({ 'current-context': 'c', contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }],
      users: [{ name: 'u', user: { exec: { command: '/bin/evil', apiVersion: 'client.authentication.k8s.io/v1' } } }] });
    await assert.rejects(read(profile('eu'), fakeSecrets({ [`${NS}/eu-kubeconfig`]: { value: execKubeconfig } })),
      { reason: 'CredentialsUnavailable', message: /neither a token nor client-certificate-data/ });
    const caFile = profile('eu');
    caFile.status!.accessProviders![0].cluster!['certificate-authority'] = '/etc/shadow';
    await assert.rejects(read(caFile), { reason: 'InvalidAccessProvider', message: /certificate-authority \(a file path\)/ });
    await assert.rejects(profileAccessSource({ namespace: NS, name: 'eu' }, { host: secrets, providers: [builtin], profile: () => undefined }).read(),
      { message: /is gone/ });
  });

  it('refuses a kubeconfig Secret in another namespace than the profile\'s (its credentials would go to the profile\'s server)', async () => {
    const elsewhere = profile('eu');
    const exts = elsewhere.status!.accessProviders![0].cluster!.extensions as { name: string; extension: object }[];
    const ext = exts.find((e) => e.name === 'client.authentication.k8s.io/exec')!;
    ext.extension = { ...ext.extension, namespace: 'kube-system' };
    const s = fakeSecrets({ 'kube-system/eu-kubeconfig': { value: kubeconfigText('admin') } });
    await assert.rejects(profileAccessSource({ namespace: NS, name: 'eu' }, { host: s, providers: [builtin], profile: () => elsewhere }).read(),
      { reason: 'InvalidAccessProvider', message: /must be in the profile's namespace "fleet", not "kube-system"/ });
  });

  it('an exec provider runs its plugin with the profile\'s exec extension as spec.cluster.config', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cp-exec-'));
    const plugin = join(dir, 'plugin.sh');
    // Echoes the cluster config it was given back as the token.
    writeFileSync(plugin, '#!/bin/sh\nname=$(printf %s "$KUBERNETES_EXEC_INFO" | sed -n \'s/.*"clusterName":"\\([a-z0-9-]*\\)".*/\\1/p\')\n'
      + 'printf \'{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"tok-%s"}}\' "$name"\n');
    chmodSync(plugin, 0o755);
    const p = profile('eu', { providers: ['secretreader'] });
    p.status!.accessProviders![0].cluster!.extensions = [{ name: 'client.authentication.k8s.io/exec', extension: { clusterName: 'spoke-1' } }];
    const provider: AccessProviderConfig = { ...exec('secretreader'),
      execConfig: { apiVersion: 'client.authentication.k8s.io/v1', command: plugin, provideClusterInfo: true } };
    const access = await profileAccessSource({ namespace: NS, name: 'eu' }, { host: fakeSecrets({}), providers: [builtin, provider],
      profile: () => p }).read();
    assert.equal(access.server, 'https://eu.example:6443');
    assert.deepEqual(await access.credentials(), { token: 'tok-spoke-1' });
  });
});
