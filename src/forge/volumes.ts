// Volume forge: pure functions between a host PersistentVolumeClaim of a member's storage class and what stands for
// it: the member claim that holds its data, the host PersistentVolume the host's scheduler and PV controller see, the
// host StorageClass itself, and the delegate's volumes. The protocol is the external provisioner's
// (sig-storage-lib-external-provisioner): a WaitForFirstConsumer class, the scheduler's selected-node annotation, the
// PV controller's storage-provisioner annotation, a volume pre-bound to its claim by claimRef.
import type {
  V1PersistentVolume, V1PersistentVolumeClaim, V1PersistentVolumeClaimCondition, V1PersistentVolumeClaimStatus, V1Pod,
  V1NodeSelectorRequirement, V1StorageClass, V1Volume,
} from '@kubernetes/client-node';
import {
  CLAIM_UID_ANNOTATION, HOSTNAME_LABEL, MEMBER_CLAIM_ANNOTATION, MEMBER_LABEL, PROXY_NAMESPACE_ANNOTATION, RECLAIM_POLICY_ANNOTATION,
  VOLUME_FINALIZER,
} from './keys.ts';

const ZONE_LABEL = 'topology.kubernetes.io/zone';
import { ownerLabels, type Owner } from './owner.ts';
import { compare, parseQuantity } from './quantity.ts';
import { sortedJSON } from './refs.ts';
import { compact } from './objects.ts';
import { objectId } from './meta.ts';

// Kubernetes' own keys of the protocol.
export const SELECTED_NODE_ANNOTATION = 'volume.kubernetes.io/selected-node';
export const STORAGE_PROVISIONER_ANNOTATION = 'volume.kubernetes.io/storage-provisioner';
export const BETA_STORAGE_PROVISIONER_ANNOTATION = 'volume.beta.kubernetes.io/storage-provisioner';
export const PROVISIONED_BY_ANNOTATION = 'pv.kubernetes.io/provisioned-by';

/** The CSI driver named in the host volumes: no node ever mounts them (their pods run in the member). */
export const CSI_DRIVER = 'clusterlet.io';

export type ReclaimPolicy = 'Delete' | 'Retain';

/** One member's storage, as the host sees it. */
export interface StorageContext {
  member: string;
  /** The virtual node: the only node the class provisions for, and the one its volumes are pinned to. */
  nodeName: string;
  /**
   * For a member shown as several virtual nodes (a pool's, a member node's: forge/groups.ts): whether a host node is
   * one of them. The class then allows every node of the member (its clusterlet.io/member label), provisions for a
   * claim whichever of them the scheduler selected, and pins the volume to that one.
   */
  isOwnNode?: (name: string) => boolean;
  /** With isOwnNode: the zone of one of the member's virtual nodes (its topology.kubernetes.io/zone), if it has one. */
  zoneOf?: (name: string) => string | undefined;
  /** The host StorageClass. */
  className: string;
  reclaimPolicy: ReclaimPolicy;
}

/** The provisioner of a member's class: one per member, so each member's controller knows its claims and volumes. */
export function provisionerOf(member: string): string {
  return `clusterlet.io/${member}`;
}

/**
 * The member's host StorageClass: WaitForFirstConsumer (the claim is made where its pod is scheduled), topology
 * allowed only on the virtual node (the scheduler picks it for the claim's first pod), expandable.
 */
export function forgeHostStorageClass(ctx: StorageContext): V1StorageClass {
  return {
    apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass',
    metadata: { name: ctx.className, labels: { [MEMBER_LABEL]: ctx.member } },
    provisioner: provisionerOf(ctx.member),
    reclaimPolicy: ctx.reclaimPolicy,
    volumeBindingMode: 'WaitForFirstConsumer',
    allowVolumeExpansion: true,
    allowedTopologies: [{ matchLabelExpressions: [ctx.isOwnNode
      ? { key: MEMBER_LABEL, values: [ctx.member] } : { key: HOSTNAME_LABEL, values: [ctx.nodeName] }] }],
  };
}

/** A StorageClass field the API never changes once set: a class that differs in one is made again. */
export function storageClassRecreate(desired: V1StorageClass, actual: V1StorageClass): boolean {
  const fixed = (c: V1StorageClass): unknown[] =>
    [c.provisioner, c.reclaimPolicy ?? 'Delete', c.volumeBindingMode ?? 'Immediate', c.allowedTopologies ?? [], c.parameters ?? {}];
  return sortedJSON(fixed(desired)) !== sortedJSON(fixed(actual));
}

