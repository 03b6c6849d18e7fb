// A real node of a local cluster, as kind gives each node a container: its own containerd, kubelet and kube-proxy,
// in a network namespace of its own (testnet.ts) and a mount namespace of its own that holds the node's /run,
// /var/lib and /var/log and a /sys of its network namespace, so two nodes on one machine never see each other's sockets, CNI state, pod
// network namespaces or pod logs. Pods get addresses of the node's pod range from the bridge CNI plugin; the root
// namespace routes that range to the node, so the API server reaches its kubelet and pods, and pods reach every API
// server at its advertised address. The kubelet's cgroups live under a cgroup root of the node's own.
//
// What the node changes outside its namespaces is undone by stopRealNodes()/cleanRealNodes(): its routes (they go
// with the veth pair), its cgroups, the containers' processes, and the kernel tunables every kubelet sets.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readdir, readFile, rmdir, statfs, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CoreV1Api } from '@kubernetes/client-node';
import type { LocalCluster } from './cluster.ts';
import { pollUntil } from './net.ts';
import { startProc, type Proc } from './procs.ts';
import type { TestNetwork } from './testnet.ts';
import { PAUSE_IMAGE } from './images.ts';

const run = promisify(execFile);

/** Label of the harness's real nodes (KWOK's carry type=kwok); clusterlet counts no node with a clusterlet.io/ label. */
export const REAL_NODE_LABEL = 'harness.clusterlet.test/node';

const CGROUP_V1 = '/sys/fs/cgroup';
/** The kernel tunables a kubelet sets when protectKernelDefaults is off (kubelet's setupKernelTunables). */
export const KUBELET_SYSCTLS = ['vm/overcommit_memory', 'vm/panic_on_oom', 'kernel/panic', 'kernel/panic_on_oops',
  'kernel/keys/root_maxkeys', 'kernel/keys/root_maxbytes'];

export interface RealNodeOptions {
  name: string;
  cluster: LocalCluster;
  /** The node's network namespace and veth pair: the kubelet listens on its `peer` address. */
  network: TestNetwork;
  /** The node's pod range, routed to it from the root namespace. */
  podCIDR: string;
  /** The API server as the node reaches it (the cluster's advertised address). */
  apiServer: string;
  /** cgroup (v1) under which the kubelet puts its pods, unique per run and node. */
  cgroupRoot: string;
  /** Image archives to import into the node's containerd (`ctr images import`). */
  images: string[];
  binDir: string;
  labels?: Record<string, string>;
  /** Aborted: the start ends early and throws (the harness stops the node). */
  signal?: AbortSignal;
}

export class RealNode {
  readonly name: string;
  readonly dir: string;
  readonly opts: RealNodeOptions;
  #proc?: Proc;

  constructor(opts: RealNodeOptions) {
    this.name = opts.name;
    this.opts = opts;
    this.dir = join(opts.cluster.dir, 'nodes', opts.name);
  }

  get address(): string { return this.opts.network.peer; }
  get containerdSocket(): string { return join(this.dir, 'run', 'containerd', 'containerd.sock'); }
  get logDir(): string { return join(this.dir, 'logs'); }

