// The kubelet API's TLS material, kept current:
// - the serving certificate: from files (reloaded when they change), or issued by the host through a
//   kubernetes.io/kubelet-serving CertificateSigningRequest (CN system:node:<node>, O system:nodes, SANs the
//   node names and IP) and renewed at 70–90 % of its lifetime, or self-signed. Until a requested certificate
//   is issued (someone must approve the CSR, as for kubelets), a self-signed one is served, with a warning;
// - the client CA that verifies client certificates: from a file, or the host's
//   kube-system/extension-apiserver-authentication ConfigMap (key client-ca-file), re-read periodically
//   (every 5 min; every 10 s while it is not loaded), so a rotated CA is used without a restart.
import { readFile, stat } from '../../util/files.ts';
import { X509Certificate } from 'node:crypto';
import type { V1CertificateSigningRequest } from '@kubernetes/client-node';
import type { Subscription } from 'rxjs';
import type { ClusterClient } from '../../kube/client.ts';
import { listWatch, type WatchClient } from '../../kube/listwatch.ts';
import { backoffDelay } from '../../util/backoff.ts';
import { nameOf } from '../../forge/meta.ts';
import type { Logger } from '../../log.ts';
import { certificateRequest, newServingKey, selfSignedCertificate, type ServingRequest } from './x509.ts';
import { settle } from '../../util/settle.ts';

export type ServingCertMode = 'file' | 'csr' | 'self-signed';
export const KUBELET_SERVING_SIGNER = 'kubernetes.io/kubelet-serving';

export interface ServingKeyPair { cert: string; key: string }

export interface ServingCertOptions {
  mode: ServingCertMode;
  certFile?: string;
  keyFile?: string;
  /** Node names (the first is the CN) and the node IP, for the SANs. */
  nodeNames: string[];
  nodeIP: string;
  /** What a csr-mode certificate asks of the host: CSRs created, and listed and watched until issued. */
  host: CsrClient;
  log: Logger;
  /** Re-check interval of files. */
  reloadMs?: number;
}

/** The calls a serving certificate of mode csr makes to the host. */
export type CsrClient = WatchClient & {
  certificates: Pick<ClusterClient['certificates'], 'createCertificateSigningRequest' | 'listCertificateSigningRequest'>;
};

/** setTimeout's limit; longer waits are done in steps. */
const MAX_TIMER = 2 ** 31 - 1;

export class ServingCertificate {
  #opts: ServingCertOptions;
  #current: ServingKeyPair | undefined;
  #listeners: ((c: ServingKeyPair) => void)[] = [];
  #timers = new Set<NodeJS.Timeout>();
  #watch: Subscription | undefined;
  #stopped = false;
  #fileStamp = '';
  /** Name of the CSR being waited for, if any. */
  pending: string | undefined;
  /** Where the current certificate came from: file, csr (issued by the host) or self-signed. */
  source: ServingCertMode = 'self-signed';

  constructor(opts: ServingCertOptions) {
    this.#opts = opts;
  }

  get current(): ServingKeyPair {
    if (!this.#current) throw new Error('serving certificate not loaded yet');
    return this.#current;
  }

  onChange(fn: (c: ServingKeyPair) => void): void { this.#listeners.push(fn); }

  /** Resolves with the first certificate to serve. */
  async start(): Promise<ServingKeyPair> {
    const o = this.#opts;
    if (o.mode === 'file') {
      await this.#loadFiles();
      this.#every(o.reloadMs ?? 60_000, () => {
        void this.#loadFiles().catch((err: unknown) =>
          o.log.error({ err: (err as Error).message }, 'kubelet API: could not reload the serving certificate; keeping the current one'));
      });
      return this.current;
    }
    this.#set(this.#selfSigned(), 'self-signed');
    if (o.mode === 'csr') {
      o.log.warn('kubelet API: serving a self-signed certificate until the kubelet-serving CSR is approved and issued');
      settle(this.#request(0), o.log, 'kubelet API: serving certificate request failed');
    } else {
      o.log.warn('kubelet API: serving a self-signed certificate (--serving-cert=self-signed): the API server can '
        + 'only reach it without --kubelet-certificate-authority');
    }
    return this.current;
  }

  stop(): void {
    this.#stopped = true;
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
    this.#watch?.unsubscribe();
  }