export function storageClassMatches(desired: V1StorageClass, actual: V1StorageClass): boolean {
  return !storageClassRecreate(desired, actual) && desired.allowVolumeExpansion === actual.allowVolumeExpansion
    && actual.metadata?.labels?.[MEMBER_LABEL] === desired.metadata?.labels?.[MEMBER_LABEL];
}

const storageOf = (claim: V1PersistentVolumeClaim): string | undefined => claim.spec?.resources?.requests?.storage;

/**
 * Whether the claim waits for this member's provisioner: of its class, not bound, not being deleted, handed to its
 * provisioner by the PV controller once the host scheduler selected the virtual node for it.
 */
export function shouldProvision(claim: V1PersistentVolumeClaim, ctx: StorageContext): boolean {
  const ann = claim.metadata?.annotations ?? {};
  const provisioner = ann[STORAGE_PROVISIONER_ANNOTATION] ?? ann[BETA_STORAGE_PROVISIONER_ANNOTATION];
  return claim.spec?.storageClassName === ctx.className && !claim.spec.volumeName && !claim.metadata?.deletionTimestamp
    && provisioner === provisionerOf(ctx.member) && isOwnSelected(ann[SELECTED_NODE_ANNOTATION], ctx) && storageOf(claim) !== undefined;
}

function isOwnSelected(node: string | undefined, ctx: StorageContext): boolean {
  return node !== undefined && (node === ctx.nodeName || (ctx.isOwnNode?.(node) ?? false));
}

/**
 * Why a claim cannot be provisioned in the member whatever happens, or undefined: a data source (a snapshot or claim
 * of the host) cannot fill a member volume, which would start empty.
 */
export function unprovisionable(claim: V1PersistentVolumeClaim, member: string): string | undefined {
  const src = claim.spec?.dataSourceRef ?? claim.spec?.dataSource;
  return src ? `a claim with a data source (${src.kind} "${src.name}") cannot get a volume in member ${member}: it would start empty` : undefined;
}

/** The host volume of the claim of that UID: named after it, as the PV controller and external provisioners name theirs. */
export function hostVolumeName(claimUID: string): string {
  return `pvc-${claimUID}`;
}

/** What the member must hold for a host claim. */
export interface ClaimRequest {
  namespace: string;
  name: string;
  uid: string;
  accessModes: string[];
  volumeMode?: string;
  storage: string;
  /** The host class's reclaim policy, recorded with the member claim (see VolumeState). */
  reclaimPolicy: ReclaimPolicy;
}

export function claimRequest(claim: V1PersistentVolumeClaim, reclaimPolicy: ReclaimPolicy): ClaimRequest {
  return compact({
    ...objectId(claim), accessModes: claim.spec?.accessModes ?? [],
    volumeMode: claim.spec?.volumeMode, storage: storageOf(claim) ?? '0', reclaimPolicy,
  });
}

/** A member claim's state, as the host claim and its volume show it (see provider/volume.ts). */
export interface VolumeState {
  /** The UID of the host claim it was made for. */
  claimUID: string;
  /** `<member>/<member namespace>/<claim>`, for people. */
  location: string;
  phase: 'Pending' | 'Bound' | 'Lost';
  /** The member binds it only once a pod uses it (its class is WaitForFirstConsumer). */
  waitsForConsumer: boolean;
  /** The reclaim policy it was made under; undefined for one made before clusterlet recorded it. */
  reclaimPolicy?: ReclaimPolicy;
  terminating: boolean;
  requested?: string;
  capacity?: string;
  accessModes?: string[];
  conditions?: V1PersistentVolumeClaimCondition[];
  allocatedResources?: Record<string, string>;
  allocatedResourceStatuses?: Record<string, string>;
}

export interface MemberClaimContext {
  owner: Owner;
  memberNamespace: string;
  /** The member's StorageClass; undefined: the member's default class. */
  memberClassName?: string;
}

