// Multi-Cluster Services export in the member: while this node owns the member copy of a host Service annotated
// clusterlet.io/service-export=true (the ServiceReflector's copy, which carries the annotation), a ServiceExport of
// the same name sits next to it (forge/serviceexport.ts), owned by the copy; it goes with the annotation or the
// copy. A ServiceExport of that name clusterlet did not create is never touched. Only where the member serves
// multicluster.x-k8s.io/v1alpha1: looked up at start and every few minutes; where it is absent nothing is watched.
// A policy over one Reflector, made while the API is served; keys are member `<namespace>/<name>`, the copy's.
import type { Subscription } from 'rxjs';
import type { V1Service } from '@kubernetes/client-node';
import type { MemberCluster } from '../cluster.ts';
import type { ClusterClient } from '../../kube/client.ts';
import { ignoreNotFound } from '../../kube/errors.ts';
import { objectKey, splitKey, type Informer } from '../../kube/informer.ts';
import { target, type Target } from '../../kube/kinds.ts';
import { ORIGIN_LABEL } from '../../forge/keys.ts';
import { fromHost, ownedBy, type Owner } from '../../forge/owner.ts';
import { forgeServiceExport, MCS_GROUP_VERSION, serviceExportMatches, type ServiceExport } from '../../forge/serviceexport.ts';
import type { HandlerResult } from '../../util/workqueue.ts';
import { Reflector } from './reflector.ts';
import type { Logger } from '../../log.ts';
import { settle } from '../../util/settle.ts';

/** The member's Multi-Cluster Services API, as the exporter uses it. */
export interface ServiceExportApi {
  /** Whether the member serves multicluster.x-k8s.io/v1alpha1. */
  served(): Promise<boolean>;
  /** Where the ServiceExports go: a new store each time the API appears. */
  target(): Target<ServiceExport>;
}

/** The member's: a GET of the group version (404: absent), and the ServiceExports labelled with the host's identity. */
export function serviceExportApi(member: Pick<MemberCluster, 'client' | 'hostName'>, log: Logger): ServiceExportApi {
  const c: ClusterClient = member.client;
  return {
    served: async () => (await ignoreNotFound(() => c.request('GET', `/apis/${MCS_GROUP_VERSION}`))) !== undefined,
    target: () => target(c, 'ServiceExport', `${ORIGIN_LABEL}=${member.hostName}`, log),
  };
}

export interface ServiceExporterOptions {
  /** How often the member's API is looked up again (it may be installed or removed). */
  rediscoverMs?: number;
  /** How often a name taken by someone else's ServiceExport is looked at again. */
  conflictRecheckMs?: number;
}

export class ServiceExporter {
  #name: string;
  #owner: Owner;
  #copies: Informer<V1Service>;
  #api: ServiceExportApi;
  #log: Logger;
  #rediscoverMs: number;
  #recheckMs: number;
  /** While the API is served. */
  #reflector: Reflector<ServiceExport> | undefined;
  /** The copies' changes, while the API is served. */
  #sub: Subscription | undefined;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  #looked = false;

  /** `copies`: the ServiceReflector's store of the member Service copies (it starts them). */
  constructor(member: { name: string; owner: Owner }, copies: Informer<V1Service>, api: ServiceExportApi, log: Logger,
    opts: ServiceExporterOptions = {}) {
    this.#name = member.name;
    this.#owner = member.owner;
    this.#copies = copies;
    this.#api = api;
    this.#log = log;
    this.#rediscoverMs = opts.rediscoverMs ?? 300_000;
    this.#recheckMs = opts.conflictRecheckMs ?? 60_000;
  }

  start(): void { settle(this.#discover(), this.#log, 'looking up the Multi-Cluster Services API failed'); }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#stopReflector();
  }

  /** Starts or stops the exports as the member serves the API or not; looks again later. */
  async #discover(): Promise<void> {
    try {
      const served = await this.#api.served();
      if (this.#stopped) return;
      if (served && !this.#reflector) {
        this.#startReflector();
        this.#log.info({ api: MCS_GROUP_VERSION }, 'the member serves the Multi-Cluster Services API: annotated Services are exported');
      } else if (!served && (this.#reflector || !this.#looked)) {
        this.#stopReflector();
        this.#log.info({ api: MCS_GROUP_VERSION }, 'the member does not serve the Multi-Cluster Services API: no Service is exported');
      }
      this.#looked = true;
    } catch (err) {
      this.#log.debug({ err: (err as Error).message }, 'could not look up the Multi-Cluster Services API; looking again later');
    }
    if (!this.#stopped) this.#timer = setTimeout(() => settle(this.#discover(), this.#log,
      'looking up the Multi-Cluster Services API failed'), this.#rediscoverMs);
  }

  #startReflector(): void {
    const r = new Reflector<ServiceExport>({
      name: `serviceexports-${this.#name}`, workers: 1, target: this.#api.target(), log: this.#log, sync: (key) => this.#sync(key),
      keyOf: objectKey, reads: [this.#copies], startKeys: () => this.#copies.keys(),
      // One of this host's (whichever of its nodes made it) is brought in line; any other is not touched.
      update: { ours: (o) => fromHost(o.metadata, this.#owner.hostName), matches: serviceExportMatches },
      metrics: { member: this.#name, kind: 'ServiceExport', direction: 'to-member', counts: (o) => ownedBy(o.metadata, this.#owner) },
    });
    this.#reflector = r;
    r.start();
    this.#sub = this.#copies.events$.subscribe((ev) => r.add(ev.key));
  }

  #stopReflector(): void {
    this.#sub?.unsubscribe();
    this.#sub = undefined;
    this.#reflector?.stop();
    this.#reflector = undefined;
  }

  /** The export of a copy: there while this node owns the copy and it asks for one; this node's goes otherwise. */
  async #sync(key: string): Promise<HandlerResult | void> {
    const r = this.#reflector;
    if (!r) return;
    const { namespace, name } = splitKey(key);
    const copy = this.#copies.get(key);
    const desired = copy && !copy.metadata?.deletionTimestamp && ownedBy(copy.metadata, this.#owner)
      ? forgeServiceExport(copy, this.#owner) : undefined;
    if (desired) {
      const applied = await r.apply(namespace, name, () => desired);
      if (applied === 'conflict') {
        this.#log.debug({ kind: 'ServiceExport', namespace, name }, 'a ServiceExport clusterlet did not create has this name: left untouched');
        return { requeueAfterMs: this.#recheckMs };
      }
      if (applied !== 'unchanged') this.#log.debug({ kind: 'ServiceExport', namespace, name }, `export ${applied}`);
      return;
    }
    const existing = r.store.get(key);
    if (existing && ownedBy(existing.metadata, this.#owner)) {
      await r.remove(existing);
      this.#log.debug({ kind: 'ServiceExport', namespace, name }, 'export removed');
    }
  }
}
