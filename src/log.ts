// pino JSON logs; one child logger per member and per object (docs/CONVENTIONS.md). LOG_LEVEL or --log-level.
import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(level = process.env.LOG_LEVEL ?? 'info'): Logger {
  return pino({
    level,
    base: { pid: process.pid },
    // Defence in depth: never print Secret payloads even if an object slips into a log call.
    redact: { paths: ['data', '*.data', '*.stringData', 'object.data', 'secret.data'], censor: '[redacted]' },
  });
}
