// A fake PodRuntime: logs from memory, remote commands to a WebSocket server the test runs, port-forwards to a
// socket the test gives, usage as set; every call recorded, and any call made to fail with a given error.
import { Readable } from 'node:stream';
import { once } from 'node:events';
import WebSocket from 'ws';
import type {
  ContainerLogStream, MeasuredNodeUsage, PodRuntime, RemoteCommandKind, UpgradedConnection,
} from '../../../src/provider/runtime.ts';
import { ProviderError } from '../../../src/provider/errors.ts';

export interface RuntimeCall {
  op: 'containerLogs' | RemoteCommandKind | 'portForward' | 'usage';
  /** `namespace/name/uid`, and `/container` where there is one. */
  pod?: string;
  /** The options as given (query string). */
  options?: string;
  protocols?: string[];
}

export class FakeRuntime implements PodRuntime {
  readonly calls: RuntimeCall[] = [];
  /** Log text by `namespace/name/container`, given in these chunks. */
  readonly logs = new Map<string, string[]>();
  /** What the next call throws, if anything (then cleared). */
  fail: Error | undefined;
  /** Where remoteCommand connects: `<url>/<kind>?<options>` on a WebSocket server of the test. */
  webSocketURL: string | undefined;
  /** What portForward resolves with. */
  forward: (() => UpgradedConnection) | undefined;
  measured: MeasuredNodeUsage = { pods: [], cpuSeconds: 0, memoryWorkingSetBytes: 0, timestamp: 0 };

  async containerLogs(namespace: string, name: string, uid: string, container: string, options: URLSearchParams,
    signal: AbortSignal): Promise<ContainerLogStream> {
    this.#record({ op: 'containerLogs', pod: `${namespace}/${name}/${uid}/${container}`, options: options.toString() });
    const chunks = this.logs.get(`${namespace}/${name}/${container}`);
    if (!chunks) throw new ProviderError('NotFound', `no log of ${namespace}/${name}/${container}`);
    return { stream: Readable.from(chunks.map((c) => Buffer.from(c)), { signal }), contentType: 'text/plain' };
  }

  async remoteCommand(kind: RemoteCommandKind, namespace: string, name: string, uid: string, container: string,
    options: URLSearchParams, protocols: string[]): Promise<WebSocket> {
    this.#record({ op: kind, pod: `${namespace}/${name}/${uid}/${container}`, options: options.toString(), protocols });
    if (!this.webSocketURL) throw new ProviderError('Unavailable', 'no WebSocket server');
    const ws = new WebSocket(`${this.webSocketURL}/${kind}?${options}`, protocols);
    // Paused as it opens, as the PodRuntime contract says.
    ws.once('open', () => ws.pause());
    await once(ws, 'open');
    return ws;
  }

  async portForward(namespace: string, name: string, uid: string, protocols: string[]): Promise<UpgradedConnection> {
    this.#record({ op: 'portForward', pod: `${namespace}/${name}/${uid}`, protocols });
    if (!this.forward) throw new ProviderError('Unavailable', 'no port-forward target');
    return this.forward();
  }

  async usage(): Promise<MeasuredNodeUsage> {
    this.#record({ op: 'usage' });
    return structuredClone(this.measured);
  }

  /** Records the call, and throws the error set for it. */
  #record(call: RuntimeCall): void {
    this.calls.push(call);
    const err = this.fail;
    this.fail = undefined;
    if (err) throw err;
  }
}
