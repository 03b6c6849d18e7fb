// A member's API as the member pod provider calls it: namespaces and pods in a FakeObjects (an Informer of its pods
// feeds the delegate index), member events in a FakeCollection whose LIST and WATCH the test drives by hand, every
// pod delete asked for, a pod's `resize` subresource, and errors to inject into the next call of a core method. As
// the API does, a pod or Secret cannot be created in a namespace that does not exist or is being deleted (one with a
// deletionTimestamp). Every call is recorded by method name, failed or not.
import type { CoreV1Event, V1Container, V1DeleteOptions, V1Namespace, V1Pod, V1Secret } from '@kubernetes/client-node';
import type { ClusterClient, RequestOptions } from '../../../src/kube/client.ts';
import { KubeError } from '../../../src/kube/errors.ts';
import type { ResizePatch } from '../../../src/forge/resize.ts';
import type { ListParams } from '../../../src/kube/listwatch.ts';
import { FakeObjects, labelled } from './objects.ts';
import { FakeCollection } from './listwatch.ts';
import { addEphemeralContainers, type EphemeralContainersPatch } from './ephemeral.ts';

/** A pod delete as asked for: the query's grace period and the body (its grace period and UID precondition). */
export interface PodDelete { namespace: string; name: string; gracePeriodSeconds?: number; body?: V1DeleteOptions }

type PodRef = { namespace: string; name: string };

/** A strategic merge patch of the `resize` subresource applied to `pod`: containers by name, a new generation. */
function resized(pod: V1Pod, patch: ResizePatch): V1Pod {
  const merge = (containers: V1Container[] | undefined, changes: V1Container[] | undefined) => {
    for (const change of changes ?? []) {
      const c = containers?.find((x) => x.name === change.name);
      if (!c) continue;
      c.resources = {
        requests: { ...c.resources?.requests, ...change.resources?.requests },
        limits: { ...c.resources?.limits, ...change.resources?.limits },
      };
    }
  };
  merge(pod.spec?.containers, patch.spec.containers);
  merge(pod.spec?.initContainers, patch.spec.initContainers);
  pod.metadata!.generation = (pod.metadata!.generation ?? 1) + 1;
  return pod;
}

export class FakeMember {
  readonly objects = new FakeObjects();
  readonly events = new FakeCollection<CoreV1Event>('member');
  readonly deletes: PodDelete[] = [];
  /** The core methods called, in order. */
  readonly calls: string[] = [];
  #failures = new Map<string, Error[]>();
  /** What the member's admission makes of a pod created (a dry run's answer); default: the pod as sent. */
  admit: (pod: V1Pod) => V1Pod = (pod) => pod;

  /** The next call of core method `method` (e.g. "createNamespacedPod") fails with `err`, doing nothing. */
  failNext(method: string, err: Error): void {
    this.#failures.set(method, [...this.#failures.get(method) ?? [], err]);
  }

  client(): ClusterClient {
    const o = this.objects;
    const core = {
      createNamespace: this.#guard('createNamespace', ({ body }: { body: V1Namespace }) => o.create('Namespace', '', body)),
      listNamespace: this.#guard('listNamespace', async ({ fieldSelector }: { fieldSelector?: string }) => {
        const name = /^metadata\.name=(.*)$/.exec(fieldSelector ?? '')?.[1];
        const ns = name === undefined ? undefined : o.get<V1Namespace>('Namespace', '', name);
        return { items: ns ? [ns] : [] };
      }),
      createNamespacedPod: this.#guard('createNamespacedPod', async ({ namespace, body, dryRun }: PodRef & { body: V1Pod; dryRun?: string },
        opts?: RequestOptions) => {
        this.#writable(namespace, 'pods', body.metadata?.name);
        // A dry run: the pod as admission makes it, nothing stored.
        if (dryRun === 'All') return this.admit(structuredClone(body));
        const created = await o.create<V1Pod>('Pod', namespace, body);
        // As the client: the version the create left, from its answer (its watch event went out first here).
        if (opts?.discard) opts.onVersion?.(created.metadata!.resourceVersion!);
        return created;
      }),
      readNamespacedPod: this.#guard('readNamespacedPod', ({ namespace, name }: PodRef) => o.read<V1Pod>('Pod', namespace, name)),
      replaceNamespacedPod: this.#guard('replaceNamespacedPod',
        ({ namespace, name, body }: PodRef & { body: V1Pod }) => o.replace('Pod', namespace, name, body)),
      patchNamespacedPodResize: this.#guard('patchNamespacedPodResize',
        async ({ namespace, name, body }: PodRef & { body: ResizePatch }) => o.put('Pod', resized(await o.read<V1Pod>('Pod', namespace, name), body))),
      deleteNamespacedPod: this.#guard('deleteNamespacedPod', async (d: PodDelete) => {
        this.deletes.push(structuredClone(d));
        await o.delete('Pod', d.namespace, d.name, d.body?.preconditions?.uid);
        return {};
      }),
      patchNamespacedPodEphemeralcontainers: this.#guard('patchNamespacedPodEphemeralcontainers',
        async ({ namespace, name, body }: PodRef & { body: EphemeralContainersPatch }) => addEphemeralContainers(o, namespace, name, body)),
      listEventForAllNamespaces: this.#guard('listEventForAllNamespaces', (p: ListParams) => this.events.spec().list(p)),
      createNamespacedSecret: this.#guard('createNamespacedSecret', async ({ namespace, body }: { namespace: string; body: V1Secret }) => {
        this.#writable(namespace, 'secrets', body.metadata?.name);
        return o.create('Secret', namespace, body);
      }),
      readNamespacedSecret: this.#guard('readNamespacedSecret', ({ namespace, name }: PodRef) => o.read<V1Secret>('Secret', namespace, name)),
      replaceNamespacedSecret: this.#guard('replaceNamespacedSecret',
        ({ namespace, name, body }: PodRef & { body: V1Secret }) => o.replace('Secret', namespace, name, body)),
      deleteNamespacedSecret: this.#guard('deleteNamespacedSecret', async ({ namespace, name }: PodRef) => {
        await o.delete('Secret', namespace, name);
        return {};
      }),
      listSecretForAllNamespaces: this.#guard('listSecretForAllNamespaces', async ({ labelSelector }: { labelSelector?: string }) =>
        ({ metadata: {}, items: o.list<V1Secret>('Secret').filter(labelled(labelSelector ?? '')) })),
    };
    return { name: 'member', core, watch: this.events.client().watch } as unknown as ClusterClient;
  }

  /** As the API answers a create in a namespace that is not there, or is being deleted. */
  #writable(namespace: string, resource: string, name: string | undefined): void {
    const ns = this.objects.get<V1Namespace>('Namespace', '', namespace);
    if (!ns) throw new KubeError('NotFound', 404, 'NotFound', `namespaces "${namespace}" not found`);
    if (ns.metadata?.deletionTimestamp) {
      throw new KubeError('Forbidden', 403, 'Forbidden', `${resource} "${name}" is forbidden: unable to create new content in `
        + `namespace ${namespace} because it is being terminated`);
    }
  }

  #guard<P, R>(method: string, call: (p: P, opts?: RequestOptions) => Promise<R>): (p: P, opts?: RequestOptions) => Promise<R> {
    return async (p, opts) => {
      this.calls.push(method);
      const err = this.#failures.get(method)?.shift();
      if (err) throw err;
      return call(p, opts);
    };
  }
}
