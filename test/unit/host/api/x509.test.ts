// The certificate request and the self-signed certificate clusterlet makes (src/host/api/x509.ts).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { certificateRequest, newServingKey, selfSignedCertificate } from '../../../../src/host/api/x509.ts';

const req = { subject: { commonName: 'system:node:clusterlet-eu', organizations: ['system:nodes'] }, dns: ['clusterlet-eu'], ips: ['192.0.2.10', '2001:db8::1'] };

const hasOpenssl = ((): boolean => { try { execFileSync('openssl', ['version']); return true; } catch { return false; } })();

describe('x509', () => {
  it('a self-signed serving certificate: subject, SANs, validity, signed by its key', () => {
    const k = newServingKey();
    const c = new X509Certificate(selfSignedCertificate(k.keyObject, req, 30));
    assert.equal(c.subject, 'O=system:nodes\nCN=system:node:clusterlet-eu');
    assert.equal(c.subjectAltName, 'DNS:clusterlet-eu, IP Address:192.0.2.10, IP Address:2001:DB8:0:0:0:0:0:1');
    assert.ok(c.verify(c.publicKey));
    assert.ok(c.checkPrivateKey(k.keyObject));
    const days = (Date.parse(c.validTo) - Date.parse(c.validFrom)) / 86_400_000;
    assert.ok(days > 30 && days < 30.1, `${days} days`);
    assert.equal(c.ca, false);
    assert.deepEqual(c.keyUsage, ['1.3.6.1.5.5.7.3.1']);
  });

  it('a PKCS#10 request with the subject and SANs, self-signature valid (openssl)', { skip: !hasOpenssl && 'openssl not installed' }, () => {
    const pem = certificateRequest(newServingKey().keyObject, req);
    assert.match(pem, /^-----BEGIN CERTIFICATE REQUEST-----\n/);
    const file = join(mkdtempSync(join(tmpdir(), 'clusterlet-x509-')), 'r.csr');
    writeFileSync(file, pem);
    const text = execFileSync('openssl', ['req', '-in', file, '-verify', '-noout', '-text'], { stdio: ['ignore', 'pipe', 'pipe'] }).toString();
    assert.match(text, /Subject: O\s?=\s?system:nodes, CN\s?=\s?system:node:clusterlet-eu/);
    assert.match(text, /DNS:clusterlet-eu, IP Address:192\.0\.2\.10, IP Address:2001:DB8:0:0:0:0:0:1/);
  });
});
