// Streaming connections to a member's API with its kubeconfig credentials: a plain HTTPS request whose
// response body is streamed (pod logs, node proxy), a WebSocket (exec, attach) and a SPDY/3.1 upgrade
// (port-forward). Each takes a token of the member's client-side rate limit and is counted like every other
// member request. A failure is a ProviderError: what the member answered, typed for the kubelet API.
import { request as httpsRequest } from 'node:https';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import WebSocket from 'ws';
import type { ClusterClient } from '../../kube/client.ts';
import { metrics } from '../../metrics.ts';
import { ProviderError } from '../../provider/errors.ts';

/** GET `path` on the member; resolves with a 2xx response (its body not yet read), else throws ProviderError. */
export async function memberGet(client: ClusterClient, path: string, signal?: AbortSignal): Promise<IncomingMessage> {
  const url = await begin(client, 'get', path);
  const opts = { ...await client.connectOptions(), method: 'GET', signal };
  const res = await new Promise<IncomingMessage>((resolve, reject) => {
    const req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, opts, resolve);
    req.on('error', (err) => reject(signal?.aborted ? new ProviderError('Unavailable', 'request cancelled', { cause: err })
      : unreachable(client, err)));
    req.end();
  });
  if (res.statusCode !== undefined && res.statusCode >= 200 && res.statusCode < 300) return res;
  throw await refusal(client, res);
}

/**
 * A WebSocket to `path` on the member, open and paused (what the member sends at once waits for the caller's
 * listeners and resume()); an upgrade the member refuses throws ProviderError with its answer.
 */
export async function memberWebSocket(client: ClusterClient, path: string, protocols: string[]): Promise<WebSocket> {
  const url = await begin(client, 'create', path);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  const opts = await client.connectOptions();
  return new Promise<WebSocket>((resolve, reject) => {
    const ws = new WebSocket(url, protocols, { ...opts, perMessageDeflate: false });
    const fail = (err: ProviderError): void => { ws.removeAllListeners('open'); ws.terminate(); reject(err); };
    ws.once('open', () => { ws.pause(); ws.removeAllListeners('unexpected-response'); resolve(ws); });
    ws.once('unexpected-response', (_req, res) => {
      refusal(client, res).then(fail, (err: unknown) => fail(unreachable(client, err as Error)));
    });
    ws.once('error', (err) => fail(unreachable(client, err)));
  });
}

/**
 * An HTTP upgrade to SPDY/3.1 on the member (POST, as kubectl): resolves with the upgraded socket and the
 * stream protocol the member chose; a refusal throws ProviderError with the member's answer.
 */
export async function memberSpdyUpgrade(client: ClusterClient, path: string, protocols: string[]):
  Promise<{ socket: Duplex; protocol: string }> {
  const url = await begin(client, 'create', path);
  const opts = await client.connectOptions();
  return new Promise((resolve, reject) => {
    const req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, {
      ...opts, method: 'POST',
      headers: { ...opts.headers, Connection: 'Upgrade', Upgrade: 'SPDY/3.1', 'X-Stream-Protocol-Version': protocols },
    });
    req.on('upgrade', (res: IncomingMessage, socket: Duplex, head: Buffer) => {
      if (head.length) socket.unshift(head);
      resolve({ socket, protocol: String(res.headers['x-stream-protocol-version'] ?? '') });
    });
    req.on('response', (res: IncomingMessage) => {
      refusal(client, res).then(reject, (err: unknown) => reject(unreachable(client, err as Error)));
    });
    req.on('error', (err) => reject(unreachable(client, err)));
    req.end();
  });
}

/**
 * A member API answer that was not a success, typed: the caller sees "container not found" as the member said it,
 * while a refusal of clusterlet's own credentials is a problem of its set-up, not of the caller.
 */
export function fromMember(member: string, status: number, message: string): ProviderError {
  const text = `member ${member}: ${message || `HTTP ${status}`}`;
  if (status === 401 || status === 403) return new ProviderError('Forbidden', `${text} (check clusterlet's RBAC in the member)`, { status });
  if (status === 404) return new ProviderError('NotFound', text, { status });
  if (status >= 400 && status < 500) return new ProviderError('InvalidInput', text, { status });
  return new ProviderError('Upstream', text, { status: status || undefined });
}

/** Every member request: a token of the member's client-side rate limit, counted; resolves with the URL of `path`. */
async function begin(client: ClusterClient, verb: 'get' | 'create', path: string): Promise<URL> {
  await client.limiter.take();
  metrics.apiRequests.inc({ cluster: client.name, verb });
  return new URL(path, client.server);
}

/** The member answered, but not with what was asked for: counted, and typed with the member's own message. */
async function refusal(client: ClusterClient, res: IncomingMessage): Promise<ProviderError> {
  metrics.apiErrors.inc({ cluster: client.name, code: String(res.statusCode ?? 0) });
  return fromMember(client.name, res.statusCode ?? 0, statusMessage(await readAll(res, 64 << 10)));
}

/** The connection to the member failed (refused, reset, TLS). */
function unreachable(client: ClusterClient, err: Error): ProviderError {
  return new ProviderError('Unavailable', `member ${client.name}: ${err.message}`, { cause: err });
}

/** The message of a Kubernetes Status body, else the body itself. */
export function statusMessage(body: string): string {
  try {
    const s = JSON.parse(body) as { message?: string };
    if (typeof s?.message === 'string') return s.message;
  } catch { /* not JSON */ }
  return body.trim();
}

function readAll(res: IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve) => {
    let body = '';
    res.setEncoding('utf8');
    res.on('data', (c: string) => { if (body.length < limit) body += c; });
    res.on('end', () => resolve(body));
    res.on('error', () => resolve(body));
    res.on('close', () => resolve(body));
  });
}
