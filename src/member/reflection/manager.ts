// One member's reflection, as Liqo's reflection manager per remote cluster: the host → member mirror (ConfigMaps,
// Secrets, ServiceAccounts), the host → member Services (and their EndpointSlices with --reflect-host-endpoints),
// the member's ServiceExports of those copies, and the member → host exports; each a policy over reflectors of its
// own. Built from the member and the host as its reflectors see it (ReflectionHost, provider/reflection.ts): no
// host client here. One of the member's writers: it runs while this replica leads the member.
import type { MemberCluster } from '../cluster.ts';
import type { ReflectionHost } from '../../provider/reflection.ts';
import { ObjectMirror, mirrorTargets } from './mirror.ts';
import { ExportReflector, exportSides } from './export.ts';
import { ServiceReflector, endpointSliceTarget, serviceTarget } from './services.ts';
import { ServiceExporter, serviceExportApi } from './serviceexports.ts';
import type { Logger } from '../../log.ts';

export class MemberReflection {
  /** The host → member mirror: the pod provider has it copy what a delegate refers to before creating it. */
  readonly mirror: ObjectMirror;
  /** In start order; stopped in reverse. */
  #parts: { start(): void; stop(): void }[];

  constructor(cluster: MemberCluster, host: ReflectionHost, log: Logger) {
    const name = cluster.config.name;
    const mirror = this.mirror = new ObjectMirror(cluster, mirrorTargets(cluster, log), host.caches, log);
    const exporter = new ExportReflector(name, exportSides(cluster, host.exportTargets, log), host.exportConsent, log);
    const services = new ServiceReflector(cluster, serviceTarget(cluster, log), host.services, host.serviceWarning, log,
      { endpoints: host.endpointSlices && { hostSlices: host.endpointSlices, copies: endpointSliceTarget(cluster, log) } });
    // The member's ServiceExports follow the Service copies, which the ServiceReflector's store holds.
    const serviceExports = new ServiceExporter({ name, owner: cluster.owner }, services.copies, serviceExportApi(cluster, log), log);
    this.#parts = [mirror, services, serviceExports, exporter];
  }

  start(): void {
    for (const p of this.#parts) p.start();
  }

  stop(): void {
    for (const p of this.#parts.toReversed()) p.stop();
  }
}
