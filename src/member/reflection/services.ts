// Host → member reflection of Services: a host Service whose selector selects at least one of this virtual node's
// delegates in its namespace is copied into the member namespace (forge/service.ts). Delegates keep the user's
// labels, so the member's own EndpointSlice controller lists them under the copy and the member's DNS answers for
// its name (and for each StatefulSet pod of a headless one). The copy follows the host Service and goes once the
// Service goes or selects no delegate of this host there any more. A member Service of that name that clusterlet
// did not create is never touched: a Warning on the host Service says so, and pods are not held back by it.
// A policy over one Reflector; keys are host Services (`<hostNamespace>/<name>`).
// Optionally (--reflect-host-endpoints), the host's EndpointSlices of each Service whose copy this node owns are
// copied next to it (forge/endpointslice.ts: managed by clusterlet.io, so the member's EndpointSlice controller
// leaves them alone), less the endpoints the member lists itself (its delegates): a second Reflector, same keys.
// The host's Services, EndpointSlices and the Warnings come through the member's ReflectionHost (provider/reflection.ts).
import type { Subscription } from 'rxjs';
import type { V1EndpointSlice, V1Pod, V1Service } from '@kubernetes/client-node';
import type { MemberCluster } from '../cluster.ts';
import type { MemberConfig } from '../../config.ts';
import { memberNamespace } from '../../forge/namespace.ts';
import { splitKey, type Cache, type Informer, type StoreEvent } from '../../kube/informer.ts';
import { target, type Target } from '../../kube/kinds.ts';
import { byNamespace, StoreIndex } from '../../kube/storeindex.ts';
import { forgeMemberService, memberServiceMatches, needsRecreate, reflectable, selects } from '../../forge/service.ts';
import { NODE_LABEL, ORIGIN_LABEL, PROXY_NAMESPACE_ANNOTATION } from '../../forge/keys.ts';
import { delegateOf, fromHost, ownedBy } from '../../forge/owner.ts';
import { sameValue } from '../../forge/objects.ts';
import { nameOf, namespacedName, objectId, uidOf } from '../../forge/meta.ts';
import {
  endpointSliceMatches, forgeMemberEndpointSlice, MANAGED_BY, MANAGED_BY_LABEL, SERVICE_NAME_LABEL,
} from '../../forge/endpointslice.ts';
import type { HandlerResult } from '../../util/workqueue.ts';
import type { ServiceWarning } from '../../provider/reflection.ts';
import { Reflector } from './reflector.ts';
import type { Logger } from '../../log.ts';

/** The reason of the Warning on a host Service whose name is taken in the member by a Service not clusterlet's. */
export const CONFLICT_REASON = 'MemberServiceConflict';

/** What the reflector uses of its member: every pod there, this node's delegates, the owner, name and mapping. */
export type ServiceMember = Pick<MemberCluster, 'pods' | 'delegates' | 'owner'> & { config: Pick<MemberConfig, 'name' | 'namespaceMapping'> };

/** The member's copies: the Services labelled with the host's identity. */
export function serviceTarget(member: MemberCluster, log: Logger): Target<V1Service> {
  return target(member.client, 'Service', `${ORIGIN_LABEL}=${member.hostName}`, log);
}

/** The member's copies of host EndpointSlices: labelled with the host's identity and managed by clusterlet. */
export function endpointSliceTarget(member: MemberCluster, log: Logger): Target<V1EndpointSlice> {
  return target(member.client, 'EndpointSlice', `${ORIGIN_LABEL}=${member.hostName},${MANAGED_BY_LABEL}=${MANAGED_BY}`, log);
}

/** The endpoints part: the host's slices, and where their copies go. */
export interface HostEndpoints {
  hostSlices: Cache<V1EndpointSlice>;
  copies: Target<V1EndpointSlice>;
}

/** The host Service key (`<namespace>/<service>`) a slice belongs to, by its namespace and service-name label. */
function serviceOfSlice(slice: V1EndpointSlice): string | undefined {
  const service = slice.metadata?.labels?.[SERVICE_NAME_LABEL];
  return service && slice.metadata?.namespace ? `${slice.metadata.namespace}/${service}` : undefined;
}

