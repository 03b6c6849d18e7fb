// What the demo and the docs tell a user to run works as printed, on the local clusters with a clusterlet between
// them: each command `make demo` suggests (hack/demo.ts demoHints) shows what its text says it shows, and each command
// block of README.md and docs/*.md marked `run:` (docs/testing.md, "Command blocks in the docs") exits 0 and prints
// something wherever it reads.
import { describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, readdirSync, symlinkSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { BatchV1Api, KubeConfig } from '@kubernetes/client-node';
import { clusterID, harness, uniqueName, withSuiteClusterlet } from '../support/env.ts';
import { pollUntil } from '../harness/net.ts';
import { toKubeError } from '../../src/kube/errors.ts';
import type { ClusterClient } from '../../src/kube/client.ts';
import { commandsOf, docBlocks, promisesOutput, type RunTarget } from '../support/docs.ts';
import { ROOT } from '../support/manifests.ts';
import { DEMO_MEMBER, DEMO_NODE, createDemoWorkload, demoHints, waitDemoWorkload } from '../../hack/demo.ts';

interface Ran { command: string; code: number | null; stdout: string; stderr: string }

/** Runs `script` with bash in `cwd`; resolves with its output, or rejects when it runs past `timeoutMs`. */
function bash(script: string, cwd: string, env: NodeJS.ProcessEnv, timeoutMs = 120_000): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', script], { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => { stdout += c; });
    child.stderr.setEncoding('utf8').on('data', (c: string) => { stderr += c; });
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`no exit within ${timeoutMs} ms:\n${script}\n${stdout}${stderr}`)); }, timeoutMs);
    child.on('error', (err) => { clearTimeout(timer); reject(err); });
    child.on('exit', (code) => { clearTimeout(timer); resolve({ command: script, code, stdout, stderr }); });
  });
}

const kubectlPath = (): string => `${dirname(harness().bin.kubectl)}:${process.env.PATH ?? ''}`;

async function deleteNamespace(c: ClusterClient, name: string): Promise<void> {
  await c.core.deleteNamespace({ name }).catch((err: unknown) => {
    if (toKubeError(err).kind !== 'NotFound') throw err;
  });
}

/**
 * Where a block runs: a scratch directory that looks like the checkout (its top-level entries linked, so manifests/,
 * charts/ and src/ are where the docs say; files a block writes stay here), holding the admin kubeconfigs under the
 * names the docs give them (host.kubeconfig, member.kubeconfig), and a kubeconfig for $KUBECONFIG with contexts host,
 * member and eu-1 (the docs' example member: the local member), the current one the mark's.
 */
function scratch(target: RunTarget): { dir: string; env: NodeJS.ProcessEnv } {
  const h = harness();
  const dir = mkdtempSync(join(h.dir, 'docs-'));
  for (const entry of readdirSync(ROOT)) if (entry !== '.git') symlinkSync(join(ROOT, entry), join(dir, entry));
  copyFileSync(h.host.kubeconfig, join(dir, 'host.kubeconfig'));
  copyFileSync(h.member.kubeconfig, join(dir, 'member.kubeconfig'));
  const load = (path: string): KubeConfig => { const kc = new KubeConfig(); kc.loadFromFile(path); return kc; };
  const [host, member] = [load(h.host.kubeconfig), load(h.member.kubeconfig)];
  const user = (kc: KubeConfig, name: string): KubeConfig['users'][number] => ({ ...kc.getCurrentUser()!, name });
  const merged = new KubeConfig();
  merged.loadFromOptions({
    clusters: [host.getCurrentCluster()!, member.getCurrentCluster()!],
    users: [user(host, 'host-admin'), user(member, 'member-admin')],
    contexts: [
      { name: 'host', cluster: host.getCurrentCluster()!.name, user: 'host-admin' },
      ...['member', 'eu-1'].map((name) => ({ name, cluster: member.getCurrentCluster()!.name, user: 'member-admin' })),
    ],
    // print: no cluster at all.
    currentContext: target === 'print' ? '' : target,
  });
  mkdirSync(join(dir, '.docs'));
  const kubeconfig = join(dir, '.docs', 'kubeconfig');
  writeFileSync(kubeconfig, target === 'print' ? 'apiVersion: v1\nkind: Config\n' : merged.exportConfig(), { mode: 0o600 });
  return { dir, env: { KUBECONFIG: kubeconfig, PATH: kubectlPath() } };
}

