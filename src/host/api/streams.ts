// exec, attach and port-forward on an upgraded connection: the protocol modules, by endpoint and transport
// (a WebSocket handshake, else SPDY/3.1).
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from '../../log.ts';
import { servePortForward, servePortForwardWebSocket } from './portforward.ts';
import type { ResolvedPod } from './nodes.ts';
import { serveRemoteCommand, serveRemoteCommandWebSocket } from './remotecommand.ts';
import type { StreamRoute } from './routes.ts';
import type { StreamHandlers } from './server.ts';
import { isWebSocketRequest } from './websocket.ts';

export class PodStreams implements StreamHandlers {
  #log: Logger;

  constructor(log: Logger) { this.#log = log; }

  async handle(route: StreamRoute, req: IncomingMessage, socket: Duplex, head: Buffer, target: ResolvedPod): Promise<void> {
    const ws = isWebSocketRequest(req);
    switch (route.kind) {
      case 'exec':
      case 'attach':
        return (ws ? serveRemoteCommandWebSocket : serveRemoteCommand)(route.kind, req, socket, head, target, route.container, this.#log);
      case 'portForward':
        return (ws ? servePortForwardWebSocket : servePortForward)(req, socket, head, target, this.#log);
    }
  }
}
