// A fake member pods/exec and pods/attach, for FakeRuntime.webSocketURL: a WebSocket server speaking the API
// server's channel protocol (v5.channel.k8s.io when offered, else v4), announcing each session with an empty
// stdout message as the kubelet does. What it does depends on the command:
//   (cat, or none: attach)  stdin → stdout; a resize → "resized <size>" on stdout; the end of stdin (v5 close
//                           signal) → exit status 3 (a Failure Status), its own close signal for stdout, closed
//   ok                      "done" on stdout, a Success Status, closed
//   hang                    nothing, until the caller goes
//   crash                   the connection dropped without a close frame
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { once } from 'node:events';
import { WebSocketServer, type WebSocket } from 'ws';

export const EXIT_3 = JSON.stringify({ metadata: {}, status: 'Failure', message: 'command terminated with non-zero exit code: exit status 3',
  reason: 'NonZeroExitCode', details: { causes: [{ reason: 'ExitCode', message: '3' }] } });
export const SUCCESS = JSON.stringify({ metadata: {}, status: 'Success' });

const frame = (channel: number, data: string | Buffer = ''): Buffer => Buffer.concat([Buffer.from([channel]), Buffer.from(data)]);

export class MemberExec {
  readonly #server: Server = createServer();
  readonly #wss = new WebSocketServer({ noServer: true, handleProtocols: (ps) => ps.has('v5.channel.k8s.io') ? 'v5.channel.k8s.io' : 'v4.channel.k8s.io' });
  /** The last request's path and query; every message received; the close code of every session, as the member saw it. */
  readonly seen = { url: undefined as string | undefined, messages: [] as Buffer[], closes: [] as number[] };

  async start(): Promise<this> {
    this.#server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      this.seen.url = req.url;
      this.#wss.handleUpgrade(req, socket, head, (ws) => this.#session(ws, new URL(req.url!, 'http://m').searchParams.get('command')));
    });
    this.#server.listen(0, '127.0.0.1');
    await once(this.#server, 'listening');
    return this;
  }

  get url(): string { return `ws://127.0.0.1:${(this.#server.address() as { port: number }).port}`; }

  /** Sessions open now. */
  get openSessions(): number { return this.#wss.clients.size; }

  stop(): void {
    this.#server.close();
    this.#server.closeAllConnections();
  }

  #session(ws: WebSocket, command: string | null): void {
    ws.send(frame(1));
    ws.on('close', (code: number) => this.seen.closes.push(code));
    if (command === 'ok') {
      ws.send(frame(1, 'done'));
      ws.send(frame(3, SUCCESS));
      ws.close(1000);
    }
    if (command === 'crash') setTimeout(() => ws.terminate(), 20);
    if (command !== null && command !== 'cat') return;
    ws.on('message', (m: Buffer) => {
      this.seen.messages.push(m);
      if (m[0] === 0) ws.send(frame(1, m.subarray(1)));
      if (m[0] === 4) ws.send(frame(1, `resized ${m.subarray(1).toString()}`));
      if (m[0] === 255 && m[1] === 0) {
        ws.send(frame(3, EXIT_3));
        ws.send(Buffer.from([255, 1]));
        ws.close(1000);
      }
    });
  }
}
