// The last-resort handlers: a crash is logged with its stack, counted, and ends the process with exit code 1.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { crashHandler, type CrashKind } from '../../src/crash.ts';
import { metrics } from '../../src/metrics.ts';

function capture(): { log: pino.Logger; lines: () => Record<string, unknown>[] } {
  const chunks: string[] = [];
  const stream = new Writable({ write(chunk, _enc, cb) { chunks.push(String(chunk)); cb(); } });
  return { log: pino({ level: 'info' }, stream), lines: () => chunks.join('').trim().split('\n').map((l) => JSON.parse(l)) };
}

describe('crashHandler', () => {
  it('logs the stack at fatal level, counts the kind and exits 1', async () => {
    const { log, lines } = capture();
    const counted: CrashKind[] = [];
    const code = await new Promise<number>((exit) => {
      crashHandler({ log, exit, count: (k) => counted.push(k) })('unhandledRejection', new Error('watch gave up'));
    });
    assert.equal(code, 1);
    assert.deepEqual(counted, ['unhandledRejection']);
    const [line] = lines();
    assert.equal(line.level, 60);
    assert.equal(line.kind, 'unhandledRejection');
    assert.equal(line.msg, 'unhandledRejection: exiting');
    const err = line.err as { message: string; stack: string };
    assert.equal(err.message, 'watch gave up');
    assert.match(err.stack, /^Error: watch gave up\n\s+at .*crash\.test\.ts/);
  });

  it('describes a rejection that is not an Error, and exits once for several crashes', async () => {
    const { log, lines } = capture();
    const counted: CrashKind[] = [];
    const exits: number[] = [];
    await new Promise<void>((resolve) => {
      const handle = crashHandler({ log, exit: (c) => { exits.push(c); resolve(); }, count: (k) => counted.push(k) });
      handle('unhandledRejection', { code: 503 });
      handle('uncaughtException', new TypeError('x is undefined'));
    });
    assert.deepEqual(exits, [1]);
    assert.deepEqual(counted, ['unhandledRejection', 'uncaughtException']);
    assert.deepEqual(lines().map((l) => l.err && typeof l.err === 'object' ? (l.err as { type: string }).type : l.err),
      ['{ code: 503 }', 'TypeError']);
  });

  it('counts in clusterlet_crashes_total by default', async () => {
    const { log } = capture();
    const before = (await metrics.crashes.get()).values.find((v) => v.labels.kind === 'uncaughtException')?.value ?? 0;
    await new Promise<number>((exit) => crashHandler({ log, exit })('uncaughtException', new Error('boom')));
    const after = (await metrics.crashes.get()).values.find((v) => v.labels.kind === 'uncaughtException')?.value;
    assert.equal(after, before + 1);
  });

  it('in a process: an unhandled rejection is logged with its stack and the exit code is 1', () => {
    const crash = fileURLToPath(new URL('../../src/crash.ts', import.meta.url));
    const logMod = fileURLToPath(new URL('../../src/log.ts', import.meta.url));
    const script = `
      const { installCrashHandlers } = await import(${JSON.stringify(crash)});
      const { createLogger } = await import(${JSON.stringify(logMod)});
      installCrashHandlers({ log: createLogger('info') });
      setInterval(() => {}, 1000);
      Promise.reject(new Error('nobody caught me'));`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 20_000 });
    assert.equal(r.status, 1, r.stderr);
    const line = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { kind: string; err: { stack: string } };
    assert.equal(line.kind, 'unhandledRejection');
    assert.match(line.err.stack, /^Error: nobody caught me\n\s+at /);
  });
});
