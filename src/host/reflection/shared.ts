// The host half of reflection in one process: the host watches every member's reflectors share, one of each
// however many members there are (the ConfigMaps and Secrets delegates refer to, every Service, every EndpointSlice
// of a Service with --reflect-host-endpoints, and the namespaces that say which accept exports), and for each member
// the ReflectionHost (provider/reflection.ts) its reflectors see: those caches, and its writes on the host through
// its own fenced host client.
import type { V1ConfigMap, V1EndpointSlice, V1Secret, V1Service } from '@kubernetes/client-node';
import type { ClusterClient } from '../../kube/client.ts';
import type { Informer } from '../../kube/informer.ts';
import { namespaceInformer } from '../../kube/kinds.ts';
import type { ReflectionHost } from '../../provider/reflection.ts';
import { HostObjects, hostObjects } from './caches.ts';
import { HostExportConsent, exportTargets } from './exports.ts';
import { hostEndpointSlices, hostServiceWarnings, hostServices } from './services.ts';
import type { Logger } from '../../log.ts';

export interface SharedReflectionOptions {
  /** Host namespaces that accept exports without their annotation (--export-namespaces). */
  exportNamespaces: readonly string[];
  /** Watch the host's EndpointSlices for the members' copies (--reflect-host-endpoints). */
  endpoints: boolean;
}

export class SharedReflection {
  /** Referenced host ConfigMaps and Secrets. */
  readonly configMaps: HostObjects<V1ConfigMap>;
  readonly secrets: HostObjects<V1Secret>;
  /** Which host namespaces accept exports. */
  readonly consent: HostExportConsent;
  readonly services: Informer<V1Service>;
  readonly endpointSlices: Informer<V1EndpointSlice> | undefined;
  /** Every watch above, in start order. */
  #watches: { start(): void; stop(): void }[];

  /** `host`: the process's host client (the shared watches are no member's writes). */
  constructor(host: ClusterClient, opts: SharedReflectionOptions, log: Logger) {
    this.configMaps = hostObjects(host, 'ConfigMap', {}, log);
    // Service-account tokens are host credentials, never mirrored: not even watched.
    this.secrets = hostObjects(host, 'Secret', { fieldSelector: 'type!=kubernetes.io/service-account-token' }, log);
    this.consent = new HostExportConsent(namespaceInformer(host, 'host-namespaces', undefined, log), opts.exportNamespaces);
    this.services = hostServices(host, log);
    this.endpointSlices = opts.endpoints ? hostEndpointSlices(host, log) : undefined;
    this.#watches = [this.configMaps, this.secrets, this.services, ...this.endpointSlices ? [this.endpointSlices] : [], this.consent];
  }

  start(): void {
    for (const w of this.#watches) w.start();
  }

  stop(): void {
    for (const w of this.#watches) w.stop();
  }

  /**
   * What member `member`'s reflectors see of the host: the shared caches, and writes through `writer` (the member's
   * host client, fenced by its leadership) as its virtual node `nodeName`.
   */
  forMember(writer: ClusterClient, member: { name: string; nodeName: string }, log: Logger): ReflectionHost {
    return {
      caches: { configMaps: this.configMaps, secrets: this.secrets },
      services: this.services,
      endpointSlices: this.endpointSlices,
      serviceWarning: hostServiceWarnings(writer, member.nodeName),
      exportConsent: this.consent,
      exportTargets: exportTargets(writer, member.name, log),
    };
  }
}
