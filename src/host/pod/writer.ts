// The host writes of one virtual node's pod flows: a proxy's status patches (and which of them left the proxy as it is,
// so that their own watch events need no check), its Offloaded condition, and the events clusterlet records on it.
// Shared by the lifecycle (lifecycle.ts) and the status mirror (status-mirror.ts).
import type { V1Pod, V1PodCondition } from '@kubernetes/client-node';
import { DISCARD, PATCH, type ClusterClient } from '../../kube/client.ts';
import type { WatchClient } from '../../kube/listwatch.ts';
import { objectKey, type Informer } from '../../kube/informer.ts';
import { toKubeError } from '../../kube/errors.ts';
import { writeOwnEvent, type EventClient, type EventSubject } from '../../kube/events.ts';
import { metrics } from '../../metrics.ts';
import { OFFLOADED_CONDITION } from '../../forge/keys.ts';
import { objectId } from '../../forge/meta.ts';

// Status writes: their answer (the whole pod) is not read, and they go before the other writes that wait (events,
// lifecycle retries) for the host's rate limit or a connection: a user waits on them.
const strategic = { ...DISCARD, contentType: PATCH.strategic, priority: 'high' } as const;

/**
 * How soon a sync whose write the replica's fence refused (kube/client.ts: it could not be sure it still led the member,
 * its Lease renewal late) runs again. Not a failure of the pod: no backoff, which would hold every pod written during
 * the blip for up to a minute after the next renewal reopens the fence. Leadership lost for good stops the controller.
 */
export const FENCED_RETRY_MS = 1000;

/**
 * What the pod flows use of the host API: the proxies' list and watch, their status and their removal, and events. The
 * controllers take this, not a whole client, so that a fake implements just these.
 */
export type PodHost = WatchClient & EventClient & {
  core: Pick<ClusterClient['core'], 'listPodForAllNamespaces' | 'patchNamespacedPodStatus' | 'deleteNamespacedPod'>;
};

export type SyncResult = 'created' | 'deleted' | 'rejected' | 'status';

export interface ProxyWriterOptions {
  nodeName: string;
  member: string;
  /** Whether the controller has stopped: a stopped member's metric series stay dropped. */
  stopped: () => boolean;
  /** The clock of the Offloaded condition's writes, ms; default performance.now. */
  now?: () => number;
}

export class ProxyWriter {
  #host: PodHost;
  #proxies: Informer<V1Pod>;
  #opts: ProxyWriterOptions;
  /**
   * The resourceVersion each proxy was left at by the last write of its whole mirrored status (status-mirror.ts), with
   * the informer's relist count when it was sent, by key, until the next status change of that proxy comes. The watch
   * event of that write needs no status check: the proxy at that version is what a check would write (a change another
   * writer made before it came as an event of its own, and was checked); a change of the delegate since queues its own.
   * Any other version is checked, and so is any version after a relist, which may fold another writer's change into the
   * event of ours.
   */
  #ownWrites = new Map<string, { rv: string; relists: number }>();
  /** The keys of the proxies last set Offloaded other than True, until set True or gone. */
  #notOffloaded = new Set<string>();
  /** When this writer last wrote each proxy's Offloaded condition (setOffloaded's messageRefreshMs), by key. */
  #offloadedWrites = new Map<string, number>();
  #now: () => number;

  constructor(host: PodHost, proxies: Informer<V1Pod>, opts: ProxyWriterOptions) {
    this.#host = host;
    this.#proxies = proxies;
    this.#opts = opts;
    this.#now = opts.now ?? (() => performance.now());
  }

