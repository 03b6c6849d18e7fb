// A fake PodProvider: pods it "runs" in memory, every call recorded, and the notifier streams driven by the test.
import { Subject } from 'rxjs';
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import {
  type CreateOptions, type PodChange, type PodEvent, type PodNotice, type PodProvider, type ProviderPod,
} from '../../../src/provider/pod.ts';
import { PodRejectedError } from '../../../src/provider/errors.ts';

export interface FakePod extends ProviderPod { status: V1PodStatus }

export class FakeProvider implements PodProvider {
  readonly changes = new Subject<PodChange>();
  readonly podChanges$ = this.changes.asObservable();
  readonly events = new Subject<PodEvent>();
  readonly podEvents$ = this.events.asObservable();
  readonly resyncs = new Subject<void>();
  readonly resync$ = this.resyncs.asObservable();
  readonly unreachables = new Subject<void>();
  readonly unreachable$ = this.unreachables.asObservable();
  readonly pods = new Map<string, FakePod>();
  readonly calls: { op: string; key: string; arg?: unknown }[] = [];
  reachable = true;
  synced = true;
  /** What the next createPod calls throw (taken in order), if anything. */
  createErrors: Error[] = [];
  /** What createPod resolves with (notices for the proxy's events). */
  notices: PodNotice[] = [];
  /** What updatePod resolves with. */
  updateNotices: PodNotice[] = [];

  #syncWaiters: (() => void)[] = [];
  hasSynced(): boolean { return this.synced; }
  waitSynced(): Promise<void> { return this.synced ? Promise.resolve() : new Promise((r) => this.#syncWaiters.push(r)); }
  /** The back end's view becomes complete (for a provider created with `synced = false`). */
  markSynced(): void {
    this.synced = true;
    for (const r of this.#syncWaiters.splice(0)) r();
  }
  available(): boolean { return this.reachable; }
  listPodKeys(): string[] { return [...this.pods.keys()]; }
  podCount(): number { return this.pods.size; }
  getPod(namespace: string, name: string): ProviderPod | undefined {
    const p = this.pods.get(`${namespace}/${name}`);
    return p && { ...p, ready: p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false };
  }
  /** Host keys whose pod createPod made and getPod does not show yet (as a member's watch behind its creates). */
  readonly unshown = new Set<string>();
  creating(namespace: string, name: string): boolean { return this.unshown.has(`${namespace}/${name}`); }
  getPodStatus(namespace: string, name: string): V1PodStatus | undefined {
    return structuredClone(this.pods.get(`${namespace}/${name}`)?.status);
  }

  async createPod(proxy: V1Pod, opts: CreateOptions = {}): Promise<PodNotice[]> {
    const key = `${proxy.metadata!.namespace}/${proxy.metadata!.name}`;
    this.calls.push({ op: 'create', key, arg: opts });
    const err = this.createErrors.shift();
    if (err) throw err;
    this.pods.set(key, { proxyUID: proxy.metadata!.uid!, terminating: false, phase: 'Pending', status: { phase: 'Pending' } });
    return this.notices;
  }
  async updatePod(proxy: V1Pod): Promise<PodNotice[]> {
    this.calls.push({ op: 'update', key: `${proxy.metadata!.namespace}/${proxy.metadata!.name}`, arg: proxy.spec });
    return this.updateNotices;
  }
  async deletePod(namespace: string, name: string, grace?: number): Promise<void> {
    this.calls.push({ op: 'delete', key: `${namespace}/${name}`, arg: grace });
    const p = this.pods.get(`${namespace}/${name}`);
    if (p) p.terminating = true;
  }

  /** The back end's pod for `key` changed: set it and notify. */
  set(key: string, pod: FakePod, lifecycle = false): void {
    this.pods.set(key, pod);
    this.changes.next({ key, lifecycle });
  }
  /** The back end's pod for `key` is gone. */
  lose(key: string): void {
    this.pods.delete(key);
    this.changes.next({ key, lifecycle: true });
  }
  count(op: string): number { return this.calls.filter((c) => c.op === op).length; }
}

export { PodRejectedError };
