// Kubeconfig and in-cluster loading with kubectl / client-go semantics, without @kubernetes/client-node (importing
// its index loads thousands of generated modules: docs/performance.md, 'No client-node code at run time'). Secrets
// (tokens, keys, passwords, plugin stdout) never reach a message.
import type { ExecFileException } from 'node:child_process';
import { createHash, type Hash } from 'node:crypto';
import { readFileSync, statSync, type Stats } from 'node:fs';
import { readFile, stat } from '../util/files.ts';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { load } from 'js-yaml';

export class KubeconfigError extends Error {
  override name = 'KubeconfigError';
}

export interface ExecConfig {
  command: string; args?: string[]; env?: { name: string; value: string }[]; apiVersion: string;
  interactiveMode?: string; provideClusterInfo?: boolean;
}

export interface Credentials { token?: string; cert?: Buffer; key?: Buffer; basic?: { username: string; password: string } }

export interface ClusterAccess {
  /** A file path, "in-cluster", or the source given to parseKubeconfig. */
  readonly source: string;
  readonly contextName: string;
  /** Without trailing slash; may carry a path prefix. */
  readonly server: string;
  readonly namespace?: string;
  /** PEM bundle to verify the server; undefined = system roots. */
  readonly ca?: Buffer;
  readonly insecureSkipTLSVerify: boolean;
  readonly tlsServerName?: string;
  readonly proxyURL?: string;
  /** The credentials to use now: token files re-read, exec plugins run and cached until expiry. */
  credentials(): Promise<Credentials>;
  /** After a 401: forget cached exec credentials and re-read token files on the next credentials(). */
  invalidate(): void;
  /**
   * Of a parsed kubeconfig: a digest of its text and of the files it names (CA, client certificate and key;
   * not token files, which are re-read on their own). Equal digests, the same access.
   */
  readonly digest?: string;
}

/** Test seams: the clock behind token-file checks and exec expiry, and the exec plugin timeout. */
export interface AccessOptions { now?: () => number; execTimeoutMs?: number }

const TOKEN_FILE_CHECK_MS = 10_000;
const EXEC_EXPIRY_MARGIN_MS = 10_000;
const EXEC_API_VERSIONS = ['client.authentication.k8s.io/v1', 'client.authentication.k8s.io/v1beta1'];

type Obj = Record<string, unknown>;
interface Ctx { source: string; baseDir: string; now: () => number; execTimeoutMs: number; hash: Hash }

function fail(ctx: Ctx, field: string, problem: string): never {
  throw new KubeconfigError(`kubeconfig ${ctx.source}: ${field}: ${problem}`);
}

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const errCode = (e: unknown) => (e as NodeJS.ErrnoException).code ?? (e as Error).message;
const fieldOf = (path: string, key: string) => (path ? `${path}.${key}` : key);

function str(ctx: Ctx, o: Obj, key: string, path: string): string | undefined {
  const v = o[key];
  if (v === undefined || v === null || v === '') return undefined;
  return typeof v === 'string' ? v : fail(ctx, fieldOf(path, key), `must be a string, not ${typeof v}`);
}

function bool(ctx: Ctx, o: Obj, key: string, path: string): boolean {
  const v = o[key] ?? false;
  return typeof v === 'boolean' ? v : fail(ctx, fieldOf(path, key), 'must be true or false');
}

function readField(ctx: Ctx, field: string, file: string): Buffer {
  const path = resolve(ctx.baseDir, file);
  try {
    const data = readFileSync(path);
    ctx.hash.update(`\0${field}\0`).update(data);
    return data;
  } catch (e) {
    return fail(ctx, field, `file ${path} not readable (${errCode(e)})`);
  }
}

/** `<key>-data` (base64; wins, as in client-go) or `<key>` (a file relative to the kubeconfig). */
function bytes(ctx: Ctx, o: Obj, key: string, path: string): Buffer | undefined {
  const data = str(ctx, o, `${key}-data`, path)?.replace(/\s+/g, '');
  if (data !== undefined) {
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(data)) fail(ctx, `${path}.${key}-data`, 'not valid base64');
    return Buffer.from(data, 'base64');
  }
  const file = str(ctx, o, key, path);
  return file === undefined ? undefined : readField(ctx, `${path}.${key}`, file);
}