/** The member claim for a host claim: same name, in the mapped namespace, of the member's class, owned. */
export function forgeMemberClaim(req: ClaimRequest, ctx: MemberClaimContext): V1PersistentVolumeClaim {
  return {
    apiVersion: 'v1', kind: 'PersistentVolumeClaim',
    metadata: {
      name: req.name, namespace: ctx.memberNamespace, labels: ownerLabels(ctx.owner),
      annotations: { [PROXY_NAMESPACE_ANNOTATION]: req.namespace, [CLAIM_UID_ANNOTATION]: req.uid, [RECLAIM_POLICY_ANNOTATION]: req.reclaimPolicy },
    },
    spec: compact({
      accessModes: req.accessModes, volumeMode: req.volumeMode, storageClassName: ctx.memberClassName,
      resources: { requests: { storage: req.storage } },
    }),
  };
}

/** The host claim a member claim of ours holds the data of (`<host namespace>/<name>`), from its annotations. */
export function hostClaimKeyOf(memberClaim: V1PersistentVolumeClaim): string | undefined {
  const ns = memberClaim.metadata?.annotations?.[PROXY_NAMESPACE_ANNOTATION];
  return ns ? `${ns}/${memberClaim.metadata?.name}` : undefined;
}

export function memberVolumeState(memberClaim: V1PersistentVolumeClaim, ctx: { member: string; waitsForConsumer: boolean }): VolumeState {
  const m = memberClaim.metadata ?? {};
  const s = memberClaim.status ?? {};
  const phase = s.phase === 'Bound' || s.phase === 'Lost' ? s.phase : 'Pending';
  const policy = m.annotations?.[RECLAIM_POLICY_ANNOTATION];
  return compact({
    claimUID: m.annotations?.[CLAIM_UID_ANNOTATION] ?? '', location: `${ctx.member}/${m.namespace}/${m.name}`, phase,
    waitsForConsumer: ctx.waitsForConsumer, reclaimPolicy: policy === 'Delete' || policy === 'Retain' ? policy : undefined,
    terminating: m.deletionTimestamp !== undefined,
    requested: storageOf(memberClaim), capacity: s.capacity?.storage, accessModes: s.accessModes, conditions: s.conditions,
    allocatedResources: s.allocatedResources, allocatedResourceStatuses: s.allocatedResourceStatuses,
  });
}

/**
 * Whether the host volume can be made: the member bound its claim, or will bind it only once the delegate uses it
 * (then no pod could ever be placed if the host waited).
 */
export function volumeReady(v: VolumeState): boolean {
  return !v.terminating && (v.phase === 'Bound' || (v.phase === 'Pending' && v.waitsForConsumer));
}

/**
 * The host volume standing for a member claim, pre-bound to the host claim (the PV controller completes the binding):
 * the member's size, the claim's modes, pinned to the virtual node, the member claim recorded. No node mounts it.
 */
export function forgeHostVolume(claim: V1PersistentVolumeClaim, v: VolumeState, ctx: StorageContext): V1PersistentVolume {
  const { namespace, name, uid } = objectId(claim);
  return {
    apiVersion: 'v1', kind: 'PersistentVolume',
    metadata: compact({
      name: hostVolumeName(uid),
      labels: { [MEMBER_LABEL]: ctx.member },
      annotations: { [PROVISIONED_BY_ANNOTATION]: provisionerOf(ctx.member), [MEMBER_CLAIM_ANNOTATION]: v.location },
      // As the external provisioner's finalizer: a volume deleted by hand still has its member claim deleted first.
      finalizers: ctx.reclaimPolicy === 'Delete' ? [VOLUME_FINALIZER] : undefined,
    }),
    spec: compact({
      capacity: { storage: v.capacity ?? v.requested ?? storageOf(claim) ?? '0' },
      accessModes: claim.spec?.accessModes,
      volumeMode: claim.spec?.volumeMode,
      storageClassName: ctx.className,
      persistentVolumeReclaimPolicy: ctx.reclaimPolicy,
      claimRef: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace, name, uid },
      nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: volumeTopology(claim, ctx) }] } },
      csi: { driver: CSI_DRIVER, volumeHandle: v.location, volumeAttributes: { member: ctx.member } },
    }),
  };
}

/**
 * Where a claim's volume may be used: on the member's virtual node; for a member shown as several (its pools', its
 * nodes'), on any of them (their clusterlet.io/member label) in the zone of the one the scheduler selected, when that
 * one has a zone. Not pinned to one of them: a node of a pool or member node goes when its group goes or the member's
 * granularity changes, and the volume stays usable from the others.
 */
