// The host half of Service reflection: every host Service and every host EndpointSlice of a Service, one watch of
// each shared by every member's ServiceReflector (their owner starts and stops them), and the Warnings a member's
// reflector writes on a host Service.
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import type { ClusterClient } from '../../kube/client.ts';
import { writeOwnEvent } from '../../kube/events.ts';
import { Informer } from '../../kube/informer.ts';
import { watchKind } from '../../kube/kinds.ts';
import { SERVICE_NAME_LABEL } from '../../forge/endpointslice.ts';
import type { ServiceWarning } from '../../provider/reflection.ts';
import type { Logger } from '../../log.ts';

/** Every Service of the host. */
export function hostServices(host: ClusterClient, log: Logger): Informer<V1Service> {
  return new Informer('host-services', watchKind(host, 'Service', {}, log));
}

/** Every EndpointSlice of the host that belongs to a Service. */
export function hostEndpointSlices(host: ClusterClient, log: Logger): Informer<V1EndpointSlice> {
  return new Informer('host-endpointslices', watchKind(host, 'EndpointSlice', { labelSelector: SERVICE_NAME_LABEL }, log));
}

/** Warnings on host Services, written by the host client as virtual node `node`'s (source component clusterlet). */
export function hostServiceWarnings(host: ClusterClient, node: string): ServiceWarning {
  return (about, ev) => writeOwnEvent(host, about, node, ev);
}
