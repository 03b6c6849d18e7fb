// The host half of member → host exports: which host namespaces accept them (one watch of the host's namespaces
// that every member's ExportReflector shares), and where one member's exported copies go on the host.
import { filter, map, type Observable } from 'rxjs';
import type { V1Namespace } from '@kubernetes/client-node';
import type { ClusterClient } from '../../kube/client.ts';
import type { Informer } from '../../kube/informer.ts';
import { target } from '../../kube/kinds.ts';
import { ACCEPT_EXPORTS_ANNOTATION, MEMBER_LABEL } from '../../forge/keys.ts';
import type { ExportConsent, ExportTargets } from '../../provider/reflection.ts';
import type { Logger } from '../../log.ts';

/**
 * Whether a host namespace accepts exports: it exists, is not being deleted, and is named in the allow-list
 * or annotated clusterlet.io/accept-exports: "true". Without either, members cannot write into it.
 */
export function exportAllowed(namespace: V1Namespace | undefined, allowList: ReadonlySet<string>): boolean {
  const meta = namespace?.metadata;
  if (!meta?.name || meta.deletionTimestamp) return false;
  return allowList.has(meta.name) || meta.annotations?.[ACCEPT_EXPORTS_ANNOTATION] === 'true';
}

/** Which host namespaces accept exports (exportAllowed), from the host's namespaces; its owner starts and stops it. */
export class HostExportConsent implements ExportConsent {
  #namespaces: Informer<V1Namespace>;
  #allow: ReadonlySet<string>;
  #changes: Observable<string>;

  constructor(hostNamespaces: Informer<V1Namespace>, allowList: readonly string[]) {
    const allow = new Set(allowList);
    this.#allow = allow;
    this.#namespaces = hostNamespaces;
    this.#changes = this.#namespaces.events$.pipe(
      filter((ev) => exportAllowed(ev.old, allow) !== (ev.type !== 'DELETED' && exportAllowed(ev.object, allow))),
      map((ev) => ev.key),
    );
  }

  /** The names of host namespaces whose consent was given or withdrawn (or that came or went with it). */
  get changes$(): Observable<string> { return this.#changes; }
  waitSynced(): Promise<void> { return this.#namespaces.waitSynced(); }
  accepts(hostNamespace: string): boolean { return exportAllowed(this.#namespaces.get(hostNamespace), this.#allow); }
  start(): void { this.#namespaces.start(); }
  stop(): void { this.#namespaces.stop(); }
}

/** The host copies of member `member`'s exports, written through `host` (the member's fenced host client). */
export function exportTargets(host: ClusterClient, member: string, log: Logger): ExportTargets {
  const copies = `${MEMBER_LABEL}=${member}`;
  return { ConfigMap: target(host, 'ConfigMap', copies, log), Secret: target(host, 'Secret', copies, log) };
}
