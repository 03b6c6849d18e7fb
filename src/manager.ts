// Wires one process: the host client, and per member its cluster, node controller and pod controller.
// Members are isolated: one that cannot be reached or fails never stops another.
import type { V1ConfigMap, V1Secret } from '@kubernetes/client-node';
import type { Config, MemberConfig } from './config.ts';
import { ClusterClient } from './kube/client.ts';
import { type ClusterAccess, inClusterAccess, loadKubeconfigFile, parseKubeconfig } from './kube/kubeconfig.ts';
import { MemberCluster, type MemberOptions } from './member/cluster.ts';
import { NodeController, type NodeControllerOptions } from './node/controller.ts';
import { MemberPodProvider } from './member/provider.ts';
import { PodController } from './pod/controller.ts';
import { HostObjectCache } from './reflection/hostcache.ts';
import { ObjectMirror, type HostCaches } from './reflection/mirror.ts';
import { ExportConsent, ExportReflector } from './reflection/export.ts';
import type { Logger } from './log.ts';
import type { NodeDirectory, VirtualNode } from './api/nodes.ts';

export interface ManagerOptions {
  member?: MemberOptions;
  node?: NodeControllerOptions;
}

export interface MemberRuntime {
  config: MemberConfig;
  /** Loaded at start from the member's kubeconfig file; undefined for one in a Secret (read when set up). */
  access?: ClusterAccess;
  cluster?: MemberCluster;
  node?: NodeController;
  provider?: MemberPodProvider;
  mirror?: ObjectMirror;
  exporter?: ExportReflector;
  pods?: PodController;
  /** Set while the member could not be set up (e.g. its kubeconfig Secret is missing); retried. */
  setupError?: string;
}

export class Manager implements NodeDirectory {
  readonly config: Config;
  readonly host: ClusterClient;
  readonly members: MemberRuntime[];
  #log: Logger;
  #opts: ManagerOptions;
  #retryTimers: NodeJS.Timeout[] = [];
  /** Referenced host ConfigMaps and Secrets, one watch per kind shared by every member. */
  readonly hostCaches: HostCaches;
  /** Which host namespaces accept exports: one namespace watch shared by every member's ExportReflector. */
  readonly exportConsent: ExportConsent;
  #stopped = false;

  constructor(config: Config, log: Logger, opts: ManagerOptions = {}) {
    this.config = config;
    this.#log = log;
    this.#opts = opts;
    const access = config.hostKubeconfig ? loadKubeconfigFile(config.hostKubeconfig) : inClusterAccess();
    this.host = new ClusterClient(access, { cluster: 'host', qps: config.hostQPS, burst: config.hostBurst });
    // A member kubeconfig file that cannot work is a configuration error now, not a retry loop later.
    this.members = config.members.map((m) => ({ config: m, access: m.kubeconfig ? loadKubeconfigFile(m.kubeconfig) : undefined }));
    const h = this.host;
    this.hostCaches = {
      configMaps: new HostObjectCache<V1ConfigMap>('ConfigMap', h, {
        path: '/api/v1/configmaps', model: 'V1ConfigMap', resource: 'configmaps',
        list: (p) => h.core.listConfigMapForAllNamespaces(p), read: (namespace, name) => h.core.readNamespacedConfigMap({ namespace, name }),
      }, log),
      secrets: new HostObjectCache<V1Secret>('Secret', h, {
        path: '/api/v1/secrets', model: 'V1Secret', resource: 'secrets',
        // Service-account tokens are host credentials, never mirrored: not even watched.
        fieldSelector: 'type!=kubernetes.io/service-account-token',
        list: (p) => h.core.listSecretForAllNamespaces(p), read: (namespace, name) => h.core.readNamespacedSecret({ namespace, name }),
      }, log),
    };
    this.exportConsent = new ExportConsent(h, config.exportNamespaces, log);
  }

