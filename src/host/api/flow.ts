// Back-pressure between the two sides of a streaming session (exec, attach, port-forward, over SPDY or WebSocket):
// a side that reads slowly holds back the side that writes to it, instead of a buffer growing in between.
import type { Writable } from 'node:stream';
import type { WebSocket } from 'ws';

/** Unsent bytes a WebSocket may hold before its writer is held back. */
const WEBSOCKET_HIGH_WATER = 1 << 20;

/** Where data comes from: a stream or a WebSocket, both of which can stop reading for a while. */
export interface Pausable {
  pause(): unknown;
  resume(): unknown;
}

/**
 * Sends `data` to `to` (nothing once it is no longer open); while `to` holds more than 1 MiB unsent, `from` is
 * paused until this message is written.
 */
export function relay(from: Pausable, to: WebSocket, data: Buffer | string): void {
  if (to.readyState !== to.OPEN) return;
  if (to.bufferedAmount > WEBSOCKET_HIGH_WATER) {
    from.pause();
    to.send(data, () => from.resume());
  } else {
    to.send(data);
  }
}

/** Writes `data` to `to`; when `to` is full, `from` is paused until it drains. */
export function writeHolding(from: Pausable, to: Writable, data: Buffer): void {
  if (!to.write(data)) {
    from.pause();
    to.once('drain', () => from.resume());
  }
}
