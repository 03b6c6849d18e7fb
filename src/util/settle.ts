// A promise nobody awaits still gets a rejection handler: a failure is logged where it happens, saying what was
// under way, instead of being lost or reaching the process's last-resort crash handler (src/crash.ts). The lint's
// no-floating-promises (eslint.config.js, `void` not accepted) asks every unawaited promise for one.
import { errorFields } from '../crash.ts';

/** Lets `promise` run on unawaited; a rejection is logged at error level with `what` as the message. */
export function settle(promise: Promise<unknown>, log: { error(obj: object, msg: string): void }, what: string): void {
  promise.catch((err: unknown) => log.error(errorFields(err), what));
}

/**
 * As settle, for a start-up step a part cannot run without (its caches' first sync, a member's parts starting): a
 * rejection is logged, then thrown again outside the promise, so the crash handler ends the process (exit 1, and its
 * restart starts everything again) instead of leaving a part that never starts.
 */
export function settleOrExit(promise: Promise<unknown>, log: { error(obj: object, msg: string): void }, what: string): void {
  promise.catch((err: unknown) => {
    log.error(errorFields(err), what);
    setImmediate(() => { throw err; });
  });
}
