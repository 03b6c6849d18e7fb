// GET /containerLogs/{namespace}/{pod}/{container}: the container's log, streamed from the node's runtime with
// the caller's options. A caller that goes away aborts the runtime's stream (and so a follow).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError } from './errors.ts';
import { requireContainer, type ResolvedPod } from './nodes.ts';
import type { Logger } from '../../log.ts';

const BOOLS: Record<string, boolean> = { '1': true, t: true, T: true, true: true, TRUE: true, True: true,
  '0': false, f: false, F: false, false: false, FALSE: false, False: false };
const LOG_STREAMS = ['All', 'Stdout', 'Stderr'];

/**
 * The kubelet's container-log query (v1 PodLogOptions as query parameters, plus the legacy `tail`) → the
 * PodLogOptions the runtime is given (the container aside). Throws ApiError (400 undecodable, 422 invalid) as the
 * kubelet answers.
 */
export function podLogOptions(query: URLSearchParams): URLSearchParams {
  const out = new URLSearchParams();
  const one = (k: string): string | undefined => query.get(k) ?? undefined;
  const bool = (k: string): void => {
    const v = one(k);
    if (v === undefined || v === '') return;
    if (!(v in BOOLS)) throw new ApiError('BadRequest', `Unable to decode query: ${k}=${v}`);
    if (BOOLS[v]) out.set(k, 'true');
  };
  const int = (k: string, v: string | undefined, min: number): number | undefined => {
    if (v === undefined || v === '') return undefined;
    if (!/^-?\d+$/.test(v)) throw new ApiError('BadRequest', `Unable to decode query: ${k}=${v}`);
    const n = Number(v);
    if (n < min) throw new ApiError('Invalid', `Invalid request: ${k} must be at least ${min}`);
    return n;
  };
  bool('follow');
  bool('previous');
  bool('timestamps');
  // "tail" is the kubelet's old name; "all" means no limit.
  let tail = one('tailLines');
  const legacy = one('tail');
  if (legacy !== undefined && legacy !== '') tail = legacy === 'all' ? undefined : legacy;
  const tailLines = int('tailLines', tail, 0);
  if (tailLines !== undefined) out.set('tailLines', String(tailLines));
  const limitBytes = int('limitBytes', one('limitBytes'), 1);
  if (limitBytes !== undefined) out.set('limitBytes', String(limitBytes));
  const sinceSeconds = int('sinceSeconds', one('sinceSeconds'), 1);
  const sinceTime = one('sinceTime');
  if (sinceSeconds !== undefined && sinceTime) throw new ApiError('Invalid', 'Invalid request: at most one of sinceTime or sinceSeconds may be specified');
  if (sinceSeconds !== undefined) out.set('sinceSeconds', String(sinceSeconds));
  if (sinceTime) {
    if (Number.isNaN(Date.parse(sinceTime)) || !/^\d{4}-\d{2}-\d{2}T/.test(sinceTime)) {
      throw new ApiError('BadRequest', `Unable to decode query: sinceTime=${sinceTime}`);
    }
    out.set('sinceTime', sinceTime);
  }
  const stream = one('stream');
  if (stream !== undefined && stream !== '') {
    if (!LOG_STREAMS.includes(stream)) throw new ApiError('BadRequest', `invalid stream type "${stream}"`);
    // "All" is the default; only ask the back end for a split when asked for one (it may not support it).
    if (stream !== 'All') out.set('stream', stream);
  }
  return out;
}

/** Streams the log of `container` of the resolved pod to `res`. */
export async function serveContainerLogs(req: IncomingMessage, res: ServerResponse, target: ResolvedPod, container: string,
  log: Logger): Promise<void> {
  const url = new URL(req.url ?? '/', 'https://kubelet');
  requireContainer(target.proxy, container);
  const options = podLogOptions(url.searchParams);
  const abort = new AbortController();
  let done = false;
  const onClose = (): void => {
    if (done) return;
    log.debug({ namespace: target.proxy.metadata?.namespace, pod: target.proxy.metadata?.name, container },
      'container logs: the caller went away; member log stream aborted');
    abort.abort();
  };
  res.once('close', onClose);
  const { stream: upstream, contentType } = await target.node.runtime
    .containerLogs(target.namespace, target.name, target.uid, container, options, abort.signal)
    // Cancelled because the caller went away: not the back end's failure.
    .catch((err: unknown) => { throw abort.signal.aborted ? new ApiError('Unavailable', 'request cancelled', { cause: err }) : err; });
  res.writeHead(200, { 'Content-Type': contentType });
  // Each chunk goes out as it comes (a follow must not wait for a buffer to fill).
  res.flushHeaders();
  upstream.on('data', (chunk: Buffer) => { if (!res.write(chunk)) upstream.pause(); });
  res.on('drain', () => upstream.resume());
  await new Promise<void>((resolve) => {
    upstream.once('end', () => { done = true; res.end(); resolve(); });
    upstream.once('error', () => { res.destroy(); resolve(); });
    upstream.once('close', () => { if (!res.writableEnded && !abort.signal.aborted) { done = true; res.end(); } resolve(); });
  });
}
