// A member and a host over fakes, with the member pod provider of one virtual node on them, its caches started and
// stopped with the test (`stops`): what the provider's and the per-node views' tests share.
import { Subject } from 'rxjs';
import type { V1Pod } from '@kubernetes/client-node';
import { MemberPodProvider, type FitGate, type MemberPodProviderOptions, type ProviderMember } from '../../../src/member/pod/provider.ts';
import type { FitAnswer } from '../../../src/forge/fit.ts';
import type { ProbeResult } from '../../../src/member/cluster.ts';
import { DelegateIndex } from '../../../src/member/delegates.ts';
import { ObjectMirror, mirrorSelector } from '../../../src/member/reflection/mirror.ts';
import { HostObjects } from '../../../src/host/reflection/caches.ts';
import type { MemberConfig } from '../../../src/config.ts';
import { Informer } from '../../../src/kube/informer.ts';
import type { ListWatchEvent } from '../../../src/kube/listwatch.ts';
import type { Observable } from 'rxjs';
import type { Logger } from '../../../src/log.ts';
import { FakeObjects, labelled } from './objects.ts';
import { FakeMember } from './member.ts';

export interface ProviderWorldOptions {
  config: MemberConfig;
  hostName: string;
  node: string;
  hostIP: string;
  log: Logger;
  /** Where the test's teardown goes. */
  stops: (() => void)[];
  provider?: Partial<MemberPodProviderOptions>;
  /** What the pod informer's watch goes through (a test may hold its events back). */
  podWatch?: (w: Observable<ListWatchEvent<V1Pod>>) => Observable<ListWatchEvent<V1Pod>>;
}

export function providerWorld(o: ProviderWorldOptions) {
  const member = new FakeMember();
  const host = new FakeObjects();
  const owner = { hostName: o.hostName, node: o.node };
  const watch = member.objects.watch<V1Pod>('Pod');
  const pods = new Informer<V1Pod>('fake-Pod', o.podWatch ? o.podWatch(watch) : watch);
  const delegates = new DelegateIndex(pods, owner);
  const caches = {
    configMaps: new HostObjects('host-cm', host.watch('ConfigMap'), (ns, name) => host.read('ConfigMap', ns, name)),
    secrets: new HostObjects('host-secrets', host.watch('Secret'), (ns, name) => host.read('Secret', ns, name)),
  };
  const origin = labelled(mirrorSelector(o.hostName));
  const mirror = new ObjectMirror({ pods, owner, config: o.config }, {
    ConfigMap: member.objects.target('ConfigMap', origin), Secret: member.objects.target('Secret', origin),
    ServiceAccount: member.objects.target('ServiceAccount', origin),
  }, caches, o.log);
  const probe$ = new Subject<ProbeResult>();
  const cluster: ProviderMember = { client: member.client(), config: o.config, hostName: o.hostName, owner, pods, delegates, probe$, reachable: true };
  const provider = new MemberPodProvider(cluster, mirror, o.log, { nodeName: o.node, hostIP: o.hostIP, ...o.provider });
  /** Starts the caches; call once the test has subscribed what it watches. */
  const start = (): void => {
    caches.configMaps.start();
    caches.secrets.start();
    delegates.start();
    pods.start();
    mirror.start();
    o.stops.push(() => {
      mirror.stop(); delegates.stop(); pods.stop(); caches.configMaps.stop(); caches.secrets.stop();
    });
  };
  return { member, host, provider, probe$, delegates, pods, start };
}

/** A member's fit as the provider asks it (MemberCluster.fitGate): `fit` answers, ready at once, enforce unless told. */
export function fakeFitGate(fit: (pod: V1Pod) => FitAnswer, room$: Observable<void>, over: Partial<FitGate> = {}): FitGate {
  return { mode: 'enforce', fit, room$, ready: () => true, growth: () => undefined, ...over };
}