  async start(): Promise<void> {
    const { name, cluster, network, podCIDR } = this.opts;
    const d = this.dir;
    for (const sub of ['logs', 'run', 'varlib', 'varlog', 'kubelet', 'containerd/root', 'containerd/state', 'cni/net.d']) {
      await mkdir(join(d, sub), { recursive: true });
    }
    await makeCgroupRoot(this.opts.cgroupRoot);
    // The route to the node's pods, added (never replacing one the machine has); it goes with the veth pair when the
    // namespace is removed.
    await run('ip', ['route', 'add', podCIDR, 'via', network.peer, 'dev', network.device!]).catch((err: { stderr?: string }) => {
      throw new Error(`${name}: ip route add ${podCIDR}: ${err.stderr?.trim()} (a route this run did not add is left as it is)`);
    });

    const [kubeletClient, proxyClient, serving] = await Promise.all([
      cluster.clientCert(`node-${name}-kubelet`, `system:node:${name}`, ['system:nodes']),
      cluster.clientCert(`node-${name}-kube-proxy`, 'system:kube-proxy'),
      cluster.serverCert(`node-${name}-serving`, name, [network.peer]),
    ]);
    await Promise.all([
      cluster.writeKubeconfig(join(d, 'kubelet.kubeconfig'), `system:node:${name}`, kubeletClient, this.opts.apiServer),
      cluster.writeKubeconfig(join(d, 'kube-proxy.kubeconfig'), 'system:kube-proxy', proxyClient, this.opts.apiServer),
      writeFile(join(d, 'containerd.toml'), containerdConfig(d)),
      writeFile(join(d, 'cni/net.d/10-bridge.conflist'), cniConfig(name, podCIDR, join(d, 'varlib/cni/networks'))),
      writeFile(join(d, 'kubelet.yaml'), kubeletConfig({ address: network.peer, caFile: cluster.caFile,
        cgroupRoot: this.opts.cgroupRoot, serving })),
      writeFile(join(d, 'kube-proxy.yaml'), kubeProxyConfig(d, name, podCIDR)),
      writeFile(join(d, 'node.sh'), nodeScript),
    ]);
    const labels = Object.entries({ [REAL_NODE_LABEL]: 'real', ...this.opts.labels }).map(([k, v]) => `${k}=${v}`).join(',');
    this.opts.signal?.throwIfAborted();
    this.#proc = startProc(`node-${name}`, 'nsenter', [`--net=/run/netns/${network.name!}`, '--', 'unshare', '--mount',
      '--propagation', 'slave', '--', 'bash', join(d, 'node.sh'), d,
      network.address, this.opts.binDir, name, network.peer, labels, this.opts.cgroupRoot], this.logDir,
    { ...process.env, PATH: `${this.opts.binDir}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin` });
    const died = () => this.opts.signal?.aborted ? 'interrupted' : this.#proc!.exited() ? `node ${name} exited:\n${this.logsTail()}` : undefined;
    await pollUntil(`${name}: containerd socket`, async () => existsSync(this.containerdSocket) ? true : undefined, 30_000, 100, died);
    for (const image of this.opts.images) {
      this.opts.signal?.throwIfAborted();
      await run('ctr', ['--address', this.containerdSocket, '-n', 'k8s.io', 'images', 'import', image],
        { maxBuffer: 16 << 20 }).catch((err: { stderr?: string; message: string }) => {
        throw new Error(`${name}: ctr images import ${image}: ${err.stderr ?? err.message}`);
      });
    }
    const api = cluster.kubeConfig().makeApiClient(CoreV1Api);
    await pollUntil(`${name} Ready`, async () => {
      const node = await api.readNode({ name }).catch(() => undefined);
      return node?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ? true : undefined;
    }, 120_000, 250, died);
  }

  logsTail(lines = 15): string {
    const out: string[] = [];
    for (const f of ['node-' + this.name, 'containerd', 'kubelet', 'kube-proxy']) {
      out.push(`--- ${this.name}/${f}\n${tailFile(join(this.logDir, `${f}.log`), lines)}`);
    }
    return out.join('\n');
  }

  /** Stops the node's processes, then kills what its containers left and removes its cgroups. */
  async stop(): Promise<void> {
    await this.#proc?.stop(10_000);
    await cleanNode(this.opts.cgroupRoot);
  }
}

function tailFile(path: string, lines: number): string {
  try { return readFileSync(path, 'utf8').split('\n').slice(-lines).join('\n'); } catch { return ''; }
}

/**
 * Kills every process of the node and removes its cgroups: the node script, and so containerd, its shims, the kubelet
 * and kube-proxy, run in <cgroup root>/node of the pids hierarchy, the containers in the kubelet's cgroups below the
 * same root.
 */
