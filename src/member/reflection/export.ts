// Member → host reflection (opt-in on both sides): ConfigMaps and Secrets that workloads create in an offloaded
// member namespace with the label clusterlet.io/export=true appear in the matching host namespace, follow their
// updates, and go when they go — if that host namespace accepts exports (ExportConsent). A host object of that
// name that clusterlet did not create is never touched. A policy over one Reflector per kind, keyed by member
// object (`<memberNamespace>/<name>`). The host's half (the consent, where the copies go) is the member's
// ReflectionHost (provider/reflection.ts).
import type { Subscription } from 'rxjs';
import type { KubernetesObject, V1ConfigMap, V1Namespace, V1Secret } from '@kubernetes/client-node';
import type { MemberCluster } from '../cluster.ts';
import { Informer, splitKey } from '../../kube/informer.ts';
import { namespaceInformer, watchKind, type ObjectOf, type Target } from '../../kube/kinds.ts';
import { toKubeError } from '../../kube/errors.ts';
import {
  ACCEPT_EXPORTS_ANNOTATION, EXPORTED_FROM_ANNOTATION, EXPORT_LABEL, MEMBER_LABEL, ORIGIN_LABEL, PROXY_NAMESPACE_ANNOTATION,
} from '../../forge/keys.ts';
import { forgeExported, mirrorMatches } from '../../forge/refs.ts';
import { nameOf } from '../../forge/meta.ts';
import type { ExportConsent, ExportTargets } from '../../provider/reflection.ts';
import { Reflector, type Applied } from './reflector.ts';
import type { Logger } from '../../log.ts';

type Exported = V1ConfigMap | V1Secret;
type Kind = 'ConfigMap' | 'Secret';
const KINDS = ['ConfigMap', 'Secret'] as const;

/** The member key of a host copy, from its exported-from annotation (`<member>/<member namespace>`). */
function memberKeyOf(copy: KubernetesObject): string | undefined {
  const memberNs = copy.metadata?.annotations?.[EXPORTED_FROM_ANNOTATION]?.split('/')[1];
  return memberNs ? `${memberNs}/${copy.metadata?.name}` : undefined;
}

/** What an exporter reads and writes. */
export interface ExportSides {
  /** Member objects labelled for export (not copies of host objects), per kind. */
  sources: { [K in Kind]: Informer<ObjectOf<K>> };
  /** The host copies, labelled for this member, per kind. */
  targets: ExportTargets;
  /** Offloaded member namespaces: the ones clusterlet created, which name their host namespace. */
  namespaces: Informer<V1Namespace>;
}

/** The member's sides (its labelled objects, its offloaded namespaces), and the host copies in `targets`. */
export function exportSides(member: MemberCluster, targets: ExportTargets, log: Logger): ExportSides {
  const m = member.client;
  const exported = { labelSelector: `${EXPORT_LABEL}=true,!${ORIGIN_LABEL}` };
  return {
    sources: {
      ConfigMap: new Informer(`${m.name}-export-configmaps`, watchKind(m, 'ConfigMap', exported, log)),
      Secret: new Informer(`${m.name}-export-secrets`, watchKind(m, 'Secret', exported, log)),
    },
    targets,
    namespaces: namespaceInformer(m, 'member-namespaces', `${ORIGIN_LABEL}=${member.hostName}`, log),
  };
}

export class ExportReflector {
  #member: string;
  #log: Logger;
  #consent: ExportConsent;
  #sources: Record<Kind, Informer<Exported>>;
  #namespaces: Informer<V1Namespace>;
  #reflectors: Record<Kind, Reflector<Exported>>;
  #subs: Subscription[] = [];
  /** Keys refused for want of consent and logged once; forgotten when exported or gone. */
  #refused = new Set<string>();