  /** A sync's outcome, counted while the controller runs. */
  counted(result: SyncResult): void {
    if (!this.#opts.stopped()) metrics.podSyncs.inc({ member: this.#opts.member, result });
  }

  /** Whether `proxy` (a status change of `key`) is as the last whole-status write left it (#ownWrites). */
  isOwnWrite(key: string, proxy: V1Pod): boolean {
    const own = this.#ownWrites.get(key);
    if (own === undefined) return false;
    this.#ownWrites.delete(key);
    return own.rv === proxy.metadata?.resourceVersion && own.relists === this.#proxies.relists;
  }

  /** Whether the proxy of `key` was last set Offloaded other than True (its read may not show it yet). */
  notOffloaded(key: string): boolean { return this.#notOffloaded.has(key); }

  /** The proxy of `key` is gone: nothing of it is kept. */
  forget(key: string): void {
    this.#ownWrites.delete(key);
    this.#notOffloaded.delete(key);
    this.#offloadedWrites.delete(key);
  }

  /** Patches the proxy's status; `whole`: the patch is its whole mirrored status (proxyStatusUpdate), see #ownWrites. */
  async patchStatus(proxy: V1Pod, status: object, whole = false): Promise<void> {
    const { namespace, name, uid } = objectId(proxy);
    const key = `${namespace}/${name}`;
    const relists = this.#proxies.relists;
    // Kept only while the proxy is (its DELETED event may come before this answer: the entry would never go).
    const onVersion = whole
      ? (rv: string) => { if (this.#proxies.get(key)?.metadata?.uid === uid) this.#ownWrites.set(key, { rv, relists }); }
      : undefined;
    try {
      await this.#host.core.patchNamespacedPodStatus({
        namespace, name, body: { metadata: { uid }, status },
      }, { ...strategic, onVersion });
      this.counted('status');
    } catch (err) {
      const k = toKubeError(err);
      if (k.kind === 'NotFound') return; // gone meanwhile; its delete event requeues the key
      throw k;
    }
  }

  /**
   * Sets the Offloaded condition (and records an event) when it changes; a no-op otherwise. With `messageRefreshMs`, a
   * change of message alone (same status and reason) is written only that long after this writer's last write of it.
   */
  async setOffloaded(proxy: V1Pod, status: 'True' | 'False', reason: string, message: string,
    eventType?: 'Warning' | 'Normal', opts: { messageRefreshMs?: number } = {}): Promise<void> {
    const key = objectKey(proxy);
    const cur = proxy.status?.conditions?.find((c) => c.type === OFFLOADED_CONDITION);
    if (cur && cur.status === status && cur.reason === reason) {
      if (cur.message === message) return;
      // Only the message changed: with a refresh period, written again once that long after the last write.
      const last = this.#offloadedWrites.get(key);
      if (opts.messageRefreshMs !== undefined && last !== undefined && this.#now() - last < opts.messageRefreshMs) return;
    }
    const condition: V1PodCondition = {
      type: OFFLOADED_CONDITION, status, reason, message,
      lastTransitionTime: cur?.status === status && cur.lastTransitionTime ? cur.lastTransitionTime : new Date(),
    };
    const conditions = [...(proxy.status?.conditions ?? []).filter((c) => c.type !== OFFLOADED_CONDITION), condition];
    // A pod that cannot be offloaded says so in kubectl's STATUS column too.
    const stuck = status === 'False' && (proxy.status?.phase ?? 'Pending') === 'Pending';
    await this.patchStatus(proxy, stuck ? { conditions, reason, message } : { conditions });
    this.#offloadedWrites.set(key, this.#now());
    if (status === 'True') this.#notOffloaded.delete(key); else this.#notOffloaded.add(key);
    if (eventType) await this.event(proxy, eventType, reason, message);
  }

  /** Records an event on the proxy; repeated ones (same reason) bump the count of one event object. */
  async event(proxy: V1Pod, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    const { namespace, name, uid } = objectId(proxy);
    await writeOwnEvent(this.#host, proxyRef(namespace, name, uid), this.#opts.nodeName, { type, reason, message });
  }
}

export const proxyRef = (namespace: string, name: string, uid: string): EventSubject =>
  ({ apiVersion: 'v1', kind: 'Pod', namespace, name, uid });