  get #servingRequest(): ServingRequest {
    const o = this.#opts;
    return {
      subject: { commonName: `system:node:${o.nodeNames[0]}`, organizations: ['system:nodes'] },
      dns: o.nodeNames, ips: [o.nodeIP],
    };
  }

  #selfSigned(): ServingKeyPair {
    const k = newServingKey();
    return { key: k.key, cert: selfSignedCertificate(k.keyObject, this.#servingRequest) };
  }

  #set(c: ServingKeyPair, source: ServingCertMode): void {
    this.#current = c;
    this.source = source;
    for (const fn of this.#listeners) fn(c);
  }

  async #loadFiles(): Promise<void> {
    const { certFile, keyFile } = this.#opts;
    if (certFile === undefined || keyFile === undefined) throw new Error('--serving-cert=file needs --tls-cert-file and --tls-key-file');
    const [a, b] = await Promise.all([stat(certFile), stat(keyFile)]);
    const stamp = `${a.mtimeMs}/${b.mtimeMs}/${a.size}/${b.size}`;
    if (stamp === this.#fileStamp) return;
    const [cert, key] = await Promise.all([readFile(certFile, 'utf8'), readFile(keyFile, 'utf8')]);
    new X509Certificate(cert); // fails on a file that is not a certificate
    this.#fileStamp = stamp;
    this.#set({ cert, key }, 'file');
    this.#opts.log.info({ certFile }, 'kubelet API: serving certificate loaded');
  }

  /** Requests a certificate from the host; on success schedules the renewal, on failure retries. */
  async #request(attempt: number): Promise<void> {
    if (this.#stopped) return;
    const o = this.#opts;
    const api = o.host.certificates;
    try {
      const k = newServingKey();
      const csr = certificateRequest(k.keyObject, this.#servingRequest);
      const created = await api.createCertificateSigningRequest({ body: {
        apiVersion: 'certificates.k8s.io/v1', kind: 'CertificateSigningRequest',
        metadata: { generateName: `clusterlet-${o.nodeNames[0]}-` },
        spec: {
          request: Buffer.from(csr).toString('base64'), signerName: KUBELET_SERVING_SIGNER,
          usages: ['digital signature', 'server auth'],
        },
      } });
      const name = nameOf(created);
      this.pending = name;
      o.log.info({ csr: name }, `kubelet API: requested a serving certificate; approve it with: kubectl certificate approve ${name}`);
      const cert = await this.#waitIssued(name);
      this.pending = undefined;
      this.#set({ cert, key: k.key }, 'csr');
      const x = new X509Certificate(cert);
      o.log.info({ csr: name, validTo: x.validTo }, 'kubelet API: serving certificate issued by the host');
      const from = Date.parse(x.validFrom);
      const to = Date.parse(x.validTo);
      this.#at(from + (to - from) * (0.7 + 0.2 * Math.random()),
        () => settle(this.#request(0), o.log, 'kubelet API: serving certificate renewal failed'));
    } catch (err) {
      this.pending = undefined;
      const delay = Math.max(30_000, backoffDelay(attempt, 30_000, 600_000));
      o.log.error({ err: (err as Error).message, retryInMs: delay }, 'kubelet API: serving certificate request failed; still serving the previous certificate');
      this.#after(delay, () => settle(this.#request(attempt + 1), o.log, 'kubelet API: serving certificate request failed'));
    }
  }

  #waitIssued(name: string): Promise<string> {
    const o = this.#opts;
    const api = o.host.certificates;
    return new Promise<string>((resolve, reject) => {
      const warn = setTimeout(() => o.log.warn({ csr: name },
        `kubelet API: serving certificate request still not approved; approve it with: kubectl certificate approve ${name}`), 60_000);
      this.#watch = listWatch<V1CertificateSigningRequest>(o.host, {
        path: '/apis/certificates.k8s.io/v1/certificatesigningrequests', model: 'V1CertificateSigningRequest',
        resource: 'certificatesigningrequests', fieldSelector: `metadata.name=${name}`,
        list: (p) => api.listCertificateSigningRequest(p),
      }, { log: o.log }).subscribe((ev) => {
        const items = ev.type === 'SYNC' ? ev.items : ev.type === 'DELETED' ? [] : [ev.object];
        const csr = items.find((c) => c.metadata?.name === name);
        if (ev.type === 'DELETED' && ev.object.metadata?.name === name) return done(new Error(`CSR ${name} was deleted`));
        const failed = csr?.status?.conditions?.find((c) => (c.type === 'Denied' || c.type === 'Failed') && c.status === 'True');
        if (failed) return done(new Error(`CSR ${name} ${failed.type.toLowerCase()}: ${failed.message ?? failed.reason ?? ''}`));
        const cert = csr?.status?.certificate;
        if (cert) done(Buffer.from(cert, 'base64').toString('utf8'));
      });
      /** Settles with the issued certificate, or the error. */
      const done = (outcome: string | Error): void => {
        clearTimeout(warn);
        this.#watch?.unsubscribe();
        this.#watch = undefined;
        if (outcome instanceof Error) reject(outcome); else resolve(outcome);
      };
    });
  }

  #after(ms: number, fn: () => void): void {
    if (this.#stopped) return;
    const t = setTimeout(() => { this.#timers.delete(t); fn(); }, Math.min(ms, MAX_TIMER));
    t.unref();
    this.#timers.add(t);
  }

  #at(when: number, fn: () => void): void {
    const wait = when - Date.now();
    if (wait > MAX_TIMER) this.#after(MAX_TIMER, () => this.#at(when, fn));
    else this.#after(Math.max(0, wait), fn);
  }

  #every(ms: number, fn: () => void): void {
    this.#after(ms, () => { fn(); this.#every(ms, fn); });
  }
}

