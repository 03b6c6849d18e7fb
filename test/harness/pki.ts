// Certificates for the local clusters, made with the openssl CLI (EC P-256: fast to generate).
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface KeyPair { cert: string; key: string }

async function openssl(args: string[], cwd: string): Promise<void> {
  try {
    await run('openssl', args, { cwd });
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`openssl ${args[0]} failed: ${e.stderr ?? e.message}`);
  }
}

async function newKey(path: string, cwd: string): Promise<void> {
  await openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', path], cwd);
}

/** A self-signed CA in `dir/<name>-ca.{crt,key}`. */
export async function makeCA(dir: string, name: string): Promise<KeyPair> {
  const key = join(dir, `${name}-ca.key`);
  const cert = join(dir, `${name}-ca.crt`);
  await newKey(key, dir);
  await openssl(['req', '-x509', '-new', '-key', key, '-out', cert, '-days', '3650', '-subj', `/CN=${name}-ca`,
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign,digitalSignature'], dir);
  return { cert, key };
}

export interface CertRequest {
  file: string;
  cn: string;
  orgs?: string[];
  dns?: string[];
  ips?: string[];
  usage: 'server' | 'client' | 'both';
}

/** A certificate signed by `ca`, written to `dir/<file>.{crt,key}`. */
export async function signCert(dir: string, ca: KeyPair, req: CertRequest): Promise<KeyPair> {
  const key = join(dir, `${req.file}.key`);
  const cert = join(dir, `${req.file}.crt`);
  const csr = join(dir, `${req.file}.csr`);
  const ext = join(dir, `${req.file}.ext`);
  await newKey(key, dir);
  const subject = `/CN=${req.cn}` + (req.orgs ?? []).map((o) => `/O=${o}`).join('');
  await openssl(['req', '-new', '-key', key, '-out', csr, '-subj', subject], dir);
  const usages = { server: 'serverAuth', client: 'clientAuth', both: 'serverAuth,clientAuth' }[req.usage];
  const sans = [...(req.dns ?? []).map((d) => `DNS:${d}`), ...(req.ips ?? []).map((i) => `IP:${i}`)];
  await writeFile(ext, [
    'basicConstraints=critical,CA:FALSE',
    'keyUsage=critical,digitalSignature,keyEncipherment',
    `extendedKeyUsage=${usages}`,
    ...(sans.length ? [`subjectAltName=${sans.join(',')}`] : []),
  ].join('\n') + '\n');
  // A random serial per certificate: concurrent signings share no serial file to race on.
  await openssl(['x509', '-req', '-in', csr, '-CA', ca.cert, '-CAkey', ca.key, '-set_serial', `0x${randomBytes(16).toString('hex')}`,
    '-out', cert, '-days', '3650', '-extfile', ext], dir);
  return { cert, key };
}

/** The key pair the API server signs service-account tokens with. */
export async function makeServiceAccountKey(dir: string, name: string): Promise<{ key: string; pub: string }> {
  const key = join(dir, `${name}-sa.key`);
  const pub = join(dir, `${name}-sa.pub`);
  await newKey(key, dir);
  await openssl(['pkey', '-in', key, '-pubout', '-out', pub], dir);
  return { key, pub };
}

export async function base64File(path: string): Promise<string> {
  return (await readFile(path)).toString('base64');
}
