// `make e2e-local`: the e2e suite (e2e/e2e.test.ts) on real nodes of this machine, as e2e/kind/run-all.sh runs it
// on kind. Local host and member control planes, each with one real node (test/harness/realnode.ts: containerd,
// kubelet, kube-proxy) and no KWOK node; the images hack/build-images.sh builds (clusterlet's from the Dockerfile,
// busybox, pause) loaded into both nodes; clusterlet installed as a user installs it: `kubectl apply -k
// manifests/member` and mint-kubeconfig.sh in the member, the kubeconfig in a Secret, `helm install` of
// charts/clusterlet in the host (2 replicas, in-cluster credentials). Then the suite, and everything stopped and
// removed, also on failure or Ctrl-C (SIGINT and SIGTERM are handled from the start: one during the image build or
// the clusters' start stops that and what started). Needs root (network namespaces, cgroups, mounts) and cgroup v1
// or the hybrid layout (checked first); hack/ensure-realnode-deps.sh installs the Debian packages (containerd, runc,
// containernetworking-plugins, busybox-static, buildah, iptables).
//   E2E_KEEP=1   keep the clusters running after the suite, until Ctrl-C (kubeconfigs printed)
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Harness, HOST_REAL_NODE } from '../../test/harness/harness.ts';
import { ensureBinaries } from '../../test/harness/binaries.ts';
import { realNodeCgroups } from '../../test/harness/realnode.ts';
import { BUSYBOX_IMAGE } from '../../test/harness/images.ts';
import { interruptible } from '../../test/harness/interrupt.ts';
import { LOCK_DIR, LOCK_NAME } from '../../test/harness/machinelock.ts';

// Ctrl-C or SIGTERM at any point: what is running is stopped (a command, the harness's start, the suite), then the
// harness, then the process exits with 130 or 143. A second signal says it is still stopping; a third exits at once
// (130, or 143 for SIGTERM), saying what may be left, for a stop that hangs.
const interrupt = interruptible((l) => { process.stderr.write(`[e2e-local] ${l}\n`); }, () => leftover());
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => { interrupt.handle(sig); });

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const RELEASE = 'clusterlet';
const NAMESPACE = 'clusterlet';
const TAG = process.env.IMAGE_TAG ?? 'dev';
/** The same image under another tag on the host's node: the suite's chart upgrade moves to it. */
const UPGRADE_TAG = `${TAG}-upgrade`;
const say = (s: string): void => { process.stderr.write(`[e2e-local] ${s}\n`); };
const t0 = Date.now();
const elapsed = (): string => `${((Date.now() - t0) / 1000).toFixed(0)} s`;

/**
 * Runs a command to its end and resolves with its stdout; in a process group of its own, which an interruption
 * stops (SIGTERM, so that hack/build-images.sh's buildah goes too).
 */
