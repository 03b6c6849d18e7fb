// A fake back end of port-forward, for FakeRuntime.forward: each connection is a SPDY/3.1 session speaking
// portforward.k8s.io on a real socket, as a member API server's upgraded pods/portforward. A data stream echoes what
// it gets (and ends when the client ends), except for port 9, where nothing listens: its error stream says so and
// its data stream ends at once. The member's open connections are counted, so tests see what is left behind.
import { createServer, connect, type Server, type Socket } from 'node:net';
import { once } from 'node:events';
import { SpdySession } from '../../../src/host/api/spdy/session.ts';
import type { UpgradedConnection } from '../../../src/provider/runtime.ts';

export const CLOSED_PORT = 9;

export class EchoForwardBackend {
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  /** Headers of every stream opened by clusterlet, in order. */
  readonly streams: Record<string, string[]>[] = [];

  constructor() {
    this.#server = createServer((socket) => {
      this.#sockets.add(socket);
      socket.once('close', () => this.#sockets.delete(socket));
      socket.on('error', () => socket.destroy());
      new SpdySession(socket, 'server', {
        onStream: (s) => {
          this.streams.push(s.headers);
          s.reply();
          const port = Number(s.header('port'));
          if (s.header('streamtype') === 'error') {
            if (port === CLOSED_PORT) s.end(`nothing listens on port ${port}`);
            s.resume();
            return;
          }
          if (port === CLOSED_PORT) { s.end(); s.resume(); return; }
          s.on('data', (d: Buffer) => s.write(d));
          s.on('end', () => s.end());
        },
      });
    });
  }

  async start(): Promise<this> {
    this.#server.listen(0, '127.0.0.1');
    await once(this.#server, 'listening');
    return this;
  }

  /** For FakeRuntime.forward: a new connection to this back end. */
  readonly connect = (): UpgradedConnection => {
    const socket = connect((this.#server.address() as { port: number }).port, '127.0.0.1');
    return { socket, protocol: 'portforward.k8s.io' };
  };

  /** Member connections open now. */
  get openConnections(): number { return this.#sockets.size; }

  stop(): void {
    for (const s of this.#sockets) s.destroy();
    this.#server.close();
  }
}
