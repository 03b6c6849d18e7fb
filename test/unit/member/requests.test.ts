import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { ORIGIN_LABEL, PROXY_UID_LABEL } from '../../../src/forge/keys.ts';
import { aggregateCapacity, aggregateCapacityFromRequests } from '../../../src/forge/capacity.ts';
import { PodRequests, requestsRelevant } from '../../../src/member/requests.ts';
import type { StoreEvent } from '../../../src/kube/informer.ts';

const NANO = 1_000_000_000n;

function node(name: string, cpu = '4'): V1Node {
  const capacity = { cpu, memory: '8Gi', pods: '110' };
  return { metadata: { name }, status: { capacity, allocatable: capacity, conditions: [{ type: 'Ready', status: 'True' }] } };
}

function pod(name: string, o: { cpu?: string; nodeName?: string; phase?: string; delegate?: boolean; rv?: string; generation?: number } = {}): V1Pod {
  return {
    metadata: { name, namespace: 'ns', resourceVersion: o.rv ?? '1', generation: o.generation ?? 1,
      labels: o.delegate ? { [ORIGIN_LABEL]: 'host', [PROXY_UID_LABEL]: 'u' } : undefined },
    spec: { containers: [{ name: 'c', resources: { requests: { cpu: o.cpu ?? '100m' } } }], nodeName: o.nodeName },
    status: { phase: o.phase ?? 'Running' },
  };
}

/** Feeds events to a PodRequests as an Informer would (with `old` from its own store). */
class Feed {
  readonly usage = new PodRequests();
  readonly store = new Map<string, V1Pod>();
  put(p: V1Pod): boolean {
    const key = `ns/${p.metadata!.name}`;
    const old = this.store.get(key);
    this.store.set(key, p);
    return this.usage.apply({ type: old ? 'MODIFIED' : 'ADDED', key, object: p, old } as StoreEvent<V1Pod>);
  }
  delete(name: string): boolean {
    const key = `ns/${name}`;
    const old = this.store.get(key)!;
    this.store.delete(key);
    return this.usage.apply({ type: 'DELETED', key, object: old, old });
  }
  cpu(nodeName: string): bigint | undefined { return this.usage.byNode.get(nodeName)?.get('cpu'); }
}

