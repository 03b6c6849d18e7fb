// Wires one process: the host client, and per member its cluster, node controller and pod controller.
// Members are isolated: one that cannot be reached or fails never stops another.
import type { Config, MemberConfig } from './config.ts';
import { ClusterClient } from './kube/client.ts';
import { type ClusterAccess, inClusterAccess, loadKubeconfigFile } from './kube/kubeconfig.ts';
import { MemberCluster, type MemberOptions } from './member/cluster.ts';
import { followMemberAccess, memberAccessSource, type AccessWatcher } from './member/credentials.ts';
import { NodeController, type NodeControllerOptions } from './host/node/controller.ts';
import { MemberPodProvider } from './member/provider.ts';
import { PodController } from './host/pod/controller.ts';
import { MemberRuntime } from './member/runtime/runtime.ts';
import { hostObjects } from './member/reflection/hostcache.ts';
import { ObjectMirror, mirrorTargets, type HostCaches } from './member/reflection/mirror.ts';
import { ExportConsent, ExportReflector, exportSides, namespaceInformer } from './member/reflection/export.ts';
import {
  ServiceReflector, endpointSliceTarget, hostEndpointSlices, hostServiceWarnings, hostServices, serviceTarget,
} from './member/reflection/services.ts';
import { ServiceExporter, serviceExportApi } from './member/reflection/serviceexports.ts';
import type { Informer } from './kube/informer.ts';
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { hostClusterID } from './host/identity.ts';
import { adoptLegacyObjects } from './member/adopt.ts';
import { retryWithBackoff } from './util/backoff.ts';
import type { Logger } from './log.ts';
import type { NodeDirectory, VirtualNode } from './host/api/nodes.ts';

export interface ManagerOptions {
  member?: MemberOptions;
  node?: NodeControllerOptions;
}

/** What runs for a member: started once it is set up, stopped with the process. */
interface Part { start(): void; stop(): void }

export interface MemberParts {
  config: MemberConfig;
  /** Loaded at start from the member's kubeconfig file; undefined for one in a Secret (read when set up). */
  access?: ClusterAccess;
  node?: NodeController;
  pods?: PodController;
  /** Logs, exec, attach, port-forward and stats of the node's pods, for the kubelet API. */
  runtime?: MemberRuntime;
  /**
   * Everything that runs for the member (its cluster, node, reflectors and pod controller), in start
   * order; stopped in reverse. The node starts first, on its own (see #startMember).
   */
  parts: Part[];
  /** Set while the member could not be set up (e.g. its kubeconfig Secret is missing); retried. */
  setupError?: string;
  /** Re-reads the kubeconfig file or Secret and moves the member's client to new credentials. */
  credentials?: AccessWatcher;
}

export class Manager implements NodeDirectory {
  readonly config: Config;
  readonly host: ClusterClient;
  readonly members: MemberParts[];
  #log: Logger;
  #opts: ManagerOptions;
  #retryTimers: NodeJS.Timeout[] = [];
  /** Referenced host ConfigMaps and Secrets, one watch per kind shared by every member. */
  readonly hostCaches: HostCaches;
  /** Which host namespaces accept exports: one namespace watch shared by every member's ExportReflector. */
  readonly exportConsent: ExportConsent;
  /** Every host Service, one watch shared by every member's ServiceReflector. */
  readonly hostServices: Informer<V1Service>;
  /** Every host EndpointSlice of a Service, shared likewise; only with --reflect-host-endpoints. */
  readonly hostEndpointSlices: Informer<V1EndpointSlice> | undefined;
  #stopped = false;
  /** The host's identity on member objects: --host-name, or its cluster ID once read. */
  #hostName: string | undefined;

  constructor(config: Config, log: Logger, opts: ManagerOptions = {}) {
    this.config = config;
    this.#log = log;
    this.#opts = opts;
    const access = config.hostKubeconfig ? loadKubeconfigFile(config.hostKubeconfig) : inClusterAccess();
    this.host = new ClusterClient(access, { cluster: 'host', qps: config.hostQPS, burst: config.hostBurst });
    // A member kubeconfig file that cannot work is a configuration error now, not a retry loop later.
    this.members = config.members.map((m) => ({ config: m, access: m.kubeconfig ? loadKubeconfigFile(m.kubeconfig) : undefined, parts: [] }));
    const h = this.host;
    this.hostCaches = {
      configMaps: hostObjects(h, 'ConfigMap', {}, log),
      // Service-account tokens are host credentials, never mirrored: not even watched.
      secrets: hostObjects(h, 'Secret', { fieldSelector: 'type!=kubernetes.io/service-account-token' }, log),
    };
    this.exportConsent = new ExportConsent(namespaceInformer(h, 'host-namespaces', undefined, log), config.exportNamespaces);
    this.hostServices = hostServices(h, log);
    this.hostEndpointSlices = config.reflectHostEndpoints ? hostEndpointSlices(h, log) : undefined;
  }