function parseYaml(ctx: Ctx, text: string): Obj {
  let doc: unknown;
  try {
    doc = load(text);
  } catch (e) {
    // js-yaml's message quotes the surrounding source, which may hold a token: keep only the reason and place.
    const { reason, mark } = e as { reason?: string; mark?: { line: number; column: number } };
    const where = mark ? ` at line ${mark.line + 1}, column ${mark.column + 1}` : '';
    throw new KubeconfigError(`kubeconfig ${ctx.source}: not valid YAML: ${reason ?? 'parse error'}${where}`);
  }
  if (!isObj(doc)) throw new KubeconfigError(`kubeconfig ${ctx.source}: not a kubeconfig (expected a YAML mapping)`);
  return doc;
}

/** The `item` body of the entry called `name` in `root[list]`; `ref` is the field that named it. */
function named(ctx: Ctx, root: Obj, list: string, item: string, name: string, ref: string): { body: Obj; path: string } {
  const entries = root[list] ?? [];
  if (!Array.isArray(entries)) fail(ctx, list, 'must be a list');
  const i = entries.findIndex((e) => isObj(e) && e.name === name);
  if (i < 0) fail(ctx, ref, `${item} "${name}" not found in ${list}`);
  const body = (entries[i] as Obj)[item];
  return isObj(body) ? { body, path: `${list}[${i}].${item}` } : fail(ctx, `${list}[${i}].${item}`, 'missing or not a mapping');
}

function serverURL(ctx: Ctx, field: string, raw: string): string {
  const url = raw.includes('://') ? raw : `https://${raw}`;
  const protocol = URL.canParse(url) ? new URL(url).protocol : '';
  if (protocol !== 'https:' && protocol !== 'http:') fail(ctx, field, 'not a valid http(s) URL');
  return url.replace(/\/+$/, '');
}

// The inode catches an atomic replace (kubelet's projected-token rotation) that keeps the mtime.
const version = (st: Stats) => `${st.mtimeMs}:${st.ino}:${st.size}`;

/** A token file re-read when it changes (stat at most every 10 s); the last good value survives read errors. */
class TokenFile {
  readonly #ctx: Ctx;
  readonly #path: string;
  #token?: string;
  #version = '';
  #checkedAt = -Infinity;

