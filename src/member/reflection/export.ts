// Member → host reflection (opt-in on both sides): ConfigMaps and Secrets that workloads create in an offloaded
// member namespace with the label clusterlet.io/export=true appear in the matching host namespace, follow their
// updates, and go when they go — if that host namespace accepts exports (ExportConsent). A host object of that
// name that clusterlet did not create is never touched.
import { filter, map, type Observable, type Subscription } from 'rxjs';
import type { KubernetesObject, V1ConfigMap, V1Namespace, V1Secret } from '@kubernetes/client-node';
import type { MemberCluster } from '../cluster.ts';
import type { ClusterClient } from '../../kube/client.ts';
import { Informer, splitKey } from '../../kube/informer.ts';
import { listWatch } from '../../kube/listwatch.ts';
import { ignoreGone, toKubeError } from '../../kube/errors.ts';
import { WorkQueue } from '../../util/workqueue.ts';
import {
  ACCEPT_EXPORTS_ANNOTATION, EXPORT_LABEL, MEMBER_LABEL, ORIGIN_LABEL, PROXY_NAMESPACE_ANNOTATION,
} from '../../forge/keys.ts';
import { forgeExported, mirrorMatches } from '../../forge/refs.ts';
import { EXPORTED_FROM_ANNOTATION } from '../../forge/keys.ts';
import type { Logger } from '../../log.ts';

type Exported = V1ConfigMap | V1Secret;
type Kind = 'ConfigMap' | 'Secret';
const KINDS = ['ConfigMap', 'Secret'] as const;

/**
 * Whether a host namespace accepts exports: it exists, is not being deleted, and is named in the allow-list
 * or annotated clusterlet.io/accept-exports: "true". Without either, members cannot write into it.
 */
export function exportAllowed(namespace: V1Namespace | undefined, allowList: ReadonlySet<string>): boolean {
  const meta = namespace?.metadata;
  if (!meta?.name || meta.deletionTimestamp) return false;
  return allowList.has(meta.name) || meta.annotations?.[ACCEPT_EXPORTS_ANNOTATION] === 'true';
}

/**
 * Which host namespaces accept exports (exportAllowed), from one watch of the host's namespaces that every
 * member's ExportReflector shares; its owner starts and stops it.
 */
export class ExportConsent {
  #namespaces: Informer<V1Namespace>;
  #allow: ReadonlySet<string>;
  #changes: Observable<string>;

