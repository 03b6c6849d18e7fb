// The member's side of storage (the VolumeProvider): for each host claim of the member's storage class, a member
// claim of the same name in the mapped namespace, of the member's class, labelled as ours; expanded when the host
// claim is, deleted when its host volume goes with the Delete policy. A member claim clusterlet did not create is
// never touched. Also the pod gate: a proxy whose claims have no member claim gets no delegate.
import { filter, mergeMap, of, type Observable, type Subscription } from 'rxjs';
import { LRUCache } from 'lru-cache';
import type { V1PersistentVolumeClaim, V1Pod, V1StorageClass } from '@kubernetes/client-node';
import type { MemberCluster } from '../cluster.ts';
import type { MemberConfig } from '../../config.ts';
import { checkMemberNamespace } from '../../forge/namespace.ts';
import { PATCH, type ClusterClient } from '../../kube/client.ts';
import { Informer } from '../../kube/informer.ts';
import { listWatch } from '../../kube/listwatch.ts';
import { ignoreGone, ignoreNotFound, toKubeError } from '../../kube/errors.ts';
import { NODE_LABEL, ORIGIN_LABEL } from '../../forge/keys.ts';
import { ownedBy, type Owner } from '../../forge/owner.ts';
import { namespacedName, objectId } from '../../forge/meta.ts';
import {
  claimRejection, forgeMemberClaim, hostClaimKeyOf, memberVolumeState, podClaims, type ClaimRequest, type VolumeState,
} from '../../forge/volumes.ts';
import { PodRejectedError } from '../../provider/errors.ts';
import { VolumeRejectedError, type VolumeProvider } from '../../provider/volume.ts';
import { upTo } from '../../util/lru.ts';
import type { Logger } from '../../log.ts';

/** The member API calls of the member's volumes. */
export interface MemberClaimsApi {
  /** The member claims of this virtual node (labelled with its owner). */
  claims: Informer<V1PersistentVolumeClaim>;
  create(namespace: string, body: V1PersistentVolumeClaim): Promise<V1PersistentVolumeClaim>;
  read(namespace: string, name: string): Promise<V1PersistentVolumeClaim>;
  /** A merge patch. */
  patch(namespace: string, name: string, body: object): Promise<unknown>;
  /** Deletes the claim of that UID only. */
  remove(namespace: string, name: string, uid: string): Promise<unknown>;
  /** The member's StorageClass of that name, undefined if there is none. */
  storageClass(name: string): Promise<V1StorageClass | undefined>;
}

export function memberClaimsApi(client: ClusterClient, owner: Owner, log: Logger): MemberClaimsApi {
  const c = client.core;
  return {
    claims: new Informer(`${client.name}-claims`, listWatch<V1PersistentVolumeClaim>(client, {
      path: '/api/v1/persistentvolumeclaims', model: 'V1PersistentVolumeClaim', resource: 'persistentvolumeclaims',
      labelSelector: `${ORIGIN_LABEL}=${owner.hostName},${NODE_LABEL}=${owner.node}`,
      list: (p) => c.listPersistentVolumeClaimForAllNamespaces(p),
    }, { log })),
    create: (namespace, body) => c.createNamespacedPersistentVolumeClaim({ namespace, body }),
    read: (namespace, name) => c.readNamespacedPersistentVolumeClaim({ namespace, name }),
    patch: (namespace, name, body) => c.patchNamespacedPersistentVolumeClaim({ namespace, name, body }, { contentType: PATCH.merge }),
    remove: (namespace, name, uid) => c.deleteNamespacedPersistentVolumeClaim({ namespace, name, body: { preconditions: { uid } } }),
    storageClass: (name) => ignoreNotFound(() => client.request<V1StorageClass>('GET', `/apis/storage.k8s.io/v1/storageclasses/${encodeURIComponent(name)}`)),
  };
}

/** What the member's volumes use of the member. */
export type VolumesMember = Pick<MemberCluster, 'owner'> & { config: Pick<MemberConfig, 'name' | 'namespaceMapping' | 'storage'> };

/** Makes sure a member namespace exists and holds the host namespace (the pod provider's; PodRejectedError if not). */
export type EnsureNamespace = (memberNamespace: string, hostNamespace: string) => Promise<void>;