export async function cleanNode(cgroupRoot: string): Promise<void> {
  for (let i = 0; i < 20; i++) {
    const pids = new Set(await cgroupPids(cgroupRoot));
    if (pids.size === 0) break;
    for (const pid of pids) { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } }
    await new Promise((r) => setTimeout(r, 100));
  }
  await removeCgroupRoot(cgroupRoot);
}

const CGROUP2_SUPER_MAGIC = 0x63677270;
const TMPFS_MAGIC = 0x01021994;

/**
 * Why real nodes cannot live in cgroups of the kind `fsType` (the file system at /sys/fs/cgroup) and `pids` (a v1 pids
 * hierarchy at /sys/fs/cgroup/pids) tell; undefined: they can. They run on cgroup v1, or the hybrid layout (v1
 * hierarchies, the v2 one at /sys/fs/cgroup/unified): a node's processes are found and killed through its cgroup root
 * of the pids hierarchy, and the kubelet uses the cgroupfs driver. On the unified layout (cgroup v2 alone), the cgroup
 * code here would make cgroups of the node's name under every top-level cgroup (system.slice, ...) and a `pids` one,
 * and leave containers behind: the harness stops before it touches anything.
 */
export function cgroupSupport(fsType: number | undefined, pids: boolean): string | undefined {
  const hint = 'make e2e-local runs on a machine with cgroup v1 or the hybrid layout (boot with '
    + 'systemd.unified_cgroup_hierarchy=0), or on kind (make e2e)';
  if (fsType === CGROUP2_SUPER_MAGIC) return `this machine has cgroup v2 alone (the unified hierarchy at ${CGROUP_V1}); real nodes need cgroup v1: ${hint}`;
  if (fsType !== TMPFS_MAGIC) return `no cgroup v1 hierarchies at ${CGROUP_V1}: ${hint}`;
  if (!pids) return `no cgroup v1 pids hierarchy at ${CGROUP_V1}/pids, where real nodes keep their processes: ${hint}`;
  return undefined;
}

/** Why this machine's cgroups cannot hold real nodes (cgroupSupport); undefined: they can. */
export async function realNodeCgroups(): Promise<string | undefined> {
  const fs = await statfs(CGROUP_V1).catch(() => undefined);
  return cgroupSupport(fs?.type, existsSync(join(CGROUP_V1, 'pids', 'cgroup.procs')));
}

/** The mounted hierarchies: the v1 controllers, and (`all`) the v2 one of a hybrid layout, where the kubelet makes cgroups too. */
async function controllers(all = false): Promise<string[]> {
  const entries = await readdir(CGROUP_V1).catch(() => [] as string[]);
  return entries.filter((e) => (all || e !== 'unified') && existsSync(join(CGROUP_V1, e, 'cgroup.procs')));
}

async function makeCgroupRoot(root: string): Promise<void> {
  for (const c of await controllers()) {
    const path = join(CGROUP_V1, c, root);
    await mkdir(path, { recursive: true });
    if (c === 'cpuset') {
      // A v1 cpuset takes no task until it has cpus and mems: its parent's.
      for (const f of ['cpuset.cpus', 'cpuset.mems']) {
        await writeFile(join(path, f), await readFile(join(CGROUP_V1, c, f), 'utf8'));
      }
    }
  }
}

async function cgroupTree(base: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (p: string): Promise<void> => {
    const entries = await readdir(p, { withFileTypes: true }).catch(() => []);
    for (const e of entries) if (e.isDirectory()) await walk(join(p, e.name));
    out.push(p);
  };
  if (existsSync(base)) await walk(base);
  return out; // children before parents
}

async function cgroupPids(root: string): Promise<number[]> {
  const pids: number[] = [];
  for (const c of await controllers(true)) {
    for (const cg of await cgroupTree(join(CGROUP_V1, c, root))) {
      const procs = await readFile(join(cg, 'cgroup.procs'), 'utf8').catch(() => '');
      for (const l of procs.split('\n')) if (/^\d+$/.test(l)) pids.push(Number(l));
    }
  }
  return pids;
}