async function sh(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<string> {
  interrupt.signal.throwIfAborted();
  const child = spawn(cmd, args, { env, cwd: ROOT, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => { stdout += c; });
  child.stderr.setEncoding('utf8').on('data', (c: string) => { stderr += c; });
  const stop = (): void => { try { process.kill(-child.pid!, 'SIGTERM'); } catch { /* gone */ } };
  interrupt.signal.addEventListener('abort', stop);
  const [code] = await once(child, 'close').finally(() => interrupt.signal.removeEventListener('abort', stop)) as [number | null];
  interrupt.signal.throwIfAborted();
  if (code !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${code}):\n${stderr || stdout}`);
  return stdout;
}

let h: Harness | undefined;
let suite: ChildProcess | undefined;
/** What may be left when the process exits before the harness has stopped, and what undoes it. */
function leftover(): string {
  if (!h) return 'the image build\'s buildah containers, or the clusters\' processes if they were starting (the next harness run '
    + 'with this TMPDIR stops what its run directory records)';
  return `processes, cgroups, mounts, network namespaces, routes and the kernel tunables of the real nodes, recorded in ${h.dir}, `
    + `and the machine lock ${join(LOCK_DIR, LOCK_NAME)}: the next harness run with this TMPDIR (make e2e-local again) undoes them `
    + '(test/harness/reaper.ts; its log says what it leaves)';
}
// The suite runs in a process group of its own (the test runner's processes for its files with it): stopped as one.
interrupt.signal.addEventListener('abort', () => { try { if (suite?.pid) process.kill(-suite.pid, 'SIGTERM'); } catch { /* gone */ } });
let code = 1;
try {
  // Before anything is built or touched.
  const cgroups = await realNodeCgroups();
  if (cgroups) throw new Error(cgroups);
  say('building the images (clusterlet from the Dockerfile, busybox, pause)');
  const imageDir = (await sh('bash', [join(ROOT, 'hack/build-images.sh')])).trim().split('\n').pop()!;
  const images = ['pause.tar', 'busybox.tar', 'clusterlet.tar'].map((f) => join(imageDir, f));
  say(`images ready (${elapsed()}): ${imageDir}`);
  const bin = await ensureBinaries();
  const helm = (await sh('bash', [join(ROOT, 'hack/build-helm.sh')])).trim().split('\n').pop()!;

  h = await Harness.start({ realNodes: { images }, kwokNodes: false, log: (l) => say(l), signal: interrupt.signal });
  const { host, member, hostNode, dir } = h;
  say(`clusters and real nodes ready (${elapsed()})`);
  const env = { ...process.env, PATH: `${bin.dir}:${process.env.PATH}` };
  await sh('ctr', ['--address', hostNode.containerdSocket, '-n', 'k8s.io', 'images', 'tag',
    `docker.io/library/clusterlet:${TAG}`, `docker.io/library/clusterlet:${UPGRADE_TAG}`]);
  const kubectl = (kubeconfig: string, ...args: string[]) => sh(bin.kubectl, ['--kubeconfig', kubeconfig, ...args], env);

  // The member side, as docs/install.md says: clusterlet's identity there, and a kubeconfig for it that reaches the member
  // API server from the host's pods.
  await kubectl(member.kubeconfig, 'apply', '-k', join(ROOT, 'manifests/member'));
  const memberKubeconfig = join(dir, 'member-for-host.kubeconfig');
  await sh('bash', [join(ROOT, 'manifests/member/mint-kubeconfig.sh'), '--kubeconfig', member.kubeconfig,
    '--server', member.podServer, '--output', memberKubeconfig], env);

  // The host side: the Secret and the chart.
  await kubectl(host.kubeconfig, 'create', 'namespace', NAMESPACE);
  await kubectl(host.kubeconfig, '-n', NAMESPACE, 'create', 'secret', 'generic', 'clusterlet-member-kubeconfig',
    `--from-file=kubeconfig=${memberKubeconfig}`);
  const values = join(dir, 'values.yaml');
  await writeFile(values, `image:
  repository: docker.io/library/clusterlet
  tag: ${TAG}
  pullPolicy: Never
replicaCount: 2
nodeSelector:
  kubernetes.io/hostname: ${HOST_REAL_NODE}
hostAPI:
  server: ${host.podServer}
`);
  await sh(helm, ['--kubeconfig', host.kubeconfig, 'install', RELEASE, join(ROOT, 'charts/clusterlet'), '--namespace', NAMESPACE,
    '--values', values, '--wait', '--timeout', '180s'], env).catch(async (err: Error) => {
    if (interrupt.signal.aborted) throw err;
    const pods = await kubectl(host.kubeconfig, '-n', NAMESPACE, 'describe', 'pods').catch((e: Error) => e.message);
    const logs = await kubectl(host.kubeconfig, '-n', NAMESPACE, 'logs', '-l', 'app.kubernetes.io/name=clusterlet', '--tail=50')
      .catch((e: Error) => e.message);
    throw new Error(`${err.message}\n${pods}\n${logs}`);
  });
  // The release's pods run for real, on the host's real node, and are Ready.
  const pods = JSON.parse(await kubectl(host.kubeconfig, '-n', NAMESPACE, 'get', 'pods', '-l', 'app.kubernetes.io/name=clusterlet',
    '-o', 'json')) as { items: { metadata: { name: string }; spec: { nodeName?: string }; status: { phase?: string;
    conditions?: { type: string; status: string }[] } }[] };
  const ready = pods.items.filter((p) => p.spec.nodeName === HOST_REAL_NODE && p.status.phase === 'Running'
    && p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
  if (ready.length !== 2) throw new Error(`want 2 clusterlet pods Running and Ready on ${HOST_REAL_NODE}, have ${JSON.stringify(pods.items.map((p) => [p.metadata.name, p.spec.nodeName, p.status.phase]))}`);
  say(`clusterlet installed with helm: ${ready.map((p) => p.metadata.name).join(', ')} Running and Ready on ${HOST_REAL_NODE} (${elapsed()})`);

  interrupt.signal.throwIfAborted();
  suite = spawn(process.execPath, ['--test', '--test-reporter=spec', join(ROOT, 'e2e/e2e.test.ts')], {
    stdio: 'inherit', cwd: ROOT, detached: true,
    env: { ...env, E2E_HOST_KUBECONFIG: host.kubeconfig, E2E_MEMBER_KUBECONFIG: member.kubeconfig,
      E2E_KUBECTL: bin.kubectl, E2E_EXPECT_LOGS: '1', E2E_REAL_NODES: '1', E2E_HELM: helm, E2E_IMAGE: BUSYBOX_IMAGE,
      E2E_RELEASE: `${NAMESPACE}/${RELEASE}`, E2E_UPGRADE_TAG: UPGRADE_TAG, E2E_HOST_API: '1',
      E2E_NODE_IMAGE: `docker.io/library/clusterlet:${TAG}` },
  });
  const [exit] = await once(suite, 'exit') as [number | null];
  code = exit ?? 1;
  say(`suite finished with ${code} (${elapsed()})`);
  if (process.env.E2E_KEEP === '1' && !interrupt.signal.aborted) {
    say(`keeping the clusters: host ${host.kubeconfig}, member ${member.kubeconfig}; Ctrl-C stops them`);
    await once(interrupt.signal, 'abort');
  }
} catch (err) {
  if (!interrupt.signal.aborted) {
    say((err as Error).stack ?? String(err));
    if (h) say(h.realNodes.map((n) => n.logsTail(30)).join('\n'));
  }
}
await h?.stop();
process.exit(interrupt.code() ?? code);
