// The kubelet API of every virtual node of the process: one HTTPS server on --kubelet-port (the port each
// node publishes as its daemon endpoint), also listening on the ports of members given one of their own. Each request is authenticated, routed, tied to the node it is
// about (the node a pod is bound to; for node-level paths, the node the API server's node proxy names or
// the only node), authorised on that node, then handled. Errors are answered in errors.ts.
import type { X509Certificate } from 'node:crypto';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from '../../log.ts';
import { metrics } from '../../metrics.ts';
import { backoffDelay } from '../../util/backoff.ts';
import { ApiError, sendError, sendUpgradeError, toApiError } from './errors.ts';
import type { Auth, UserInfo } from './auth.ts';
import { forwardedNode, nodeFor, resolvePod, type NodeDirectory, type ResolvedPod, type VirtualNode } from './nodes.ts';
import { serveContainerLogs } from './logs.ts';
import { podList, sendJSON } from './pods.ts';
import { isPodRoute, isStreamRoute, route, type NodeRoute, type PodRoute, type StreamRoute } from './routes.ts';
import type { ClientCA, ServingCertificate } from './tls.ts';
import { settle } from '../../util/settle.ts';

/** Node-level usage (stats.ts). */
export interface NodeStats {
  summary(node: VirtualNode): Promise<unknown>;
  resourceMetrics(node: VirtualNode): Promise<string>;
}

/** exec, attach and port-forward (streams.ts), on an upgraded connection. */
export interface StreamHandlers {
  handle(route: StreamRoute, req: IncomingMessage, socket: Duplex, head: Buffer, target: ResolvedPod): Promise<void>;
}

export interface KubeletServerOptions {
  /** Every port to listen on: --kubelet-port and the members' own. */
  ports: number[];
  /** Bind address; all interfaces by default. */
  address?: string;
  dir: NodeDirectory;
  serving: ServingCertificate;
  clientCA?: ClientCA;
  /** Undefined: --authentication-mode=none, every caller may do everything. */
  auth?: Auth;
  stats?: NodeStats;
  streams?: StreamHandlers;
  log: Logger;
}

/** An admitted request: what it asks for and the node it is about, and for a pod's route the pod. */
type Admitted =
  | { route: PodRoute; node: VirtualNode; pod: ResolvedPod }
  | { route: NodeRoute; node: VirtualNode };

export class KubeletServer {
  #opts: KubeletServerOptions;
  #servers: Server[] = [];
  #retries = new Set<NodeJS.Timeout>();
  #stopped = false;
  #bound = new Set<number>();
  /** The ports openPort opened, with their listeners, and their open connections. */
  #extra = new Map<number, NetServer>();
  #sockets = new Map<number, Set<Socket>>();
  /** The client CA bundle each open connection's TLS handshake verifies against (auth.ts holds it to the current one). */
  #handshakeCA = new Map<string, readonly X509Certificate[]>();
  #noCA: readonly X509Certificate[] = [];

  constructor(opts: KubeletServerOptions) {
    this.#opts = opts;
  }