export interface ClientCAOptions {
  file?: string;
  /** Where the host's client CA is read without a file: kube-system/extension-apiserver-authentication. */
  host: { core: Pick<ClusterClient['core'], 'readNamespacedConfigMap'> };
  log: Logger;
  /** Re-read interval once loaded (5 min); until then it is re-read every 10 s, or this if shorter. */
  refreshMs?: number;
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g;

/** The certificates of a PEM bundle; throws when it holds none, or one that does not parse. */
function parseCABundle(pem: string): X509Certificate[] {
  const certs = (pem.match(PEM_CERTIFICATE) ?? []).map((block, i) => {
    try {
      return new X509Certificate(block);
    } catch (err) {
      throw new Error(`certificate ${i + 1} of the bundle does not parse: ${(err as Error).message}`, { cause: err });
    }
  });
  if (!certs.length) throw new Error('no PEM certificate in the bundle');
  return certs;
}

/**
 * The CA bundle that verifies client certificates: the file, else the host API server's own client CA as it
 * publishes it for delegated authentication. Empty while unknown: then no client certificate authenticates
 * (only bearer tokens do). A bundle that cannot be read or parsed leaves the current one in place.
 */
export class ClientCA {
  #opts: ClientCAOptions;
  #pem: string | undefined;
  #certs: readonly X509Certificate[] = [];
  #listeners: ((ca: string) => void)[] = [];
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(opts: ClientCAOptions) { this.#opts = opts; }

  /** The bundle as PEM (only its certificates), or undefined until loaded. */
  get current(): string | undefined { return this.#pem; }
  /** The bundle's certificates; empty until loaded. */
  get certificates(): readonly X509Certificate[] { return this.#certs; }
  onChange(fn: (ca: string) => void): void { this.#listeners.push(fn); }

  async start(): Promise<void> {
    await this.#refresh();
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }

  async #refresh(): Promise<void> {
    const o = this.#opts;
    try {
      const read = o.file ? await readFile(o.file, 'utf8') : await this.#fromHost();
      const certs = parseCABundle(read);
      const pem = certs.map((c) => c.toString()).join('');
      if (pem !== this.#pem) {
        const rotated = this.#pem !== undefined;
        this.#pem = pem;
        this.#certs = certs;
        for (const fn of this.#listeners) fn(pem);
        o.log.info({ source: o.file ?? 'kube-system/extension-apiserver-authentication', subjects: certs.map((c) => c.subject) },
          rotated ? 'kubelet API: client CA changed; the new one is used' : 'kubelet API: client CA loaded');
      }
    } catch (err) {
      o.log.warn({ err: (err as Error).message }, this.#pem === undefined
        ? 'kubelet API: could not read the client CA; client certificates are refused (401) until it is read'
        : 'kubelet API: could not re-read the client CA; keeping the current one');
    }
    if (this.#stopped) return;
    const refresh = o.refreshMs ?? 300_000;
    this.#timer = setTimeout(() => settle(this.#refresh(), o.log, 'kubelet API: client CA refresh failed'),
      this.#pem === undefined ? Math.min(10_000, refresh) : refresh);
    this.#timer.unref();
  }

  async #fromHost(): Promise<string> {
    const cm = await this.#opts.host.core.readNamespacedConfigMap({ namespace: 'kube-system', name: 'extension-apiserver-authentication' });
    const ca = cm.data?.['client-ca-file'];
    if (!ca) throw new Error('kube-system/extension-apiserver-authentication has no client-ca-file');
    return ca;
  }
}
