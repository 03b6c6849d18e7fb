// The two X.509 structures clusterlet makes itself (node:crypto signs, but builds neither): a PKCS#10
// certificate request for the kubelet-serving signer, and a self-signed serving certificate (the last
// resort). EC P-256 keys, ECDSA with SHA-256, a minimal DER writer.
import { createPublicKey, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import { isIPv4, isIPv6 } from 'node:net';

// --- DER ---------------------------------------------------------------------------------------------

function tlv(tag: number, content: Buffer): Buffer {
  const n = content.length;
  let len: Buffer;
  if (n < 0x80) len = Buffer.from([n]);
  else {
    const bytes: number[] = [];
    for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
    len = Buffer.from([0x80 | bytes.length, ...bytes]);
  }
  return Buffer.concat([Buffer.from([tag]), len, content]);
}

const seq = (...parts: Buffer[]): Buffer => tlv(0x30, Buffer.concat(parts));
const set = (...parts: Buffer[]): Buffer => tlv(0x31, Buffer.concat(parts));
const octets = (b: Buffer): Buffer => tlv(0x04, b);
const bits = (b: Buffer, unused = 0): Buffer => tlv(0x03, Buffer.concat([Buffer.from([unused]), b]));
const utf8 = (s: string): Buffer => tlv(0x0c, Buffer.from(s, 'utf8'));
const bool = (v: boolean): Buffer => tlv(0x01, Buffer.from([v ? 0xff : 0]));
/** [n] EXPLICIT (constructed). */
const explicit = (n: number, content: Buffer): Buffer => tlv(0xa0 | n, content);

function int(value: Buffer | number): Buffer {
  let b = typeof value === 'number' ? Buffer.from([value]) : value;
  let i = 0;
  while (i < b.length - 1 && b[i] === 0 && (b[i + 1] & 0x80) === 0) i++;
  b = b.subarray(i);
  if (b[0] & 0x80) b = Buffer.concat([Buffer.from([0]), b]);
  return tlv(0x02, b);
}

function oid(dotted: string): Buffer {
  const p = dotted.split('.').map(Number);
  const out = [40 * p[0] + p[1]];
  for (const v of p.slice(2)) {
    const chunk = [v & 0x7f];
    for (let x = Math.floor(v / 128); x > 0; x = Math.floor(x / 128)) chunk.unshift((x & 0x7f) | 0x80);
    out.push(...chunk);
  }
  return tlv(0x06, Buffer.from(out));
}

function time(d: Date): Buffer {
  const iso = d.toISOString();
  const compact = iso.slice(0, 19).replace(/[-:T]/g, '') + 'Z';
  // UTCTime up to 2049, GeneralizedTime after (RFC 5280 4.1.2.5).
  return d.getUTCFullYear() < 2050 ? tlv(0x17, Buffer.from(compact.slice(2))) : tlv(0x18, Buffer.from(compact));
}

// --- X.509 pieces ------------------------------------------------------------------------------------

const OID = {
  commonName: '2.5.4.3', organization: '2.5.4.10', ecdsaWithSHA256: '1.2.840.10045.4.3.2',
  extensionRequest: '1.2.840.113549.1.9.14', subjectAltName: '2.5.29.17', keyUsage: '2.5.29.15',
  extKeyUsage: '2.5.29.37', basicConstraints: '2.5.29.19', serverAuth: '1.3.6.1.5.5.7.3.1',
};

export interface Subject { commonName: string; organizations?: string[] }

function name(s: Subject): Buffer {
  const rdn = (type: string, value: string): Buffer => set(seq(oid(type), utf8(value)));
  return seq(...(s.organizations ?? []).map((o) => rdn(OID.organization, o)), rdn(OID.commonName, s.commonName));
}

function ipBytes(ip: string): Buffer {
  if (isIPv4(ip)) return Buffer.from(ip.split('.').map(Number));
  if (!isIPv6(ip)) throw new Error(`"${ip}" is not an IP address`);
  const [head, tail = ''] = ip.split('::');
  const h = head ? head.split(':') : [];
  const t = ip.includes('::') && tail ? tail.split(':') : [];
  const groups = ip.includes('::') ? [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t] : h;
  return Buffer.concat(groups.map((g) => { const b = Buffer.alloc(2); b.writeUInt16BE(parseInt(g, 16)); return b; }));
}

function extension(type: string, value: Buffer, critical = false): Buffer {
  return seq(oid(type), ...(critical ? [bool(true)] : []), octets(value));
}

function subjectAltName(dns: string[], ips: string[]): Buffer {
  return extension(OID.subjectAltName, seq(
    ...dns.map((d) => tlv(0x82, Buffer.from(d, 'ascii'))),
    ...ips.map((ip) => tlv(0x87, ipBytes(ip))),
  ));
}

const algorithm = (): Buffer => seq(oid(OID.ecdsaWithSHA256));

function pem(label: string, der: Buffer): string {
  const b64 = der.toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n$/, '');
  return `-----BEGIN ${label}-----\n${b64}\n-----END ${label}-----\n`;
}

export interface KeyPairPEM { key: string; keyObject: KeyObject }

export function newServingKey(): KeyPairPEM {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  return { key: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, keyObject: privateKey };
}

/** The public half of a key, as SubjectPublicKeyInfo DER. */
function spki(key: KeyObject): Buffer {
  return createPublicKey(key).export({ type: 'spki', format: 'der' });
}

export interface ServingRequest { subject: Subject; dns: string[]; ips: string[] }

/** A PKCS#10 certificate request (PEM) with the SANs as an extension request. */
export function certificateRequest(key: KeyObject, req: ServingRequest): string {
  const attributes = tlv(0xa0, seq(oid(OID.extensionRequest), set(seq(subjectAltName(req.dns, req.ips)))));
  const info = seq(int(0), name(req.subject), spki(key), attributes);
  const signature = sign('sha256', info, key);
  return pem('CERTIFICATE REQUEST', seq(info, algorithm(), bits(signature)));
}

/** A self-signed serving certificate (PEM), valid from an hour ago for `days`. */
export function selfSignedCertificate(key: KeyObject, req: ServingRequest, days = 365): string {
  const now = Date.now();
  const serial = randomBytes(16);
  serial[0] &= 0x7f;
  const extensions = seq(
    extension(OID.basicConstraints, seq(), true),
    // digitalSignature only (ECDSA): bit 0.
    extension(OID.keyUsage, bits(Buffer.from([0x80]), 7), true),
    extension(OID.extKeyUsage, seq(oid(OID.serverAuth))),
    subjectAltName(req.dns, req.ips),
  );
  const subject = name(req.subject);
  const tbs = seq(
    explicit(0, int(2)), int(serial), algorithm(), subject,
    seq(time(new Date(now - 3_600_000)), time(new Date(now + days * 86_400_000))),
    subject, spki(key), explicit(3, extensions),
  );
  return pem('CERTIFICATE', seq(tbs, algorithm(), bits(sign('sha256', tbs, key))));
}
