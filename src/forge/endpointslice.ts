// Host EndpointSlices → member EndpointSlices, for the optional reflection of a Service's host-side endpoints
// (--reflect-host-endpoints): delegates in the member then reach the Service's backends that stayed on the host, or
// run in other members, over a pod network routable between the clusters. Pure functions.
import type { V1Endpoint, V1EndpointSlice } from '@kubernetes/client-node';
import { HOST_ENDPOINTSLICE_ANNOTATION, PROXY_NAMESPACE_ANNOTATION } from './keys.ts';
import { ownerLabels, type Owner } from './owner.ts';
import { compact } from './objects.ts';

/** The label every EndpointSlice carries: the Service it belongs to. */
export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';
/** Who manages a slice: the member's own EndpointSlice controller leaves slices of another manager alone. */
export const MANAGED_BY_LABEL = 'endpointslice.kubernetes.io/managed-by';
export const MANAGED_BY = 'clusterlet.io';

const MAX_NAME = 253;

export interface EndpointSliceContext {
  owner: Owner;
  memberNamespace: string;
  /**
   * Endpoints the member already lists itself (this member's delegates, selected by its own endpoint controller):
   * left out, so no address appears twice.
   */
  listedByMember(endpoint: V1Endpoint): boolean;
}

/** The member's name for the copy of a host slice (host slice names are `<service>-<random>`: prefixed, they never collide with the member's). */
export function memberSliceName(hostSliceName: string): string {
  return `clusterlet-${hostSliceName}`.slice(0, MAX_NAME);
}

/** The member copy of a host EndpointSlice, or undefined when it belongs to no Service. */
export function forgeMemberEndpointSlice(host: V1EndpointSlice, ctx: EndpointSliceContext): V1EndpointSlice | undefined {
  const service = host.metadata?.labels?.[SERVICE_NAME_LABEL];
  if (!service || !host.metadata?.name) return undefined;
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name: memberSliceName(host.metadata.name),
      namespace: ctx.memberNamespace,
      labels: { ...ownerLabels(ctx.owner), [SERVICE_NAME_LABEL]: service, [MANAGED_BY_LABEL]: MANAGED_BY },
      annotations: {
        [PROXY_NAMESPACE_ANNOTATION]: host.metadata.namespace ?? '',
        [HOST_ENDPOINTSLICE_ANNOTATION]: host.metadata.name,
      },
    },
    addressType: host.addressType,
    ports: (host.ports ?? []).map((p) => compact({ name: p.name, port: p.port, protocol: p.protocol, appProtocol: p.appProtocol })),
    endpoints: (host.endpoints ?? []).filter((e) => !ctx.listedByMember(e)).map(memberEndpoint),
  };
}

/**
 * An endpoint as the member should see it: addresses, readiness, hostname (per-pod DNS of a headless Service) and
 * zone. The host's node and pod references name objects the member does not have: dropped.
 */
function memberEndpoint(e: V1Endpoint): V1Endpoint {
  return compact({
    addresses: [...e.addresses],
    conditions: e.conditions ? compact({ ready: e.conditions.ready, serving: e.conditions.serving, terminating: e.conditions.terminating }) : undefined,
    hostname: e.hostname,
    zone: e.zone,
  });
}

/** Whether the member's copy already says what `desired` says (the API server's defaults aside). */
export function endpointSliceMatches(desired: V1EndpointSlice, actual: V1EndpointSlice): boolean {
  const labels = Object.entries(desired.metadata?.labels ?? {}).every(([k, v]) => actual.metadata?.labels?.[k] === v);
  const ports = (s: V1EndpointSlice) => JSON.stringify((s.ports ?? []).map((p) => [p.name ?? '', p.port, p.protocol ?? 'TCP', p.appProtocol ?? '']));
  const endpoints = (s: V1EndpointSlice) => JSON.stringify((s.endpoints ?? []).map((e) => [e.addresses, e.conditions?.ready ?? null,
    e.conditions?.serving ?? null, e.conditions?.terminating ?? null, e.hostname ?? '', e.zone ?? '']));
  return labels && desired.addressType === actual.addressType && ports(desired) === ports(actual) && endpoints(desired) === endpoints(actual);
}