  constructor(ctx: Ctx, file: string) {
    [this.#ctx, this.#path] = [ctx, resolve(ctx.baseDir, file)];
  }

  /** Read now, failing loudly: for when the file is the only source of the token. */
  loadNow(field: string): this {
    try {
      this.#accept(statSync(this.#path), readFileSync(this.#path, 'utf8'));
    } catch (e) {
      fail(this.#ctx, field, `file ${this.#path} not readable (${errCode(e)})`);
    }
    if (!this.#token) fail(this.#ctx, field, `file ${this.#path} is empty`);
    this.#checkedAt = this.#ctx.now();
    return this;
  }

  async get(): Promise<string | undefined> {
    const now = this.#ctx.now();
    if (now - this.#checkedAt < TOKEN_FILE_CHECK_MS) return this.#token;
    this.#checkedAt = now;
    try {
      const st = await stat(this.#path);
      if (version(st) !== this.#version) this.#accept(st, await readFile(this.#path, 'utf8'));
    } catch { /* keep the last good token, as client-go does */ }
    return this.#token;
  }

  invalidate(): void {
    [this.#checkedAt, this.#version] = [-Infinity, ''];
  }

  #accept(st: Stats, text: string): void {
    if (text.trim()) [this.#token, this.#version] = [text.trim(), version(st)];
  }
}

/** An exec credential plugin: one run at a time, its result cached until shortly before it expires. */
class ExecPlugin {
  readonly #ctx: Ctx;
  readonly #field: string;
  readonly #cfg: ExecConfig;
  readonly #info: string;
  #cached?: { creds: Credentials; until: number };
  #running?: Promise<Credentials>;
  #generation = 0;

  constructor(ctx: Ctx, field: string, cfg: ExecConfig, cluster: Obj) {
    [this.#ctx, this.#field, this.#cfg] = [ctx, field, cfg];
    const spec = cfg.provideClusterInfo ? { interactive: false, cluster } : { interactive: false };
    this.#info = JSON.stringify({ apiVersion: cfg.apiVersion, kind: 'ExecCredential', spec });
  }

  get(): Promise<Credentials> {
    if (this.#cached && this.#ctx.now() < this.#cached.until) return Promise.resolve(this.#cached.creds);
    if (this.#running) return this.#running;
    const generation = this.#generation;
    const run = this.#run().then((r) => {
      if (generation === this.#generation) this.#cached = r;
      return r.creds;
    }).finally(() => {
      if (this.#running === run) this.#running = undefined;
    });
    return (this.#running = run);
  }

  /** Also detaches a run already under way: it may have started before the credentials were rejected. */
  invalidate(): void {
    [this.#cached, this.#running] = [undefined, undefined];
    this.#generation++;
  }

  async #run(): Promise<{ creds: Credentials; until: number }> {
    const { command, args = [], env = [] } = this.#cfg;
    const childEnv = { ...process.env, ...Object.fromEntries(env.map((e) => [e.name, e.value])), KUBERNETES_EXEC_INFO: this.#info };
    const opts = { env: childEnv, timeout: this.#ctx.execTimeoutMs, maxBuffer: 4 << 20, encoding: 'utf8' as const };
    // Loaded on first use: node:child_process (and the node:dgram it loads) would cost resident memory to every
    // process without an exec plugin (docs/performance.md, 'Small caches, no ICU collation, no fs/promises').
    const { execFile } = await import('node:child_process');
    return new Promise((done, reject) => {
      execFile(command, args, opts, (err, stdout, stderr) => {
        try {
          if (err) throw this.#error(this.#why(err), stderr);
          done(this.#parse(stdout, stderr));
        } catch (e) {
          reject(e);
        }
      }).stdin?.end();
    });
  }

  #why(err: ExecFileException): string {
    if (err.killed && err.signal === 'SIGTERM') return `timed out after ${this.#ctx.execTimeoutMs / 1000} s`;
    if (typeof err.code === 'number') return `exited with code ${err.code}`;
    return err.signal ? `was killed by ${err.signal}` : `could not run (${err.code ?? err.message})`;
  }

  #error(problem: string, stderr: string): KubeconfigError {
    const tail = stderr.trim() ? `; stderr: ${stderr.trim().slice(0, 500)}` : '; no stderr';
    return new KubeconfigError(`kubeconfig ${this.#ctx.source}: ${this.#field}: exec plugin "${this.#cfg.command}" ${problem}${tail}`);
  }

  #parse(stdout: string, stderr: string): { creds: Credentials; until: number } {
    let cred: unknown;
    try {
      cred = JSON.parse(stdout);
    } catch {
      throw this.#error('printed something other than JSON', stderr);
    }
    if (!isObj(cred) || cred.kind !== 'ExecCredential' || cred.apiVersion !== this.#cfg.apiVersion) {
      throw this.#error(`did not print an ExecCredential of apiVersion ${this.#cfg.apiVersion}`, stderr);
    }
    const s = isObj(cred.status) ? cred.status : {};
    const text = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);
    const [token, cert, key, expiry] = [text(s.token), text(s.clientCertificateData), text(s.clientKeyData), text(s.expirationTimestamp)];
    if (!cert !== !key) throw this.#error('returned only one of clientCertificateData and clientKeyData', stderr);
    if (!token && !cert) throw this.#error('returned neither a token nor a client certificate', stderr);
    const until = expiry === undefined ? Infinity : Date.parse(expiry) - EXEC_EXPIRY_MARGIN_MS;
    if (Number.isNaN(until)) throw this.#error('returned an invalid status.expirationTimestamp', stderr);
    const creds: Credentials = token ? { token } : {};
    if (cert && key) Object.assign(creds, { cert: Buffer.from(cert), key: Buffer.from(key) });
    return { creds, until };
  }
}

function execConfig(ctx: Ctx, o: Obj, path: string): ExecConfig {
  const command = str(ctx, o, 'command', path) ?? fail(ctx, `${path}.command`, 'missing');
  const apiVersion = str(ctx, o, 'apiVersion', path) ?? '';
  if (!EXEC_API_VERSIONS.includes(apiVersion)) fail(ctx, `${path}.apiVersion`, `must be one of ${EXEC_API_VERSIONS.join(', ')}`);
  const interactiveMode = str(ctx, o, 'interactiveMode', path);
  if (interactiveMode === 'Always') fail(ctx, `${path}.interactiveMode`, 'Always needs a terminal, which clusterlet does not have');
  const [args, env] = [o.args ?? [], o.env ?? []];
  if (!Array.isArray(args) || !args.every((a) => typeof a === 'string')) fail(ctx, `${path}.args`, 'must be a list of strings');
  const isPair = (e: unknown) => isObj(e) && typeof e.name === 'string' && ['string', 'undefined'].includes(typeof e.value);
  if (!Array.isArray(env) || !env.every(isPair)) fail(ctx, `${path}.env`, 'must be a list of {name, value} strings');
  const pairs = env.map((e: Obj) => ({ name: e.name as string, value: (e.value ?? '') as string }));
  // As client-go: a command with a path separator is relative to the kubeconfig, a bare name is looked up in PATH.
  const cmd = command.includes('/') && !isAbsolute(command) ? resolve(ctx.baseDir, command) : command;
  return { command: cmd, args, env: pairs, apiVersion, interactiveMode, provideClusterInfo: bool(ctx, o, 'provideClusterInfo', path) };
}

type Source = Pick<ClusterAccess, 'credentials' | 'invalidate'>;

function userSource(ctx: Ctx, u: Obj | undefined, path: string, cluster: Obj): Source {
  if (!u) return { credentials: async () => ({}), invalidate: () => {} };
  if (isObj(u['auth-provider'])) {
    fail(ctx, `${path}.auth-provider`, `auth-provider "${String(u['auth-provider'].name)}" is not supported; `
      + 'use an exec credential plugin instead (e.g. kubelogin, gke-gcloud-auth-plugin)');
  }
  const fixed: Credentials = {};
  const [cert, key] = [bytes(ctx, u, 'client-certificate', path), bytes(ctx, u, 'client-key', path)];
  if (!cert !== !key) fail(ctx, path, 'client-certificate and client-key must be given together');
  if (cert && key) Object.assign(fixed, { cert, key });
  const [token, file, username] = [str(ctx, u, 'token', path), str(ctx, u, 'tokenFile', path), str(ctx, u, 'username', path)];
  if (token) fixed.token = token;
  if (username) fixed.basic = { username, password: str(ctx, u, 'password', path) ?? '' };
  if (username && (token || file)) fail(ctx, path, 'username/password and a bearer token cannot both be set');
  // client-go: a readable token file wins over a static token; with no static token it must be readable now.
  const tokenFile = file === undefined ? undefined : new TokenFile(ctx, file);
  if (tokenFile && !token) tokenFile.loadNow(`${path}.tokenFile`);
  const exec = isObj(u.exec) ? new ExecPlugin(ctx, `${path}.exec`, execConfig(ctx, u.exec, `${path}.exec`), cluster) : undefined;
  if (!tokenFile && !exec) {
    // Nothing to re-read or refresh: every request of the process asks, so the same answer, made once.
    const same = Promise.resolve(Object.freeze({ ...fixed }));
    return { credentials: () => same, invalidate: () => {} };
  }
  return {
    async credentials() {
      // exec.get() before any await, so a call made before invalidate() keeps its place in line.
      const [fromFile, fromExec] = await Promise.all([tokenFile?.get(), exec?.get()]);
      const creds: Credentials = { ...fixed, token: fromFile ?? fixed.token, ...fromExec };
      if (!creds.token) delete creds.token;
      return creds;
    },
    invalidate() {
      tokenFile?.invalidate();
      exec?.invalidate();
    },
  };
}

function makeCtx(source: string, baseDir: string, opts: AccessOptions): Ctx {
  return { source, baseDir, now: opts.now ?? Date.now, execTimeoutMs: opts.execTimeoutMs ?? 60_000, hash: createHash('sha256') };
}

/** Parse kubeconfig YAML text. `baseDir` resolves relative file paths; `context` overrides current-context. */
export function parseKubeconfig(text: string, opts: { source: string; baseDir: string; context?: string } & AccessOptions): ClusterAccess {
  const ctx = makeCtx(opts.source, opts.baseDir, opts);
  ctx.hash.update(`${opts.context ?? ''}\0${text}`);
  const root = parseYaml(ctx, text);
  const ref = opts.context ? 'context (override)' : 'current-context';
  const contextName = opts.context || (str(ctx, root, 'current-context', '') ?? fail(ctx, ref, 'not set and no context given'));
  const c = named(ctx, root, 'contexts', 'context', contextName, ref);
  const clusterName = str(ctx, c.body, 'cluster', c.path) ?? fail(ctx, `${c.path}.cluster`, 'missing');
  const cl = named(ctx, root, 'clusters', 'cluster', clusterName, `${c.path}.cluster`);
  const server = serverURL(ctx, `${cl.path}.server`, str(ctx, cl.body, 'server', cl.path) ?? fail(ctx, `${cl.path}.server`, 'missing'));
  const ca = bytes(ctx, cl.body, 'certificate-authority', cl.path);
  const insecureSkipTLSVerify = bool(ctx, cl.body, 'insecure-skip-tls-verify', cl.path);
  const tlsServerName = str(ctx, cl.body, 'tls-server-name', cl.path);
  const proxyURL = str(ctx, cl.body, 'proxy-url', cl.path);
  const userName = str(ctx, c.body, 'user', c.path);
  const u = userName === undefined ? undefined : named(ctx, root, 'users', 'user', userName, `${c.path}.user`);
  const extensions: unknown[] = Array.isArray(cl.body.extensions) ? cl.body.extensions : [];
  const execExt = extensions.find((e): e is Obj => isObj(e) && e.name === 'client.authentication.k8s.io/exec');
  const execCluster = { server, 'tls-server-name': tlsServerName, 'insecure-skip-tls-verify': insecureSkipTLSVerify,
    'certificate-authority-data': ca?.toString('base64'), 'proxy-url': proxyURL, config: execExt?.extension };
  const { credentials, invalidate } = userSource(ctx, u?.body, u?.path ?? '', execCluster);
  const namespace = str(ctx, c.body, 'namespace', c.path);
  return {
    source: ctx.source, contextName, server, namespace, ca, insecureSkipTLSVerify, tlsServerName, proxyURL, credentials, invalidate,
    digest: ctx.hash.digest('hex'),
  };
}

export function loadKubeconfigFile(path: string, context?: string, opts: AccessOptions = {}): ClusterAccess {
  const abs = resolve(path);
  let text: string;
  try {
    text = readFileSync(abs, 'utf8');
  } catch (e) {
    throw new KubeconfigError(`kubeconfig ${abs}: file not readable (${errCode(e)})`);
  }
  return parseKubeconfig(text, { ...opts, source: abs, baseDir: dirname(abs), context });
}

/** In-cluster config: KUBERNETES_SERVICE_HOST/PORT, and the service account's token (re-read), ca.crt and namespace. */
export function inClusterAccess(opts: { env?: NodeJS.ProcessEnv; root?: string } & AccessOptions = {}): ClusterAccess {
  const { KUBERNETES_SERVICE_HOST: host, KUBERNETES_SERVICE_PORT: port } = opts.env ?? process.env;
  if (!host || !port) {
    throw new KubeconfigError('kubeconfig in-cluster: not running in a cluster (KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set)');
  }
  const ctx = makeCtx('in-cluster', opts.root ?? '/var/run/secrets/kubernetes.io/serviceaccount', opts);
  const tokenFile = new TokenFile(ctx, 'token').loadNow('token');
  const optional = (name: string) => {
    try {
      return readFileSync(join(ctx.baseDir, name));
    } catch { /* as client-go: without ca.crt, system roots; without namespace, none */ }
  };
  const bracketed = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return {
    source: ctx.source, contextName: 'in-cluster', server: `https://${bracketed}:${port}`, insecureSkipTLSVerify: false,
    namespace: optional('namespace')?.toString('utf8').trim() || undefined, ca: optional('ca.crt'),
    credentials: async () => {
      const token = await tokenFile.get();
      return token ? { token } : {};
    },
    invalidate: () => tokenFile.invalidate(),
  };
}
