import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { withThreshold, type ProbeResult } from '../../../src/member/cluster.ts';

const ok: ProbeResult = { reachable: true, at: 0, failures: 0 };
const fail: ProbeResult = { reachable: false, reason: 'connect ECONNREFUSED', at: 0, failures: 1 };

function run(probes: ProbeResult[], threshold: number): boolean[] {
  let prev: ProbeResult | undefined;
  return probes.map((p) => (prev = withThreshold(prev, p, threshold)).reachable);
}

describe('member probe threshold', () => {
  it('a member that never answered is unreachable at its first failure', () => {
    assert.deepEqual(run([fail, fail, ok], 3), [false, false, true]);
  });
  it('turns unreachable only at the threshold-th consecutive failure', () => {
    assert.deepEqual(run([ok, fail, fail, fail, fail], 3), [true, true, true, false, false]);
  });
  it('a success in between starts the count again', () => {
    assert.deepEqual(run([ok, fail, fail, ok, fail, fail, ok], 3), [true, true, true, true, true, true, true]);
  });
  it('threshold 1: every failure is an outage', () => {
    assert.deepEqual(run([ok, fail, ok], 1), [true, false, true]);
  });
  it('keeps the failure reason once unreachable, none while still within the threshold', () => {
    let prev = withThreshold(undefined, ok, 2);
    prev = withThreshold(prev, fail, 2);
    assert.equal(prev.reason, undefined);
    prev = withThreshold(prev, fail, 2);
    assert.equal(prev.reason, 'connect ECONNREFUSED');
    assert.equal(prev.failures, 2);
  });
});
