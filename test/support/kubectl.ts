import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import type { LocalCluster } from '../harness/cluster.ts';
import { harness } from './env.ts';

const run = promisify(execFile);

/** Runs kubectl against a cluster of the harness, as a user would; resolves with stdout. */
export async function kubectl(cluster: LocalCluster | string, ...args: string[]): Promise<string> {
  const kubeconfig = typeof cluster === 'string' ? cluster : cluster.kubeconfig;
  const { stdout } = await run(harness().bin.kubectl, ['--kubeconfig', kubeconfig, ...args], { maxBuffer: 64 << 20 });
  return stdout;
}

/** kubectl against the host, with `env` added to its environment (KUBECTL_* switches). */
function spawnKubectl(args: string[], env: NodeJS.ProcessEnv): ChildProcess {
  return spawn(harness().bin.kubectl, ['--kubeconfig', harness().host.kubeconfig, ...args],
    { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...env } });
}

export interface KubectlStream {
  child: ChildProcess;
  out: () => string;
  /** Resolves once the output (stdout and stderr) matches `re`. */
  waitFor(re: RegExp, ms?: number): Promise<string>;
}

/** A long-running kubectl against the host whose output is collected. */
export function kubectlStream(args: string[], env: NodeJS.ProcessEnv = {}): KubectlStream {
  const child = spawnKubectl(args, env);
  let out = '';
  const waiters: (() => void)[] = [];
  const onData = (d: Buffer): void => { out += d.toString(); for (const w of waiters) w(); };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  return {
    child, out: () => out,
    waitFor(re, ms = 30_000) {
      return new Promise((resolve, reject) => {
        const check = (): void => {
          if (re.test(out)) { cleanup(); resolve(out); }
        };
        const timer = setTimeout(() => { cleanup(); reject(new Error(`timed out waiting for ${re} in kubectl ${args.join(' ')}; got:\n${out}`)); }, ms);
        const onExit = (): void => { check(); if (!re.test(out)) { cleanup(); reject(new Error(`kubectl exited before ${re}; got:\n${out}`)); } };
        const cleanup = (): void => { clearTimeout(timer); waiters.splice(waiters.indexOf(check), 1); child.off('exit', onExit); };
        waiters.push(check);
        child.once('exit', onExit);
        check();
      });
    },
  };
}

/** kubectl against the host with `input` on stdin; resolves with its exit code and output. */
export function kubectlRun(args: string[], input?: string | Buffer, timeoutMs = 30_000, env: NodeJS.ProcessEnv = {}):
  Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawnKubectl(args, env);
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: Buffer) => { stdout += d.toString(); });
    child.stderr!.on('data', (d: Buffer) => { stderr += d.toString(); });
    const timer = setTimeout(() => { child.kill(); reject(new Error(`kubectl ${args.join(' ')}: no exit within ${timeoutMs} ms; out: ${stdout} err: ${stderr}`)); }, timeoutMs);
    child.on('exit', (code) => { clearTimeout(timer); resolve({ code, stdout, stderr }); });
    child.stdin!.end(input ?? '');
  });
}
