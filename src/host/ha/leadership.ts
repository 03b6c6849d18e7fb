// Which replica leads which member. One LeaseElector per member on the host Lease `clusterlet-<member>`, and one
// presence Lease per replica (`clusterlet-replica.<identity>`, annotated with the members it is ready to lead), all
// seen through one watch of clusterlet's labelled Leases in its namespace.
// Members are spread over the live replicas:
//   - a replica takes a free member Lease while it leads fewer than its share, ceil(members / live replicas);
//   - any replica ready for it takes a Lease left free for two retry periods, whatever its share (nobody is lost);
//   - a replica over its share gives one member back (released, so it is taken at once) when a live replica under
//     its share is ready for it; at most once per lease duration, so a spread never flaps.
import { interval, type Subscription } from 'rxjs';
import type { V1Lease } from '@kubernetes/client-node';
import type { ClusterClient } from '../../kube/client.ts';
import { Informer } from '../../kube/informer.ts';
import { listWatch } from '../../kube/listwatch.ts';
import { ignoreNotFound } from '../../kube/errors.ts';
import { LEADER_ELECTION_LABEL, READY_MEMBERS_ANNOTATION } from '../../forge/keys.ts';
import { LeaseElector, type LeaseApi } from './elector.ts';
import type { LeaderElectionConfig } from '../../config.ts';
import { metrics } from '../../metrics.ts';
import type { Logger } from '../../log.ts';
import { settle, settleOrExit } from '../../util/settle.ts';

/** Lease requests: a leader that renews late loses its lease. */
const HIGH = { priority: 'high' } as const;

export function memberLeaseName(member: string): string { return `clusterlet-${member}`; }

/**
 * A replica's presence Lease. Member names are DNS labels (no dot), so this name never equals a member's Lease;
 * the identity is made a valid name (a hostname_uuid or an upper-case host name is not).
 */
export function replicaLeaseName(identity: string): string {
  const safe = identity.toLowerCase().replace(/[^a-z0-9.-]+/g, '-').replace(/^[^a-z0-9]+|[^a-z0-9]+$/g, '');
  return `clusterlet-replica.${safe || 'x'}`.slice(0, 253);
}

/** The host's coordination API for the Leases of one namespace. */
export function hostLeaseApi(host: ClusterClient, namespace: string): LeaseApi {
  return {
    read: (name) => ignoreNotFound(() => host.coordination.readNamespacedLease({ name, namespace }, HIGH)),
    create: (lease) => host.coordination.createNamespacedLease({ namespace, body: lease }, HIGH),
    replace: (lease) => {
      const name = lease.metadata?.name;
      if (!name) return Promise.reject(new Error('a Lease to replace needs its name'));
      return host.coordination.replaceNamespacedLease({ name, namespace, body: lease }, HIGH);
    },
  };
}

/** One watch of clusterlet's Leases in the namespace, shared by every elector of this replica. */
export function leaseInformer(host: ClusterClient, namespace: string, log: Logger): Informer<V1Lease> {
  return new Informer('leases', listWatch<V1Lease>(host, {
    path: `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`, model: 'V1Lease', resource: 'leases',
    labelSelector: LEADER_ELECTION_LABEL,
    list: (p) => host.coordination.listNamespacedLease({ namespace, ...p }),
  }, { log, silenceMs: 60_000 }));
}

interface MemberElection { elector: LeaseElector; ready: () => boolean }

/** Presence Lease of another replica as last seen, and when it last changed on this replica's clock. */
interface Seen { at: number; lease: V1Lease }

export class Leadership {
  readonly leases: Informer<V1Lease>;
  readonly identity: string;
  #api: LeaseApi;
  #cfg: LeaderElectionConfig;
  #log: Logger;
  #now: () => number;
  #presence: LeaseElector;
  #members = new Map<string, MemberElection>();
  #replicas = new Map<string, Seen>();
  #subs: Subscription[] = [];
  #started = false;
  #lastRelease = Number.NEGATIVE_INFINITY;

