import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { byGroup, memberNames, membersMarkdown, othersAgainstBaseline, podCounts, withRest, type ManyMembersRun, type MembersResult }
  from '../../bench/members.ts';

const run = (times: (number | undefined)[], extra: Partial<ManyMembersRun> = {}): ManyMembersRun => ({
  readyMs: 30_000, members: times.map((readyMs, i) => ({ member: `m0${i + 1}`, readyMs })), peakRssMB: 200,
  cpuToReadyClusterlet: 20, cpuSeconds: 35.25, cpuToReady: { clusterlet: 20, host: 50 }, deleteMs: 12_000,
  left: { proxies: 0, delegates: 0 }, ...extra,
});

const view = { node: 'True', taints: [], pods: 4, ready: 4, phases: { Running: 4 } };
const faulted = run([20_000, 40_000, 26_000], {
  fault: { member: 'm02', stoppedAtMs: 9_000, readyAtStop: 2, restartedAtMs: 27_000, restartedBecause: 'others all Ready',
    beforeRestart: { node: 'Unknown (NodeStatusUnknown)', taints: ['node.kubernetes.io/unreachable:NoExecute'], pods: 4, ready: 0,
      phases: { Running: 2, Pending: 2 } },
    after: view, delegatesReadyAfter: 4, recoveredMs: 13_000 },
});

describe('memberNames', () => {
  it('pads the numbers, so that no name (nor its etcd prefix) starts another', () => {
    const names = memberNames(10);
    assert.deepEqual(names.slice(0, 2), ['m01', 'm02']);
    assert.equal(names[9], 'm10');
    for (const a of names) for (const b of names) if (a !== b) assert.ok(!b.startsWith(a), `${a} starts ${b}`);
  });
});

describe('byGroup', () => {
  it('sums the processes of the added members, and keeps clusterlet, etcd, the host and the bench member apart', () => {
    const g = byGroup({ clusterlet: 1.04, etcd: 2, 'host/kube-apiserver': 3, 'host/kwok': 0.5, 'm01/kube-apiserver': 1,
      'm02/kwok': 0.25, 'member/kube-apiserver': 0.1 }, ['m01', 'm02']);
    assert.deepEqual(g, { clusterlet: 1, etcd: 2, host: 3.5, members: 1.3, 'bench member': 0.1 });
  });

  it('leaves out a process that was gone at the end (NaN)', () => {
    assert.deepEqual(byGroup({ 'm01/kube-apiserver': NaN, 'm01/kwok': 2 }, ['m01']), { members: 2 });
  });
});

describe('withRest', () => {
  it('adds what the machine spent besides the groups, never below zero', () => {
    assert.deepEqual(withRest({ clusterlet: 2, host: 3.5 }, 10.04), { clusterlet: 2, host: 3.5, 'rest of the machine': 4.5 });
    assert.equal(withRest({ clusterlet: 2 }, 1.9)['rest of the machine'], 0);
  });
});

describe('podCounts', () => {
  it('counts the pods Ready now and the pods in each phase', () => {
    const pod = (phase: string | undefined, ready: boolean): V1Pod =>
      ({ status: { phase, conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] } });
    assert.deepEqual(podCounts([pod('Running', true), pod('Running', false), pod('Pending', false), pod(undefined, false)]),
      { pods: 4, ready: 1, phases: { Running: 2, Pending: 1, Unknown: 1 } });
  });
});

describe('othersAgainstBaseline', () => {
  it('compares the slowest and the median of the members that were not stopped, member by member', () => {
    assert.deepEqual(othersAgainstBaseline(run([22_000, 21_000, 30_000]), faulted),
      { slowest: [30_000, 26_000], median: [26_000, 23_000] });
  });

  it('has no answer when one of the others did not get Ready in either run', () => {
    assert.equal(othersAgainstBaseline(run([undefined, 21_000, 30_000]), faulted), undefined);
  });
});

describe('membersMarkdown', () => {
  const r: MembersResult = { members: ['m01', 'm02', 'm03'], podsPerMember: 4, idleRssMB: 120,
    rssMB: { clusterlet: 120, members: 900 }, runs: [run([22_000, 21_000, 30_000]), faulted] };
  const md = membersMarkdown(r);

  it('has one row per run, the stopped member named, and what was left after the delete', () => {
    assert.match(md, /\| no fault \| 30\.0 s | 22\.0 s \/ 30\.0 s \| 200 MB \| 20 \/ 35\.3 \| clusterlet 20, host 50 \| 12\.0 s \| 0 proxies, 0 delegates \|/);
    assert.match(md, /\| m02 stopped \(the 2 others\) \| 30\.0 s | 23\.0 s \/ 26\.0 s \|/);
  });

  it('shows each member in each run, and marks the stopped one', () => {
    assert.match(md, /\| m02 \| 21\.0 s \| 40\.0 s \(stopped\) \|/);
    assert.match(md, /\| m03 \| 30\.0 s \| 26\.0 s \|/);
  });

  it('compares the others with the run without the fault, and says what the host showed', () => {
    assert.match(md, /slowest 30\.0 s → 26\.0 s \(×0\.87\), median 26\.0 s → 23\.0 s \(×0\.88\)/);
    assert.match(md, /stopped at 9\.0 s with 2\/4 pods Ready on the host, restarted when the others were all Ready, answering again at 27\.0 s/);
    assert.match(md, /before the restart: node Ready=Unknown \(NodeStatusUnknown\), taints node\.kubernetes\.io\/unreachable:NoExecute; 0\/4 pods Ready \(Running 2, Pending 2\)/);
    assert.match(md, /all Ready 13\.0 s after the restart: node Ready=True; 4\/4 pods Ready \(Running 4\); in the member, 4\/4 delegates Ready/);
  });
});