  /** True once every port is bound. */
  get listening(): boolean { return this.#bound.size === new Set(this.#opts.ports).size; }

  /**
   * Starts serving. A port that cannot be bound is retried with backoff and does not fail the process:
   * the nodes and their pods keep working without the kubelet API (readiness reports it).
   */
  start(): void {
    for (const port of new Set(this.#opts.ports)) this.#listen(this.#server(), port, 0);
  }

  /**
   * Opens one more port, chosen by the system, for a virtual node of its own (a member shown per pool or per node:
   * a scraper that calls a node's port, as metrics-server does with the node's daemon endpoint, then reaches that node
   * alone); resolves with the port. Its connections go to the first port's TLS server: one secure context for all, a
   * plain listener per port.
   */
  openPort(): Promise<number> {
    const tlsServer = this.#servers[0];
    if (!tlsServer) return Promise.reject(new Error('the kubelet API server has not started'));
    const listener = createNetServer((raw) => { tlsServer.emit('connection', raw); });
    return new Promise((resolve, reject) => {
      listener.once('error', reject);
      listener.once('listening', () => {
        listener.off('error', reject);
        listener.on('error', (err: Error) => this.#opts.log.error({ err: err.message }, 'kubelet API: server error'));
        const address = listener.address();
        const port = typeof address === 'object' && address ? address.port : 0;
        this.#extra.set(port, listener);
        this.#opts.log.info({ port }, 'kubelet API listening for one virtual node');
        resolve(port);
      });
      listener.listen(0, this.#opts.address);
    });
  }

  /** Closes a port openPort opened (its node is gone), and its connections. */
  closePort(port: number): void {
    const listener = this.#extra.get(port);
    if (!listener) return;
    this.#extra.delete(port);
    listener.close();
    for (const socket of this.#sockets.get(port) ?? []) socket.destroy();
    this.#sockets.delete(port);
  }

  /** A TLS server of the kubelet API, not listening yet. */
  #server(): Server {
    const o = this.#opts;
    // `ca` is never left out: without it Node verifies client certificates against its default roots
    // (Mozilla's, NODE_EXTRA_CA_CERTS, the system store), so before the client CA is loaded any certificate
    // from those would pass the handshake. Until then it trusts none (auth.ts refuses them as well).
    const tls = (): { cert: string; key: string; ca: string | string[] } => ({
      cert: o.serving.current.cert, key: o.serving.current.key, ca: o.clientCA?.current ?? [],
    });
    const server = createServer({ ...tls(), requestCert: true, rejectUnauthorized: false, minVersion: 'TLSv1.2' });
    const refresh = (): void => { server.setSecureContext({ ...tls(), minVersion: 'TLSv1.2' }); };
    o.serving.onChange(refresh);
    o.clientCA?.onChange(refresh);
    // tls.Server has just wrapped this socket with its current secure context, so the CA it verifies with is this one.
    server.on('connection', (raw: Socket) => {
      const key = connectionKey(raw);
      this.#handshakeCA.set(key, this.#clientCA);
      raw.once('close', () => this.#handshakeCA.delete(key));
      // A connection of a port openPort opened is closed with it.
      const extra = this.#extra.has(raw.localPort ?? 0) ? raw.localPort : undefined;
      if (extra !== undefined) {
        let set = this.#sockets.get(extra);
        if (!set) this.#sockets.set(extra, (set = new Set()));
        set.add(raw);
        raw.once('close', () => set.delete(raw));
      }
    });
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      settle(this.#onRequest(req, res), o.log, 'kubelet API: request failed');
    });
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      settle(this.#onUpgrade(req, socket, head), o.log, 'kubelet API: upgrade failed');
    });
    server.on('tlsClientError', (err) => o.log.debug({ err: err.message }, 'kubelet API: TLS handshake failed'));
    this.#servers.push(server);
    return server;
  }

  #listen(server: Server, port: number, attempt: number): void {
    const o = this.#opts;
    const onError = (err: NodeJS.ErrnoException): void => {
      server.off('listening', onListening);
      const delay = backoffDelay(attempt, 1000, 60_000);
      o.log.error({ err: err.message, port, retryInMs: delay }, 'kubelet API: cannot listen; retrying');
      if (this.#stopped) return;
      const t = setTimeout(() => { this.#retries.delete(t); this.#listen(server, port, attempt + 1); }, delay);
      this.#retries.add(t);
    };
    const onListening = (): void => {
      server.off('error', onError);
      server.on('error', (err: Error) => o.log.error({ err: err.message, port }, 'kubelet API: server error'));
      this.#bound.add(port);
      o.log.info({ port }, 'kubelet API listening');
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(port, o.address);
  }

  stop(): void {
    this.#stopped = true;
    for (const t of this.#retries) clearTimeout(t);
    for (const s of this.#servers) {
      s.close();
      s.closeAllConnections();
    }
    for (const port of [...this.#extra.keys()]) this.closePort(port);
  }

  get #clientCA(): readonly X509Certificate[] { return this.#opts.clientCA?.certificates ?? this.#noCA; }

  /**
   * Whether the connection's handshake verified client certificates against another client CA than the current
   * one (the connection was made before the CA was loaded or changed): its TLS verdict cannot be redone.
   */
  #staleHandshake(socket: Socket): boolean {
    return this.#handshakeCA.get(connectionKey(socket)) !== this.#clientCA;
  }

  /** Authenticates, routes, finds the node and authorises. */
  async #admit(req: IncomingMessage): Promise<Admitted> {
    const o = this.#opts;
    const path = new URL(req.url ?? '/', 'https://kubelet').pathname;
    const user = o.auth ? await o.auth.authenticate(req, this.#handshakeCA.get(connectionKey(req.socket))) : undefined;
    const r = route(req.method, path);
    const hint = forwardedNode(req.headers['x-forwarded-uri']);
    let admitted: Admitted;
    if (isPodRoute(r)) {
      let pod: ResolvedPod;
      try {
        pod = resolvePod(o.dir, r.namespace, r.pod, { hint, uid: 'uid' in r ? r.uid : undefined });
      } catch (err) {
        // Whether a pod exists is told only to callers who may ask the node(s) it could be on.
        if (user && o.auth) await this.#authorizeAny(o.auth, user, req.method, path, hint);
        throw err;
      }
      admitted = { route: r, node: pod.node, pod };
    } else {
      admitted = { route: r, node: nodeFor(o.dir, hint, req.socket.localPort) };
    }
    if (user && o.auth) await o.auth.authorize(user, req.method, path, admitted.node.name);
    return admitted;
  }

  async #authorizeAny(auth: Auth, user: UserInfo, method: string | undefined, path: string, hint: string | undefined): Promise<void> {
    const names = hint ? [hint] : this.#opts.dir.nodes().map((n) => n.name);
    let last: unknown = new ApiError('Forbidden', 'Forbidden');
    for (const name of names) {
      try { await auth.authorize(user, method, path, name); return; } catch (err) { last = err; }
    }
    throw last;
  }

  async #onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let endpoint = 'unknown';
    try {
      const a = await this.#admit(req);
      endpoint = a.route.kind;
      if (!('pod' in a)) {
        await this.#serveNode(a.route, a.node, res);
      } else if (isStreamRoute(a.route)) {
        throw new ApiError('BadRequest', `${a.route.kind} needs an upgrade to SPDY/3.1 or WebSocket (Connection: Upgrade)`);
      } else {
        await serveContainerLogs(req, res, a.pod, a.route.container, this.#opts.log);
      }
      metrics.kubeletApiRequests.inc({ endpoint, code: String(res.statusCode) });
    } catch (err) {
      const e = toApiError(err);
      metrics.kubeletApiRequests.inc({ endpoint, code: String(e.status) });
      this.#opts.log.debug({ method: req.method, url: req.url, status: e.status, err: e.message }, 'kubelet API request failed');
      // Refused on a connection made before the client CA was loaded or changed: the client's next request, on a
      // new connection, gets a handshake with the current CA.
      if (e.status === 401 && this.#staleHandshake(req.socket)) res.setHeader('Connection', 'close');
      sendError(res, e);
    }
  }

  /** Answers a request about the node as a whole. */
  async #serveNode(r: NodeRoute, node: VirtualNode, res: ServerResponse): Promise<void> {
    switch (r.kind) {
      case 'pods':
      case 'runningpods':
        sendJSON(res, podList(node, r.kind === 'runningpods'));
        break;
      case 'statsSummary':
        if (!this.#opts.stats) throw new ApiError('NotFound', 'stats are not available');
        sendJSON(res, await this.#opts.stats.summary(node));
        break;
      case 'metricsResource': {
        if (!this.#opts.stats) throw new ApiError('NotFound', 'metrics are not available');
        const text = await this.#opts.stats.resourceMetrics(node);
        res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
        res.end(text);
        break;
      }
      case 'healthz':
        res.writeHead(200, { 'Content-Type': 'text/plain' });
        res.end('ok');
        break;
    }
  }

  async #onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    let endpoint = 'unknown';
    socket.on('error', () => socket.destroy());
    try {
      const a = await this.#admit(req);
      endpoint = a.route.kind;
      if (!('pod' in a) || !isStreamRoute(a.route)) throw new ApiError('BadRequest', `${req.url} does not upgrade`);
      if (!this.#opts.streams) throw new ApiError('NotFound', `${a.route.kind} is not available`);
      metrics.kubeletApiRequests.inc({ endpoint, code: '101' });
      await this.#opts.streams.handle(a.route, req, socket, head, a.pod);
    } catch (err) {
      const e = toApiError(err);
      metrics.kubeletApiRequests.inc({ endpoint, code: String(e.status) });
      this.#opts.log.debug({ method: req.method, url: req.url, status: e.status, err: e.message }, 'kubelet API upgrade failed');
      sendUpgradeError(socket, e);
    }
  }
}

/** One TCP connection to us: the same for the raw socket and the TLS socket over it. */
function connectionKey(s: Socket): string {
  return `${s.localPort}|${s.remoteAddress}|${s.remotePort}`;
}
