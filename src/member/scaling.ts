// Whether a member shows it can add nodes for Pending pods: a cluster-autoscaler that writes its status ConfigMap
// (kube-system/cluster-autoscaler-status, written within the last CA_STALE_MS), or Karpenter with at least one
// NodePool (nodepools.karpenter.sh). Read at start and every READ_EVERY_MS after; a read the member does not answer
// leaves that signal as it was. The `auto` fit (forge/fit.ts) lets a delegate that fits no node now wait Pending in
// such a member rather than refusing it.
import { exhaustMap, from, timer, type Subscription } from 'rxjs';
import type { V1ConfigMap } from '@kubernetes/client-node';
import type { ClusterClient } from '../kube/client.ts';
import { toKubeError } from '../kube/errors.ts';
import type { Logger } from '../log.ts';

/** How often the signals are read again: an autoscaler installed or removed is seen within this. */
const READ_EVERY_MS = 60_000;

export const CA_STATUS = { namespace: 'kube-system', name: 'cluster-autoscaler-status' };
const NODEPOOLS = '/apis/karpenter.sh/v1/nodepools';

/** The annotation cluster-autoscaler stamps its status ConfigMap with on every write (clusterstate/utils/status.go). */
export const CA_LAST_UPDATED = 'cluster-autoscaler.kubernetes.io/last-updated';
/** A status ConfigMap not written for this long is left from an autoscaler that no longer runs: no sign. */
export const CA_STALE_MS = 15 * 60_000;

/** What one read of a signal found: an answer, none (not there, not served, refused), or no answer (kept as it was). */
type Read<T> = { value: T } | { absent: true } | { failed: true };

export class MemberScaling {
  #client: Pick<ClusterClient, 'request' | 'core'>;
  #log: Logger;
  #sub: Subscription | undefined;
  #growth: string | undefined;
  #read = false;
  #refused = new Set<string>();
  #failing = new Set<string>();
  /** Each signal's last answer: what an error other than not found or refused leaves as it was. */
  #ca: string | undefined;
  #karpenter: string | undefined;
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
    if (!('failed' in ca)) this.#ca = 'value' in ca ? caSignal(ca.value, Date.now()) : undefined;
    if (!('failed' in karpenter)) this.#karpenter = 'value' in karpenter && karpenter.value.items?.length ? 'it has Karpenter NodePools' : undefined;
    const growth = this.#ca ?? this.#karpenter;
    if (growth !== this.#growth) this.#log.info({ growth: growth ?? 'none' }, 'member node autoscaling');
    this.#growth = growth;
    if (!this.#read) {
      this.#read = true;
    }
  }

  /**
   * The answer; absent when there is none (not found, not served, refused: told once, a member may not grant it);
   * failed when the member did not answer (told once a run of failures: the last answer stands meanwhile).
   */
  async #ask<T>(what: string, call: () => Promise<T>): Promise<Read<T>> {
    try {
      const value = await call();
      this.#failing.delete(what);
      return { value };
    } catch (err) {
      const k = toKubeError(err);
      if (k.kind === 'NotFound') return { absent: true };
      if (k.kind === 'Forbidden') {
        if (!this.#refused.has(what)) {
          this.#refused.add(what);
          this.#log.warn({ signal: what, err: k.message }, 'cannot read whether the member adds nodes; counted as not');
        }
        return { absent: true };
      }
      if (!this.#failing.has(what)) {
        this.#failing.add(what);
        this.#log.warn({ signal: what, err: k.message }, 'reading whether the member adds nodes failed; the last answer stands');
      }
      return { failed: true };
    }
  }
}

/**
 * What the cluster-autoscaler status ConfigMap shows at `now`: an autoscaler, unless its last-updated stamp (a Go
 * time.Time as its String method writes it: date, time with fraction, zone offset and name) is older than CA_STALE_MS. One without a stamp it can
 * read counts as written now.
 */
export function caSignal(cm: V1ConfigMap, now: number): string | undefined {
  const stamp = cm.metadata?.annotations?.[CA_LAST_UPDATED];
  const at = stamp === undefined ? undefined : parseGoTime(stamp);
  if (at !== undefined && now - at > CA_STALE_MS) return undefined;
  return `its cluster-autoscaler reports in ${CA_STATUS.namespace}/${CA_STATUS.name}`;
}

/** Milliseconds since the epoch of a time as Go's time.Time String method writes it, or undefined. */
export function parseGoTime(text: string): number | undefined {
  const m = /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})(?:\.(\d+))? ([+-]\d{2})(\d{2})(?: \S+)?$/.exec(text.trim());
  if (!m) return undefined;
  const ms = (m[3] ?? '').padEnd(3, '0').slice(0, 3);
  const at = Date.parse(`${m[1]}T${m[2]}.${ms}${m[4]}:${m[5]}`);
  return Number.isNaN(at) ? undefined : at;
}
