// One Lease, at most one holder: client-go's leader election (take a free Lease, renew it every retry period, give
// up once it could not renew within the renew deadline), with one difference: followers see the Lease through a
// shared watch rather than by polling it, so a released Lease is taken at once and an expired one the moment it
// expires. As in client-go, expiry is judged on this replica's clock (when it saw the Lease change), never on the
// holder's renewTime, so clock skew between replicas does not matter.
import { BehaviorSubject } from 'rxjs';
import type { V1Lease, V1OwnerReference } from '@kubernetes/client-node';
import { toKubeError } from '../../kube/errors.ts';
import { microTime } from '../../forge/objects.ts';
import type { Logger } from '../../log.ts';

export interface ElectionTiming {
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
}

/** The Lease calls an elector makes (the host's coordination API; faked in unit tests). */
export interface LeaseApi {
  read(name: string): Promise<V1Lease | undefined>;
  create(lease: V1Lease): Promise<V1Lease>;
  /** PUT with the lease's resourceVersion: a Conflict when someone wrote it since. */
  replace(lease: V1Lease): Promise<V1Lease>;
}

export interface ElectorOptions extends ElectionTiming {
  namespace: string;
  identity: string;
  labels: Record<string, string>;
  /** Annotations written with every acquire and renewal (e.g. what a replica can lead). */
  annotations?: () => Record<string, string>;
  ownerReferences?: V1OwnerReference[];
  /** Whether to take the Lease when it is free; asked before every attempt. */
  want: () => boolean;
  now?: () => number;
}

/** What this replica last saw of the Lease, and when (its own clock). */
interface Observed { lease: V1Lease | undefined; at: number }

export type LeaderChange = 'acquired' | 'lost' | 'released';

export class LeaseElector {
  readonly name: string;
  /** True while this replica holds the Lease; turns false (synchronously, before any write) when it stops holding it. */
  readonly leading$ = new BehaviorSubject(false);
  #api: LeaseApi;
  #opts: ElectorOptions;
  #log: Logger;
  #now: () => number;
  #observed: Observed | undefined;
  /** When the write that last acquired or renewed the Lease was sent. */
  #renewedAt = 0;
  /** The Lease as our last successful write left it (its resourceVersion is the precondition of the next). */
  #mine: V1Lease | undefined;
  #interval: NodeJS.Timeout | undefined;
  #expiry: NodeJS.Timeout | undefined;
  #running = false;
  /** The attempt running (or the last one); it settles, never rejects. */
  #attempted: Promise<void> = Promise.resolve();
  #again = false;
  #releasing = false;
  #acquiring = false;
  #stopped = true;
  #changes: ((change: LeaderChange, reason: string) => void)[] = [];

  constructor(name: string, api: LeaseApi, opts: ElectorOptions, log: Logger) {
    this.name = name;
    this.#api = api;
    this.#opts = opts;
    this.#log = log.child({ lease: name });
    this.#now = opts.now ?? Date.now;
  }

  get leading(): boolean { return this.leading$.value; }

