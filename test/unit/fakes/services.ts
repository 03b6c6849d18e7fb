// Service reflection over fake host and member APIs: a virtual node's ServiceReflector with its member pods and
// delegate index, started in the order the fakes need, and its delegates put in the member as the provider makes them.
import type { V1Pod, V1Service } from '@kubernetes/client-node';
import { ServiceReflector, type ServiceReflectorOptions } from '../../../src/member/reflection/services.ts';
import type { ServiceWarning } from '../../../src/provider/reflection.ts';
import { DelegateIndex } from '../../../src/member/delegates.ts';
import { forgeDelegatePod } from '../../../src/forge/pod.ts';
import type { Informer } from '../../../src/kube/informer.ts';
import { createLogger } from '../../../src/log.ts';
import { labelled, type FakeObjects } from './objects.ts';

export const HOST = 'host-1';
export const NS = 'shop';
/** The member namespace of NS: the mapping is not the identity, so a copy in the host's namespace would show. */
export const MNS = 'm1-shop';
/** Member m1's namespace mapping. */
const MAPPING = { template: 'm1-{namespace}', overrides: {} };

export const silent = createLogger('silent');

/** Virtual node `nodeName`'s delegate of the host pod NS/`name` with `labels`, put in the member's MNS. */
export function putDelegate(member: FakeObjects, nodeName: string, name: string, labels: Record<string, string>): V1Pod {
  return member.put('Pod', forgeDelegatePod(
    { metadata: { namespace: NS, name, uid: `uid-${name}`, labels }, spec: { containers: [{ name: 'app', image: 'app:1' }] } },
    { hostName: HOST, nodeName, memberNamespace: MNS }));
}

export interface ServiceNodeOptions extends ServiceReflectorOptions {
  warn?: ServiceWarning;
  /** The test starts the member pods (`startPods`): the reflector meets them unsynced. */
  podsLater?: boolean;
}

/** Virtual node `nodeName`'s ServiceReflector in member m1 (copies labelled with HOST's origin), started; `stop` ends it all. */
export function startServiceNode(member: FakeObjects, hostServices: Informer<V1Service>, nodeName: string, opts: ServiceNodeOptions = {}) {
  const owner = { hostName: HOST, node: nodeName };
  const pods = member.informer<V1Pod>('Pod');
  const delegates = new DelegateIndex(pods, owner);
  const r = new ServiceReflector({ pods, delegates, owner, config: { name: 'm1', namespaceMapping: MAPPING } },
    member.target('Service', labelled(`clusterlet.io/origin=${HOST}`)), hostServices, opts.warn ?? (async () => undefined), silent, opts);
  // The fake lists at once when an informer starts: everything that indexes the pods subscribes first.
  delegates.start();
  r.start();
  const startPods = (): void => { pods.start(); };
  if (!opts.podsLater) startPods();
  return { r, owner, startPods, stop: (): void => { r.stop(); delegates.stop(); pods.stop(); } };
}
