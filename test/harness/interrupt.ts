// Ctrl-C and SIGTERM for a program that stops what it started before it exits (e2e/local/run.ts): the first signal
// starts the stop; a second says it is still stopping; a third exits at once, saying what may be left, for a stop
// that hangs.

export interface Interrupt {
  /** Aborted on the first signal. */
  signal: AbortSignal;
  /** The exit code of the first signal (130 for SIGINT, 143 for SIGTERM), once there was one. */
  code(): number | undefined;
  /** Handles one signal (process.on calls it; the unit tests too). */
  handle(sig: 'SIGINT' | 'SIGTERM'): void;
}

const CODES = { SIGINT: 130, SIGTERM: 143 } as const;

/**
 * `say` writes a line for the user; `leftover` says what may be left when the program exits before its stop ends;
 * `exit` ends the process (process.exit but in the unit tests).
 */
export function interruptible(say: (line: string) => void, leftover: () => string,
  exit: (code: number) => void = (code) => process.exit(code)): Interrupt {
  const controller = new AbortController();
  let first: number | undefined;
  let count = 0;
  return {
    signal: controller.signal,
    code: () => first,
    handle: (sig) => {
      count++;
      if (count === 1) {
        first = CODES[sig];
        say(`${sig}: stopping`);
        controller.abort();
      } else if (count === 2) {
        say(`${sig}: still stopping what this run started; another signal exits at once, leaving what is not stopped yet`);
      } else {
        say(`${sig}: exiting now; what this run started may be left: ${leftover()}`);
        exit(CODES[sig]);
      }
    },
  };
}
