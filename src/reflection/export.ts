// Member → host reflection (opt-in): ConfigMaps and Secrets that workloads create in an offloaded member
// namespace with the label clusterlet.io/export=true appear in the matching host namespace, follow their
// updates, and go when they go. A host object of that name that clusterlet did not create is never touched.
import type { Subscription } from 'rxjs';
import type { KubernetesObject, V1ConfigMap, V1Namespace, V1Secret } from '@kubernetes/client-node';
import type { MemberCluster } from '../member/cluster.ts';
import type { ClusterClient } from '../kube/client.ts';
import { Informer, splitKey } from '../kube/informer.ts';
import { listWatch } from '../kube/listwatch.ts';
import { ignoreGone, toKubeError } from '../kube/errors.ts';
import { WorkQueue } from '../util/workqueue.ts';
import { EXPORT_LABEL, MEMBER_LABEL, ORIGIN_LABEL, PROXY_NAMESPACE_ANNOTATION } from '../forge/labels.ts';
import { EXPORTED_FROM_ANNOTATION, forgeExported, mirrorMatches } from '../forge/refs.ts';
import type { Logger } from '../log.ts';

type Exported = V1ConfigMap | V1Secret;
type Kind = 'ConfigMap' | 'Secret';

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
  #namespaces: Informer<V1Namespace>;
  #ops: Record<Kind, Ops>;
  #queue: WorkQueue;
  #subs: Subscription[] = [];

  constructor(member: MemberCluster, host: ClusterClient, log: Logger) {
    this.#member = member;
    this.#log = log;
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
    for (const k of ['ConfigMap', 'Secret'] as const) {
      this.#ops[k].member.start();
      this.#ops[k].host.start();
    }
    this.#queue.start((key) => this.#sync(key));
    for (const kind of ['ConfigMap', 'Secret'] as const) {
      const o = this.#ops[kind];
      this.#subs.push(
        o.member.events$.subscribe((ev) => this.#queue.add(`${kind}/${ev.key}`)),
        // A host copy changed or deleted by someone: bring it back in line with its member object.
        o.host.events$.subscribe((ev) => {
          const from = ev.object.metadata?.annotations?.[EXPORTED_FROM_ANNOTATION];
          const memberNs = from?.split('/')[1];
          if (memberNs) this.#queue.add(`${kind}/${memberNs}/${ev.object.metadata!.name}`);
        }),
      );
    }
    this.#subs.push(this.#namespaces.events$.subscribe((ev) => {
      for (const kind of ['ConfigMap', 'Secret'] as const) {
        for (const k of this.#ops[kind].member.keys()) if (k.startsWith(`${ev.object.metadata!.name}/`)) this.#queue.add(`${kind}/${k}`);
      }
    }));
  }

  stop(): void {
    for (const s of this.#subs.splice(0)) s.unsubscribe();
    this.#queue.shutdown();
    this.#namespaces.stop();
    for (const k of ['ConfigMap', 'Secret'] as const) {
      this.#ops[k].member.stop();
      this.#ops[k].host.stop();
    }
  }

  async #sync(key: string): Promise<void> {
    const kind = key.slice(0, key.indexOf('/')) as Kind;
    const memberKey = key.slice(kind.length + 1);
    const o = this.#ops[kind];
    if (!o.member.hasSynced || !o.host.hasSynced || !this.#namespaces.hasSynced) return;
    const { namespace: memberNs, name } = splitKey(memberKey);
    const hostNs = this.#namespaces.get(memberNs)?.metadata?.annotations?.[PROXY_NAMESPACE_ANNOTATION];
    const source = o.member.get(memberKey);
    const copyKey = hostNs ? `${hostNs}/${name}` : undefined;
    const copy = copyKey ? o.host.get(copyKey) : this.#findCopy(o, memberNs, name);
    const wanted = source && hostNs && !source.metadata?.deletionTimestamp;
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