  constructor(api: LeaseApi, leases: Informer<V1Lease>, cfg: LeaderElectionConfig, log: Logger, now: () => number = Date.now) {
    this.#api = api;
    this.leases = leases;
    this.#cfg = cfg;
    this.#log = log.child({ component: 'leadership' });
    this.#now = now;
    this.identity = cfg.identity;
    const pod = cfg.pod;
    this.#presence = new LeaseElector(replicaLeaseName(cfg.identity), api, {
      ...cfg, labels: { [LEADER_ELECTION_LABEL]: 'replica' },
      annotations: () => ({ [READY_MEMBERS_ANNOTATION]: [...this.#members].filter(([, m]) => m.ready()).map(([n]) => n).join(',') }),
      // The presence Lease goes with the replica's Pod (garbage-collected), not left behind by each rollout.
      ownerReferences: pod ? [{ apiVersion: 'v1', kind: 'Pod', name: pod.name, uid: pod.uid }] : undefined,
      want: () => true, now,
    }, this.#log);
  }

  /** Elects a leader for `member` among the replicas for which `ready()` holds. */
  add(member: string, ready: () => boolean): LeaseElector {
    const elector: LeaseElector = new LeaseElector(memberLeaseName(member), this.#api, {
      ...this.#cfg, labels: { [LEADER_ELECTION_LABEL]: 'member' }, now: this.#now,
      want: (): boolean => ready() && (this.held() < this.share() || this.#freeFor(elector) >= 2 * this.#cfg.retryPeriodMs),
    }, this.#log.child({ member }));
    metrics.leader.set({ member }, 0);
    elector.onChange((change) => {
      metrics.leaderChanges.inc({ member, change });
      // Not for a member removed meanwhile: its series is gone and stays gone.
      if (this.#members.get(member)?.elector === elector) metrics.leader.set({ member }, elector.leading ? 1 : 0);
    });
    this.#members.set(member, { elector, ready });
    if (this.#started && this.leases.hasSynced) this.#startElector(elector);
    return elector;
  }

  /**
   * No longer elects for `member` (its ClusterProfile went away): a leader stops leading and writes the Lease
   * free, so that the member, if it comes back, is taken at once by whichever replica is ready for it.
   */
  async remove(member: string): Promise<void> {
    const m = this.#members.get(member);
    if (!m) return;
    this.#members.delete(member);
    await m.elector.release('member removed').finally(() => m.elector.stop());
    metrics.leader.remove({ member });
  }

  /**
   * Whether another replica leads `member` now: its Lease names another holder and was renewed within its duration
   * (on this replica's clock). Known even where the member is not set up here, from the shared Lease watch.
   */
  heldElsewhere(member: string): boolean {
    const spec = this.leases.get(`${this.#cfg.namespace}/${memberLeaseName(member)}`)?.spec;
    if (!spec?.holderIdentity || spec.holderIdentity === this.identity || !spec.renewTime) return false;
    return this.#now() < new Date(spec.renewTime).getTime() + (spec.leaseDurationSeconds ?? 0) * 1000;
  }

  start(): void {
    this.#started = true;
    // Subscribed before the informer starts: the replicas are counted from its very first list.
    this.#subs.push(this.leases.events$.subscribe((ev) => {
      this.#route(ev.object.metadata?.name ?? '', ev.type === 'DELETED' ? undefined : ev.object);
      // A replica came or went, or a Lease was freed: every member is judged again.
      for (const m of this.#members.values()) m.elector.poke();
    }));
    this.leases.start();
    settleOrExit(this.leases.waitSynced().then(() => {
      if (!this.#started) return;
      this.#startElector(this.#presence);
      for (const m of this.#members.values()) this.#startElector(m.elector);
    }), this.#log, 'leader election: starting the electors failed');
    this.#subs.push(interval(this.#cfg.retryPeriodMs).subscribe(() => {
      metrics.replicas.set(this.replicas());
      settle(this.#rebalance(), this.#log, 'leader election: rebalancing failed');
    }));
  }

  /** Stops electing; leaders stop leading without writing (their Leases expire). See release() for a clean stop. */
  stop(): void {
    this.#started = false;
    for (const s of this.#subs.splice(0)) s.unsubscribe();
    for (const m of this.#members.values()) m.elector.stop();
    this.#presence.stop();
    this.leases.stop();
  }

  /**
   * A clean stop: every member's writers stop, then its Lease and this replica's presence are written free so
   * the other replicas take over at once (one replica less, they judge again on each of these changes).
   */
  async release(): Promise<void> {
    this.#started = false;
    for (const s of this.#subs.splice(0)) s.unsubscribe();
    const electors = [this.#presence, ...[...this.#members.values()].map((m) => m.elector)];
    // Each release stops that member's writers synchronously, before anything is written. Each elector stops
    // trying as soon as its release is written: left running while a slower release is sent, it would take its
    // free Lease back at its next retry (held() is 0 by then) and keep it, unreleased, once stopped.
    await Promise.all(electors.map((e) => e.release('stopping').finally(() => e.stop())));
    this.leases.stop();
  }

  /** Live replicas, this one included: presence Leases held and renewed within their duration, as seen here. */
  replicas(): number { return 1 + this.#others().length; }

  /** The other live replicas, by their presence Leases: held, and changed within their duration as seen here. */
  #others(): { id: string; presence: V1Lease }[] {
    const now = this.#now();
    const live: { id: string; presence: V1Lease }[] = [];
    for (const [name, s] of this.#replicas) {
      const id = s.lease.spec?.holderIdentity;
      if (name !== this.#presence.name && id && now < s.at + (s.lease.spec?.leaseDurationSeconds ?? 0) * 1000) {
        live.push({ id, presence: s.lease });
      }
    }
    return live;
  }

  share(): number { return Math.ceil(this.#members.size / this.replicas()); }

  /** Members this replica leads, or is taking (see LeaseElector.acquiring). */
  held(): number {
    let n = 0;
    for (const m of this.#members.values()) if (m.elector.leading || m.elector.acquiring) n++;
    return n;
  }

  #startElector(e: LeaseElector): void {
    e.observe(this.leases.get(`${this.#cfg.namespace}/${e.name}`));
    e.start();
  }

  #route(name: string, lease: V1Lease | undefined): void {
    if (name === this.#presence.name) { this.#presence.observe(lease); return; }
    for (const m of this.#members.values()) if (m.elector.name === name) { m.elector.observe(lease); return; }
    if (!lease) { this.#replicas.delete(name); return; }
    if (lease.metadata?.labels?.[LEADER_ELECTION_LABEL] !== 'replica') return;
    const prev = this.#replicas.get(name);
    if (prev?.lease.metadata?.resourceVersion !== lease.metadata?.resourceVersion) this.#replicas.set(name, { at: this.#now(), lease });
  }

  #freeFor(e: LeaseElector): number {
    const since = e.freeSince();
    return since === undefined ? 0 : this.#now() - since;
  }

  /** Over its share, this replica gives one member to a live replica under its share that is ready for it. */
  async #rebalance(): Promise<void> {
    const share = this.share();
    if (this.held() <= share || this.#now() - this.#lastRelease < this.#cfg.leaseDurationMs) return;
    const now = this.#now();
    const holders = new Map<string, number>();
    for (const m of this.#members.values()) holders.set(m.elector.holder, (holders.get(m.elector.holder) ?? 0) + 1);
    for (const { id, presence } of this.#others()) {
      if ((holders.get(id) ?? 0) >= share) continue;
      const ready = new Set((presence.metadata?.annotations?.[READY_MEMBERS_ANNOTATION] ?? '').split(',').filter(Boolean));
      const give = [...this.#members].find(([member, m]) => m.elector.leading && ready.has(member));
      if (!give) continue;
      this.#lastRelease = now;
      this.#log.info({ member: give[0], to: id, held: this.held(), share }, 'giving a member to a replica under its share');
      await give[1].elector.release(`rebalancing to ${id}`);
      return;
    }
  }
}