/** The host Service key of a member copy (a Service, or a slice of one), from its proxy-namespace annotation. */
function hostKeyOfCopy(copy: V1Service | V1EndpointSlice, name: string | undefined): string | undefined {
  const hostNs = copy.metadata?.annotations?.[PROXY_NAMESPACE_ANNOTATION];
  return hostNs && name ? `${hostNs}/${name}` : undefined;
}
const hostKeyOfService = (copy: V1Service): string | undefined => hostKeyOfCopy(copy, copy.metadata?.name);
const hostKeyOfSlice = (copy: V1EndpointSlice): string | undefined => hostKeyOfCopy(copy, copy.metadata?.labels?.[SERVICE_NAME_LABEL]);

/** The endpoints part: the host's slices and their member copies, each by the Service (its namespace's) they belong to. */
interface SliceReflection {
  hostSlices: Cache<V1EndpointSlice>;
  reflector: Reflector<V1EndpointSlice>;
  hostSlicesOf: StoreIndex<V1EndpointSlice>;
  copiesOf: StoreIndex<V1EndpointSlice>;
}

export interface ServiceReflectorOptions {
  /** How often a Service in conflict is looked at again (the member's own Service may go). */
  conflictRecheckMs?: number;
  /** Copy the host's EndpointSlices of the reflected Services too (--reflect-host-endpoints). */
  endpoints?: HostEndpoints;
}

export class ServiceReflector {
  #member: ServiceMember;
  #hosts: Cache<V1Service>;
  #warn: ServiceWarning;
  #log: Logger;
  #recheckMs: number;
  #reflector: Reflector<V1Service>;
  /** The host Services and the member pods by namespace: a delegate's change and a sync look at one namespace only. */
  #hostsByNs: StoreIndex<V1Service>;
  #podsByNs: StoreIndex<V1Pod>;
  #endpoints: SliceReflection | undefined;
  /** Host Services in conflict → the UID the Warning was written on (once per Service object). */
  #conflicts = new Map<string, string>();
  #subs: Subscription[] = [];

  constructor(member: ServiceMember, copies: Target<V1Service>, hosts: Cache<V1Service>, warn: ServiceWarning, log: Logger,
    opts: ServiceReflectorOptions = {}) {
    this.#member = member;
    this.#hosts = hosts;
    this.#warn = warn;
    this.#log = log;
    this.#recheckMs = opts.conflictRecheckMs ?? 60_000;
    this.#hostsByNs = new StoreIndex(hosts, byNamespace);
    this.#podsByNs = new StoreIndex(member.pods, byNamespace);
    this.#reflector = new Reflector<V1Service>({
      name: `services-${member.config.name}`, workers: 2, target: copies, log, sync: (key) => this.#sync(key),
      keyOf: hostKeyOfService, reads: [hosts, member.pods],
      // What may need a copy: the Services of every namespace with a delegate of this node.
      startKeys: () => new Set([...member.delegates.entries()].flatMap(([ref]) => this.#hostsByNs.keys(ref.namespace))),
      // A copy of this host's (whichever of its nodes made it) follows the host Service; any other is not touched.
      update: { ours: (o) => fromHost(o.metadata, member.owner.hostName), matches: memberServiceMatches, recreate: needsRecreate },
      metrics: { member: member.config.name, kind: 'Service', direction: 'to-member', counts: (o) => ownedBy(o.metadata, member.owner) },
    });
    if (opts.endpoints) {
      const reflector = new Reflector<V1EndpointSlice>({
        name: `endpointslices-${member.config.name}`, workers: 2, target: opts.endpoints.copies, log,
        sync: (key) => this.#syncSlices(ep, key), keyOf: hostKeyOfSlice, reads: [opts.endpoints.hostSlices, member.pods, copies.store],
        // Every Service copy: this node's may lack slices.
        startKeys: () => copies.store.list().flatMap((c) => hostKeyOfService(c) ?? []),
        update: { ours: (o) => fromHost(o.metadata, member.owner.hostName), matches: endpointSliceMatches },
        metrics: { member: member.config.name, kind: 'EndpointSlice', direction: 'to-member', counts: (o) => ownedBy(o.metadata, member.owner) },
      });
      const ep: SliceReflection = { hostSlices: opts.endpoints.hostSlices, reflector,
        hostSlicesOf: new StoreIndex(opts.endpoints.hostSlices, serviceOfSlice), copiesOf: new StoreIndex(reflector.store, serviceOfSlice) };
      this.#endpoints = ep;
    }
  }