  /** `member`: the member's name, which labels its copies. */
  constructor(member: string, sides: ExportSides, consent: ExportConsent, log: Logger) {
    this.#member = member;
    this.#log = log;
    this.#consent = consent;
    this.#sources = sides.sources as Record<Kind, Informer<Exported>>;
    this.#namespaces = sides.namespaces;
    // Copies labelled for this member follow their member object; any other host object is not touched.
    const copies = { ours: (o: Exported) => o.metadata?.labels?.[MEMBER_LABEL] === member, matches: mirrorMatches };
    const reflector = (kind: Kind): Reflector<Exported> => new Reflector<Exported>({
      name: `export-${kind.toLowerCase()}-${member}`, workers: 2, target: sides.targets[kind] as Target<Exported>, update: copies,
      sync: (key) => this.#sync(kind, key), log, metrics: { member, kind, direction: 'to-host', counts: () => true },
      // A host copy changed or deleted by someone: brought back in line with its member object.
      keyOf: memberKeyOf, reads: [this.#sources[kind], this.#namespaces, consent], startKeys: () => this.#sources[kind].keys(),
    });
    this.#reflectors = { ConfigMap: reflector('ConfigMap'), Secret: reflector('Secret') };
  }

  start(): void {
    this.#namespaces.start();
    for (const k of KINDS) {
      this.#sources[k].start();
      this.#reflectors[k].start();
      this.#subs.push(this.#sources[k].events$.subscribe((ev) => this.#reflectors[k].add(ev.key)));
    }
    this.#subs.push(
      this.#namespaces.events$.subscribe((ev) => this.#addMemberNamespace(nameOf(ev.object))),
      // Consent given or withdrawn: export into that host namespace now, or remove what was exported there.
      this.#consent.changes$.subscribe((hostNs) => {
        for (const ns of this.#namespaces.list()) {
          if (ns.metadata?.annotations?.[PROXY_NAMESPACE_ANNOTATION] === hostNs) this.#addMemberNamespace(nameOf(ns));
        }
        for (const kind of KINDS) {
          for (const c of this.#reflectors[kind].store.list()) if (c.metadata?.namespace === hostNs) this.#addCopy(kind, c);
        }
      }),
    );
  }

  /** Every member object of a member namespace. */
  #addMemberNamespace(memberNs: string): void {
    for (const kind of KINDS) {
      for (const k of this.#sources[kind].keys()) if (k.startsWith(`${memberNs}/`)) this.#reflectors[kind].add(k);
    }
  }

  /** The member object of a host copy. */
  #addCopy(kind: Kind, copy: KubernetesObject): void {
    const key = memberKeyOf(copy);
    if (key) this.#reflectors[kind].add(key);
  }

  stop(): void {
    for (const s of this.#subs.splice(0)) s.unsubscribe();
    this.#namespaces.stop();
    for (const k of KINDS) {
      this.#reflectors[k].stop();
      this.#sources[k].stop();
    }
  }

  async #sync(kind: Kind, memberKey: string): Promise<void> {
    const source = this.#sources[kind];
    const reflector = this.#reflectors[kind];
    const { namespace: memberNs, name } = splitKey(memberKey);
    const hostNs = this.#namespaces.get(memberNs)?.metadata?.annotations?.[PROXY_NAMESPACE_ANNOTATION];
    const object = source.get(memberKey);
    const copy = hostNs ? reflector.store.get(`${hostNs}/${name}`) : this.#findCopy(reflector, memberNs, name);
    const live = object && hostNs && !object.metadata?.deletionTimestamp;
    const wanted = live && this.#consent.accepts(hostNs);
    const key = `${kind}/${memberKey}`;
    if (live && !wanted) {
      // Not retried: a change of the host namespace's consent enqueues this key again.
      if (!this.#refused.has(key)) {
        this.#refused.add(key);
        this.#log.info({ kind, namespace: memberNs, name, hostNamespace: hostNs },
          `not exported: the host namespace does not accept exports (annotation ${ACCEPT_EXPORTS_ANNOTATION}="true" or --export-namespaces)`);
      }
    } else {
      this.#refused.delete(key);
    }
    if (!wanted) {
      if (copy) {
        await reflector.remove(copy);
        this.#log.debug({ kind, namespace: copy.metadata?.namespace, name }, 'removed an exported copy');
      }
      return;
    }
    const desired = forgeExported(object, { member: this.#member, hostNamespace: hostNs, memberNamespace: memberNs });
    let applied: Applied;
    try {
      applied = await reflector.apply(hostNs, name, () => desired);
    } catch (err) {
      if (toKubeError(err).kind === 'NotFound') return; // the host namespace is gone
      throw err;
    }
    if (applied === 'conflict') {
      this.#log.warn({ kind, namespace: hostNs, name },
        'not exported: an object of that name exists in the host namespace and was not created by clusterlet');
    }
    if (applied === 'created') this.#log.debug({ kind, namespace: hostNs, name }, 'exported to the host');
  }

  #findCopy(reflector: Reflector<Exported>, memberNs: string, name: string): Exported | undefined {
    return reflector.store.list().find((c) => c.metadata?.name === name
      && c.metadata?.annotations?.[EXPORTED_FROM_ANNOTATION] === `${this.#member}/${memberNs}`);
  }
}
