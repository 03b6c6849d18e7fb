// Paths of the control-plane binaries, built once per machine by hack/build-k8s.sh into a cache keyed by version.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface Binaries {
  dir: string;
  kubeApiserver: string;
  kubeControllerManager: string;
  kubeScheduler: string;
  kubectl: string;
  etcd: string;
  kwok: string;
}

const SCRIPT = fileURLToPath(new URL('../../hack/build-k8s.sh', import.meta.url));
let cached: Promise<Binaries> | undefined;

/** Builds what is missing (progress on stderr) and resolves with the binaries' paths. */
export function ensureBinaries(): Promise<Binaries> {
  cached ??= new Promise((resolve, reject) => {
    const child = spawn('bash', [SCRIPT], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => { out += c; });
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`hack/build-k8s.sh exited with ${code}`));
      const dir = out.trim().split('\n').pop() ?? '';
      resolve({
        dir,
        kubeApiserver: join(dir, 'kube-apiserver'),
        kubeControllerManager: join(dir, 'kube-controller-manager'),
        kubeScheduler: join(dir, 'kube-scheduler'),
        kubectl: join(dir, 'kubectl'),
        etcd: join(dir, 'etcd'),
        kwok: join(dir, 'kwok'),
      });
    });
  });
  return cached;
}
