// Child processes of the harness: logged to files, stopped with SIGTERM then SIGKILL, and
// killed synchronously if the test process exits without stopping them.
import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, closeSync, readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { once } from 'node:events';

const live = new Set<ChildProcess>();
let exitHookInstalled = false;
const spawnListeners = new Set<(pid: number) => void>();

/** Calls `listener` with the pid of every process startProc starts from now on, until the returned function is called. */
export function onSpawn(listener: (pid: number) => void): () => void {
  spawnListeners.add(listener);
  return () => { spawnListeners.delete(listener); };
}

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const child of live) {
      try { process.kill(-child.pid!, 'SIGKILL'); } catch { /* already gone */ }
    }
  });
}

export interface Proc {
  readonly name: string;
  readonly logFile: string;
  readonly child: ChildProcess;
  exited(): boolean;
  stop(timeoutMs?: number): Promise<void>;
  tail(lines?: number): string;
}

export function startProc(name: string, bin: string, args: string[], logDir: string,
  env: NodeJS.ProcessEnv = process.env): Proc {
  installExitHook();
  const logFile = join(logDir, `${name}.log`);
  const fd = openSync(logFile, 'a');
  // detached: a process group of its own, so a stop reaches everything the component started.
  const child = spawn(bin, args, { stdio: ['ignore', fd, fd], detached: true, env });
  closeSync(fd);
  live.add(child);
  if (child.pid !== undefined) for (const l of spawnListeners) l(child.pid);
  let exited = false;
  const exitPromise = once(child, 'exit').then(() => { exited = true; live.delete(child); });
  child.on('error', () => { exited = true; live.delete(child); });
  return {
    name, logFile, child,
    exited: () => exited,
    async stop(timeoutMs = 5000) {
      if (exited || child.pid === undefined) return;
      try { process.kill(-child.pid, 'SIGTERM'); } catch { return; }
      const timer = setTimeout(() => { try { process.kill(-child.pid!, 'SIGKILL'); } catch { /* gone */ } }, timeoutMs);
      await exitPromise;
      clearTimeout(timer);
    },
    tail(lines = 30) {
      if (!existsSync(logFile)) return '';
      return readFileSync(logFile, 'utf8').split('\n').slice(-lines).join('\n');
    },
  };
}
