// A minimal Multi-Cluster Services API (KEP-1645) for integration tests: the ServiceExport CRD only, with an
// open schema, installed into a cluster and removed again. Enough for clusterlet to find the API and write exports.
import type { ClusterClient } from '../../src/kube/client.ts';
import { ignoreNotFound } from '../../src/kube/errors.ts';
import { pollUntil } from '../harness/net.ts';

const CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
const NAME = 'serviceexports.multicluster.x-k8s.io';
export const MCS_API = '/apis/multicluster.x-k8s.io/v1alpha1';

const serviceExportCRD = {
  apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: NAME },
  spec: {
    group: 'multicluster.x-k8s.io', scope: 'Namespaced',
    names: { kind: 'ServiceExport', listKind: 'ServiceExportList', plural: 'serviceexports', singular: 'serviceexport' },
    versions: [{ name: 'v1alpha1', served: true, storage: true,
      schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
  },
};

/** Whether the cluster serves the MCS group version (what clusterlet looks up). */
const served = async (c: ClusterClient): Promise<boolean> => (await ignoreNotFound(() => c.request('GET', MCS_API))) !== undefined;

/** Polls until the group version is served or not (discovery cannot be watched). */
const untilServed = (c: ClusterClient, want: boolean, timeoutMs: number): Promise<true> =>
  pollUntil(`${MCS_API} ${want ? 'served' : 'gone'}`, async () => (await served(c)) === want || undefined, timeoutMs, 200);

/** Installs the ServiceExport CRD and waits until its group version is served. */
export async function installServiceExportCRD(c: ClusterClient): Promise<void> {
  await c.request('POST', CRDS, { body: serviceExportCRD });
  await untilServed(c, true, 30_000);
}

/** Removes the CRD (and with it every ServiceExport) and waits until the group version is no longer served. */
export async function removeServiceExportCRD(c: ClusterClient): Promise<void> {
  await ignoreNotFound(() => c.request('DELETE', `${CRDS}/${NAME}`));
  await untilServed(c, false, 60_000);
}