async function removeCgroupRoot(root: string): Promise<void> {
  for (const c of await controllers(true)) {
    for (const cg of await cgroupTree(join(CGROUP_V1, c, root))) await rmdir(cg).catch(() => undefined);
  }
}

const ROUTE_TYPES = new Set(['unicast', 'local', 'broadcast', 'multicast', 'anycast', 'unreachable', 'blackhole', 'prohibit', 'throw', 'nat']);

/** The destinations of the machine's IPv4 routes, every table, as CIDRs. */
export async function routeDestinations(): Promise<string[]> {
  const { stdout } = await run('ip', ['-4', '-o', 'route', 'show', 'table', 'all']);
  return stdout.split('\n').map((l) => l.trim().split(/\s+/)).filter((f) => f[0])
    .map((f) => ROUTE_TYPES.has(f[0]) ? f[1] : f[0])
    .map((d) => d === 'default' ? '0.0.0.0/0' : d.includes('/') ? d : `${d}/32`);
}

const ipv4 = (a: string): number => a.split('.').reduce((n, o) => n * 256 + Number(o), 0);
function overlaps(a: string, b: string): boolean {
  const [an, al] = a.split('/');
  const [bn, bl] = b.split('/');
  const l = Math.min(Number(al), Number(bl));
  // A default route (length 0) covers everything and takes nothing: more specific routes go first.
  return l > 0 && Math.floor(ipv4(an) / 2 ** (32 - l)) === Math.floor(ipv4(bn) / 2 ** (32 - l));
}

/**
 * `n` where 198.19.n.0/24 and 198.19.(n+1).0/24, the pod ranges of a run's two real nodes, meet no route of the
 * machine (`routes`: routeDestinations()), from a random place so that runs rarely pick the same.
 */
export function podRangeBase(routes: string[], random: () => number = Math.random): number {
  const start = Math.floor(random() * 127);
  for (let i = 0; i < 127; i++) {
    const n = 2 * ((start + i) % 127);
    if (![n, n + 1].some((k) => routes.some((r) => overlaps(`198.19.${k}.0/24`, r)))) return n;
  }
  throw new Error('every pod range of 198.19.0.0/16 meets a route of this machine: real nodes take no route they did not add');
}

/** The kernel tunables kubelets change, as they are now: to restore with restoreSysctls once the nodes are gone. */
export async function saveSysctls(): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const k of KUBELET_SYSCTLS) out[k] = (await readFile(`/proc/sys/${k}`, 'utf8').catch(() => '')).trim();
  return out;
}

export async function restoreSysctls(saved: Record<string, string>): Promise<void> {
  for (const [k, v] of Object.entries(saved)) {
    if (v !== '') await writeFile(`/proc/sys/${k}`, v).catch(() => undefined);
  }
}