  constructor(host: ClusterClient, allowList: readonly string[], log: Logger) {
    const allow = new Set(allowList);
    this.#allow = allow;
    this.#namespaces = new Informer('host-namespaces', listWatch<V1Namespace>(host, {
      path: '/api/v1/namespaces', model: 'V1Namespace', resource: 'namespaces', list: (p) => host.core.listNamespace(p),
    }, { log }));
    this.#changes = this.#namespaces.events$.pipe(
      filter((ev) => exportAllowed(ev.old, allow) !== (ev.type !== 'DELETED' && exportAllowed(ev.object, allow))),
      map((ev) => ev.key),
    );
  }

  /** The names of host namespaces whose consent was given or withdrawn (or that came or went with it). */
  get changes$(): Observable<string> { return this.#changes; }
  get hasSynced(): boolean { return this.#namespaces.hasSynced; }
  waitSynced(): Promise<void> { return this.#namespaces.waitSynced(); }
  accepts(hostNamespace: string): boolean { return exportAllowed(this.#namespaces.get(hostNamespace), this.#allow); }
  start(): void { this.#namespaces.start(); }
  stop(): void { this.#namespaces.stop(); }
}

interface Ops {
  member: Informer<Exported>;
  host: Informer<Exported>;
  create(ns: string, body: Exported): Promise<unknown>;
  replace(ns: string, name: string, body: Exported): Promise<unknown>;
  remove(ns: string, name: string, uid: string): Promise<unknown>;
}

export class ExportReflector {
  #member: MemberCluster;
  #log: Logger;
  #consent: ExportConsent;
  #namespaces: Informer<V1Namespace>;
  #ops: Record<Kind, Ops>;
  #queue: WorkQueue;
  #subs: Subscription[] = [];
  /** Keys refused for want of consent and logged once; forgotten when exported or gone. */
  #refused = new Set<string>();

  constructor(member: MemberCluster, host: ClusterClient, consent: ExportConsent, log: Logger) {
    this.#member = member;
    this.#log = log;
    this.#consent = consent;
    const m = member.client;
    const name = member.config.name;
    const informer = <T extends Exported>(c: ClusterClient, resource: string, model: string, labelSelector: string,
      list: (p: { labelSelector?: string; limit: number; _continue?: string }) => Promise<{ items: T[] }>) =>
      new Informer<Exported>(`${c.name}-export-${resource}`, listWatch<Exported>(c, {
        path: `/api/v1/${resource}`, model, resource, labelSelector, list: list as never,
      }, { log }));
    const exported = `${EXPORT_LABEL}=true,!${ORIGIN_LABEL}`;
    const copies = `${MEMBER_LABEL}=${name}`;
    const pre = (uid: string) => ({ preconditions: { uid } });
    this.#ops = {
      ConfigMap: {
        member: informer(m, 'configmaps', 'V1ConfigMap', exported, (p) => m.core.listConfigMapForAllNamespaces(p)),
        host: informer(host, 'configmaps', 'V1ConfigMap', copies, (p) => host.core.listConfigMapForAllNamespaces(p)),
        create: (ns, body) => host.core.createNamespacedConfigMap({ namespace: ns, body: body as V1ConfigMap }),
        replace: (ns, n, body) => host.core.replaceNamespacedConfigMap({ namespace: ns, name: n, body: body as V1ConfigMap }),
        remove: (ns, n, uid) => host.core.deleteNamespacedConfigMap({ namespace: ns, name: n, body: pre(uid) }),
      },
      Secret: {
        member: informer(m, 'secrets', 'V1Secret', exported, (p) => m.core.listSecretForAllNamespaces(p)),
        host: informer(host, 'secrets', 'V1Secret', copies, (p) => host.core.listSecretForAllNamespaces(p)),
        create: (ns, body) => host.core.createNamespacedSecret({ namespace: ns, body: body as V1Secret }),
        replace: (ns, n, body) => host.core.replaceNamespacedSecret({ namespace: ns, name: n, body: body as V1Secret }),
        remove: (ns, n, uid) => host.core.deleteNamespacedSecret({ namespace: ns, name: n, body: pre(uid) }),
      },
    };
    // Offloaded member namespaces: the ones clusterlet created, which name their host namespace.
    this.#namespaces = new Informer('member-namespaces', listWatch<V1Namespace>(m, {
      path: '/api/v1/namespaces', model: 'V1Namespace', resource: 'namespaces', labelSelector: `${ORIGIN_LABEL}=${member.hostName}`,
      list: (p) => m.core.listNamespace(p),
    }, { log }));
    this.#queue = new WorkQueue({ name: `export-${name}`, workers: 2, log, maxDelayMs: 30_000 });
  }

  start(): void {
    this.#namespaces.start();
    for (const k of KINDS) {
      this.#ops[k].member.start();
      this.#ops[k].host.start();
    }
    this.#queue.start((key) => this.#sync(key));
    for (const kind of KINDS) {
      const o = this.#ops[kind];
      this.#subs.push(
        o.member.events$.subscribe((ev) => this.#queue.add(`${kind}/${ev.key}`)),
        // A host copy changed or deleted by someone: bring it back in line with its member object.
        o.host.events$.subscribe((ev) => this.#addCopy(kind, ev.object)),
      );
    }
    this.#subs.push(
      this.#namespaces.events$.subscribe((ev) => this.#addMemberNamespace(ev.object.metadata!.name!)),
      // Consent given or withdrawn: export into that host namespace now, or remove what was exported there.
      this.#consent.changes$.subscribe((hostNs) => {
        for (const ns of this.#namespaces.list()) {
          if (ns.metadata?.annotations?.[PROXY_NAMESPACE_ANNOTATION] === hostNs) this.#addMemberNamespace(ns.metadata.name!);
        }
        for (const kind of KINDS) {
          for (const c of this.#ops[kind].host.list()) if (c.metadata?.namespace === hostNs) this.#addCopy(kind, c);
        }
      }),
    );
    // #sync skips keys until every cache has synced: go over everything once they have.
    const caches = [this.#namespaces, ...KINDS.flatMap((k) => [this.#ops[k].member, this.#ops[k].host])];
    void Promise.all([this.#consent.waitSynced(), ...caches.map((c) => c.waitSynced())]).then(() => {
      for (const kind of KINDS) {
        for (const k of this.#ops[kind].member.keys()) this.#queue.add(`${kind}/${k}`);
        for (const c of this.#ops[kind].host.list()) this.#addCopy(kind, c);
      }
    });
  }

  /** Every member object of a member namespace. */
  #addMemberNamespace(memberNs: string): void {
    for (const kind of KINDS) {
      for (const k of this.#ops[kind].member.keys()) if (k.startsWith(`${memberNs}/`)) this.#queue.add(`${kind}/${k}`);
    }
  }

  /** The member key of a host copy, from its exported-from annotation. */
  #addCopy(kind: Kind, copy: KubernetesObject): void {
    const memberNs = copy.metadata?.annotations?.[EXPORTED_FROM_ANNOTATION]?.split('/')[1];
    if (memberNs) this.#queue.add(`${kind}/${memberNs}/${copy.metadata!.name}`);
  }

  stop(): void {
    for (const s of this.#subs.splice(0)) s.unsubscribe();
    this.#queue.shutdown();
    this.#namespaces.stop();
    for (const k of KINDS) {
      this.#ops[k].member.stop();
      this.#ops[k].host.stop();
    }
  }

  async #sync(key: string): Promise<void> {
    const kind = key.slice(0, key.indexOf('/')) as Kind;
    const memberKey = key.slice(kind.length + 1);
    const o = this.#ops[kind];
    if (!o.member.hasSynced || !o.host.hasSynced || !this.#namespaces.hasSynced || !this.#consent.hasSynced) return;
    const { namespace: memberNs, name } = splitKey(memberKey);
    const hostNs = this.#namespaces.get(memberNs)?.metadata?.annotations?.[PROXY_NAMESPACE_ANNOTATION];
    const source = o.member.get(memberKey);
    const copyKey = hostNs ? `${hostNs}/${name}` : undefined;
    const copy = copyKey ? o.host.get(copyKey) : this.#findCopy(o, memberNs, name);
    const live = source && hostNs && !source.metadata?.deletionTimestamp;
    const wanted = live && this.#consent.accepts(hostNs);
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
        await o.remove(copy.metadata!.namespace!, name, copy.metadata!.uid!).catch(ignoreGone);
        this.#log.debug({ kind, namespace: copy.metadata!.namespace, name }, 'removed an exported copy');
      }
      return;
    }
    const desired = forgeExported(source, { member: this.#member.config.name, hostNamespace: hostNs, memberNamespace: memberNs });
    if (!copy) {
      try {
        await o.create(hostNs, desired);
        this.#log.debug({ kind, namespace: hostNs, name }, 'exported to the host');
      } catch (err) {
        const k = toKubeError(err);
        if (k.kind === 'AlreadyExists') {
          this.#log.warn({ kind, namespace: hostNs, name },
            'not exported: an object of that name exists in the host namespace and was not created by clusterlet');
          return;
        }
        if (k.kind === 'NotFound') return; // the host namespace is gone
        throw k;
      }
      return;
    }
    if (mirrorMatches(desired, copy)) return;
    await o.replace(hostNs, name, { ...desired, metadata: { ...desired.metadata, resourceVersion: copy.metadata?.resourceVersion } } as Exported);
  }

  #findCopy(o: Ops, memberNs: string, name: string): KubernetesObject | undefined {
    return o.host.list().find((c) => c.metadata?.name === name
      && c.metadata?.annotations?.[EXPORTED_FROM_ANNOTATION] === `${this.#member.config.name}/${memberNs}`);
  }
}