function volumeTopology(claim: V1PersistentVolumeClaim, ctx: StorageContext): V1NodeSelectorRequirement[] {
  if (!ctx.isOwnNode) return [{ key: HOSTNAME_LABEL, operator: 'In', values: [ctx.nodeName] }];
  const selected = claim.metadata?.annotations?.[SELECTED_NODE_ANNOTATION];
  const zone = selected === undefined ? undefined : ctx.zoneOf?.(selected);
  return [{ key: MEMBER_LABEL, operator: 'In', values: [ctx.member] },
    ...zone === undefined ? [] : [{ key: ZONE_LABEL, operator: 'In', values: [zone] }]];
}

/** A host volume this member's provisioner made. */
export function isOwnVolume(pv: V1PersistentVolume | undefined, ctx: Pick<StorageContext, 'member'>): boolean {
  return pv?.metadata?.annotations?.[PROVISIONED_BY_ANNOTATION] === provisionerOf(ctx.member)
    && pv.metadata.labels?.[MEMBER_LABEL] === ctx.member;
}

const greater = (a: string | undefined, b: string | undefined): boolean =>
  a !== undefined && (b === undefined || compare(parseQuantity(a), parseQuantity(b)) > 0);

/**
 * The storage to ask of the member when the host claim asks for another size than the member claim: more (an
 * expansion), or less but still more than the member volume has (the user recovering from an expansion the member
 * could not make, as Kubernetes allows; a volume never shrinks).
 */
export function claimExpansion(claim: V1PersistentVolumeClaim, v: VolumeState): string | undefined {
  const want = storageOf(claim);
  if (v.phase !== 'Bound' || v.terminating) return undefined;
  return greater(want, v.requested) || (greater(v.requested, want) && greater(want, v.capacity)) ? want : undefined;
}

/** Kubernetes' condition of a claim whose expansion the resizer could not make, and of one the node could not. */
export const CONTROLLER_RESIZE_ERROR = 'ControllerResizeError';
const NODE_RESIZE_ERROR = 'NodeResizeError';

/**
 * The condition the host claim shows while the member refuses to expand its claim (its API server: the member's
 * class is not expandable, a quota), as an external resizer shows its own failures; the member's reason in the
 * message. Its time is kept while it says the same.
 */
export function resizeRefusedCondition(claim: V1PersistentVolumeClaim, message: string, now: Date): V1PersistentVolumeClaimCondition {
  const shown = claim.status?.conditions?.find((c) => c.type === CONTROLLER_RESIZE_ERROR && c.status === 'True' && c.message === message);
  return { type: CONTROLLER_RESIZE_ERROR, status: 'True', reason: 'VolumeResizeFailed', message, lastTransitionTime: shown?.lastTransitionTime ?? now };
}

/**
 * The member's own failure to expand its claim (its resizer's ControllerResizeError or NodeResizeError condition),
 * when the host claim does not show it yet: said once on the host claim, as a Warning.
 */
export function newMemberResizeFailure(claim: V1PersistentVolumeClaim, v: VolumeState): V1PersistentVolumeClaimCondition | undefined {
  const failure = v.conditions?.find((c) => (c.type === CONTROLLER_RESIZE_ERROR || c.type === NODE_RESIZE_ERROR) && c.status === 'True');
  const shown = failure && claim.status?.conditions?.some((c) => c.type === failure.type && c.status === 'True' && c.message === failure.message);
  return shown ? undefined : failure;
}

/** The host volume's new capacity once the member's volume grew (a volume never shrinks). */
export function volumeCapacityUpdate(pv: V1PersistentVolume, v: VolumeState): string | undefined {
  return v.phase === 'Bound' && greater(v.capacity, pv.spec?.capacity?.storage) ? v.capacity : undefined;
}

type ClaimStatusFields = Pick<V1PersistentVolumeClaimStatus, 'capacity' | 'conditions' | 'allocatedResources' | 'allocatedResourceStatuses'>;

/**
 * The host claim's status fields an external resizer writes, from the member claim (its capacity, resize
 * conditions, allocated resources), when they differ; a merge patch: null clears a field the member no longer shows.
 * `refused`: a condition of clusterlet's own (resizeRefusedCondition) in place of the member's of its type. The phase
 * and access modes stay the PV controller's.
 */