/** The host's claims, as the pod gate reads them (an Informer of every host claim). */
export type HostClaims = Pick<Informer<V1PersistentVolumeClaim>, 'get' | 'waitSynced'>;

export interface MemberVolumesOptions {
  /** How long the pod gate waits for the claims to be listed before the pod is tried again (default 10 s). */
  listWaitMs?: number;
}

/** Answers of the member's API server that refuse a claim for good (admission, quota, validation). */
const REFUSALS = new Set(['Forbidden', 'Invalid', 'BadRequest']);

export class MemberVolumes implements VolumeProvider {
  readonly volumeChanges$: Observable<string>;
  #member: VolumesMember;
  #api: MemberClaimsApi;
  #ensureNamespace: EnsureNamespace;
  #hostClaims: HostClaims;
  #log: Logger;
  /** Host claim key → member key of its member claim, from the claims' annotations. */
  #byHost = new Map<string, string>();
  #sub: Subscription | undefined;
  /** Member StorageClass → whether it binds on first consumer (binding modes never change; a class may be made again). */
  #waits = new LRUCache<string, boolean>({ ...upTo(1000), ttl: 600_000 });
  #listWaitMs: number;

  constructor(member: VolumesMember, api: MemberClaimsApi, ensureNamespace: EnsureNamespace, hostClaims: HostClaims, log: Logger,
    opts: MemberVolumesOptions = {}) {
    this.#listWaitMs = opts.listWaitMs ?? 10_000;
    this.#member = member;
    this.#api = api;
    this.#ensureNamespace = ensureNamespace;
    this.#hostClaims = hostClaims;
    this.#log = log;
    this.volumeChanges$ = api.claims.events$.pipe(
      mergeMap((ev) => of(...new Set([ev.old && hostClaimKeyOf(ev.old), hostClaimKeyOf(ev.object)]))),
      filter((k): k is string => k !== undefined),
    );
  }

