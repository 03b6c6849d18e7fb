// Whether a member shows it can add nodes for Pending pods: a cluster-autoscaler that writes its status ConfigMap
// (kube-system/cluster-autoscaler-status), or Karpenter with at least one NodePool (nodepools.karpenter.sh). Read at
// start and every READ_EVERY_MS after; the `auto` fit (forge/fit.ts) lets a delegate that fits no node now wait
// Pending in such a member rather than refusing it.
import { exhaustMap, from, timer, type Subscription } from 'rxjs';
import type { ClusterClient } from '../kube/client.ts';
import { toKubeError } from '../kube/errors.ts';
import type { Logger } from '../log.ts';

/** How often the signals are read again: an autoscaler installed or removed is seen within this. */
const READ_EVERY_MS = 60_000;

export const CA_STATUS = { namespace: 'kube-system', name: 'cluster-autoscaler-status' };
const NODEPOOLS = '/apis/karpenter.sh/v1/nodepools';

export class MemberScaling {
  #client: Pick<ClusterClient, 'request' | 'core'>;
  #log: Logger;
  #sub: Subscription | undefined;
  #growth: string | undefined;
  #read = false;
  #waiters: (() => void)[] = [];
  #refused = new Set<string>();
  #everyMs: number;

  constructor(client: Pick<ClusterClient, 'request' | 'core'>, log: Logger, opts: { everyMs?: number } = {}) {
    this.#client = client;
    this.#log = log;
    this.#everyMs = opts.everyMs ?? READ_EVERY_MS;
  }

  /** What shows the member can add nodes ("cluster-autoscaler", "Karpenter NodePools"), or undefined: nothing does. */
  get growth(): string | undefined { return this.#growth; }
  /** Whether the signals were read once (an error counts as read: no signal). */
  get read(): boolean { return this.#read; }

  /** Resolves once the signals were read once. */
  waitRead(): Promise<void> {
    return this.#read ? Promise.resolve() : new Promise((resolve) => this.#waiters.push(resolve));
  }

  start(): void {
    this.#sub ??= timer(0, this.#everyMs).pipe(exhaustMap(() => from(this.#readSignals()))).subscribe();
  }

  stop(): void {
    this.#sub?.unsubscribe();
    this.#sub = undefined;
  }

  async #readSignals(): Promise<void> {
    const [ca, karpenter] = await Promise.all([
      this.#ask('cluster-autoscaler', () => this.#client.core.readNamespacedConfigMap(CA_STATUS)),
      this.#ask('Karpenter NodePools', () => this.#client.request<{ items?: unknown[] }>('GET', `${NODEPOOLS}?limit=1`)),
    ]);
    const growth = ca ? `its cluster-autoscaler reports in ${CA_STATUS.namespace}/${CA_STATUS.name}`
      : karpenter?.items?.length ? 'it has Karpenter NodePools' : undefined;
    if (growth !== this.#growth) this.#log.info({ growth: growth ?? 'none' }, 'member node autoscaling');
    this.#growth = growth;
    if (!this.#read) {
      this.#read = true;
      for (const w of this.#waiters.splice(0)) w();
    }
  }

  /** The answer, or undefined when there is none (not found, not served, refused: told once, a member may not grant it). */
  async #ask<T>(what: string, call: () => Promise<T>): Promise<T | undefined> {
    try {
      return await call();
    } catch (err) {
      const k = toKubeError(err);
      if (k.kind !== 'NotFound' && !this.#refused.has(what)) {
        this.#refused.add(what);
        this.#log.warn({ signal: what, err: k.message }, 'cannot read whether the member adds nodes; counted as not');
      }
      return undefined;
    }
  }
}
