// One local Kubernetes control plane: kube-apiserver, kube-controller-manager, kube-scheduler and KWOK,
// on a shared etcd (its own --etcd-prefix), with fake nodes that KWOK keeps Ready.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, KubeConfig, type V1Node } from '@kubernetes/client-node';
import { base64File, makeCA, makeServiceAccountKey, signCert, type KeyPair } from './pki.ts';
import { startProc, type Proc } from './procs.ts';
import { freePort, httpsStatus, pollUntil } from './net.ts';
import type { Binaries } from './binaries.ts';
import { kwokFiles, resourceMetricsPath, RESOURCE_METRICS_PATH_ANNOTATION, writeKwokApiConfig, type KwokFiles } from './kwok-api.ts';

const STAGES = fileURLToPath(new URL('./kwok/stages.yaml', import.meta.url));
/** The annotation by which each cluster's KWOK picks the fake nodes it manages (and only those). */
export const KWOK_NODE_ANNOTATION = 'kwok.x-k8s.io/node';

export interface FakeNode {
  name: string;
  capacity: Record<string, string>;
  labels?: Record<string, string>;
  taints?: { key: string; value?: string; effect: string }[];
}

export interface ClusterOptions {
  name: string;
  nodes: FakeNode[];
  /** Client QPS for controller-manager and scheduler (the defaults, 20 and 50, throttle big benchmarks). */
  componentQPS?: number;
  /** 16-bit prefix of the pod and service ranges, distinct per cluster (e.g. 10.1). */
  netPrefix: string;
  /** Where KWOK serves its nodes' kubelet endpoints, and their InternalIP (the run's test network). */
  nodeAddress?: string;
  /**
   * Only what a member needs for clusterlet's delegates, for runs of many members on one machine: the
   * controller-manager runs the node lifecycle (it lifts the not-ready taint new nodes get), namespace,
   * service-account and root CA controllers, and no garbage collector (nor does the API server, so that no deletion
   * waits for one).
   */
  lean?: boolean;
  /**
   * For clusters with real nodes (realnode.ts): the API server's address as the nodes and their pods reach it (the
   * root end of a node's veth pair). It listens on every address, advertises this one (the `kubernetes` Service's
   * endpoint) and has it in its certificate.
   */
  apiAddress?: string;
}

export interface Credentials { cert: string; key: string }

export class LocalCluster {
  readonly name: string;
  readonly dir: string;
  readonly opts: ClusterOptions;
  #bin: Binaries;
  #etcd: string;
  #port = 0;
  #procs = new Map<string, Proc>();
  #ca!: KeyPair;
  #admin!: KeyPair;
  kubeconfig = '';

  constructor(opts: ClusterOptions, bin: Binaries, etcdURL: string, runDir: string) {
    this.name = opts.name;
    this.opts = opts;
    this.#bin = bin;
    this.#etcd = etcdURL;
    this.dir = join(runDir, opts.name);
  }

