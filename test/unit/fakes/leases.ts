// An in-memory Lease API (the host's coordination.k8s.io Leases of one namespace) for leader-election unit tests,
// shared by several electors as several replicas share the host. Like the API server it checks resourceVersion
// preconditions (a stale replace is a 409 Conflict, a create of an existing name is AlreadyExists), refuses a
// MicroTime without microseconds, and answers with the client's shape (timestamps revived as Dates). Every write
// is recorded when it is sent and mirrored to watchers; calls can fail or hang on demand (a host outage).
import { filter, map, Observable, Subject } from 'rxjs';
import type { V1Lease } from '@kubernetes/client-node';
import { KubeError } from '../../../src/kube/errors.ts';
import type { ListWatchEvent } from '../../../src/kube/listwatch.ts';
import { revive } from '../../../src/kube/revive.ts';
import type { LeaseApi } from '../../../src/host/ha/elector.ts';

/** A write as sent (before it is applied, refused or held), with who sent it and when (Date.now()). */
export interface LeaseWrite {
  verb: 'create' | 'replace';
  by: string;
  name: string;
  body: V1Lease;
  at: number;
}

const MICRO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;

export class FakeLeases {
  readonly namespace: string;
  readonly writes: LeaseWrite[] = [];
  /** Stored as the server keeps them: plain JSON, timestamps as strings. */
  #store = new Map<string, V1Lease>();
  #rv = 0;
  #events = new Subject<ListWatchEvent<V1Lease>>();
  #failure: Error | undefined;
  /** While set, calls (on the Lease named `name`, or on any) wait in `waiting`. */
  #held: { name?: string; waiting: (() => void)[] } | undefined;

  constructor(namespace = 'clusterlet') { this.namespace = namespace; }

  /** The Lease API as one replica (`by`, recorded with its writes) calls it. */
  api(by: string): LeaseApi {
    return {
      read: (name) => this.#call(name, () => this.get(name)),
      create: (lease) => this.#send('create', by, lease, () => this.#create(lease)),
      replace: (lease) => this.#send('replace', by, lease, () => this.#replace(lease)),
    };
  }

  /** The Lease as a read returns it (undefined when missing). */
  get(name: string): V1Lease | undefined {
    const stored = this.#store.get(name);
    return stored && revive<V1Lease>(structuredClone(stored));
  }

  holder(name: string): string | undefined { return this.#store.get(name)?.spec?.holderIdentity; }

  /** A list-watch of the namespace: the Leases as they are now (SYNC), then every write as it is applied. */
  source(): Observable<ListWatchEvent<V1Lease>> {
    return new Observable((subscriber) => {
      subscriber.next({ type: 'SYNC', items: [...this.#store.keys()].map((n) => this.get(n)!) });
      return this.#events.subscribe(subscriber);
    });
  }

  /** Each version of one Lease as a watch delivers it. */
  watch(name: string): Observable<V1Lease> {
    return this.#events.pipe(
      filter((ev) => ev.type !== 'SYNC' && ev.object.metadata?.name === name),
      map((ev) => (ev as { object: V1Lease }).object));
  }

  /** Every call fails with `err` (by default as when the host cannot be reached) until heal(). */
  fail(err: Error = new KubeError('Unavailable', 0, 'ECONNREFUSED', 'connect ECONNREFUSED')): void { this.#failure = err; }
  heal(): void { this.#failure = undefined; }

  /** Calls (on the Lease `name`, or on any) hang until resume(): a host that stopped answering, or a slow write. */
  hold(name?: string): void { this.#held = { name, waiting: [] }; }
  /** Answers the held calls, in the order they came. */
  resume(): void {
    const waiting = this.#held?.waiting ?? [];
    this.#held = undefined;
    for (const go of waiting) go();
  }

  async #send(verb: LeaseWrite['verb'], by: string, lease: V1Lease, apply: () => V1Lease): Promise<V1Lease> {
    this.writes.push({ verb, by, name: lease.metadata?.name ?? '', body: structuredClone(lease), at: Date.now() });
    return this.#call(lease.metadata?.name ?? '', apply);
  }

  async #call<T>(name: string, fn: () => T): Promise<T> {
    const held = this.#held;
    if (held && (held.name === undefined || held.name === name)) await new Promise<void>((go) => held.waiting.push(go));
    if (this.#failure) throw this.#failure;
    return fn();
  }

  #create(lease: V1Lease): V1Lease {
    const name = lease.metadata?.name ?? '';
    if (this.#store.has(name)) {
      throw new KubeError('AlreadyExists', 409, 'AlreadyExists', `leases.coordination.k8s.io "${name}" already exists`);
    }
    return this.#apply('ADDED', lease, {
      namespace: lease.metadata?.namespace ?? this.namespace, uid: `uid-${name}`, creationTimestamp: new Date(Date.now()).toISOString(),
    });
  }

  #replace(lease: V1Lease): V1Lease {
    const name = lease.metadata?.name ?? '';
    const stored = this.#store.get(name);
    if (!stored) throw new KubeError('NotFound', 404, 'NotFound', `leases.coordination.k8s.io "${name}" not found`);
    const rv = lease.metadata?.resourceVersion;
    if (rv && rv !== stored.metadata?.resourceVersion) {
      throw new KubeError('Conflict', 409, 'Conflict',
        `Operation cannot be fulfilled on leases.coordination.k8s.io "${name}": the object has been modified; please apply your changes to the latest version and try again`);
    }
    const { namespace, uid, creationTimestamp } = stored.metadata!;
    return this.#apply('MODIFIED', lease, { namespace, uid, creationTimestamp });
  }

  /** Stores `lease` with the server's metadata fields and a new resourceVersion, tells watchers, returns it. */
  #apply(type: 'ADDED' | 'MODIFIED', lease: V1Lease, server: Record<string, unknown>): V1Lease {
    for (const field of ['acquireTime', 'renewTime'] as const) {
      const t: unknown = lease.spec?.[field];
      if (t !== undefined && !(typeof t === 'string' && MICRO_TIME.test(t))) {
        throw new KubeError('Invalid', 422, 'Invalid', `spec.${field}: invalid MicroTime ${JSON.stringify(t)}`);
      }
    }
    const stored = JSON.parse(JSON.stringify(lease)) as V1Lease;
    stored.metadata = { ...stored.metadata, ...server, resourceVersion: String(++this.#rv) };
    const name = stored.metadata.name!;
    this.#store.set(name, stored);
    this.#events.next({ type, object: this.get(name)! });
    return this.get(name)!;
  }
}
