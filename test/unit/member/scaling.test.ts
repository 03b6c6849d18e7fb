// Whether a member shows it adds nodes, read from a fake member: a cluster-autoscaler's status ConfigMap (stale once
// not written for 15 minutes) or Karpenter NodePools; an error other than not found or refused keeps the last answer.
import { describe, it, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { CA_LAST_UPDATED, caSignal, MemberScaling, parseGoTime } from '../../../src/member/scaling.ts';
import type { ClusterClient } from '../../../src/kube/client.ts';
import { KubeError } from '../../../src/kube/errors.ts';
import { createLogger } from '../../../src/log.ts';
import { eventually } from '../fakes/wait.ts';

const log = createLogger('silent');
const stops: (() => void)[] = [];
afterEach(() => { for (const s of stops.splice(0)) s(); });

/** Go's "2006-01-02 15:04:05.999999999 -0700 MST" of `ms`, in UTC, as cluster-autoscaler writes it. */
const goTime = (ms: number): string => `${new Date(ms).toISOString().replace('T', ' ').replace('Z', '')}123456 +0000 UTC`;

/** A member whose answers the test sets; counts the reads of the ConfigMap. */
function member() {
  const m = {
    ca: (): V1ConfigMap => { throw new KubeError('NotFound', 404, 'NotFound', 'configmaps "cluster-autoscaler-status" not found'); },
    nodepools: (): { items?: unknown[] } => { throw new KubeError('NotFound', 404, 'NotFound', 'the server could not find the requested resource'); },
    reads: 0,
  };
  const client = {
    core: { readNamespacedConfigMap: async () => { m.reads++; return m.ca(); } },
    request: async () => m.nodepools(),
  } as unknown as Pick<ClusterClient, 'request' | 'core'>;
  return { m, client };
}

/** Started, read every 5 ms; `after(n)` waits until n more reads of the ConfigMap are done. */
async function scaling(client: Pick<ClusterClient, 'request' | 'core'>, m: { reads: number }) {
  const s = new MemberScaling(client, log, { everyMs: 5 });
  s.start();
  stops.push(() => s.stop());
  await eventually('the first read', () => s.read);
  const after = async (n: number): Promise<void> => {
    const target = m.reads + n + 1;
    await eventually(`${n} more reads`, () => m.reads >= target);
  };
  return { s, after };
}

describe('MemberScaling', () => {
  it('a read the member does not answer (a timeout, a 5xx) keeps the last answer; not found or refused is no autoscaler', async () => {
    const { m, client } = member();
    m.ca = () => ({ metadata: { name: 'cluster-autoscaler-status', annotations: { [CA_LAST_UPDATED]: goTime(Date.now()) } } });
    const { s, after } = await scaling(client, m);
    assert.match(s.growth ?? '', /cluster-autoscaler reports/);
    m.ca = () => { throw new KubeError('Unavailable', 504, 'Timeout', 'the server was unable to return a response in the time allotted'); };
    await after(2);
    assert.match(s.growth ?? '', /cluster-autoscaler reports/, 'a timeout: kept');
    m.ca = () => { throw new KubeError('Unknown', 500, 'InternalError', 'etcdserver: request timed out'); };
    await after(2);
    assert.match(s.growth ?? '', /cluster-autoscaler reports/, 'a 500: kept');
    m.ca = () => { throw new KubeError('Forbidden', 403, 'Forbidden', 'configmaps "cluster-autoscaler-status" is forbidden'); };
    await after(2);
    assert.equal(s.growth, undefined, 'refused: none');
    m.nodepools = () => ({ items: [{}] });
    await after(2);
    assert.equal(s.growth, 'it has Karpenter NodePools');
    m.nodepools = () => { throw new KubeError('Unavailable', 503, 'ServiceUnavailable', 'the server is currently unable to handle the request'); };
    await after(2);
    assert.equal(s.growth, 'it has Karpenter NodePools', 'Karpenter unanswered: kept');
  });

  it('a status ConfigMap not written for 15 minutes is left from an autoscaler no longer running: none', async () => {
    const { m, client } = member();
    m.ca = () => ({ metadata: { name: 'cluster-autoscaler-status', annotations: { [CA_LAST_UPDATED]: goTime(Date.now() - 16 * 60_000) } } });
    const { s } = await scaling(client, m);
    assert.equal(s.growth, undefined);
  });

  it('caSignal and parseGoTime: the stamp as cluster-autoscaler writes it', () => {
    assert.equal(parseGoTime('2024-01-01 10:00:00.123456789 +0000 UTC'), Date.parse('2024-01-01T10:00:00.123Z'));
    assert.equal(parseGoTime('2024-01-01 12:00:00 +0200 CEST'), Date.parse('2024-01-01T10:00:00Z'));
    assert.equal(parseGoTime('2024-01-01T10:00:00Z'), undefined);
    const at = Date.parse('2024-01-01T10:00:00Z');
    const cm = (stamp?: string): V1ConfigMap => ({ metadata: { annotations: stamp ? { [CA_LAST_UPDATED]: stamp } : {} } });
    assert.ok(caSignal(cm('2024-01-01 10:00:00.5 +0000 UTC'), at + 14 * 60_000));
    assert.equal(caSignal(cm('2024-01-01 10:00:00.5 +0000 UTC'), at + 16 * 60_000), undefined);
    assert.ok(caSignal(cm(), at), 'no stamp: counted as written');
  });
});