export function claimStatusUpdate(claim: V1PersistentVolumeClaim, v: VolumeState, refused?: V1PersistentVolumeClaimCondition): Record<string, unknown> | undefined {
  if (v.phase !== 'Bound' || v.capacity === undefined) return undefined;
  const s = claim.status ?? {};
  const cond = (cs: V1PersistentVolumeClaimCondition[] | undefined): string =>
    sortedJSON((cs ?? []).map((c) => [c.type, c.status, c.reason ?? '', c.message ?? '']));
  const sameCapacity = s.capacity?.storage !== undefined && compare(parseQuantity(s.capacity.storage), parseQuantity(v.capacity)) === 0;
  const conditions = refused ? [...(v.conditions ?? []).filter((c) => c.type !== refused.type), refused] : v.conditions;
  const want: ClaimStatusFields = {
    capacity: { ...s.capacity, storage: v.capacity }, conditions,
    allocatedResources: v.allocatedResources, allocatedResourceStatuses: v.allocatedResourceStatuses,
  };
  if (sameCapacity && cond(s.conditions) === cond(conditions) && sortedJSON(s.allocatedResources ?? {}) === sortedJSON(v.allocatedResources ?? {})
    && sortedJSON(s.allocatedResourceStatuses ?? {}) === sortedJSON(v.allocatedResourceStatuses ?? {})) return undefined;
  return Object.fromEntries(Object.entries(want).map(([k, val]) => [k, val ?? null]));
}

/** A claim a pod mounts: by name (`persistentVolumeClaim`), or the one the host made for a generic ephemeral volume. */
export interface PodClaim { volume: string; claimName: string }

/** The claim the host's ephemeral volume controller makes for a generic ephemeral volume: `<pod>-<volume>`. */
const ephemeralClaimName = (podName: string | undefined, volume: string): string => `${podName}-${volume}`;

/** The claims a pod mounts, in its namespace. */
export function podClaims(pod: V1Pod): PodClaim[] {
  return (pod.spec?.volumes ?? []).flatMap((v): PodClaim[] => {
    if (v.persistentVolumeClaim) return [{ volume: v.name, claimName: v.persistentVolumeClaim.claimName }];
    if (v.ephemeral) return [{ volume: v.name, claimName: ephemeralClaimName(pod.metadata?.name, v.name) }];
    return [];
  });
}

/**
 * The delegate's volumes: a generic ephemeral volume mounts the claim the host made for it, whose member claim has
 * the same name (the member's ephemeral controller would make one of a class it does not have).
 */
export function delegateVolumes(podName: string | undefined, volumes: V1Volume[] | undefined): V1Volume[] | undefined {
  if (!volumes?.some((v) => v.ephemeral)) return volumes;
  return volumes.map((v) => v.ephemeral ? { name: v.name, persistentVolumeClaim: { claimName: ephemeralClaimName(podName, v.name) } } : v);
}

/** What the pod gate sees of a claim: the host's, and the member's volume for it. */
export interface ClaimLookups {
  hostClaim(name: string): V1PersistentVolumeClaim | undefined;
  memberVolume(name: string): VolumeState | undefined;
}

export interface ClaimRejection { reason: string; message: string; retry: boolean }

/**
 * Why a pod cannot run in the member for want of a volume there, or undefined: every claim it mounts must be of the
 * member's class with its member claim made for it. A claim of another class never gets one (not retried: a pod's
 * volumes cannot change); one of the member's class whose member claim is not there yet may get one (retried).
 */
export function claimRejection(pod: V1Pod, lookups: ClaimLookups, ctx: Pick<StorageContext, 'member' | 'className'>): ClaimRejection | undefined {
  for (const { claimName } of podClaims(pod)) {
    const claim = lookups.hostClaim(claimName);
    if (!claim) {
      return { reason: 'PersistentVolumeClaimNotFound', retry: true,
        message: `persistentvolumeclaim "${claimName}" not found; the pod starts once it exists` };
    }
    const cls = claim.spec?.storageClassName;
    if (cls !== ctx.className) {
      return { reason: 'VolumeNotInMember', retry: false,
        message: `persistentvolumeclaim "${claimName}" is of storage class ${cls ? `"${cls}"` : '""'}: member ${ctx.member} holds `
          + `only claims of storage class "${ctx.className}", so the pod cannot run there: give it a claim of that class, or keep it `
          + 'off the virtual node' };
    }
    const v = lookups.memberVolume(claimName);
    if (!v || v.claimUID !== claim.metadata?.uid || v.terminating) {
      return { reason: 'MemberVolumeNotReady', retry: true,
        message: `persistentvolumeclaim "${claimName}" has no volume in member ${ctx.member} yet; the pod starts once it has` };
    }
  }
  return undefined;
}