  start(): void {
    // Subscribed first: the index is up to date before anyone hears of a change.
    this.#sub = this.#api.claims.events$.subscribe((ev) => {
      const key = hostClaimKeyOf(ev.object);
      if (!key) return;
      if (ev.type === 'DELETED') this.#byHost.delete(key);
      else this.#byHost.set(key, ev.key);
    });
    this.#api.claims.start();
  }

  stop(): void {
    this.#sub?.unsubscribe();
    this.#api.claims.stop();
    this.#byHost.clear();
  }
  waitSynced(): Promise<void> { return this.#api.claims.waitSynced(); }

  #claimOf(namespace: string, name: string): V1PersistentVolumeClaim | undefined {
    const key = this.#byHost.get(`${namespace}/${name}`);
    return key === undefined ? undefined : this.#api.claims.get(key);
  }

  #state(claim: V1PersistentVolumeClaim): VolumeState {
    const cls = claim.spec?.storageClassName;
    return memberVolumeState(claim, { member: this.#member.config.name, waitsForConsumer: cls ? this.#waits.get(cls) ?? false : false });
  }

  getVolume(namespace: string, name: string): VolumeState | undefined {
    const claim = this.#claimOf(namespace, name);
    return claim && this.#state(claim);
  }

  async provisionVolume(req: ClaimRequest): Promise<{ volume: VolumeState; created: boolean }> {
    const m = this.#member.config;
    const known = this.#claimOf(req.namespace, req.name);
    if (known) return { volume: await this.#classified(known), created: false };
    const check = checkMemberNamespace(m.namespaceMapping, req.namespace);
    if (check.error) throw new VolumeRejectedError(check.reason, check.error);
    const ns = check.namespace;
    const memberClass = m.storage.memberClassName;
    // A class the member does not have would leave the claim pending for ever: none is made until it exists.
    if (memberClass !== undefined && await this.#waitsForConsumer(memberClass) === undefined) {
      throw new VolumeRejectedError('ProvisioningFailed', `member ${m.name} has no storage class "${memberClass}" (memberStorageClassName)`);
    }
    try {
      await this.#ensureNamespace(ns, req.namespace);
    } catch (err) {
      if (err instanceof PodRejectedError) throw new VolumeRejectedError(err.reason, err.message, { cause: err });
      throw err;
    }
    let claim: V1PersistentVolumeClaim;
    let created = true;
    try {
      claim = await this.#api.create(ns, forgeMemberClaim(req, { owner: this.#member.owner, memberNamespace: ns, memberClassName: memberClass }));
      this.#log.debug({ namespace: ns, claim: req.name }, 'member claim created');
    } catch (err) {
      const k = toKubeError(err);
      if (REFUSALS.has(k.kind)) {
        throw new VolumeRejectedError('ProvisioningFailed', `member ${m.name} refused claim ${ns}/${req.name}: ${k.message}`, { cause: err, reschedule: true });
      }
      if (k.kind !== 'AlreadyExists') throw k;
      claim = await this.#api.read(ns, req.name);
      created = false;
      if (!ownedBy(claim.metadata, this.#member.owner)) {
        throw new VolumeRejectedError('MemberVolumeConflict',
          `member ${m.name} already has a claim ${ns}/${req.name} that clusterlet did not create; it is left untouched`);
      }
    }
    return { volume: await this.#classified(claim), created };
  }

  /**
   * The state of a member claim once its class's binding mode is known: a claim made before a restart (or looked at
   * after the cache forgot its class) and still Pending in a WaitForFirstConsumer class is bound only once the
   * delegate uses it, so the host volume must not wait for it.
   */
  async #classified(claim: V1PersistentVolumeClaim): Promise<VolumeState> {
    const cls = claim.spec?.storageClassName;
    if (cls) await this.#waitsForConsumer(cls);
    return this.#state(claim);
  }

  /** Whether the member's class binds on first consumer (cached); undefined when the member has no such class. */
  async #waitsForConsumer(cls: string): Promise<boolean | undefined> {
    const known = this.#waits.get(cls);
    if (known !== undefined) return known;
    const sc = await this.#api.storageClass(cls);
    if (!sc) return undefined;
    const waits = sc.volumeBindingMode === 'WaitForFirstConsumer';
    this.#waits.set(cls, waits);
    return waits;
  }

  async expandVolume(namespace: string, name: string, storage: string): Promise<void> {
    const claim = this.#claimOf(namespace, name);
    if (!claim) return;
    const { namespace: ns, name: n, uid } = objectId(claim);
    try {
      // The UID in the body: another claim of that name is not expanded.
      await this.#api.patch(ns, n, { metadata: { uid }, spec: { resources: { requests: { storage } } } });
      this.#log.debug({ namespace: ns, claim: n, storage }, 'member claim expanded');
    } catch (err) {
      const k = toKubeError(err);
      if (k.kind === 'NotFound') return;
      if (REFUSALS.has(k.kind)) {
        throw new VolumeRejectedError('VolumeResizeFailed', `member ${this.#member.config.name} refused to expand claim ${ns}/${n} to ${storage}: ${k.message}`,
          { cause: err });
      }
      throw k;
    }
  }

  async deleteVolume(namespace: string, name: string, uid: string): Promise<void> {
    const claim = this.#claimOf(namespace, name);
    if (!claim || this.#state(claim).claimUID !== uid || claim.metadata?.deletionTimestamp) return;
    const { namespace: ns, name: n, uid: memberUID } = objectId(claim);
    await this.#api.remove(ns, n, memberUID).catch(ignoreGone);
    this.#log.debug({ namespace: ns, claim: n }, 'member claim deleted');
  }

  /**
   * Why `proxy` cannot run in the member for want of a volume there (see forge/volumes.ts claimRejection), or
   * undefined. No verdict on a partial view: it waits for the claims to be listed, and throws if they are not soon
   * (the pod is tried again).
   */
  async podRejection(proxy: V1Pod): Promise<PodRejectedError | undefined> {
    const hostNs = namespacedName(proxy).namespace;
    if (podClaims(proxy).length === 0) return undefined;
    await this.#listed();
    const r = claimRejection(proxy, {
      hostClaim: (n) => this.#hostClaims.get(`${hostNs}/${n}`), memberVolume: (n) => this.getVolume(hostNs, n),
    }, { member: this.#member.config.name, className: this.#member.config.storage.className });
    return r && new PodRejectedError(r.reason, r.message, { retry: r.retry });
  }

  async #listed(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('the claims are not listed yet')), this.#listWaitMs);
    });
    try {
      await Promise.race([Promise.all([this.#hostClaims.waitSynced(), this.#api.claims.waitSynced()]), late]);
    } finally {
      clearTimeout(timer);
    }
  }
}
