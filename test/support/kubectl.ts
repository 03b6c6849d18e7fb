import { execFile } from 'node:child_process';
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
