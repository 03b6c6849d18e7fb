// `make e2e-local`: the e2e suite (e2e/e2e.test.ts) on real nodes of this machine, as e2e/kind/run-all.sh runs it
// on kind. Local host and member control planes, each with one real node (test/harness/realnode.ts: containerd,
// kubelet, kube-proxy) and no KWOK node; the images hack/build-images.sh builds (clusterlet's from the Dockerfile,
// busybox, pause) loaded into both nodes; clusterlet installed as a user installs it: `kubectl apply -k
// manifests/member` and mint-kubeconfig.sh in the member, the kubeconfig in a Secret, `helm install` of
// charts/clusterlet in the host (2 replicas, in-cluster credentials). Then the suite, and everything stopped and
// removed, also on failure or Ctrl-C. Needs root (network namespaces, cgroups, mounts); .ci/run installs the
// Debian packages (containerd, runc, containernetworking-plugins, busybox-static, buildah, iptables).
//   E2E_KEEP=1   keep the clusters running after the suite, until Ctrl-C (kubeconfigs printed)
import { execFile, spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Harness, HOST_REAL_NODE } from '../../test/harness/harness.ts';
import { ensureBinaries } from '../../test/harness/binaries.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const RELEASE = 'clusterlet';
const NAMESPACE = 'clusterlet';
const TAG = process.env.IMAGE_TAG ?? 'dev';
/** The same image under another tag on the host's node: the suite's chart upgrade moves to it. */
const UPGRADE_TAG = `${TAG}-upgrade`;
const say = (s: string): void => { process.stderr.write(`[e2e-local] ${s}\n`); };
const t0 = Date.now();
const elapsed = (): string => `${((Date.now() - t0) / 1000).toFixed(0)} s`;

