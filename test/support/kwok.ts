// What the member's KWOK serves from files (test/harness/kwok-api.ts), written as a container runtime would.
import { appendFile } from 'node:fs/promises';
import { pollUntil } from '../harness/net.ts';
import { harness } from './env.ts';

/** A CRI log line, as the container runtime writes it (what KWOK's logs and attach read). */
export function criLine(at: Date, text: string, stream: 'stdout' | 'stderr' = 'stdout'): string {
  return `${at.toISOString().replace('Z', '000000Z')} ${stream} F ${text}\n`;
}

/**
 * Resolves once a client attached to `container` shows its output (`output()`, what the client got so far).
 * KWOK's attach follows its file from the end: lines are written until one shows.
 */
export async function attachShows(output: () => string, container = 'main'): Promise<void> {
  let n = 0;
  await pollUntil(`attach to ${container} shows the output`, async () => {
    await appendFile(harness().member.kwok.attach(container), criLine(new Date(), `tick ${++n}`));
    return /tick \d+\n/.test(output()) ? true : undefined;
  }, 30_000, 300);
}