// Runs inside the node's network namespace: $1 node dir, $2 gateway (the root end of the veth pair), $3 the
// Kubernetes binaries, $4 node name, $5 node address, $6 node labels, $7 its cgroup root. It has a mount namespace
// whose mounts do not reach the machine's (unshare --propagation slave): the node's /run, /var/lib and /var/log are
// bind mounts of its own dirs, and /sys is the network namespace's (as `ip netns exec` makes it, so that /sys/class/net
// lists the node's devices) with the machine's cgroup hierarchies mounted back under it. It joins <cgroup root>/node of the pids hierarchy, and so do containerd's shims, which leave
// containerd's process group: the node's stop finds every process it started there.
const nodeScript = `#!/bin/bash
set -euo pipefail
d=$1 gw=$2 bin=$3 name=$4 addr=$5 labels=$6 cgroot=$7
mkdir -p "/sys/fs/cgroup/pids$cgroot/node"
echo $$ > "/sys/fs/cgroup/pids$cgroot/node/cgroup.procs"
mkdir -p "$d/cgroup"
mount --rbind /sys/fs/cgroup "$d/cgroup"
mount -t sysfs sysfs /sys
mount --rbind "$d/cgroup" /sys/fs/cgroup
umount -l "$d/cgroup"
mount --bind "$d/run" /run
mount --bind "$d/varlib" /var/lib
mount --bind "$d/varlog" /var/log
mkdir -p /run/containerd /var/lib/cni /var/log/pods /var/log/containers
ip link set lo up
ip route replace default via "$gw"
sysctl -qw net.ipv4.ip_forward=1
sysctl -qw net.bridge.bridge-nf-call-iptables=1 2>/dev/null || true
trap 'kill $(jobs -p) 2>/dev/null; wait' TERM INT
containerd --config "$d/containerd.toml" >>"$d/logs/containerd.log" 2>&1 &
for _ in $(seq 300); do [ -S /run/containerd/containerd.sock ] && break; sleep 0.1; done
"$bin/kube-proxy" --config="$d/kube-proxy.yaml" >>"$d/logs/kube-proxy.log" 2>&1 &
"$bin/kubelet" --config="$d/kubelet.yaml" --kubeconfig="$d/kubelet.kubeconfig" --root-dir="$d/kubelet" \\
  --hostname-override="$name" --node-ip="$addr" --node-labels="$labels" >>"$d/logs/kubelet.log" 2>&1 &
wait -n || true
echo "a node process exited; stopping the node" >&2
kill $(jobs -p) 2>/dev/null || true
wait
exit 1
`;

function containerdConfig(d: string): string {
  return `version = 2
root = "${d}/containerd/root"
state = "${d}/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp",
  "io.containerd.internal.v1.tracing"]
[grpc]
  address = "/run/containerd/containerd.sock"
[ttrpc]
  address = "/run/containerd/containerd.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "${d}/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${PAUSE_IMAGE}"
  # The machine may not lower oom_score_adj (no CAP_SYS_RESOURCE in its bounding set).
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "${d}/cni/net.d"
`;
}

function cniConfig(name: string, podCIDR: string, dataDir: string): string {
  return JSON.stringify({
    cniVersion: '1.0.0', name: `clusterlet-${name}`,
    plugins: [
      { type: 'bridge', bridge: 'cni0', isGateway: true, ipMasq: false, hairpinMode: true,
        ipam: { type: 'host-local', ranges: [[{ subnet: podCIDR }]], routes: [{ dst: '0.0.0.0/0' }], dataDir } },
      { type: 'portmap', capabilities: { portMappings: true } },
    ],
  }, null, 2);
}

function kubeletConfig(o: { address: string; caFile: string; cgroupRoot: string; serving: { cert: string; key: string } }): string {
  return `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: ${o.address}
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: { enabled: false }
  webhook: { enabled: true }
  x509: { clientCAFile: ${o.caFile} }
authorization: { mode: Webhook }
tlsCertFile: ${o.serving.cert}
tlsPrivateKeyFile: ${o.serving.key}
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
cgroupDriver: cgroupfs
cgroupRoot: ${o.cgroupRoot}
cgroupsPerQOS: true
enforceNodeAllocatable: [pods]
failCgroupV1: false
failSwapOn: false
# No cluster DNS here, and the machine's resolver is no pod's business.
resolvConf: ""
clusterDomain: cluster.local
# Short periods: tests wait for what the kubelet reports, and ConfigMap/Secret volume updates.
syncFrequency: 10s
nodeStatusUpdateFrequency: 4s
nodeStatusReportFrequency: 20s
imageMinimumGCAge: 24h
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: { memory.available: 100Mi, nodefs.available: 1%, nodefs.inodesFree: 1%, imagefs.available: 1% }
serializeImagePulls: false
maxPods: 110
shutdownGracePeriod: 0s
`;
}

function kubeProxyConfig(d: string, name: string, podCIDR: string): string {
  return `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: { kubeconfig: ${d}/kube-proxy.kubeconfig }
hostnameOverride: ${name}
mode: iptables
clusterCIDR: ${podCIDR}
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
# conntrack's tunables are the machine's, not the node's: kube-proxy leaves them as they are.
conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s }
oomScoreAdj: 0
`;
}