async function sh(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<string> {
  try {
    const { stdout } = await run(cmd, args, { maxBuffer: 64 << 20, env, cwd: ROOT });
    return stdout;
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${cmd} ${args.join(' ')} failed:\n${e.stderr || e.stdout || e.message}`);
  }
}

say('building the images (clusterlet from the Dockerfile, busybox, pause)');
const imageDir = (await sh('bash', [join(ROOT, 'hack/build-images.sh')])).trim().split('\n').pop()!;
const images = ['pause.tar', 'busybox.tar', 'clusterlet.tar'].map((f) => join(imageDir, f));
say(`images ready (${elapsed()}): ${imageDir}`);
const bin = await ensureBinaries();
const helm = (await sh('bash', [join(ROOT, 'hack/build-helm.sh')])).trim().split('\n').pop()!;

const h = await Harness.start({ realNodes: { images }, kwokNodes: false, log: (l) => say(l) });
let stopping = false;
async function stop(code: number): Promise<never> {
  if (!stopping) {
    stopping = true;
    await h.stop();
  }
  process.exit(code);
}
// A stop that fails says why and exits 1.
const failed = (err: unknown): never => { console.error('stopping failed:', err); process.exit(1); };
process.on('SIGINT', () => { stop(130).catch(failed); });
process.on('SIGTERM', () => { stop(143).catch(failed); });

let code = 1;
try {
  say(`clusters and real nodes ready (${elapsed()})`);
  const env = { ...process.env, PATH: `${bin.dir}:${process.env.PATH}` };
  await sh('ctr', ['--address', h.hostNode.containerdSocket, '-n', 'k8s.io', 'images', 'tag',
    `docker.io/library/clusterlet:${TAG}`, `docker.io/library/clusterlet:${UPGRADE_TAG}`]);
  const kubectl = (kubeconfig: string, ...args: string[]) => sh(bin.kubectl, ['--kubeconfig', kubeconfig, ...args], env);

  // The member side, as docs/install.md says: clusterlet's identity there, and a kubeconfig for it that reaches the member
  // API server from the host's pods.
  await kubectl(h.member.kubeconfig, 'apply', '-k', join(ROOT, 'manifests/member'));
  const memberKubeconfig = join(h.dir, 'member-for-host.kubeconfig');
  await sh('bash', [join(ROOT, 'manifests/member/mint-kubeconfig.sh'), '--kubeconfig', h.member.kubeconfig,
    '--server', h.member.podServer, '--output', memberKubeconfig], env);

  // The host side: the Secret and the chart.
  await kubectl(h.host.kubeconfig, 'create', 'namespace', NAMESPACE);
  await kubectl(h.host.kubeconfig, '-n', NAMESPACE, 'create', 'secret', 'generic', 'clusterlet-member-kubeconfig',
    `--from-file=kubeconfig=${memberKubeconfig}`);
  const values = join(h.dir, 'values.yaml');
  await writeFile(values, `image:
  repository: docker.io/library/clusterlet
  tag: ${TAG}
  pullPolicy: Never
replicaCount: 2
nodeSelector:
  kubernetes.io/hostname: ${HOST_REAL_NODE}
hostAPI:
  server: ${h.host.podServer}
`);
  await sh(helm, ['--kubeconfig', h.host.kubeconfig, 'install', RELEASE, join(ROOT, 'charts/clusterlet'), '--namespace', NAMESPACE,
    '--values', values, '--wait', '--timeout', '180s'], env).catch(async (err: Error) => {
    const pods = await kubectl(h.host.kubeconfig, '-n', NAMESPACE, 'describe', 'pods').catch((e: Error) => e.message);
    const logs = await kubectl(h.host.kubeconfig, '-n', NAMESPACE, 'logs', '-l', 'app.kubernetes.io/name=clusterlet', '--tail=50')
      .catch((e: Error) => e.message);
    throw new Error(`${err.message}\n${pods}\n${logs}`);
  });
  // The release's pods run for real, on the host's real node, and are Ready.
  const pods = JSON.parse(await kubectl(h.host.kubeconfig, '-n', NAMESPACE, 'get', 'pods', '-l', 'app.kubernetes.io/name=clusterlet',
    '-o', 'json')) as { items: { metadata: { name: string }; spec: { nodeName?: string }; status: { phase?: string;
    conditions?: { type: string; status: string }[] } }[] };
  const ready = pods.items.filter((p) => p.spec.nodeName === HOST_REAL_NODE && p.status.phase === 'Running'
    && p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
  if (ready.length !== 2) throw new Error(`want 2 clusterlet pods Running and Ready on ${HOST_REAL_NODE}, have ${JSON.stringify(pods.items.map((p) => [p.metadata.name, p.spec.nodeName, p.status.phase]))}`);
  say(`clusterlet installed with helm: ${ready.map((p) => p.metadata.name).join(', ')} Running and Ready on ${HOST_REAL_NODE} (${elapsed()})`);

  code = await new Promise<number>((resolve) => {
    const child = spawn(process.execPath, ['--test', '--test-reporter=spec', join(ROOT, 'e2e/e2e.test.ts')], {
      stdio: 'inherit', cwd: ROOT,
      env: { ...env, E2E_HOST_KUBECONFIG: h.host.kubeconfig, E2E_MEMBER_KUBECONFIG: h.member.kubeconfig,
        E2E_KUBECTL: bin.kubectl, E2E_EXPECT_LOGS: '1', E2E_REAL_NODES: '1', E2E_HELM: helm,
        E2E_RELEASE: `${NAMESPACE}/${RELEASE}`, E2E_UPGRADE_TAG: UPGRADE_TAG, E2E_HOST_API: '1',
        E2E_NODE_IMAGE: `docker.io/library/clusterlet:${TAG}` },
    });
    child.on('exit', (c) => resolve(c ?? 1));
  });
  say(`suite finished with ${code} (${elapsed()})`);
  if (process.env.E2E_KEEP === '1') {
    say(`keeping the clusters: host ${h.host.kubeconfig}, member ${h.member.kubeconfig}; Ctrl-C stops them`);
    await new Promise(() => undefined);
  }
} catch (err) {
  say((err as Error).stack ?? String(err));
  say(h.realNodes.map((n) => n.logsTail(30)).join('\n'));
}
await stop(code);
