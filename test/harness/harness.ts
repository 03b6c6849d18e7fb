// The local host + member clusters that tests, the demo and the benchmark run against.
//   host:   etcd prefix /registry-host,   2 local KWOK nodes (and the benchmark's host-floor when asked)
//   member: etcd prefix /registry-member, 3 KWOK nodes of different sizes (one with GPUs), zone/region labels
// One etcd serves both. Everything lives in one temp dir, removed on stop; what a run whose owner died (SIGKILL)
// left is undone by the next run (reaper.ts). Node-like servers (KWOK's kubelet endpoints, clusterlet's
// kubelet API in tests) listen on the run's own test network (testnet.ts), never on the machine's addresses.
import { execFile } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { ensureBinaries, type Binaries } from './binaries.ts';
import { LocalCluster, type FakeNode } from './cluster.ts';
import { onSpawn, startProc, type Proc } from './procs.ts';
import { freePort, pollUntil } from './net.ts';
import { createTestNetwork, type TestNetwork } from './testnet.ts';
import { podRangeBase, RealNode, realNodeCgroups, restoreSysctls, routeDestinations, saveSysctls } from './realnode.ts';
import { lockRealNodes, type MachineLock } from './machinelock.ts';
import { cgroupRootOf, createRunDir, reapStaleRuns, recordProcess, RUN_FILES, RUN_PREFIX } from './reaper.ts';

export const HOST_NODES: FakeNode[] = [
  { name: 'host-local-1', capacity: { cpu: '8', memory: '32Gi', pods: '110' } },
  { name: 'host-local-2', capacity: { cpu: '8', memory: '32Gi', pods: '110' } },
];

/** A host node with room for the benchmark's 10,000 pods: its host-only runs, which the host's KWOK completes. */
export const HOST_FLOOR_NODE: FakeNode = { name: 'host-floor', capacity: { cpu: '64', memory: '256Gi', pods: '12000' } };

/** Member nodes: room for 12,000 pods in all, so the benchmark's 10,000 fit. */
export function memberNodes(prefix: string): FakeNode[] {
  const region = { 'topology.kubernetes.io/region': 'local-1' };
  return [
    { name: `${prefix}-a`, capacity: { cpu: '16', memory: '64Gi', pods: '4000', 'ephemeral-storage': '100Gi' },
      labels: { ...region, 'topology.kubernetes.io/zone': 'local-1a', 'node.kubernetes.io/instance-type': 'medium' } },
    { name: `${prefix}-b`, capacity: { cpu: '32', memory: '128Gi', pods: '4000', 'ephemeral-storage': '200Gi' },
      labels: { ...region, 'topology.kubernetes.io/zone': 'local-1b', 'node.kubernetes.io/instance-type': 'large' } },
    { name: `${prefix}-gpu`, capacity: { cpu: '8', memory: '32Gi', pods: '4000', 'ephemeral-storage': '100Gi', 'nvidia.com/gpu': '4' },
      labels: { ...region, 'topology.kubernetes.io/zone': 'local-1c', 'node.kubernetes.io/instance-type': 'gpu' } },
  ];
}

export interface HarnessOptions {
  /** Progress lines (default: stderr). */
  log?: (line: string) => void;
  componentQPS?: number;
  /** Give the host HOST_FLOOR_NODE as well (the benchmark's host-only runs). */
  hostFloorNode?: boolean;
  /**
   * A real node in each of host and member (realnode.ts: containerd, kubelet, kube-proxy), named host-real and
   * member-real, with these image archives loaded (hack/build-images.sh builds them).
   */
  realNodes?: { images: string[] };
  /** The KWOK nodes (default true); false: the clusters have their real nodes only. */
  kwokNodes?: boolean;
  /** Aborted: the start ends early, stops what it started, and throws. */
  signal?: AbortSignal;
}

/** The real nodes' names. */
export const HOST_REAL_NODE = 'host-real';
export const MEMBER_REAL_NODE = 'member-real';

