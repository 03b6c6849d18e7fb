// readFile and stat as promises, from fs's callbacks: loading node:fs/promises brings readline, the REPL's history
// and file streams along, resident memory for two functions (docs/performance.md, 'Small caches, no ICU collation,
// no fs/promises').
import { readFile as readFileCallback, stat as statCallback } from 'node:fs';
import { promisify } from 'node:util';

export const readFile = promisify(readFileCallback);
export const stat = promisify(statCallback);
