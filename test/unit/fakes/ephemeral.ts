// The API's `ephemeralcontainers` subresource of a pod (what `kubectl debug` and the member pod provider write), over
// a FakeObjects: for FakeMember.
import type { V1EphemeralContainer, V1Pod } from '@kubernetes/client-node';
import { KubeError } from '../../../src/kube/errors.ts';
import type { FakeObjects } from './objects.ts';

/** A strategic merge patch of a pod's `ephemeralcontainers` subresource, as the provider sends it. */
export interface EphemeralContainersPatch {
  metadata?: { uid?: string };
  spec: { ephemeralContainers: V1EphemeralContainer[]; '$setElementOrder/ephemeralContainers'?: { name: string }[] };
}

/**
 * The API's `ephemeralcontainers` subresource: the patch's containers merged by name into the pod's, as a strategic
 * merge does (new ones first, unless `$setElementOrder` gives the order), an existing one never changed, the UID in
 * the patch checked; nothing else of the pod is touched.
 */
export async function addEphemeralContainers(o: FakeObjects, namespace: string, name: string, patch: EphemeralContainersPatch): Promise<V1Pod> {
  const cur = o.get<V1Pod>('Pod', namespace, name);
  if (!cur) throw new KubeError('NotFound', 404, 'NotFound', `pods "${name}" not found`);
  const uid = patch.metadata?.uid;
  if (uid && uid !== cur.metadata?.uid) throw new KubeError('Conflict', 409, 'Conflict', `Precondition failed: UID in precondition: ${uid}`);
  const existing = cur.spec!.ephemeralContainers ?? [];
  const added = patch.spec.ephemeralContainers.filter((c) => {
    const same = existing.find((e) => e.name === c.name);
    if (same && JSON.stringify(same) !== JSON.stringify(c)) {
      throw new KubeError('Invalid', 422, 'Invalid', `Pod "${name}" is invalid: spec.ephemeralContainers: Forbidden: existing ephemeral containers "${c.name}" may not be changed`);
    }
    return !same;
  });
  const merged = [...added, ...existing];
  const order = patch.spec['$setElementOrder/ephemeralContainers']?.map((c) => c.name);
  const rank = (n: string): number => order?.includes(n) ? order.indexOf(n) : (order?.length ?? 0);
  if (order) merged.sort((a, b) => rank(a.name) - rank(b.name));
  return o.put('Pod', { ...cur, spec: { ...cur.spec!, ephemeralContainers: merged } });
}
