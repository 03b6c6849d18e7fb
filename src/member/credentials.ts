// A member's kubeconfig, followed while clusterlet runs: its source (a file, or a host Secret or ClusterProfile
// through provider/access.ts) is read again when it changes, and the member's one ClusterClient is switched to the
// new access (server, CA, client certificate, token) without a restart. A change that cannot be used is reported
// and the last good access kept: a runtime rotation never stops clusterlet.
import { watch, type FSWatcher } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import type { ClusterClient } from '../kube/client.ts';
import { type ClusterAccess, loadKubeconfigFile } from '../kube/kubeconfig.ts';
import type { Logger } from '../log.ts';
import type { AccessSource } from '../provider/access.ts';

/** How often the source is read again without a file event: Secrets, files a kubeconfig names, missed events. */
export const ACCESS_CHECK_MS = 10_000;
/** File events come in bursts (truncate then write; a Secret volume's symlink swap): read once they settle. */
const SETTLE_MS = 200;

/** A kubeconfig file, as a member's access source. */
export function fileSource(path: string): AccessSource {
  const file = resolve(path);
  return { name: file, file, read: async () => loadKubeconfigFile(file) };
}

export interface AccessHandlers {
  /** The source now parses to a different access. */
  changed(access: ClusterAccess): void;
  /** The source cannot be read or parsed (reported once per distinct message). */
  failed(err: Error): void;
  /** The file's directory cannot be watched: changes are seen by the periodic reads only. */
  unwatched(err: Error): void;
}

export interface AccessWatcherOptions { intervalMs?: number; settleMs?: number }

/** Reads a source again on file events and every `intervalMs`; calls `changed` when its digest differs. */
export class AccessWatcher {
  readonly source: AccessSource;
  #handlers: AccessHandlers;
  #digest: string | undefined;
  #intervalMs: number;
  #settleMs: number;
  #timer: NodeJS.Timeout | undefined;
  #settle: NodeJS.Timeout | undefined;
  #fsWatcher: FSWatcher | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #lastError: string | undefined;
  #stopped = false;

  /** `current`: the access in use, read from this source. */
  constructor(source: AccessSource, current: ClusterAccess, handlers: AccessHandlers, opts: AccessWatcherOptions = {}) {
    this.source = source;
    this.#handlers = handlers;
    this.#digest = current.digest;
    this.#intervalMs = opts.intervalMs ?? ACCESS_CHECK_MS;
    this.#settleMs = opts.settleMs ?? SETTLE_MS;
  }

  start(): this {
    this.#timer = setInterval(() => this.#recheck(), this.#intervalMs).unref();
    if (this.source.file) this.#watchDir(this.source.file);
    return this;
  }

  stop(): void {
    this.#stopped = true;
    clearInterval(this.#timer);
    clearTimeout(this.#settle);
    this.#fsWatcher?.close();
  }

  /** Reads the source now; a call while a read is under way makes one more read after it. */
  check(): Promise<void> {
    if (this.#running) {
      this.#again = true;
      return this.#running;
    }
    const run = (async () => {
      do {
        this.#again = false;
        await this.#checkOnce();
      } while (this.#again && !this.#stopped);
    })().finally(() => { this.#running = undefined; });
    return (this.#running = run);
  }

  /** check() from a timer: a failure of the new access (its `changed` handler throwing) is reported as `failed`. */
  #recheck(): void {
    this.check().catch((err: unknown) => this.#handlers.failed(err instanceof Error ? err : new Error(String(err))));
  }

  async #checkOnce(): Promise<void> {
    let next: ClusterAccess;
    try {
      next = await this.source.read();
    } catch (err) {
      const e = err instanceof Error ? err : new Error(String(err));
      if (!this.#stopped && e.message !== this.#lastError) this.#handlers.failed(e);
      this.#lastError = e.message;
      return;
    }
    this.#lastError = undefined;
    if (this.#stopped || (next.digest !== undefined && next.digest === this.#digest)) return;
    this.#digest = next.digest;
    this.#handlers.changed(next);
  }

  /**
   * The file's directory, not the file: editors and Kubernetes replace files rather than write them in place
   * (a Secret volume swaps its `..data` symlink), which a watch on the file itself would miss.
   */
  #watchDir(file: string): void {
    const name = basename(file);
    try {
      this.#fsWatcher = watch(dirname(file), { persistent: false }, (_event, changed) => {
        if (changed && changed !== name && !changed.startsWith('..')) return;
        clearTimeout(this.#settle);
        this.#settle = setTimeout(() => this.#recheck(), this.#settleMs).unref();
      });
      this.#fsWatcher.on('error', (err) => this.#watchFailed(file, err));
    } catch (err) {
      this.#watchFailed(file, err as Error);
    }
  }

  #watchFailed(file: string, err: Error): void {
    this.#fsWatcher?.close();
    this.#fsWatcher = undefined;
    this.#handlers.unwatched(new Error(`cannot watch ${dirname(file)} (${err.message}); `
      + `reading ${this.source.name} every ${this.#intervalMs / 1000} s instead`));
  }
}

/** Follows a member's kubeconfig `source` and moves its client to each new access; `stop()` it with the member. */
export function followMemberAccess(source: AccessSource, client: Pick<ClusterClient, 'access' | 'setAccess'>, log: Logger,
  opts: AccessWatcherOptions = {}): AccessWatcher {
  return new AccessWatcher(source, client.access, {
    changed(access) {
      client.setAccess(access);
      log.info({ source: source.name, server: access.server, context: access.contextName },
        'member kubeconfig changed: new requests and watches use the new credentials');
    },
    failed(err) {
      log.error({ source: source.name, err: err.message }, 'member kubeconfig cannot be used; keeping the credentials in use');
    },
    unwatched(err) {
      log.warn({ source: source.name, err: err.message }, 'member kubeconfig not watched for changes');
    },
  }, opts).start();
}
