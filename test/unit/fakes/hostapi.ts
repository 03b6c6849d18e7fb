// Host clients for kubelet API tests whose certificates come from files or are self-signed: every call fails, naming
// what the test did not expect to be asked.
import type { ClientCAOptions, CsrClient } from '../../../src/host/api/tls.ts';

const unused = (what: string) => (): Promise<never> => Promise.reject(new Error(`${what} is not used by this test`));

/** A serving certificate's host that must never be asked for a CSR. */
export const NO_CSR_HOST: CsrClient = {
  name: 'host',
  watch: unused('watch'),
  certificates: { createCertificateSigningRequest: unused('createCertificateSigningRequest'),
    listCertificateSigningRequest: unused('listCertificateSigningRequest') },
};

/** A client CA's host that must never be asked for the client CA (the test gives a file). */
export const NO_CA_HOST: ClientCAOptions['host'] = { core: { readNamespacedConfigMap: unused('readNamespacedConfigMap') } };