  /** The member copies of this host's Services (any of its nodes'), for the ServiceExporter; started by this reflector. */
  get copies(): Informer<V1Service> { return this.#reflector.store; }

  /** Queues a host Service's key for its copy and, with the endpoints part, for its slices. */
  #add(key: string): void {
    this.#reflector.add(key);
    this.#addSlices(key);
  }

  /** Queues a host Service's key for its slices, with the endpoints part. */
  #addSlices(key: string | undefined): void {
    if (key !== undefined) this.#endpoints?.reflector.add(key);
  }

  /** Subscribes to the member's pods: call in the same tick as they start, so no delegate change is missed. */
  start(): void {
    // Before the subscriptions below: their handlers read the indexes.
    this.#hostsByNs.start();
    this.#podsByNs.start();
    this.#reflector.start();
    this.#subs.push(
      this.#hosts.events$.subscribe((ev) => this.#reflector.add(ev.key)),
      this.#member.pods.events$.subscribe((ev) => this.#podChanged(ev)),
    );
    const ep = this.#endpoints;
    if (ep) {
      ep.hostSlicesOf.start();
      ep.copiesOf.start();
      ep.reflector.start();
      this.#subs.push(
        ep.hostSlices.events$.subscribe((ev) => this.#addSlices(serviceOfSlice(ev.object))),
        // A Service copy's slices follow it.
        this.#reflector.store.events$.subscribe((ev) => this.#addSlices(hostKeyOfService(ev.object))),
      );
    }
  }

  stop(): void {
    for (const s of this.#subs.splice(0)) s.unsubscribe();
    this.#reflector.stop();
    this.#endpoints?.reflector.stop();
    for (const index of [this.#hostsByNs, this.#podsByNs, this.#endpoints?.hostSlicesOf, this.#endpoints?.copiesOf]) index?.stop();
  }

  /** A delegate of this host (any of its nodes) came, went or changed labels: its namespace's Services may change. */
  #podChanged(ev: StoreEvent<V1Pod>): void {
    const d = delegateOf(ev.object, this.#member.owner);
    if (!d) return;
    if (ev.type === 'MODIFIED' && sameValue(ev.old?.metadata?.labels, ev.object.metadata?.labels)) return;
    this.#addNamespace(d.ref.namespace);
  }

  /** Every host Service of a host namespace. */
  #addNamespace(hostNs: string): void {
    for (const key of this.#hostsByNs.keys(hostNs)) this.#add(key);
  }

  async #sync(key: string): Promise<HandlerResult | void> {
    const { namespace: hostNs, name } = splitKey(key);
    const memberNs = memberNamespace(this.#member.config.namespaceMapping, hostNs);
    const host = this.#hosts.get(key);
    const live = host && !host.metadata?.deletionTimestamp && reflectable(host) ? host : undefined;
    if (!live || !this.#selectsOwnDelegate(hostNs, memberNs, live)) {
      this.#conflicts.delete(key);
      await this.#removeCopy(memberNs, name, live);
      return;
    }
    const applied = await this.#reflector.apply(memberNs, name, (existing) => this.#forge(live, memberNs, existing));
    if (applied === 'conflict') return this.#conflict(key, live, memberNs);
    this.#conflicts.delete(key);
    if (applied !== 'unchanged') this.#log.debug({ kind: 'Service', namespace: memberNs, name }, `member copy ${applied}`);
  }

  /**
   * The Service's slices in the member: while this node owns its copy, one per host slice, less the endpoints the
   * member lists itself; none otherwise. Slices another node of this host wrote for it are taken over or removed.
   */
  async #syncSlices(ep: SliceReflection, key: string): Promise<void> {
    const { namespace: hostNs, name } = splitKey(key);
    const memberNs = memberNamespace(this.#member.config.namespaceMapping, hostNs);
    const owner = this.#member.owner;
    const copy = this.#reflector.store.get(`${memberNs}/${name}`);
    const ours = copy && !copy.metadata?.deletionTimestamp && ownedBy(copy.metadata, owner);
    const wanted = new Map<string, V1EndpointSlice>();
    if (ours) {
      const listed = this.#listedByMember(hostNs, memberNs);
      for (const host of ep.hostSlicesOf.list(key)) {
        const slice = forgeMemberEndpointSlice(host, { owner, memberNamespace: memberNs,
          listedByMember: (e) => e.targetRef?.kind === 'Pod' && (e.targetRef.namespace ?? hostNs) === hostNs && listed.has(e.targetRef.name ?? '') });
        // Owned by the Service copy: the member's garbage collector removes them with it, even once the switch is off.
        if (slice) wanted.set(nameOf(slice), { ...slice, metadata: { ...slice.metadata, ownerReferences: [
          { apiVersion: 'v1', kind: 'Service', name, uid: uidOf(copy) }] } });
      }
    }
    for (const [sliceName, slice] of wanted) await ep.reflector.apply(memberNs, sliceName, () => slice);
    // This node's copies of slices the host no longer has; with our Service copy, other nodes' too (we own it now).
    for (const c of ep.copiesOf.list(`${memberNs}/${name}`)) {
      if (wanted.has(nameOf(c))) continue;
      if (ours || ownedBy(c.metadata, owner)) await ep.reflector.remove(c);
    }
  }

  /** The host pods (names in host namespace `hostNs`) whose delegates run in this member, on any node of this host. */
  #listedByMember(hostNs: string, memberNs: string): Set<string> {
    const names = new Set<string>();
    for (const p of this.#podsByNs.list(memberNs)) {
      const d = delegateOf(p, this.#member.owner);
      if (d && d.ref.namespace === hostNs) names.add(d.ref.name);
    }
    return names;
  }

  /** Whether the Service selects one of this node's delegates of its namespace (they run in `memberNs`). */
  #selectsOwnDelegate(hostNs: string, memberNs: string, svc: V1Service): boolean {
    return this.#podsByNs.list(memberNs).some((p) => {
      const d = delegateOf(p, this.#member.owner);
      return d?.ownNode && d.ref.namespace === hostNs && selects(svc.spec?.selector, p.metadata?.labels);
    });
  }

  /**
   * Removes this node's copy, unless the Service still selects a delegate another node of this host has there (that
   * node keeps the copy current; the owner removes it after the last one).
   */
  async #removeCopy(memberNs: string, name: string, live: V1Service | undefined): Promise<void> {
    const copy = this.#reflector.store.get(`${memberNs}/${name}`);
    if (!copy || !ownedBy(copy.metadata, this.#member.owner)) return;
    if (live && this.#podsByNs.list(memberNs).some((p) => delegateOf(p, this.#member.owner)
      && selects(live.spec?.selector, p.metadata?.labels))) return;
    await this.#reflector.remove(copy);
    this.#log.debug({ kind: 'Service', namespace: memberNs, name }, 'removed a copy that selects no delegate');
  }

  /** The copy, owned by this node, or by the node of this host that already owns `existing` (which keeps it). */
  #forge(host: V1Service, memberNs: string, existing: V1Service | undefined): V1Service {
    const owner = this.#member.owner;
    const node = existing && fromHost(existing.metadata, owner.hostName) ? existing.metadata?.labels?.[NODE_LABEL] : undefined;
    return forgeMemberService(host, { hostName: owner.hostName, nodeName: node ?? owner.node, memberNamespace: memberNs,
      hostNamespace: namespacedName(host).namespace });
  }

  /** Says once per Service object that its name is taken in the member; looks again later (the other may go). */
  async #conflict(key: string, host: V1Service, memberNs: string): Promise<HandlerResult> {
    const { namespace, name, uid } = objectId(host);
    if (this.#conflicts.get(key) !== uid) {
      const message = `service ${memberNs}/${name} exists in member ${this.#member.config.name} and was not created by `
        + 'clusterlet; it is left untouched (offloaded pods there reach that Service by this name)';
      this.#log.warn({ kind: 'Service', namespace: memberNs, name, hostNamespace: namespace }, message);
      await this.#warn({ apiVersion: 'v1', kind: 'Service', namespace, name, uid }, { type: 'Warning', reason: CONFLICT_REASON, message });
      this.#conflicts.set(key, uid);
    }
    return { requeueAfterMs: this.#recheckMs };
  }
}
