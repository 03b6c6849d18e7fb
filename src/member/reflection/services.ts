// Host → member reflection of Services: a host Service whose selector selects at least one of this virtual node's
// delegates in its namespace is copied into the member namespace (forge/service.ts). Delegates keep the user's
// labels, so the member's own EndpointSlice controller lists them under the copy and the member's DNS answers for
// its name (and for each StatefulSet pod of a headless one). The copy follows the host Service and goes once the
// Service goes or selects no delegate of this host there any more. A member Service of that name that clusterlet
// did not create is never touched: a Warning on the host Service says so, and pods are not held back by it.
// A policy over one Reflector; keys are host Services (`<hostNamespace>/<name>`).
import type { Subscription } from 'rxjs';
import type { V1Pod, V1Service } from '@kubernetes/client-node';
import type { MemberCluster } from '../cluster.ts';
import { memberNamespace, type MemberConfig } from '../../config.ts';
import type { ClusterClient } from '../../kube/client.ts';
import { writeOwnEvent, type EventSubject } from '../../kube/events.ts';
import { Informer, splitKey, type StoreEvent } from '../../kube/informer.ts';
import { forgeMemberService, memberServiceMatches, needsRecreate, reflectable, selects } from '../../forge/service.ts';
import { NODE_LABEL, ORIGIN_LABEL, PROXY_NAMESPACE_ANNOTATION } from '../../forge/keys.ts';
import { delegateOf, fromHost, ownedBy } from '../../forge/owner.ts';
import type { HandlerResult } from '../../util/workqueue.ts';
import { Reflector, target, watchKind, type Target } from './reflector.ts';
import type { Logger } from '../../log.ts';

/** The reason of the Warning on a host Service whose name is taken in the member by a Service not clusterlet's. */
export const CONFLICT_REASON = 'MemberServiceConflict';

/** What the reflector uses of its member: every pod there, this node's delegates, the owner, name and mapping. */
export type ServiceMember = Pick<MemberCluster, 'pods' | 'delegates' | 'owner'> & { config: Pick<MemberConfig, 'name' | 'namespaceMapping'> };

/** Writes a Warning about a host Service. */
export type ServiceWarning = (about: EventSubject, ev: { type: 'Warning'; reason: string; message: string }) => Promise<void>;

/** Every Service of the host: one watch that every member's ServiceReflector shares; its owner starts and stops it. */
export function hostServices(host: ClusterClient, log: Logger): Informer<V1Service> {
  return new Informer('host-services', watchKind(host, 'Service', {}, log));
}

/** The member's copies: the Services labelled with the host's identity. */
export function serviceTarget(member: MemberCluster, log: Logger): Target<V1Service> {
  return target(member.client, 'Service', `${ORIGIN_LABEL}=${member.hostName}`, log);
}

/** Warnings on host Services, written by the host client as virtual node `node`'s (source component clusterlet). */
export function hostServiceWarnings(host: ClusterClient, node: string): ServiceWarning {
  return (about, ev) => writeOwnEvent(host, about, node, ev);
}

export interface ServiceReflectorOptions {
  /** How often a Service in conflict is looked at again (the member's own Service may go). */
  conflictRecheckMs?: number;
}

export class ServiceReflector {
  #member: ServiceMember;
  #hosts: Informer<V1Service>;
  #warn: ServiceWarning;
  #log: Logger;
  #recheckMs: number;
  #reflector: Reflector<V1Service>;
  /** Host Services in conflict → the UID the Warning was written on (once per Service object). */
  #conflicts = new Map<string, string>();
  #subs: Subscription[] = [];