  /** The host's identity (clusterlet.io/origin) once known. */
  get hostName(): string | undefined { return this.#hostName; }

  start(): void {
    this.hostCaches.configMaps.start();
    this.hostCaches.secrets.start();
    this.hostServices.start();
    this.hostEndpointSlices?.start();
    void (async () => {
      this.#hostName = this.config.hostName ?? await hostClusterID(this.host, this.#log, () => this.#stopped);
      this.#log.info({ hostName: this.#hostName, configured: this.config.hostName !== undefined }, 'host identity');
      this.exportConsent.start();
      for (const m of this.members) void this.#startMember(m, 0);
    })().catch((err: unknown) => { if (!this.#stopped) throw err; });
  }

  async #startMember(m: MemberParts, attempt: number): Promise<void> {
    if (this.#stopped) return;
    const log = this.#log.child({ member: m.config.name });
    try {
      const access = await this.#memberAccess(m.config, m.access);
      const client = new ClusterClient(access, { cluster: m.config.name, qps: m.config.qps, burst: m.config.burst });
      const silence = this.config.watchSilenceSeconds * 1000;
      const cluster = new MemberCluster(m.config, client, this.#hostName!, log,
        { watchSilenceMs: silence, probeIntervalMs: this.config.probePeriodSeconds * 1000,
          probeFailureThreshold: this.config.probeFailureThreshold, ...this.#opts.member });
      const node = m.node = new NodeController(this.host, {
        nodeName: m.config.nodeName, memberName: m.config.name, labels: m.config.labels, taints: m.config.taints,
        nodeIP: this.config.nodeIP, kubeletPort: m.config.kubeletPort ?? this.config.kubeletPort,
      }, cluster, log, { watchSilenceMs: silence, ...this.#opts.node });
      const mirror = new ObjectMirror(cluster, mirrorTargets(cluster, log), this.hostCaches, log);
      const exporter = new ExportReflector(m.config.name, exportSides(cluster, this.host, log), this.exportConsent, log);
      const services = new ServiceReflector(cluster, serviceTarget(cluster, log), this.hostServices,
        hostServiceWarnings(this.host, m.config.nodeName), log,
        { endpoints: this.hostEndpointSlices && { hostSlices: this.hostEndpointSlices, copies: endpointSliceTarget(cluster, log) } });
      const serviceExports = new ServiceExporter({ name: m.config.name, owner: cluster.owner }, services.copies,
        serviceExportApi(cluster, log), log);
      const provider = new MemberPodProvider(cluster, mirror, log, { nodeName: m.config.nodeName, hostIP: this.config.nodeIP });
      const pods = m.pods = new PodController(this.host, provider, log, {
        nodeName: m.config.nodeName, member: m.config.name, workers: this.config.podSyncWorkers, watchSilenceMs: silence,
      });
      m.runtime = new MemberRuntime(cluster, pods.pods, { log: log.child({ component: 'kubelet-api' }) });
      m.parts = [cluster, node, mirror, services, serviceExports, exporter, pods];
      // The node registers (NotReady until the member's caches sync) whatever happens next.
      node.start();
      // A rewritten kubeconfig (file or Secret) is used from then on, without a restart.
      m.credentials = followMemberAccess(m.config, this.host, client, log);
      m.setupError = undefined;
      // Objects an earlier version labelled with the old default origin are this host's: adopted before any
      // controller judges what is ours (else its delegates would be taken for someone else's).
      if (this.config.hostName === undefined) {
        await retryWithBackoff(() => adoptLegacyObjects(client, cluster.owner, log),
          'could not adopt objects of the old default origin', log, () => this.#stopped).catch(() => undefined);
      }
      if (this.#stopped) return;
      // The member's informers start in the same tick as everything that indexes their events.
      for (const p of m.parts) if (p !== node) p.start();
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
    return loaded ?? memberAccessSource(m, this.host).read();
  }

  /** The virtual nodes whose member and pod controller run, for the kubelet API. */
  nodes(): VirtualNode[] {
    const out: VirtualNode[] = [];
    for (const m of this.members) {
      if (m.pods && m.runtime) {
        out.push({ name: m.config.nodeName, port: m.config.kubeletPort ?? this.config.kubeletPort, proxies: m.pods.pods,
          runtime: m.runtime });
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
    this.hostServices.stop();
    this.hostEndpointSlices?.stop();
    this.exportConsent.stop();
    for (const m of this.members) {
      m.credentials?.stop();
      for (const p of m.parts.toReversed()) p.stop();
    }
  }
}
