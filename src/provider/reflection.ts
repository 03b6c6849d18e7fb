// The seam between a member's reflectors (src/member/reflection/) and the host they reflect, as Liqo's reflection
// manager hands its reflectors listers: only the calls the reflectors make. The host's caches, one watch of each
// kind per process shared by every member (the ConfigMaps and Secrets delegates refer to, every Service and
// EndpointSlice, which namespaces accept exports), and one member's writes on the host (its exported copies,
// Warnings on host Services), which go through that member's fenced host client. Keys are host keys
// (`<host namespace>/<name>`). The host side implements it (src/host/reflection/); manager.ts hands it over.
import type { Observable } from 'rxjs';
import type { V1ConfigMap, V1EndpointSlice, V1Secret, V1Service } from '@kubernetes/client-node';
import type { Cache, StoreEvent } from '../kube/informer.ts';
import type { EventSubject } from '../kube/events.ts';
import type { Target } from '../kube/kinds.ts';

/** Host objects of one kind of which only those some member wants are kept: one watch, nothing unrelated held. */
export interface HostObjectCache<T> {
  /** Changes of wanted objects (ADDED includes an object appearing that was wanted while missing). */
  readonly events$: Observable<StoreEvent<T>>;
  /** Registers interest in a key: from now on it is kept and its changes are reported. */
  want(key: string): void;
  /** Withdraws one interest in a key; with the last one the object is no longer kept. */
  release(key: string): void;
  /** The object, from the cache or read from the API on a miss (and kept if wanted); undefined if it does not exist. */
  lookup(key: string): Promise<T | undefined>;
}

/** The host ConfigMaps and Secrets the mirror copies (service-account tokens are not among them). */
export interface HostCaches {
  configMaps: HostObjectCache<V1ConfigMap>;
  secrets: HostObjectCache<V1Secret>;
}

/** Writes a Warning about a host Service, as the virtual node's own event. */
export type ServiceWarning = (about: EventSubject, ev: { type: 'Warning'; reason: string; message: string }) => Promise<void>;

/** Which host namespaces accept exports from members. */
export interface ExportConsent {
  /** The names of host namespaces whose consent was given or withdrawn (or that came or went with it). */
  readonly changes$: Observable<string>;
  accepts(hostNamespace: string): boolean;
  waitSynced(): Promise<void>;
}

/** Where one member's exports go on the host, per kind: the host copies labelled with that member. */
export interface ExportTargets {
  ConfigMap: Target<V1ConfigMap>;
  Secret: Target<V1Secret>;
}

/** The host as one member's reflectors see it. */
export interface ReflectionHost {
  /** What the host → member mirror copies. */
  caches: HostCaches;
  /** Every host Service. */
  services: Cache<V1Service>;
  /** Every host EndpointSlice of a Service; only with --reflect-host-endpoints. */
  endpointSlices: Cache<V1EndpointSlice> | undefined;
  /** Warnings on host Services, as this member's virtual node. */
  serviceWarning: ServiceWarning;
  exportConsent: ExportConsent;
  /** This member's exported copies (the reflector starts and stops their store). */
  exportTargets: ExportTargets;
}