/**
 * Runs a block's commands in one bash, in order, as a user pastes them: each one's output apart, stopping at the first
 * that fails. Resolves with what each command that ran did.
 */
async function runBlock(commands: string[], target: RunTarget): Promise<Ran[]> {
  const { dir, env } = scratch(target);
  const out = join(dir, '.docs');
  const script = ['set -o pipefail', ...commands.map((c, i) =>
    `{ ${c}\n} >"${out}/${i}.out" 2>"${out}/${i}.err" </dev/null\necho $? >"${out}/${i}.rc"\n[ "$(cat "${out}/${i}.rc")" = 0 ] || exit 0`)].join('\n');
  const r = await bash(script, dir, env, 180_000);
  assert.equal(r.code, 0, `bash itself failed: ${r.stderr}`);
  const ran: Ran[] = [];
  commands.forEach((command, i) => {
    let code: string;
    try {
      code = readFileSync(join(out, `${i}.rc`), 'utf8').trim();
    } catch {
      return;
    }
    ran.push({ command, code: Number(code), stdout: readFileSync(join(out, `${i}.out`), 'utf8'), stderr: readFileSync(join(out, `${i}.err`), 'utf8') });
  });
  return ran;
}

describe('what the demo and the docs tell a user to run', () => {
  let host: ClusterClient;
  let member: ClusterClient;
  withSuiteClusterlet((c) => { ({ host, member } = c); });

  it('make demo: each command it suggests shows what it says, on the clusters it started', async (t: TestContext) => {
    const h = harness();
    assert.equal(h.member.name, DEMO_MEMBER, 'the suite\'s clusterlet runs the member the demo names');
    const ns = uniqueName('demo');
    t.after(async () => { await Promise.all([deleteNamespace(host, ns), deleteNamespace(member, ns)]); });
    await createDemoWorkload(h.host.kubeConfig(), ns, DEMO_NODE);
    await waitDemoWorkload(host, member, h.host.kubeConfig().makeApiClient(BatchV1Api), ns);

    const { exports, hints } = demoHints({ kubectl: h.bin.kubectl, hostKubeconfig: h.host.kubeconfig, memberKubeconfig: h.member.kubeconfig,
      namespace: ns, member: DEMO_MEMBER, node: DEMO_NODE, hostID: await clusterID(host) });
    assert.ok(hints.length >= 4);
    for (const hint of hints) {
      // As printed: the exports, then the command. Events reach the proxy a moment after the workload is Ready.
      let tried: Awaited<ReturnType<typeof bash>> | undefined;
      const last = await pollUntil(`"${hint.command}" to show ${hint.says}`, async () => {
        const r = tried = await bash([...exports, hint.command].join('\n'), h.dir, {});
        return r.code === 0 && hint.shows.test(r.stdout) ? r : undefined;
      }, 30_000, 500).catch((err: unknown) => {
        throw new Error(`${(err as Error).message}\nexit ${tried?.code}; stdout:\n${tried?.stdout}\nstderr:\n${tried?.stderr}`);
      });
      assert.match(last.stdout, hint.shows);
    }
  });

  for (const block of docBlocks().blocks) {
    const mark = block.mark;
    if (!mark?.run) continue;
    it(`${block.file}:${block.line} (${mark.target}${mark.namespace ? `, namespace ${mark.namespace}` : ''}) works as printed`, async (t) => {
      if (mark.namespace) {
        const name = mark.namespace;
        await host.core.createNamespace({ body: { metadata: { name, labels: { 'clusterlet.io/test': 'true' } } } });
        t.after(async () => { await deleteNamespace(host, name); });
      }
      const commands = commandsOf(block);
      assert.ok(commands.length > 0, 'a block marked run: holds commands');
      const ran = await runBlock(commands, mark.target);
      const report = (r: Ran): string => `${r.command}\nexit ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`;
      for (const r of ran) {
        assert.equal(r.code, 0, `failed:\n${report(r)}`);
        if (promisesOutput(r.command)) assert.notEqual(r.stdout.trim(), '', `printed nothing:\n${report(r)}`);
      }
      assert.equal(ran.length, commands.length, 'every command ran');
    });
  }
});