  get server(): string { return `https://127.0.0.1:${this.#port}`; }
  /** The API server as real nodes and their pods reach it (ClusterOptions.apiAddress). */
  get podServer(): string {
    if (!this.opts.apiAddress) throw new Error(`${this.name} has no apiAddress: its API server listens on 127.0.0.1 only`);
    return `https://${this.opts.apiAddress}:${this.#port}`;
  }
  get caFile(): string { return this.#ca.cert; }
  get caKeyFile(): string { return this.#ca.key; }
  get logDir(): string { return join(this.dir, 'logs'); }
  /** The files behind what this cluster's KWOK serves as its nodes' kubelet API (kwok-api.ts). */
  get kwok(): KwokFiles { return kwokFiles(join(this.dir, 'kwok')); }

  kubeConfig(): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromFile(this.kubeconfig);
    return kc;
  }

  async start(): Promise<void> {
    await mkdir(this.logDir, { recursive: true });
    const pki = join(this.dir, 'pki');
    await mkdir(pki, { recursive: true });
    this.#ca = await makeCA(pki, this.name);
    const svcIP = `${this.opts.netPrefix}.0.1`;
    const [server, admin, kubeletClient, sa] = await Promise.all([
      signCert(pki, this.#ca, { file: 'apiserver', cn: 'kube-apiserver', usage: 'server',
        dns: ['localhost', 'kubernetes', 'kubernetes.default', 'kubernetes.default.svc', 'kubernetes.default.svc.cluster.local'],
        ips: ['127.0.0.1', svcIP, ...(this.opts.apiAddress ? [this.opts.apiAddress] : [])] }),
      signCert(pki, this.#ca, { file: 'admin', cn: 'clusterlet-harness-admin', orgs: ['system:masters'], usage: 'client' }),
      signCert(pki, this.#ca, { file: 'apiserver-kubelet-client', cn: 'kube-apiserver-kubelet-client',
        orgs: ['system:masters'], usage: 'client' }),
      makeServiceAccountKey(pki, this.name),
    ]);
    this.#admin = admin;
    this.#port = await freePort();
    this.kubeconfig = join(this.dir, 'admin.kubeconfig');
    await this.writeKubeconfig(this.kubeconfig, 'admin', admin);

    const apiserverArgs = [
      `--etcd-servers=${this.#etcd}`, `--etcd-prefix=/registry-${this.name}`,
      `--bind-address=${this.opts.apiAddress ? '0.0.0.0' : '127.0.0.1'}`, `--secure-port=${this.#port}`,
      `--advertise-address=${this.opts.apiAddress ?? '127.0.0.1'}`,
      `--cert-dir=${pki}`, `--tls-cert-file=${server.cert}`, `--tls-private-key-file=${server.key}`,
      `--client-ca-file=${this.#ca.cert}`,
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-key-file=${sa.pub}`, `--service-account-signing-key-file=${sa.key}`,
      `--service-cluster-ip-range=${this.opts.netPrefix}.0.0/16`,
      '--authorization-mode=Node,RBAC', '--allow-privileged=true',
      `--kubelet-client-certificate=${kubeletClient.cert}`, `--kubelet-client-key=${kubeletClient.key}`,
      // As kubeadm does: node names need not resolve; every node reports its InternalIP.
      '--kubelet-preferred-address-types=InternalIP,Hostname',
      '--profiling=false', '--max-requests-inflight=1000', '--max-mutating-requests-inflight=500',
      ...(this.opts.lean ? ['--enable-garbage-collector=false'] : []),
    ];
    this.#apiserverArgs = apiserverArgs;
    await this.startApiServer();

    const qps = String(this.opts.componentQPS ?? 200);
    const [kcmPort, schedPort] = await Promise.all([freePort(), freePort()]);
    this.#start('kube-controller-manager', this.#bin.kubeControllerManager, [
      `--kubeconfig=${this.kubeconfig}`, `--authentication-kubeconfig=${this.kubeconfig}`,
      `--authorization-kubeconfig=${this.kubeconfig}`,
      '--bind-address=127.0.0.1', `--secure-port=${kcmPort}`, `--cert-dir=${pki}`,
      `--service-account-private-key-file=${sa.key}`, `--root-ca-file=${this.#ca.cert}`,
      `--cluster-signing-cert-file=${this.#ca.cert}`, `--cluster-signing-key-file=${this.#ca.key}`,
      '--use-service-account-credentials=true', '--leader-elect=false',
      ...(this.opts.lean ? ['--controllers=node-lifecycle-controller,namespace-controller,serviceaccount-controller,root-ca-certificate-publisher-controller',
        '--enable-garbage-collector=false'] : ['--controllers=*']),
      `--kube-api-qps=${qps}`, `--kube-api-burst=${Number(qps) * 2}`,
      '--concurrent-replicaset-syncs=10', '--concurrent-deployment-syncs=10', '--concurrent-gc-syncs=40',
      '--node-monitor-period=2s', '--node-monitor-grace-period=40s',
    ]);
    this.#start('kube-scheduler', this.#bin.kubeScheduler, [
      `--kubeconfig=${this.kubeconfig}`, `--authentication-kubeconfig=${this.kubeconfig}`,
      `--authorization-kubeconfig=${this.kubeconfig}`,
      '--bind-address=127.0.0.1', `--secure-port=${schedPort}`, `--cert-dir=${join(pki, 'scheduler')}`,
      '--leader-elect=false', `--kube-api-qps=${qps}`, `--kube-api-burst=${Number(qps) * 2}`,
    ]);
    const [kwokPort, kwokApi] = await Promise.all([freePort(), writeKwokApiConfig(this.kwok.dir)]);
    // --node-port publishes the KWOK server as the nodes' kubelet endpoint (HTTPS with KWOK's own certificate;
    // the API server does not verify kubelet certificates here), so logs/exec/attach/port-forward work; at the
    // test network's address, so that the API server's node proxy (/api/v1/nodes/<node>/proxy/...) works too.
    const nodeIP = this.opts.nodeAddress ?? '127.0.0.1';
    this.#start('kwok', this.#bin.kwok, [
      `--kubeconfig=${this.kubeconfig}`, `--config=${STAGES}`, `--config=${kwokApi}`,
      `--manage-nodes-with-annotation-selector=${KWOK_NODE_ANNOTATION}=fake`,
      `--server-address=${nodeIP}:${kwokPort}`, `--node-port=${kwokPort}`, `--cidr=${this.opts.netPrefix}.128.1/17`,
      `--node-ip=${nodeIP}`, '--node-lease-duration-seconds=40',
    ]);
    await Promise.all([
      this.#waitHealthy('kube-controller-manager', `https://127.0.0.1:${kcmPort}/healthz`),
      this.#waitHealthy('kube-scheduler', `https://127.0.0.1:${schedPort}/healthz`),
    ]);
    await this.#createNodes();
  }

  #apiserverArgs: string[] = [];

  /** Starts (or restarts, on the same port) the API server and waits for /readyz. */
  async startApiServer(): Promise<void> {
    this.#start('kube-apiserver', this.#bin.kubeApiserver, this.#apiserverArgs);
    await this.#waitHealthy('kube-apiserver', `${this.server}/readyz`, 60_000);
  }

  /** Stops the API server (the other components keep running and reconnect when it is back). */
  async stopApiServer(): Promise<void> {
    await this.#procs.get('kube-apiserver')?.stop();
  }

  async stop(): Promise<void> {
    const order = ['kwok', 'kube-scheduler', 'kube-controller-manager', 'kube-apiserver'];
    for (const name of order) await this.#procs.get(name)?.stop();
  }

  /** Writes a kubeconfig for this cluster with the given client certificate (or token), for `server` (default: this.server). */
  async writeKubeconfig(path: string, user: string, creds: Credentials | { token: string }, server = this.server): Promise<void> {
    const userBlock = 'token' in creds
      ? `    token: ${creds.token}`
      : `    client-certificate-data: ${await base64File(creds.cert)}\n    client-key-data: ${await base64File(creds.key)}`;
    await writeFile(path, `apiVersion: v1
kind: Config
clusters:
- name: ${this.name}
  cluster:
    server: ${server}
    certificate-authority-data: ${await base64File(this.#ca.cert)}
users:
- name: ${user}
  user:
${userBlock}
contexts:
- name: ${this.name}
  context:
    cluster: ${this.name}
    user: ${user}
current-context: ${this.name}
`, { mode: 0o600 });
  }

  /** A client certificate for `cn` in `orgs`, signed by this cluster's CA. */
  async clientCert(file: string, cn: string, orgs: string[] = []): Promise<Credentials> {
    return signCert(join(this.dir, 'pki'), this.#ca, { file, cn, orgs, usage: 'client' });
  }

  /** A serving certificate for `cn` at `ips`, signed by this cluster's CA (a real node's kubelet). */
  async serverCert(file: string, cn: string, ips: string[]): Promise<Credentials> {
    return signCert(join(this.dir, 'pki'), this.#ca, { file, cn, dns: [cn], ips, usage: 'server' });
  }

  /** The pid of each running component, by name (for CPU accounting). */
  pids(): Map<string, number> {
    return new Map([...this.#procs].filter(([, p]) => !p.exited() && p.child.pid !== undefined).map(([n, p]) => [n, p.child.pid!]));
  }

  logsTail(lines = 20): string {
    return [...this.#procs.values()].map((p) => `--- ${this.name}/${p.name}\n${p.tail(lines)}`).join('\n');
  }

  #start(name: string, bin: string, args: string[]): void {
    this.#procs.set(name, startProc(name, bin, args, this.logDir));
  }

  async #waitHealthy(name: string, url: string, timeoutMs = 60_000): Promise<void> {
    const proc = this.#procs.get(name)!;
    const tls = name === 'kube-apiserver'
      ? { ca: this.#ca.cert, cert: this.#admin.cert, key: this.#admin.key } : {};
    await pollUntil(`${this.name}/${name} at ${url}`, async () => {
      const res = await httpsStatus(url, tls);
      return res.status === 200 ? true : undefined;
    }, timeoutMs, 100, () => proc.exited() ? `exited early; log tail:\n${proc.tail(15)}` : undefined);
  }

  async #createNodes(): Promise<void> {
    const api = this.kubeConfig().makeApiClient(CoreV1Api);
    await Promise.all(this.opts.nodes.map((n) => api.createNode({ body: fakeNode(n) })));
    await pollUntil(`${this.name}: ${this.opts.nodes.length} KWOK nodes Ready`, async () => {
      const list = await api.listNode({ labelSelector: 'type=kwok' });
      const ready = list.items.filter((n) => n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
      return ready.length >= this.opts.nodes.length ? true : undefined;
    }, 30_000, 200);
  }
}

export function fakeNode(n: FakeNode): V1Node {
  return {
    apiVersion: 'v1', kind: 'Node',
    metadata: {
      name: n.name,
      annotations: {
        [KWOK_NODE_ANNOTATION]: 'fake', 'node.alpha.kubernetes.io/ttl': '0',
        [RESOURCE_METRICS_PATH_ANNOTATION]: resourceMetricsPath(n.name),
      },
      labels: {
        'kubernetes.io/hostname': n.name, 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64',
        type: 'kwok', ...n.labels,
      },
    },
    spec: { taints: n.taints },
    status: { capacity: n.capacity, allocatable: n.capacity, nodeInfo: {
      architecture: 'amd64', operatingSystem: 'linux', bootID: '', containerRuntimeVersion: 'kwok',
      kernelVersion: 'kwok', kubeProxyVersion: 'kwok', kubeletVersion: 'kwok', machineID: '', osImage: 'kwok', systemUUID: '',
    } },
  };
}