  start(): void {
    this.hostCaches.configMaps.start();
    this.hostCaches.secrets.start();
    this.exportConsent.start();
    for (const m of this.members) void this.#startMember(m, 0);
  }

  async #startMember(m: MemberRuntime, attempt: number): Promise<void> {
    if (this.#stopped) return;
    const log = this.#log.child({ member: m.config.name });
    try {
      const access = await this.#memberAccess(m.config, m.access);
      const client = new ClusterClient(access, { cluster: m.config.name, qps: m.config.qps, burst: m.config.burst });
      const silence = this.config.watchSilenceSeconds * 1000;
      m.cluster = new MemberCluster(m.config, client, this.config.hostName, log,
        { watchSilenceMs: silence, ...this.#opts.member });
      m.node = new NodeController(this.host, {
        member: m.config, nodeIP: this.config.nodeIP, kubeletPort: m.config.kubeletPort ?? this.config.kubeletPort,
      }, m.cluster, log, { watchSilenceMs: silence, ...this.#opts.node });
      m.mirror = new ObjectMirror(m.cluster, this.hostCaches, m.config.nodeName, log);
      m.exporter = new ExportReflector(m.cluster, this.host, this.exportConsent, log);
      m.provider = new MemberPodProvider(m.cluster, m.mirror, log, { nodeName: m.config.nodeName, hostIP: this.config.nodeIP });
      m.pods = new PodController(this.host, m.provider, log, {
        nodeName: m.config.nodeName, member: m.config.name, workers: this.config.podSyncWorkers, watchSilenceMs: silence,
      });
      m.cluster.start();
      m.node.start();
      m.mirror.start();
      m.exporter.start();
      m.provider.start();
      m.pods.start();
      m.setupError = undefined;
      log.info({ node: m.config.nodeName }, 'member started');
    } catch (err) {
      m.setupError = (err as Error).message;
      const delay = Math.min(60_000, 1000 * 2 ** attempt);
      log.error({ err: m.setupError, retryInMs: delay }, 'member setup failed; retrying');
      this.#retryTimers.push(setTimeout(() => void this.#startMember(m, attempt + 1), delay));
    }
  }

  /** From the file, or from the Secret in the host cluster. */
  async #memberAccess(m: MemberConfig, loaded: ClusterAccess | undefined): Promise<ClusterAccess> {
    if (loaded) return loaded;
    const ref = m.kubeconfigSecret!;
    const secret = await this.host.core.readNamespacedSecret({ name: ref.name, namespace: ref.namespace });
    const data = secret.data?.[ref.key];
    if (!data) throw new Error(`Secret ${ref.namespace}/${ref.name} has no key "${ref.key}"`);
    // File paths in a kubeconfig from a Secret resolve against the working directory.
    return parseKubeconfig(Buffer.from(data, 'base64').toString('utf8'), {
      source: `Secret ${ref.namespace}/${ref.name} key ${ref.key}`, baseDir: process.cwd(),
    });
  }

  /** The virtual nodes whose member and pod controller run, for the kubelet API. */
  nodes(): VirtualNode[] {
    const out: VirtualNode[] = [];
    for (const m of this.members) {
      if (m.cluster && m.pods) {
        out.push({ name: m.config.nodeName, member: m.config, cluster: m.cluster, proxies: m.pods.pods,
          port: m.config.kubeletPort ?? this.config.kubeletPort });
      }
    }
    return out;
  }

  ready(): boolean {
    return this.members.every((m) => m.node !== undefined);
  }

  stop(): void {
    this.#stopped = true;
    for (const t of this.#retryTimers) clearTimeout(t);
    this.hostCaches.configMaps.stop();
    this.hostCaches.secrets.stop();
    this.exportConsent.stop();
    for (const m of this.members) {
      m.pods?.stop();
      m.provider?.stop();
      m.exporter?.stop();
      m.mirror?.stop();
      m.node?.stop();
      m.cluster?.stop();
    }
  }
}
