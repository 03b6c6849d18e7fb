// hack/ensure-realnode-deps.sh's policy-rc.d, which keeps services from starting while it installs packages: run
// with fake id, stat and apt-get in a temp dir of this test's own (the policy-rc.d there too), interrupted during
// the install.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SCRIPT = fileURLToPath(new URL('../../../hack/ensure-realnode-deps.sh', import.meta.url));

let top: string;
before(async () => { top = await mkdtemp(join(tmpdir(), 'realnode-deps-test-')); });
after(async () => { await rm(top, { recursive: true, force: true }); });

/** A PATH of fakes: root, a cgroup v1 machine, an apt-get whose install marks that it runs and then waits. */
async function fakeMachine(at: string): Promise<string> {
  const bin = join(at, 'bin');
  await mkdir(bin);
  const fake = async (name: string, body: string): Promise<void> => writeFile(join(bin, name), `#!/bin/bash\n${body}\n`, { mode: 0o755 });
  await fake('id', 'echo 0');
  await fake('stat', 'echo tmpfs');
  await fake('apt-get', `[ "$1" = install ] || exit 0; : >"${join(at, 'installing')}"; exec sleep 30`);
  for (const tool of ['chmod', 'rm', 'grep', 'sleep']) await symlink(`/bin/${tool}`, join(bin, tool));
  return bin;
}

for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  test(`the policy-rc.d the script writes is removed when it is stopped by ${sig} during the install, and the log names it`, async () => {
    const at = await mkdtemp(join(top, 'run-'));
    const bin = await fakeMachine(at);
    const policy = join(at, 'policy-rc.d');
    const child = spawn('/bin/bash', [SCRIPT], { detached: true, stdio: ['ignore', 'ignore', 'pipe'],
      env: { PATH: bin, REALNODE_DEPS_POLICY_RC_D: policy } });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (c: string) => { stderr += c; });
    const exited = once(child, 'exit');
    try {
      for (let i = 0; i < 200 && !existsSync(join(at, 'installing')); i++) await new Promise((r) => setTimeout(r, 25));
      assert.equal(existsSync(policy), true, stderr);
      assert.match(stderr, new RegExp(`installing .*no service starts meanwhile: ${policy}, removed when this script ends`));
      // As Ctrl-C or a terminated make sends it: to the script and the apt-get it waits for.
      process.kill(-child.pid!, sig);
      await exited;
      assert.equal(existsSync(policy), false, `${policy} left behind; the script said:\n${stderr}`);
    } finally {
      try { process.kill(-child.pid!, 'SIGKILL'); } catch { /* gone */ }
    }
  });
}