export class Harness {
  readonly dir: string;
  readonly bin: Binaries;
  readonly host: LocalCluster;
  readonly member: LocalCluster;
  readonly extraMembers: LocalCluster[] = [];
  /** Other host clusters, for tests of hosts sharing a member. */
  readonly extraHosts: LocalCluster[] = [];
  /** Where node-like servers listen: KWOK's kubelet endpoints, and clusterlet's `--node-ip` in tests. */
  readonly network: TestNetwork;
  /** The real nodes (HarnessOptions.realNodes), host's then member's. */
  readonly realNodes: RealNode[] = [];
  #etcd: Proc;
  #etcdURL: string;
  #opts: HarnessOptions;
  #nodeNetworks: TestNetwork[];
  #sysctls?: Record<string, string>;
  #unrecord: () => void;
  #lock?: MachineLock;
  #stopped = false;

  private constructor(dir: string, bin: Binaries, etcd: Proc, etcdURL: string, network: TestNetwork, opts: HarnessOptions,
    nodeNetworks: TestNetwork[], unrecord: () => void, lock: MachineLock | undefined) {
    this.dir = dir;
    this.#unrecord = unrecord;
    this.#lock = lock;
    this.bin = bin;
    this.#etcd = etcd;
    this.#etcdURL = etcdURL;
    this.network = network;
    this.#opts = opts;
    this.#nodeNetworks = nodeNetworks;
    const nodeAddress = network.address;
    const kwok = opts.kwokNodes !== false;
    const hostNodes = !kwok ? [] : opts.hostFloorNode ? [...HOST_NODES, HOST_FLOOR_NODE] : HOST_NODES;
    this.host = new LocalCluster({ name: 'host', nodes: hostNodes, netPrefix: '10.10', componentQPS: opts.componentQPS, nodeAddress,
      apiAddress: nodeNetworks[0]?.address }, bin, etcdURL, dir);
    this.member = new LocalCluster({ name: 'member', nodes: kwok ? memberNodes('member') : [], netPrefix: '10.20',
      componentQPS: opts.componentQPS, nodeAddress, apiAddress: nodeNetworks[1]?.address }, bin, etcdURL, dir);
  }