  constructor(member: ServiceMember, copies: Target<V1Service>, hosts: Informer<V1Service>, warn: ServiceWarning, log: Logger,
    opts: ServiceReflectorOptions = {}) {
    this.#member = member;
    this.#hosts = hosts;
    this.#warn = warn;
    this.#log = log;
    this.#recheckMs = opts.conflictRecheckMs ?? 60_000;
    this.#reflector = new Reflector<V1Service>({
      name: `services-${member.config.name}`, workers: 2, target: copies, log, sync: (key) => this.#sync(key),
      // A copy of this host's (whichever of its nodes made it) follows the host Service; any other is not touched.
      update: { ours: (o) => fromHost(o.metadata, member.owner.host), matches: memberServiceMatches, recreate: needsRecreate },
      metrics: { member: member.config.name, kind: 'Service', direction: 'to-member', counts: (o) => ownedBy(o.metadata, member.owner) },
    });
  }

  get hasSynced(): boolean { return this.#reflector.hasSynced; }

  /** Subscribes to the member's pods: call in the same tick as they start, so no delegate change is missed. */
  start(): void {
    this.#reflector.start();
    this.#subs.push(
      this.#hosts.events$.subscribe((ev) => this.#reflector.add(ev.key)),
      this.#member.pods.events$.subscribe((ev) => this.#podChanged(ev)),
      // A copy changed or deleted by someone: set back (or removed, if it is no longer wanted).
      this.#reflector.store.events$.subscribe((ev) => this.#addCopy(ev.object)),
    );
    // #sync skips keys until every cache has synced: go over what may need a copy, and every copy, once they have.
    void Promise.all([this.#hosts.waitSynced(), this.#member.pods.waitSynced(), this.#reflector.waitSynced()]).then(() => {
      for (const ns of new Set([...this.#member.delegates.entries()].map(([ref]) => ref.namespace))) this.#addNamespace(ns);
      for (const c of this.#reflector.store.list()) this.#addCopy(c);
    });
  }

  stop(): void {
    for (const s of this.#subs.splice(0)) s.unsubscribe();
    this.#reflector.stop();
  }

  /** A delegate of this host (any of its nodes) came, went or changed labels: its namespace's Services may change. */
  #podChanged(ev: StoreEvent<V1Pod>): void {
    const d = delegateOf(ev.object, this.#member.owner);
    if (!d) return;
    if (ev.type === 'MODIFIED' && JSON.stringify(ev.old?.metadata?.labels) === JSON.stringify(ev.object.metadata?.labels)) return;
    this.#addNamespace(d.ref.namespace);
  }

  /** Every host Service of a host namespace. */
  #addNamespace(hostNs: string): void {
    const prefix = `${hostNs}/`;
    for (const key of this.#hosts.keys()) if (key.startsWith(prefix)) this.#reflector.add(key);
  }

  /** The host Service of a copy, from its proxy-namespace annotation. */
  #addCopy(copy: V1Service): void {
    const hostNs = copy.metadata?.annotations?.[PROXY_NAMESPACE_ANNOTATION];
    if (hostNs) this.#reflector.add(`${hostNs}/${copy.metadata!.name}`);
  }

  async #sync(key: string): Promise<HandlerResult | void> {
    if (!this.#hosts.hasSynced || !this.#member.pods.hasSynced || !this.#reflector.hasSynced) return;
    const { namespace: hostNs, name } = splitKey(key);
    const memberNs = memberNamespace(this.#member.config.namespaceMapping, hostNs);
    const host = this.#hosts.get(key);
    const live = host && !host.metadata?.deletionTimestamp && reflectable(host) ? host : undefined;
    if (!live || !this.#selectsOwnDelegate(hostNs, live)) {
      this.#conflicts.delete(key);
      await this.#removeCopy(memberNs, name, live);
      return;
    }
    const applied = await this.#reflector.apply(memberNs, name, (existing) => this.#forge(live, memberNs, existing));
    if (applied === 'conflict') return this.#conflict(key, live, memberNs);
    this.#conflicts.delete(key);
    if (applied !== 'unchanged') this.#log.debug({ kind: 'Service', namespace: memberNs, name }, `member copy ${applied}`);
  }

  /** Whether the Service selects one of this node's delegates in its namespace. */
  #selectsOwnDelegate(hostNs: string, svc: V1Service): boolean {
    for (const [ref, pod] of this.#member.delegates.entries()) {
      if (ref.namespace === hostNs && selects(svc.spec?.selector, pod.metadata?.labels)) return true;
    }
    return false;
  }

  /**
   * Removes this node's copy, unless the Service still selects a delegate another node of this host has there (that
   * node keeps the copy current; the owner removes it after the last one).
   */
  async #removeCopy(memberNs: string, name: string, live: V1Service | undefined): Promise<void> {
    const copy = this.#reflector.store.get(`${memberNs}/${name}`);
    if (!copy || !ownedBy(copy.metadata, this.#member.owner)) return;
    if (live && this.#member.pods.list().some((p) => p.metadata?.namespace === memberNs
      && delegateOf(p, this.#member.owner) && selects(live.spec?.selector, p.metadata?.labels))) return;
    await this.#reflector.remove(copy);
    this.#log.debug({ kind: 'Service', namespace: memberNs, name }, 'removed a copy that selects no delegate');
  }

  /** The copy, owned by this node, or by the node of this host that already owns `existing` (which keeps it). */
  #forge(host: V1Service, memberNs: string, existing: V1Service | undefined): V1Service {
    const owner = this.#member.owner;
    const node = existing && fromHost(existing.metadata, owner.host) ? existing.metadata?.labels?.[NODE_LABEL] : undefined;
    return forgeMemberService(host, { originCluster: owner.host, nodeName: node ?? owner.node, memberNamespace: memberNs,
      hostNamespace: host.metadata!.namespace! });
  }

  /** Says once per Service object that its name is taken in the member; looks again later (the other may go). */
  async #conflict(key: string, host: V1Service, memberNs: string): Promise<HandlerResult> {
    const meta = host.metadata!;
    if (this.#conflicts.get(key) !== meta.uid) {
      const message = `service ${memberNs}/${meta.name} exists in member ${this.#member.config.name} and was not created by `
        + 'clusterlet; it is left untouched (offloaded pods there reach that Service by this name)';
      this.#log.warn({ kind: 'Service', namespace: memberNs, name: meta.name, hostNamespace: meta.namespace }, message);
      await this.#warn({ apiVersion: 'v1', kind: 'Service', namespace: meta.namespace!, name: meta.name!, uid: meta.uid! },
        { type: 'Warning', reason: CONFLICT_REASON, message });
      this.#conflicts.set(key, meta.uid!);
    }
    return { requeueAfterMs: this.#recheckMs };
  }
}