  /**
   * An acquisition is on its way. Set synchronously once want() said yes, so that the next elector of the replica,
   * asking in the same tick, counts it (replicas starting together then spread at once, not only by rebalancing).
   */
  get acquiring(): boolean { return this.#acquiring; }

  /**
   * Whether this replica may write for what the Lease guards: it leads, and renewed within the renew deadline as
   * its clock says now. A process resumed after a pause (or cut off from the host) is refused before its timers
   * have even run, since the others may have taken the Lease meanwhile.
   */
  mayWrite(): boolean {
    return this.leading && this.#now() - this.#renewedAt <= this.#opts.renewDeadlineMs;
  }

  /** The holder as last seen ('' when none); this replica's identity while it leads. */
  get holder(): string {
    return this.leading ? this.#opts.identity : this.#observed?.lease?.spec?.holderIdentity ?? '';
  }

  /** Called for each change of the Lease seen in the shared cache (undefined: it does not exist). */
  observe(lease: V1Lease | undefined): void {
    const prev = this.#observed?.lease;
    if (this.#observed && prev?.metadata?.resourceVersion === lease?.metadata?.resourceVersion) return;
    // The cache may still deliver a version older than our own last write: it says nothing new.
    if (lease && this.#mine && olderThan(lease, this.#mine)) return;
    this.#see(lease);
    this.poke();
  }

  /** Whether the Lease is free as last seen: missing, released, ours, or not renewed for a lease duration. */
  isFree(): boolean {
    const o = this.#observed;
    if (!o?.lease) return true;
    const holder = o.lease.spec?.holderIdentity ?? '';
    if (holder === '' || holder === this.#opts.identity) return true;
    return this.#now() >= o.at + durationMs(o.lease);
  }

  /** Since when (this replica's clock) the Lease has been free, if it is. */
  freeSince(): number | undefined {
    const o = this.#observed;
    if (!this.isFree() || !o) return undefined;
    const holder = o.lease?.spec?.holderIdentity ?? '';
    return o.lease && holder !== '' && holder !== this.#opts.identity ? o.at + durationMs(o.lease) : o.at;
  }

  onChange(fn: (change: LeaderChange, reason: string) => void): void { this.#changes.push(fn); }

  start(): void {
    this.#stopped = false;
    this.#interval = setInterval(() => this.poke(), this.#opts.retryPeriodMs);
    // What was observed before start() armed nothing (stopped then).
    this.#armExpiry();
    this.poke();
  }

  /** Stops trying; a leader stops leading (without releasing: see release). */
  stop(): void {
    this.#stopped = true;
    clearInterval(this.#interval);
    clearTimeout(this.#expiry);
    if (this.leading) this.#set(false, 'lost', 'stopped');
  }

  /**
   * Stops leading (subscribers stop their writers first, synchronously), then writes the Lease free so that
   * another replica takes it at once instead of after a lease duration.
   */
  async release(reason: string): Promise<void> {
    // An attempt under way may win as the release is asked for: it is waited for, and released if it won.
    if (!this.leading) await this.#attempted;
    if (!this.leading || !this.#mine) return;
    // Until the free Lease is written, no attempt may take it back (it still names this replica).
    this.#releasing = true;
    this.#set(false, 'released', reason);
    try {
      // A renewal still being sent would make our version stale (the release refused, the Lease left to expire).
      await this.#attempted;
      const mine = this.#mine;
      const written = await this.#api.replace(this.#freed(mine));
      this.#mine = written;
      this.#see(written);
    } catch (err) {
      // Not written free: the others take it once it expires.
      this.#log.warn({ err: toKubeError(err).message }, 'could not release the lease; it expires instead');
    } finally {
      this.#releasing = false;
    }
  }

  /** Runs one attempt now (or right after the one running). */
  poke(): void {
    if (this.#stopped) return;
    // Judged here rather than in an attempt: an attempt can hang on a host that does not answer (until the request
    // times out, long after the others took the Lease), and must not keep this replica leading meanwhile.
    if (this.leading && this.#now() - this.#renewedAt > this.#opts.renewDeadlineMs) {
      this.#set(false, 'lost', `not renewed within the renew deadline (${this.#opts.renewDeadlineMs} ms)`);
    }
    if (this.#running) { this.#again = true; return; }
    this.#running = true;
    this.#attempted = this.#attempt().catch((err: unknown) => this.#log.warn({ err: (err as Error).message }, 'leader election attempt failed'))
      .finally(() => {
        this.#running = false;
        if (this.#again) { this.#again = false; this.poke(); }
      });
  }

  async #attempt(): Promise<void> {
    if (this.#releasing) return;
    if (this.leading) return this.#renew();
    if (!this.isFree() || !this.#opts.want()) return;
    await this.#acquire();
  }

  async #renew(): Promise<void> {
    // A leader won by a write: the Lease as that write (or the latest renewal) left it.
    const mine = this.#mine;
    if (!mine) throw new Error(`lease ${this.name}: leading without a Lease written`);
    const now = this.#now();
    const seen = this.#observed?.lease;
    const taker = seen?.spec?.holderIdentity;
    if (seen && taker && taker !== this.#opts.identity && olderThan(mine, seen)) {
      this.#set(false, 'lost', `taken by ${taker}`);
      return;
    }
    // Renewed once per retry period (a poke from a cache event in between writes nothing).
    if (now - this.#renewedAt < this.#opts.retryPeriodMs * 0.9) return;
    await this.#write(mine, now, 'renew');
  }

  async #acquire(): Promise<void> {
    this.#acquiring = true;
    try {
      await this.#tryAcquire();
    } finally {
      this.#acquiring = false;
    }
  }

  async #tryAcquire(): Promise<void> {
    const now = this.#now();
    const current = this.#observed?.lease;
    if (!current) {
      try {
        const created = await this.#api.create(leaseBody(this.#annotated({
          metadata: { name: this.name, namespace: this.#opts.namespace, labels: this.#opts.labels,
            ...(this.#opts.ownerReferences ? { ownerReferences: this.#opts.ownerReferences } : {}) },
        }), this.#spec(now, undefined)));
        this.#won(created, now);
      } catch (err) {
        if (toKubeError(err).kind !== 'AlreadyExists') throw err;
        this.observe(await this.#api.read(this.name));
      }
      return;
    }
    await this.#write(current, now, 'acquire');
  }

  /** PUTs the Lease held by this replica, renewed at `now`, over `base` (its resourceVersion as precondition). */
  async #write(base: V1Lease, now: number, what: 'acquire' | 'renew'): Promise<void> {
    try {
      const written = await this.#api.replace(leaseBody(this.#annotated(base), this.#spec(now, base)));
      if (what === 'acquire') this.#won(written, now);
      else { this.#mine = written; this.#renewedAt = now; }
    } catch (err) {
      if (toKubeError(err).kind !== 'Conflict' && toKubeError(err).kind !== 'NotFound') throw err;
      // Someone else wrote it (or deleted it): judge on what is there now.
      const fresh = await this.#api.read(this.name);
      const holder = fresh?.spec?.holderIdentity;
      if (what === 'renew' && fresh && holder === this.#opts.identity) { this.#mine = fresh; return; }
      if (what === 'renew') this.#set(false, 'lost', fresh ? `taken by ${holder || 'nobody (released)'}` : 'lease deleted');
      this.#see(fresh);
    }
  }

  #won(lease: V1Lease, now: number): void {
    if (this.#stopped) {
      // Won by an attempt that was under way when stop() came: written free at once, not left held and unrenewed.
      void this.#api.replace(this.#freed(lease)).then((free) => this.#see(free), (err: unknown) =>
        this.#log.warn({ err: toKubeError(err).message }, 'could not release a lease won after stop; it expires instead'));
      return;
    }
    this.#mine = lease;
    this.#renewedAt = now;
    this.#set(true, 'acquired', 'acquired');
    this.#see(lease);
  }

  /** `lease` written free: no holder, and expired a second later, so that another replica takes it at once. */
  #freed(lease: V1Lease): V1Lease {
    return leaseBody(lease, { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: microTime(new Date(this.#now())) });
  }

  #spec(now: number, base: V1Lease | undefined): Record<string, unknown> {
    const prev = base?.spec;
    const ours = prev?.holderIdentity === this.#opts.identity;
    const t = microTime(new Date(now));
    return {
      holderIdentity: this.#opts.identity,
      leaseDurationSeconds: Math.ceil(this.#opts.leaseDurationMs / 1000),
      acquireTime: ours && prev?.acquireTime ? prev.acquireTime : t,
      renewTime: t,
      // As client-go: one more whenever another holder's Lease is taken, a released one included (a hand-over).
      leaseTransitions: (prev?.leaseTransitions ?? 0) + (prev && !ours ? 1 : 0),
    };
  }

  /** `lease` with this replica's annotations written over its own. */
  #annotated(lease: V1Lease): V1Lease {
    const extra = this.#opts.annotations?.();
    if (!extra) return lease;
    return { ...lease, metadata: { ...lease.metadata, annotations: { ...lease.metadata?.annotations, ...extra } } };
  }

  #set(leading: boolean, change: LeaderChange, reason: string): void {
    if (this.leading === leading) return;
    this.#log.info({ identity: this.#opts.identity, change, reason }, leading ? 'lease held' : 'lease no longer held');
    this.leading$.next(leading);
    for (const fn of this.#changes) fn(change, reason);
  }

  /** The Lease as it is now, seen at this moment of this replica's clock. */
  #see(lease: V1Lease | undefined): void {
    this.#observed = { lease, at: this.#now() };
    this.#armExpiry();
  }

  /** A follower tries again the moment the Lease it saw expires. */
  #armExpiry(): void {
    clearTimeout(this.#expiry);
    const o = this.#observed;
    if (this.#stopped || !o?.lease || this.leading) return;
    const wait = o.at + durationMs(o.lease) - this.#now();
    if (wait > 0) this.#expiry = setTimeout(() => this.poke(), wait + 5);
  }
}

function durationMs(lease: V1Lease): number {
  return (lease.spec?.leaseDurationSeconds ?? 0) * 1000;
}

/** Whether `a` is an older version of the Lease than `b` (etcd's resourceVersions are increasing integers). */
function olderThan(a: V1Lease, b: V1Lease): boolean {
  const ra = Number(a.metadata?.resourceVersion);
  const rb = Number(b.metadata?.resourceVersion);
  return Number.isInteger(ra) && Number.isInteger(rb) && ra < rb;
}

/** The Lease to write: `base`'s metadata (resourceVersion included) with `spec`; MicroTimes as strings. */
function leaseBody(base: V1Lease, spec: Record<string, unknown>): V1Lease {
  // A Date the client revived would be written with milliseconds, which a MicroTime field refuses.
  const times = Object.fromEntries(Object.entries(spec).map(([k, v]) => [k, v instanceof Date ? microTime(v) : v]));
  return { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: base.metadata, spec: times } as unknown as V1Lease;
}