  get hostNode(): RealNode { return this.#realNode(0); }
  get memberNode(): RealNode { return this.#realNode(1); }
  #realNode(i: number): RealNode {
    const n = this.realNodes[i];
    if (!n) throw new Error('the harness has no real nodes: start it with realNodes');
    return n;
  }

  /** Starts the real nodes, one per cluster, each in its network namespace with a pod range of its own. */
  async #startRealNodes(images: string[]): Promise<void> {
    this.#sysctls = await saveSysctls();
    await writeFile(join(this.dir, RUN_FILES.sysctls), JSON.stringify(this.#sysctls));
    // 198.19.0.0/16 (testnet.ts): a /24 per node, where the machine routes nothing.
    const base = podRangeBase(await routeDestinations());
    const clusters = [this.host, this.member];
    const names = [HOST_REAL_NODE, MEMBER_REAL_NODE];
    const id = this.dir.slice(this.dir.lastIndexOf(RUN_PREFIX) + RUN_PREFIX.length);
    // A node that fails ends the other's start too: the harness stops them once neither is still starting.
    const failed = new AbortController();
    const signal = this.#opts.signal ? AbortSignal.any([this.#opts.signal, failed.signal]) : failed.signal;
    for (const [i, cluster] of clusters.entries()) {
      this.realNodes.push(new RealNode({
        name: names[i], cluster, network: this.#nodeNetworks[i], podCIDR: `198.19.${base + i}.0/24`,
        apiServer: cluster.podServer, cgroupRoot: cgroupRootOf(id, names[i]), images, binDir: this.bin.dir, signal,
      }));
    }
    await writeFile(join(this.dir, RUN_FILES.cgroupRoots), this.realNodes.map((n) => `${n.opts.cgroupRoot}\n`).join(''));
    let firstError: unknown;
    await Promise.allSettled(this.realNodes.map((n) => n.start().catch((err: unknown) => {
      if (!failed.signal.aborted) {
        firstError = err;
        failed.abort();
      }
    })));
    if (failed.signal.aborted) throw firstError;
  }

  /** Records a process a test started (a clusterlet), for the reaper of a later run should this one be killed outright. */
  recordProcess(pid: number): void {
    recordProcess(this.dir, pid);
  }

  /** The address node-like servers listen on (127.0.0.1 when the test network could not be made). */
  get nodeAddress(): string { return this.network.address; }

  /** The pid of every running process of the harness, named `etcd`, `host/<component>`, `member/<component>`. */
  pids(): Map<string, number> {
    const out = new Map<string, number>();
    if (!this.#etcd.exited() && this.#etcd.child.pid !== undefined) out.set('etcd', this.#etcd.child.pid);
    for (const c of [this.host, this.member, ...this.extraMembers, ...this.extraHosts]) {
      for (const [name, pid] of c.pids()) out.set(`${c.name}/${name}`, pid);
    }
    return out;
  }

  static async start(opts: HarnessOptions = {}): Promise<Harness> {
    const log = opts.log ?? ((l: string) => process.stderr.write(`[harness] ${l}\n`));
    const { signal } = opts;
    if (opts.realNodes) {
      // Before anything is touched: real nodes need cgroups they can live in.
      const why = await realNodeCgroups();
      if (why) throw new Error(why);
    }
    await reapStaleRuns({ log });
    const bin = await ensureBinaries();
    signal?.throwIfAborted();
    const t0 = Date.now();
    const dir = await createRunDir();
    // What the run starts, for the reaper of a later run should this one be killed outright.
    const unrecord = onSpawn((pid) => recordProcess(dir, pid));
    const networks: TestNetwork[] = [];
    let lock: MachineLock | undefined;
    try {
      // One run with real nodes a machine (machinelock.ts): taken before the kernel tunables are saved.
      if (opts.realNodes) lock = await lockRealNodes(dir);
      networks.push(await createTestNetwork());
      if (networks[0].unavailable) log(`${networks[0].unavailable}: node proxy paths (/api/v1/nodes/<node>/proxy/...) will not work`);
      if (opts.realNodes) networks.push(await createTestNetwork(), await createTestNetwork());
      const netns = networks.map((n) => n.name).filter((n) => n !== undefined);
      if (netns.length) await writeFile(join(dir, RUN_FILES.netns), netns.join('\n'));
      const unavailable = networks.slice(1).find((n) => n.unavailable);
      if (unavailable) throw new Error(`real nodes need network namespaces: ${unavailable.unavailable}`);
      signal?.throwIfAborted();
    } catch (err) {
      for (const n of networks) await n.remove();
      await lock?.release();
      unrecord();
      await rm(dir, { recursive: true, force: true });
      throw err;
    }
    const [network, ...nodeNetworks] = networks;
    const [clientPort, peerPort] = await Promise.all([freePort(), freePort()]);
    const etcdURL = `http://127.0.0.1:${clientPort}`;
    const etcd = startProc('etcd', bin.etcd, [
      '--name=clusterlet-harness', `--data-dir=${join(dir, 'etcd')}`,
      `--listen-client-urls=${etcdURL}`, `--advertise-client-urls=${etcdURL}`,
      `--listen-peer-urls=http://127.0.0.1:${peerPort}`, `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-cluster=clusterlet-harness=http://127.0.0.1:${peerPort}`,
      '--unsafe-no-fsync', '--quota-backend-bytes=8589934592', '--log-level=warn',
    ], dir);
    const h = new Harness(dir, bin, etcd, etcdURL, network, { ...opts, log }, nodeNetworks, unrecord, lock);
    try {
      await pollUntil('etcd /health', async () => {
        const res = await fetch(`${etcdURL}/health`).catch(() => undefined);
        return res?.ok ? true : undefined;
      }, 30_000, 100, () => signal?.aborted ? 'interrupted' : etcd.exited() ? `etcd exited:\n${etcd.tail(15)}` : undefined);
      await Promise.all([h.host.start(), h.member.start()]);
      signal?.throwIfAborted();
      if (opts.realNodes) await h.#startRealNodes(opts.realNodes.images);
    } catch (err) {
      if (signal?.aborted) log('interrupted: stopping what started');
      else log(`start failed; component logs:\n${h.host.logsTail()}\n${h.member.logsTail()}\n${h.realNodes.map((n) => n.logsTail()).join('\n')}`);
      await h.stop();
      throw err;
    }
    log(`host ${h.host.server} and member ${h.member.server} ready in ${((Date.now() - t0) / 1000).toFixed(1)} s (${dir})`);
    return h;
  }

  /**
   * Starts another member cluster (its own control plane and KWOK nodes) on the same etcd; `lean`: see ClusterOptions;
   * `nodes`: its KWOK nodes (default memberNodes(name)'s three).
   */
  async addMember(name: string, netPrefix: string, opts: { lean?: boolean; nodes?: FakeNode[] } = {}): Promise<LocalCluster> {
    const c = new LocalCluster({ name, nodes: opts.nodes ?? memberNodes(name), netPrefix, componentQPS: this.#opts.componentQPS,
      nodeAddress: this.network.address, lean: opts.lean },
      this.bin, this.#etcdURL, this.dir);
    this.extraMembers.push(c);
    await c.start();
    return c;
  }

  /** Starts another host cluster (its own control plane and two local KWOK nodes) on the same etcd. */
  async addHost(name: string, netPrefix: string): Promise<LocalCluster> {
    const nodes = HOST_NODES.map((n) => ({ ...n, name: n.name.replace(/^host/, name) }));
    const c = new LocalCluster({ name, nodes, netPrefix, componentQPS: this.#opts.componentQPS, nodeAddress: this.network.address },
      this.bin, this.#etcdURL, this.dir);
    this.extraHosts.push(c);
    await c.start();
    return c;
  }

  /**
   * Namespace `clusterlet` in the host, where clusterlet's Leases live (manifests/host creates it): for a clusterlet
   * run with the admin kubeconfig, as the demo, the benchmark and the memory probe run it.
   */
  async createLeaseNamespace(): Promise<void> {
    await this.host.kubeConfig().makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: 'clusterlet' } } });
  }

  /**
   * The ClusterProfile CRD (SIG-Multicluster's cluster-inventory-api, vendored in crds/) in the host, established:
   * for clusterlet's --member-source=clusterprofile. Applying it again is harmless.
   */
  async installClusterProfileCRD(): Promise<void> {
    const crd = fileURLToPath(new URL('crds/multicluster.x-k8s.io_clusterprofiles.yaml', import.meta.url));
    const kubectl = (...args: string[]) => promisify(execFile)(this.bin.kubectl, [`--kubeconfig=${this.host.kubeconfig}`, ...args]);
    await kubectl('apply', '--server-side', '-f', crd);
    await kubectl('wait', '--for=condition=Established', '--timeout=60s', 'crd/clusterprofiles.multicluster.x-k8s.io');
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    await Promise.all(this.realNodes.map((n) => n.stop()));
    if (this.#sysctls) await restoreSysctls(this.#sysctls);
    await Promise.all([this.host.stop(), this.member.stop(), ...this.extraMembers.map((m) => m.stop()),
      ...this.extraHosts.map((m) => m.stop())]);
    await this.#etcd.stop();
    await this.network.remove();
    for (const n of this.#nodeNetworks) await n.remove();
    this.#unrecord();
    await this.#lock?.release();
    if (!process.env.CLUSTERLET_KEEP_HARNESS) await rm(this.dir, { recursive: true, force: true });
  }
}
