// Last resort: an unhandled rejection or uncaught exception is logged with its stack and counted before the
// process exits 1, so that no exit goes without a logged reason (exit codes: docs/CONVENTIONS.md).
import { inspect } from 'node:util';
import type { Logger } from './log.ts';
import { metrics } from './metrics.ts';

export type CrashKind = 'unhandledRejection' | 'uncaughtException';

export interface CrashOptions {
  log: Logger;
  /** Called with the exit code once the log is flushed (or after flushTimeoutMs); default process.exit. */
  exit?: (code: number) => void;
  /** Counts a crash; default clusterlet_crashes_total{kind}. */
  count?: (kind: CrashKind) => void;
  flushTimeoutMs?: number;
}

/**
 * Log fields for anything thrown or rejected: an Error goes under `err`, which pino serializes with its type,
 * message, stack and cause; anything else is described as util.inspect shows it.
 */
export function errorFields(err: unknown): { err: Error | string } {
  return { err: err instanceof Error ? err : inspect(err) };
}

/** The handler for one crash: logs at fatal level with the stack, counts, flushes the log, exits 1 (once). */
export function crashHandler(options: CrashOptions): (kind: CrashKind, err: unknown) => void {
  const { log, exit = (code: number) => process.exit(code), flushTimeoutMs = 1000 } = options;
  const count = options.count ?? ((kind: CrashKind) => metrics.crashes.inc({ kind }));
  let exiting = false;
  return (kind, err) => {
    log.fatal({ kind, ...errorFields(err) }, `${kind}: exiting`);
    count(kind);
    if (exiting) return;
    exiting = true;
    let exited = false;
    const done = (): void => {
      clearTimeout(timer);
      if (!exited) exit(1);
      exited = true;
    };
    const timer = setTimeout(done, flushTimeoutMs);
    log.flush(done);
  };
}

/** Installs the handler for both events on the process. */
export function installCrashHandlers(options: CrashOptions): void {
  const handle = crashHandler(options);
  process.on('unhandledRejection', (reason) => handle('unhandledRejection', reason));
  process.on('uncaughtException', (err) => handle('uncaughtException', err));
}
