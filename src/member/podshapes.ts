// The member's pods as the member pod informer keeps them (forge/foreign.ts: this host's delegates whole, any other pod
// in the shape the capacity reads), and the specs its watch may reuse (kube/eventline.ts KnownSpec).
//
// A member's own pods can outnumber the delegates many times over, and their watch sends each one's whole spec again in
// every event (bound, each status write, the deletion). A foreign pod's kept spec is a few fields shaped from its whole
// spec: it carries the tag of the bytes it was shaped from (their digest), so an event whose spec bytes are the same
// reuses the shape as it is, instead of parsing, reviving and shaping the spec again. The watch shapes each pod before
// it is revived (ListWatchSpec.shape): what a foreign pod's shape drops (most of its metadata and status) is never
// revived either.
import type { V1Pod, V1PodSpec } from '@kubernetes/client-node';
import { foreignSpecShape, memberPodShape } from '../forge/foreign.ts';
import { delegateOf, type Owner } from '../forge/owner.ts';
import type { KnownSpec } from '../kube/eventline.ts';
import { revivedTag, tagPart } from '../kube/revive.ts';

export class MemberPodShapes {
  readonly #owner: Owner;
  /** The specs of foreign shape this made; weak: an entry goes with its pod. */
  readonly #shaped = new WeakSet<object>();

  constructor(owner: Owner) {
    this.#owner = owner;
  }

  /** memberPodShape, a foreign pod's spec shaped by #specShape. */
  shape(pod: V1Pod): V1Pod {
    return memberPodShape(pod, this.#owner, this.#specShape);
  }

  /** A foreign pod's spec shaped and tagged as the spec it comes from; a spec shaped here already (reused) as it is. */
  #specShape = (spec: V1PodSpec): V1PodSpec => {
    if (this.#shaped.has(spec)) return spec;
    const out = foreignSpecShape(spec);
    const tag = revivedTag(spec);
    if (tag !== undefined) tagPart(out, tag);
    this.#shaped.add(out);
    return out;
  };

  /**
   * The watch's KnownSpec over the store's (`stored`, kube/informer.ts storedSpecs): its spec, but never a foreign
   * shape for an event that makes the pod this host's delegate (its labels changed), which is kept whole.
   */
  knownSpec(stored: KnownSpec): KnownSpec {
    return (namespace, name, metadata) => {
      const spec = stored(namespace, name, metadata);
      if (spec !== undefined && this.#shaped.has(spec) && delegateOf({ metadata }, this.#owner)) return undefined;
      return spec;
    };
  }
}
