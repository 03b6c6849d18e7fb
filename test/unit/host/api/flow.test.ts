// Back-pressure between the two sides of a streaming session (src/host/api/flow.ts): a full WebSocket or stream
// holds back its source until what it holds is written.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { Writable } from 'node:stream';
import type { WebSocket } from 'ws';
import { relay, writeHolding, type Pausable } from '../../../../src/host/api/flow.ts';

/** A source that records whether it is paused. */
function source(): Pausable & { paused: boolean } {
  return { paused: false, pause() { this.paused = true; }, resume() { this.paused = false; } };
}

/** A WebSocket holding `bufferedAmount` unsent bytes; each send's callback waits until `flush()`. */
function webSocket(readyState: number, bufferedAmount: number): WebSocket & { sent: (Buffer | string)[]; flush(): void } {
  const callbacks: (() => void)[] = [];
  const ws = {
    OPEN: 1, readyState, bufferedAmount, sent: [] as (Buffer | string)[],
    send(data: Buffer | string, cb?: () => void) { this.sent.push(data); if (cb) callbacks.push(cb); },
    flush() { for (const cb of callbacks.splice(0)) cb(); },
  };
  return ws as unknown as WebSocket & { sent: (Buffer | string)[]; flush(): void };
}

describe('back-pressure', () => {
  it('relay: sends while the WebSocket holds up to 1 MiB; above, pauses the source until the message is written', () => {
    const from = source();
    const light = webSocket(1, 1 << 20);
    relay(from, light, 'a');
    assert.deepEqual(light.sent, ['a']);
    assert.equal(from.paused, false);
    const full = webSocket(1, (1 << 20) + 1);
    relay(from, full, 'b');
    assert.deepEqual(full.sent, ['b']);
    assert.equal(from.paused, true, 'held back while the WebSocket is full');
    full.flush();
    assert.equal(from.paused, false, 'resumed once the message is written');
  });

  it('relay: nothing is sent to a WebSocket that is not open', () => {
    const closing = webSocket(2, 0);
    relay(source(), closing, 'a');
    assert.deepEqual(closing.sent, []);
  });

  it('writeHolding: a full stream pauses the source until it drains', async () => {
    const from = source();
    // Writes complete once the stream is opened; until then they wait.
    let opened = false;
    const waiting: (() => void)[] = [];
    const to = new Writable({ highWaterMark: 4, write(_chunk, _enc, cb) { if (opened) cb(); else waiting.push(cb); } });
    writeHolding(from, to, Buffer.from('ab'));
    assert.equal(from.paused, false);
    writeHolding(from, to, Buffer.from('cdef'));
    assert.equal(from.paused, true, 'held back while the stream is full');
    const drained = once(to, 'drain');
    opened = true;
    for (const cb of waiting.splice(0)) cb();
    await drained;
    assert.equal(from.paused, false, 'resumed on drain');
  });
});
