// The pod runtime of a member's virtual node: the kubelet API's logs, exec, attach and port-forward are the member
// API server's pods/log, pods/exec, pods/attach and pods/portforward of the delegate, found in the one delegate
// index by the proxy's namespace, name and UID; its stats are measured in the member (usage.ts).
import type { V1Pod } from '@kubernetes/client-node';
import type WebSocket from 'ws';
import { ProviderError } from '../../provider/errors.ts';
import type {
  ContainerLogStream, MeasuredNodeUsage, PodRuntime, RemoteCommandKind, UpgradedConnection,
} from '../../provider/runtime.ts';
import type { MemberCluster } from '../cluster.ts';
import { memberGet, memberSpdyUpgrade, memberWebSocket } from './api.ts';
import { namespacedName } from '../../forge/meta.ts';
import { MemberUsage, type MemberUsageOptions, type ProxyLookup, type UsageCluster } from './usage.ts';

/** What the runtime uses of the member: its name (in errors), and what its usage reads. */
export type RuntimeCluster = UsageCluster & { readonly config: Pick<MemberCluster['config'], 'name'> };

export class MemberRuntime implements PodRuntime {
  #cluster: RuntimeCluster;
  #usage: MemberUsage;

  /** `proxies`: the host pods bound to this node, whose specs say which containers are the pod's own. */
  constructor(cluster: RuntimeCluster, proxies: ProxyLookup, opts: MemberUsageOptions) {
    this.#cluster = cluster;
    this.#usage = new MemberUsage(cluster, proxies, opts);
  }

  async containerLogs(namespace: string, name: string, uid: string, container: string, options: URLSearchParams,
    signal: AbortSignal): Promise<ContainerLogStream> {
    const path = this.#podPath(namespace, name, uid, 'log', withContainer(container, options));
    const res = await memberGet(this.#cluster.client, path, signal);
    return { stream: res, contentType: res.headers['content-type'] ?? 'text/plain' };
  }

  async remoteCommand(kind: RemoteCommandKind, namespace: string, name: string, uid: string, container: string,
    options: URLSearchParams, protocols: string[]): Promise<WebSocket> {
    return memberWebSocket(this.#cluster.client, this.#podPath(namespace, name, uid, kind, withContainer(container, options)), protocols);
  }

  async portForward(namespace: string, name: string, uid: string, protocols: string[]): Promise<UpgradedConnection> {
    const upgraded = await memberSpdyUpgrade(this.#cluster.client, this.#podPath(namespace, name, uid, 'portforward'), protocols);
    if (!protocols.includes(upgraded.protocol)) {
      upgraded.socket.destroy();
      throw new ProviderError('Upstream', `member ${this.#cluster.config.name} answered port-forward with protocol "${upgraded.protocol}"`);
    }
    return upgraded;
  }

  usage(): Promise<MeasuredNodeUsage> { return this.#usage.usage(); }

  /** The member API path of a subresource of the proxy's delegate; NotFound while it has none. */
  #podPath(namespace: string, name: string, uid: string, subresource: string, query?: URLSearchParams): string {
    const d = namespacedName(this.#delegate(namespace, name, uid));
    const path = `/api/v1/namespaces/${encodeURIComponent(d.namespace)}/pods/${encodeURIComponent(d.name)}/${subresource}`;
    return query ? `${path}?${query}` : path;
  }

  #delegate(namespace: string, name: string, uid: string): V1Pod {
    const d = this.#cluster.delegates.forProxy(namespace, name, uid);
    if (!d) throw new ProviderError('NotFound', `pod ${namespace}/${name} has no delegate in member ${this.#cluster.config.name} yet`);
    return d;
  }
}

/** The member API's options: the container first, then the caller's. */
function withContainer(container: string, options: URLSearchParams): URLSearchParams {
  const q = new URLSearchParams({ container });
  for (const [k, v] of options) q.append(k, v);
  return q;
}
