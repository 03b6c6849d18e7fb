// What the kubelet API asks of the back end that runs a virtual node's pods (virtual-kubelet's GetContainerLogs,
// RunInContainer/AttachToContainer, PortForward and GetStatsSummary), in host coordinates: a pod is the proxy's
// namespace, name and UID. The back end only opens connections and measures; the kubelet protocols (SPDY,
// remote-command channels, port-forward streams, summary and Prometheus formats) are the host side's.
// Every failure is a ProviderError (errors.ts); NotFound when the pod has no counterpart in the back end yet.
import type { Duplex, Readable } from 'node:stream';
import type WebSocket from 'ws';

/** A container's log as the back end streams it. */
export interface ContainerLogStream {
  stream: Readable;
  /** The back end's content type, given to the caller as is. */
  contentType: string;
}

/** An upgraded connection speaking one of the protocols asked for. */
export interface UpgradedConnection {
  socket: Duplex;
  protocol: string;
}

export interface MeasuredContainerUsage {
  name: string;
  startTime?: number;
  /** Cumulative CPU, core-seconds. */
  cpuSeconds: number;
  /** Current CPU, cores; undefined until two readings exist. */
  cpuCores?: number;
  memoryWorkingSetBytes: number;
  /** When measured (ms). */
  timestamp: number;
}

export interface MeasuredPodUsage {
  /** The proxy's namespace, name and UID. */
  namespace: string;
  name: string;
  uid: string;
  startTime?: number;
  /** Only containers of the proxy's spec. */
  containers: MeasuredContainerUsage[];
  /** Pod-level readings when the source has them (they include the pod's overhead); else sums. */
  cpuSeconds: number;
  cpuCores?: number;
  memoryWorkingSetBytes: number;
  timestamp: number;
}

/** What the node's pods use, as measured (not what they request): the sum of its pods. */
export interface MeasuredNodeUsage {
  pods: MeasuredPodUsage[];
  cpuSeconds: number;
  cpuCores?: number;
  memoryWorkingSetBytes: number;
  timestamp: number;
}

export type RemoteCommandKind = 'exec' | 'attach';

export interface PodRuntime {
  /**
   * The log of `container`, with `options` (v1 PodLogOptions as query parameters, without the container); resolves
   * once the back end has accepted the request. Aborting `signal` ends the stream (and so a follow).
   */
  containerLogs(namespace: string, name: string, uid: string, container: string, options: URLSearchParams,
    signal: AbortSignal): Promise<ContainerLogStream>;
  /**
   * An open WebSocket of the remote-command protocol (channel byte + payload) to `container`, speaking one of
   * `protocols`; `options` are v1 PodExecOptions / PodAttachOptions as query parameters, without the container.
   * It comes paused, so no message is emitted before the caller listens: the caller resumes it.
   */
  remoteCommand(kind: RemoteCommandKind, namespace: string, name: string, uid: string, container: string,
    options: URLSearchParams, protocols: string[]): Promise<WebSocket>;
  /** A SPDY/3.1 connection of the port-forward protocol to the pod, speaking one of `protocols`. */
  portForward(namespace: string, name: string, uid: string, protocols: string[]): Promise<UpgradedConnection>;
  /** CPU and memory of the node's pods and containers, as measured now (or very recently). */
  usage(): Promise<MeasuredNodeUsage>;
}
