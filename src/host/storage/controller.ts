// One member's volume controller, the external provisioner and resizer of its host StorageClass: it keeps the class,
// makes the member claim of each claim the host scheduler placed on the virtual node (through the VolumeProvider),
// then the host volume that stands for it, pre-bound to the claim (the PV controller binds it); forwards expansions
// to the member and brings the member's capacity and resize conditions back; and on a Released volume with the
// Delete policy deletes the member claim, then the volume. One work queue of keys `StorageClass/<name>`,
// `PersistentVolumeClaim/<namespace>/<name>` and `PersistentVolume/<name>`.
import type { Subscription } from 'rxjs';
import type { V1PersistentVolume, V1PersistentVolumeClaim, V1PersistentVolumeClaimCondition } from '@kubernetes/client-node';
import { ignoreGone, ignoreNotFound, toKubeError } from '../../kube/errors.ts';
import type { EventSubject } from '../../kube/events.ts';
import { objectKey } from '../../kube/informer.ts';
import { MEMBER_LABEL, VOLUME_FINALIZER } from '../../forge/keys.ts';
import {
  SELECTED_NODE_ANNOTATION, claimExpansion, claimRequest, claimStatusUpdate, forgeHostStorageClass, forgeHostVolume,
  hostVolumeName, isOwnVolume, newMemberResizeFailure, provisionerOf, resizeRefusedCondition, shouldProvision,
  storageClassMatches, storageClassRecreate, unprovisionable, volumeCapacityUpdate, volumeReady, type StorageContext,
  type VolumeState,
} from '../../forge/volumes.ts';
import { namespacedName, nameOf, objectId, uidOf } from '../../forge/meta.ts';
import { VolumeRejectedError, type VolumeProvider } from '../../provider/volume.ts';
import { WorkQueue, type HandlerResult } from '../../util/workqueue.ts';
import { metrics } from '../../metrics.ts';
import type { HostStorageApi } from './api.ts';
import type { Logger } from '../../log.ts';
import { settleOrExit } from '../../util/settle.ts';

const CLAIM = 'PersistentVolumeClaim/';
const VOLUME = 'PersistentVolume/';
const CLASS = 'StorageClass/';

/** How often the class is looked at again (someone may have deleted it), and a refused claim tried again. */
const CLASS_RECHECK_MS = 300_000;
const RETRY_REFUSED_MS = 60_000;

type Operation = 'provision' | 'expand' | 'delete';

