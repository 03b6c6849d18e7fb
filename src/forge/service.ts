// Service forge: a host Service as its copy in a member namespace. The copy keeps the selector, and delegates keep
// the user's labels, so the member's own EndpointSlice controller lists the delegates and its DNS answers for the
// name (and, headless, for each StatefulSet pod). Only what makes sense inside the member is copied: never the
// host's clusterIP, nodePorts, external IPs or load-balancer settings. Pure functions.
import type { V1Service, V1ServicePort, V1ServiceSpec } from '@kubernetes/client-node';
import { LABEL_PREFIX } from './keys.ts';
import { mirroredMeta, sortedJSON, type MirrorContext } from './refs.ts';
import { compact } from './objects.ts';

/** The API server's default session affinity timeout (spec.sessionAffinityConfig.clientIP.timeoutSeconds). */
const DEFAULT_AFFINITY_TIMEOUT = 10_800;

/** `clusterIP: None`: DNS answers with the endpoints themselves (and a name per StatefulSet pod). */
export function isHeadless(svc: V1Service): boolean {
  return svc.spec?.clusterIP === 'None';
}

/**
 * Whether a host Service can be reflected: it selects pods. An ExternalName Service is only a DNS alias, and one
 * without a selector has endpoints someone writes by hand: neither has anything to do with offloaded pods.
 */
export function reflectable(svc: V1Service): boolean {
  return svc.spec?.type !== 'ExternalName' && Object.keys(svc.spec?.selector ?? {}).length > 0;
}

/**
 * Whether a Service selector selects a delegate by its labels. clusterlet's own keys are not the user's: a selector
 * on them never selects a delegate. An empty selector selects nothing (the Service has none).
 */
export function selects(selector: Record<string, string> | undefined, labels: Record<string, string> | undefined): boolean {
  const terms = Object.entries(selector ?? {});
  return terms.length > 0 && terms.every(([k, v]) => !k.startsWith(LABEL_PREFIX) && labels?.[k] === v);
}

/** A port as the member needs it: no nodePort (the member allocates none for a ClusterIP Service). */
function memberPort(p: V1ServicePort): V1ServicePort {
  return compact({ name: p.name, protocol: p.protocol, port: p.port, targetPort: p.targetPort, appProtocol: p.appProtocol });
}

/**
 * The member copy of a host Service: same name, in the member namespace, owned (`ctx`), with the user's labels and
 * annotations. Type ClusterIP whatever the host's (a NodePort or LoadBalancer Service is reached inside the member
 * through its cluster IP); headless stays headless. The cluster IP and the IP families are the member's: its
 * service range and stack need not be the host's.
 */
export function forgeMemberService(host: V1Service, ctx: MirrorContext): V1Service {
  const s = host.spec ?? {};
  const spec: V1ServiceSpec = compact({
    type: 'ClusterIP',
    clusterIP: isHeadless(host) ? 'None' : undefined,
    selector: { ...s.selector },
    ports: s.ports?.map(memberPort),
    publishNotReadyAddresses: s.publishNotReadyAddresses,
    sessionAffinity: s.sessionAffinity,
    sessionAffinityConfig: s.sessionAffinity === 'ClientIP' ? s.sessionAffinityConfig : undefined,
  });
  return { apiVersion: 'v1', kind: 'Service', metadata: mirroredMeta(host.metadata, ctx), spec };
}

/** What of a Service the copy is about, with the API server's defaults filled in, for comparison. */
function reflectedPart(svc: V1Service): unknown {
  const s = svc.spec ?? {};
  const affinity = s.sessionAffinity ?? 'None';
  return {
    labels: svc.metadata?.labels ?? {}, annotations: svc.metadata?.annotations ?? {},
    type: s.type ?? 'ClusterIP', headless: isHeadless(svc), selector: s.selector ?? {},
    ports: (s.ports ?? []).map((p) => ({ name: p.name ?? '', protocol: p.protocol ?? 'TCP', port: p.port,
      targetPort: p.targetPort ?? p.port, appProtocol: p.appProtocol ?? '' })),
    publishNotReadyAddresses: s.publishNotReadyAddresses ?? false, sessionAffinity: affinity,
    affinityTimeout: affinity === 'ClientIP' ? s.sessionAffinityConfig?.clientIP?.timeoutSeconds ?? DEFAULT_AFFINITY_TIMEOUT : 0,
  };
}

/** Whether an existing member Service already says what the desired copy says (what the member fills in aside). */
export function memberServiceMatches(desired: V1Service, actual: V1Service): boolean {
  return sortedJSON(reflectedPart(desired)) === sortedJSON(reflectedPart(actual));
}

/**
 * Whether the copy must be deleted and created again to become `desired`: headless ↔ ClusterIP, since a Service's
 * clusterIP cannot change (an update that leaves it out even keeps `None`).
 */
export function needsRecreate(desired: V1Service, actual: V1Service): boolean {
  return isHeadless(desired) !== isHeadless(actual);
}
