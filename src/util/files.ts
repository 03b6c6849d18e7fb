// readFile and stat as promises, from fs's callbacks: loading node:fs/promises costs 3 MB of RSS (it brings
// readline, the REPL's history and file streams along) for two functions.
import { readFile as readFileCallback, stat as statCallback } from 'node:fs';
import { promisify } from 'node:util';

export const readFile = promisify(readFileCallback);
export const stat = promisify(statCallback);