const claimSubject = (c: V1PersistentVolumeClaim): EventSubject => ({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', ...objectId(c) });
// Events about cluster-scoped objects live in "default", as the API's own.
const volumeSubject = (pv: V1PersistentVolume): EventSubject => ({
  apiVersion: 'v1', kind: 'PersistentVolume', namespace: 'default', name: nameOf(pv), uid: uidOf(pv),
});

export class VolumeController {
  #api: HostStorageApi;
  #provider: VolumeProvider;
  #ctx: StorageContext;
  #log: Logger;
  #queue: WorkQueue;
  #subs: Subscription[] = [];
  #stopped = false;

  constructor(api: HostStorageApi, provider: VolumeProvider, ctx: StorageContext, log: Logger) {
    this.#api = api;
    this.#provider = provider;
    this.#ctx = ctx;
    this.#log = log.child({ component: 'volumes' });
    this.#queue = new WorkQueue({ name: `volumes-${ctx.member}`, workers: 4, log: this.#log, maxDelayMs: 60_000 });
  }

  start(): void {
    const ours = (c: V1PersistentVolumeClaim | undefined): boolean => c?.spec?.storageClassName === this.#ctx.className;
    this.#subs.push(
      this.#api.claims.events$.subscribe((ev) => { if (ours(ev.object) || ours(ev.old)) this.#queue.add(CLAIM + ev.key); }),
      this.#api.volumes.events$.subscribe((ev) => {
        if (!isOwnVolume(ev.object, this.#ctx)) return;
        this.#queue.add(VOLUME + ev.key);
        const ref = ev.object.spec?.claimRef;
        if (ref) this.#queue.add(`${CLAIM}${ref.namespace}/${ref.name}`);
      }),
      this.#provider.volumeChanges$.subscribe((key) => this.#queue.add(CLAIM + key)),
    );
    this.#queue.add(CLASS + this.#ctx.className);
    // Nothing is judged on a partial view: every claim of the class and volume of the member once all have synced.
    settleOrExit(Promise.all([this.#api.claims.waitSynced(), this.#api.volumes.waitSynced(), this.#provider.waitSynced()]).then(() => {
      if (this.#stopped) return;
      for (const c of this.#api.claims.list()) if (ours(c)) this.#queue.add(CLAIM + objectKey(c));
      for (const pv of this.#api.volumes.list()) if (isOwnVolume(pv, this.#ctx)) this.#queue.add(VOLUME + nameOf(pv));
      this.#queue.start((key) => this.#sync(key));
    }), this.#log, 'volume cache sync failed');
  }

  /** Resolves once no key is queued or under way (keys waiting for a retry do not count): what tests await. */
  idle(): Promise<void> { return this.#queue.idle(); }

  /** An operation the member refused or that failed, counted while the controller runs (see ProxyWriter.counted, host/pod/writer.ts). */
  #failed(operation: Operation): void {
    if (!this.#stopped) metrics.volumeFailures.inc({ member: this.#ctx.member, operation });
  }

  stop(): void {
    this.#stopped = true;
    this.#queue.shutdown();
    for (const s of this.#subs.splice(0)) s.unsubscribe();
  }

  #sync(key: string): Promise<HandlerResult | void> {
    if (key.startsWith(CLASS)) return this.#syncClass();
    if (key.startsWith(VOLUME)) return this.#syncVolume(key.slice(VOLUME.length));
    return this.#syncClaim(key.slice(CLAIM.length));
  }

  /** The member's host StorageClass exists as forged: made again when a field that cannot change differs. */
  async #syncClass(): Promise<HandlerResult> {
    const desired = forgeHostStorageClass(this.#ctx);
    const name = this.#ctx.className;
    const actual = await this.#api.readClass(name);
    if (!actual) {
      await this.#api.createClass(desired);
      this.#log.info({ storageClass: name }, 'storage class created');
    } else if (actual.metadata?.labels?.[MEMBER_LABEL] !== this.#ctx.member && actual.provisioner !== provisionerOf(this.#ctx.member)) {
      this.#log.error({ storageClass: name, provisioner: actual.provisioner },
        'a storage class of that name exists that clusterlet did not create; it is left untouched and its claims get no volume in the member');
    } else if (storageClassRecreate(desired, actual)) {
      // Claims and volumes name their class; neither needs it to stay the same object.
      await this.#api.deleteClass(name, uidOf(actual));
      await this.#api.createClass(desired);
      this.#log.info({ storageClass: name }, 'storage class made again: a field that cannot change differed');
    } else if (!storageClassMatches(desired, actual)) {
      await this.#api.replaceClass(name, { ...desired, metadata: { ...desired.metadata, resourceVersion: actual.metadata?.resourceVersion } });
    }
    return { requeueAfterMs: CLASS_RECHECK_MS };
  }

  async #syncClaim(key: string): Promise<HandlerResult | void> {
    const claim = this.#api.claims.get(key);
    // A claim of that name of another class (a class never changes) is another claim than the member claim's.
    if (claim?.spec?.storageClassName !== this.#ctx.className) return this.#orphaned(key);
    const bound = claim.spec.volumeName;
    if (!bound) return this.#provision(claim);
    const pv = this.#api.volumes.get(bound);
    if (pv && isOwnVolume(pv, this.#ctx) && pv.spec?.claimRef?.uid === claim.metadata?.uid) await this.#follow(claim, pv);
  }

  /** The member claim first; once the member bound it (or will on first use), the host volume standing for it. */
  async #provision(claim: V1PersistentVolumeClaim): Promise<HandlerResult | void> {
    const { namespace, name, uid } = objectId(claim);
    const volume = hostVolumeName(uid);
    // Made already: the PV controller binds it.
    if (!shouldProvision(claim, this.#ctx) || this.#api.volumes.get(volume)) return;
    // Not retried: a claim's data source never changes.
    const never = unprovisionable(claim, this.#ctx.member);
    if (never !== undefined) return this.#refused(claim, 'provision', new VolumeRejectedError('ProvisioningFailed', never), false);
    let v: VolumeState;
    try {
      const made = await this.#provider.provisionVolume(claimRequest(claim, this.#ctx.reclaimPolicy));
      v = made.volume;
      if (made.created) {
        await this.#event(claimSubject(claim), 'Normal', 'Provisioning',
          `External provisioner is provisioning volume for claim "${namespace}/${name}": claim ${v.location} made in member ${this.#ctx.member}`);
      }
    } catch (err) {
      return this.#refused(claim, 'provision', err);
    }
    if (v.claimUID !== uid) return this.#earlierClaim(claim, v);
    // Not bound yet: a change of the member claim queues this claim again.
    if (!volumeReady(v)) return;
    const pv = forgeHostVolume(claim, v, this.#ctx);
    try {
      await this.#api.createVolume(pv);
    } catch (err) {
      if (toKubeError(err).kind !== 'AlreadyExists') throw toKubeError(err);
      return;
    }
    if (!this.#stopped) metrics.volumesProvisioned.inc({ member: this.#ctx.member });
    this.#log.info({ namespace, claim: name, volume, memberClaim: v.location }, 'volume provisioned');
    await this.#event(claimSubject(claim), 'Normal', 'ProvisioningSucceeded',
      `Successfully provisioned volume ${volume}: claim ${v.location} in member ${this.#ctx.member}`);
  }

  /**
   * The member claim of that name was made for an earlier claim. Its host volume is being released with the Delete
   * policy: it goes soon (its going queues this claim again). It never had one (see #orphaned): deleted with the
   * Delete policy. Otherwise it is kept (Retain), and never taken over.
   */
  async #earlierClaim(claim: V1PersistentVolumeClaim, v: VolumeState): Promise<HandlerResult | void> {
    const earlier = this.#api.volumes.get(hostVolumeName(v.claimUID));
    if (v.terminating || earlier?.spec?.persistentVolumeReclaimPolicy === 'Delete') return;
    if (!earlier && this.#deletesOrphan(v)) {
      const { namespace, name } = namespacedName(claim);
      return this.#deleteOrphan(namespace, name, v);
    }
    this.#failed('provision');
    await this.#event(claimSubject(claim), 'Warning', 'MemberVolumeConflict',
      `member claim ${v.location} holds the data of an earlier claim of that name (UID ${v.claimUID}), kept by the Retain `
      + 'reclaim policy: it is never taken over; this claim gets a volume once it is deleted in the member');
    return { requeueAfterMs: RETRY_REFUSED_MS };
  }

  /**
   * A host claim gone before its host volume was made (deleted while Pending, e.g. the member never bound it): no
   * volume will ever be Released for its member claim, so with the Delete policy it is deleted here. No pod ever
   * mounted it (a pod needs the host claim bound). With Retain it stays, as a retained volume's data.
   */
  async #orphaned(key: string): Promise<void> {
    const [namespace, name] = key.split('/');
    const v = this.#provider.getVolume(namespace, name);
    if (!v || v.terminating || !this.#deletesOrphan(v) || this.#api.volumes.get(hostVolumeName(v.claimUID))) return;
    await this.#deleteOrphan(namespace, name, v);
  }

  /**
   * Whether a member claim without a host volume goes: by the policy it was made under, so that one kept by Retain
   * (its volume since deleted by hand) is not deleted after the class changed to Delete.
   */
  #deletesOrphan(v: VolumeState): boolean {
    return (v.reclaimPolicy ?? this.#ctx.reclaimPolicy) === 'Delete';
  }

  async #deleteOrphan(namespace: string, name: string, v: VolumeState): Promise<void> {
    await this.#provider.deleteVolume(namespace, name, v.claimUID);
    this.#log.info({ namespace, claim: name, memberClaim: v.location }, 'member claim of a claim gone before its volume was made deleted');
  }

  /**
   * A bound claim follows its member claim: expansion to the member, capacity and resize conditions back. An
   * expansion the member refuses, or fails to make, shows on the claim: a ControllerResizeError condition and a
   * Warning with the member's reason (tried again while the claim asks for it).
   */
  async #follow(claim: V1PersistentVolumeClaim, pv: V1PersistentVolume): Promise<HandlerResult | void> {
    const { namespace, name, uid } = objectId(claim);
    const volume = nameOf(pv);
    const v = this.#provider.getVolume(namespace, name);
    if (!v || v.claimUID !== uid) {
      await this.#event(claimSubject(claim), 'Warning', 'MemberVolumeLost',
        `the member claim of volume ${volume} is gone from member ${this.#ctx.member}: its pods cannot start there`);
      return;
    }
    const want = claimExpansion(claim, v);
    let refused: { condition: V1PersistentVolumeClaimCondition; result: HandlerResult | void } | undefined;
    if (want !== undefined) {
      try {
        await this.#provider.expandVolume(namespace, name, want);
        await this.#event(claimSubject(claim), 'Normal', 'Resizing',
          `External resizer is resizing volume ${volume}: member claim ${v.location} asked for ${want}`);
      } catch (err) {
        const result = await this.#refused(claim, 'expand', err);
        refused = { condition: resizeRefusedCondition(claim, (err as Error).message, new Date()), result };
      }
    }
    const failure = newMemberResizeFailure(claim, v);
    if (failure) {
      this.#failed('expand');
      await this.#event(claimSubject(claim), 'Warning', 'VolumeResizeFailed',
        `member ${this.#ctx.member} could not expand claim ${v.location}: ${failure.message ?? failure.reason ?? failure.type}`);
    }
    const capacity = volumeCapacityUpdate(pv, v);
    if (capacity !== undefined) await this.#api.patchVolume(volume, { spec: { capacity: { storage: capacity } } });
    const status = claimStatusUpdate(claim, v, refused?.condition);
    if (status !== undefined) await this.#api.patchClaimStatus(namespace, name, { status });
    if (status !== undefined && capacity !== undefined) {
      await this.#event(claimSubject(claim), 'Normal', 'VolumeResizeSuccessful',
        `resize volume "${volume}" by resizer "${provisionerOf(this.#ctx.member)}" finished: ${capacity} in member ${this.#ctx.member}`);
    }
    return refused?.result;
  }

  /**
   * The member refused (or holds someone else's claim there): a Warning on the claim with the provider's reason. A
   * refusal of the node asks the host scheduler to choose again (the selected-node annotation goes, as the
   * external provisioner's reschedule); anything else is tried again later.
   */
  async #refused(claim: V1PersistentVolumeClaim, operation: Operation, err: unknown, retry = true): Promise<HandlerResult | void> {
    if (!(err instanceof VolumeRejectedError)) throw err;
    this.#failed(operation);
    await this.#event(claimSubject(claim), 'Warning', err.reason, err.message);
    if (!err.reschedule) return retry ? { requeueAfterMs: RETRY_REFUSED_MS } : undefined;
    const { namespace, name } = namespacedName(claim);
    await this.#api.patchClaim(namespace, name, { metadata: { annotations: { [SELECTED_NODE_ANNOTATION]: null } } });
  }

  /**
   * A volume whose claim is gone (Released), or that failed: with the Delete policy its member claim goes, then the
   * finalizer, then the volume; with Retain both stay. The finalizer (Delete volumes only) holds a volume deleted by
   * hand until its member claim is deleted; it is removed before the volume is deleted, while no other writer changes
   * the volume's finalizers (the PV protection controller drops its own only once the volume is being deleted).
   */
  async #syncVolume(name: string): Promise<void> {
    const pv = this.#api.volumes.get(name);
    if (!pv || !isOwnVolume(pv, this.#ctx)) return;
    const phase = pv.status?.phase;
    if (phase !== 'Released' && phase !== 'Failed') return;
    const deletes = pv.spec?.persistentVolumeReclaimPolicy === 'Delete';
    const ref = pv.spec?.claimRef;
    try {
      if (deletes && ref?.namespace && ref.name && ref.uid) await this.#provider.deleteVolume(ref.namespace, ref.name, ref.uid);
    } catch (err) {
      this.#failed('delete');
      await this.#event(volumeSubject(pv), 'Warning', 'VolumeFailedDelete', (err as Error).message);
      throw err;
    }
    const at = pv.metadata?.finalizers?.indexOf(VOLUME_FINALIZER) ?? -1;
    if (at >= 0) {
      // Tested at its position: another writer's finalizer is never removed instead.
      const path = `/metadata/finalizers/${at}`;
      await ignoreNotFound(() => this.#api.jsonPatchVolume(name, [{ op: 'test', path, value: VOLUME_FINALIZER }, { op: 'remove', path }]));
    }
    if (!deletes || pv.metadata?.deletionTimestamp) return;
    await this.#api.deleteVolume(name, uidOf(pv)).catch(ignoreGone);
    this.#log.info({ volume: name, memberClaim: pv.spec?.csi?.volumeHandle }, 'volume released: its member claim and the volume deleted');
  }

  async #event(about: EventSubject, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    await this.#api.event(about, { type, reason, message }).catch((err: unknown) =>
      this.#log.warn({ err: (err as Error).message, reason, name: about.name }, 'could not write an event'));
  }
}