describe('PodRequests', () => {
  it('sums the requests of bound, non-terminal pods per node, and not those of delegates', () => {
    const f = new Feed();
    assert.equal(f.put(pod('a', { cpu: '500m', nodeName: 'n1' })), true);
    assert.equal(f.put(pod('b', { cpu: '250m', nodeName: 'n1' })), true);
    assert.equal(f.put(pod('c', { cpu: '1', nodeName: 'n2' })), true);
    assert.equal(f.put(pod('unbound', { cpu: '1' })), false);
    assert.equal(f.put(pod('delegate', { cpu: '1', nodeName: 'n1', delegate: true })), false);
    assert.equal(f.cpu('n1'), 750_000_000n);
    assert.equal(f.usage.byNode.get('n1')?.get('pods'), 2n * NANO);
    assert.equal(f.cpu('n2'), NANO);
    assert.equal(f.usage.size, 3);
  });

  it('boundByNode counts every bound, non-terminal pod, delegates too; onBound says when it changed', () => {
    let bound = 0;
    const usage = new PodRequests(undefined, undefined, () => { bound++; });
    const ev = (p: V1Pod, old?: V1Pod) => usage.apply({ type: old ? 'MODIFIED' : 'ADDED', key: `ns/${p.metadata!.name}`, object: p, old } as StoreEvent<V1Pod>);
    assert.equal(ev(pod('own', { cpu: '1', nodeName: 'n1' })), true);
    assert.equal(ev(pod('delegate', { cpu: '2', nodeName: 'n1', delegate: true })), false, 'the usage sums did not change');
    assert.equal(bound, 2);
    assert.equal(usage.boundByNode.get('n1')?.get('cpu'), 3n * NANO);
    assert.equal(usage.byNode.get('n1')?.get('cpu'), NANO);
    const done = pod('delegate', { cpu: '2', nodeName: 'n1', delegate: true, phase: 'Succeeded', rv: '2' });
    assert.equal(ev(done, pod('delegate', { cpu: '2', nodeName: 'n1', delegate: true })), false);
    assert.equal(usage.boundByNode.get('n1')?.get('cpu'), NANO);
    assert.equal(bound, 3);
  });

  it('follows binding, completion and deletion, and forgets a node with nothing left on it', () => {
    const f = new Feed();
    f.put(pod('a', { cpu: '500m' }));
    assert.equal(f.usage.byNode.size, 0);
    assert.equal(f.put(pod('a', { cpu: '500m', nodeName: 'n1', rv: '2' })), true);
    assert.equal(f.cpu('n1'), 500_000_000n);
    assert.equal(f.put(pod('a', { cpu: '500m', nodeName: 'n1', rv: '3', phase: 'Succeeded' })), true);
    assert.equal(f.usage.byNode.has('n1'), false);
    f.put(pod('b', { cpu: '1', nodeName: 'n2' }));
    assert.equal(f.delete('b'), true);
    assert.equal(f.usage.byNode.size, 0);
    assert.equal(f.usage.size, 0);
  });

  it('ignores status churn of a running pod, and counts a resize (a new generation)', () => {
    const f = new Feed();
    f.put(pod('a', { cpu: '500m', nodeName: 'n1' }));
    assert.equal(f.put(pod('a', { cpu: '500m', nodeName: 'n1', rv: '2' })), false);
    assert.equal(f.put(pod('a', { cpu: '2', nodeName: 'n1', rv: '3', generation: 2 })), true);
    assert.equal(f.cpu('n1'), 2n * NANO);
  });

  it('a pod whose requests cannot be parsed counts for nothing and is reported', () => {
    const bad: string[] = [];
    const usage = new PodRequests((key) => bad.push(key));
    const p = pod('a', { cpu: 'lots', nodeName: 'n1' });
    assert.equal(usage.apply({ type: 'ADDED', key: 'ns/a', object: p }), false);
    assert.deepEqual(bad, ['ns/a']);
    assert.equal(usage.byNode.size, 0);
  });

  it('gives the same allocatable as summing every pod afresh, after a random history', () => {
    const f = new Feed();
    const nodes = [node('n1'), node('n2', '8'), node('n3')];
    let seed = 7; // mulberry32
    const rand = (k: number): number => {
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) % k;
    };
    for (let i = 0; i < 2000; i++) {
      const name = `p${rand(60)}`;
      if (rand(5) === 0 && f.store.has(`ns/${name}`)) { f.delete(name); continue; }
      const prev = f.store.get(`ns/${name}`);
      f.put(pod(name, {
        cpu: `${1 + rand(300)}m`, nodeName: rand(4) === 0 ? undefined : `n${1 + rand(3)}`,
        phase: ['Pending', 'Running', 'Running', 'Succeeded'][rand(4)], delegate: rand(6) === 0,
        rv: String(i + 2), generation: (prev?.metadata?.generation ?? 1) + rand(2),
      }));
    }
    // What the tracker saw is what the store holds: any difference would be a missed or doubled change.
    const pods = [...f.store.values()];
    assert.deepEqual(aggregateCapacityFromRequests(nodes, f.usage.byNode), aggregateCapacity(nodes, pods));
  });
});

describe('requestsRelevant', () => {
  it('is false for status-only churn and true for what moves usage', () => {
    const base = pod('a', { nodeName: 'n1' });
    assert.equal(requestsRelevant(pod('a', { nodeName: 'n1', rv: '2' }), base), false);
    assert.equal(requestsRelevant(pod('a', { nodeName: 'n2' }), base), true);
    assert.equal(requestsRelevant(pod('a', { nodeName: 'n1', phase: 'Failed' }), base), true);
    assert.equal(requestsRelevant(pod('a', { nodeName: 'n1', generation: 2 }), base), true);
    assert.equal(requestsRelevant(pod('a', { nodeName: 'n1', delegate: true }), base), true);
  });
});
