// The kubelet's container-log query → the PodLogOptions the runtime is given (src/host/api/logs.ts).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { podLogOptions } from '../../../../src/host/api/logs.ts';
import type { ApiError } from '../../../../src/host/api/errors.ts';

const q = (s: string): string => podLogOptions(new URLSearchParams(s)).toString();

describe('container log query', () => {
  const cases: [string, string][] = [
    ['', ''],
    ['follow=true&timestamps=true&previous=true', 'follow=true&previous=true&timestamps=true'],
    ['follow=1&timestamps=false', 'follow=true'],
    ['tailLines=10', 'tailLines=10'],
    ['tail=5', 'tailLines=5'],
    ['tail=all&tailLines=3', ''],
    ['tailLines=0', 'tailLines=0'],
    ['limitBytes=100', 'limitBytes=100'],
    ['sinceSeconds=60', 'sinceSeconds=60'],
    ['sinceTime=2026-01-02T03:04:05Z', 'sinceTime=2026-01-02T03%3A04%3A05Z'],
    ['stream=Stderr', 'stream=Stderr'],
    ['stream=All', ''],
    ['pretty=true&insecureSkipTLSVerifyBackend=true', ''],
  ];
  for (const [input, want] of cases) {
    it(`"${input}" → "${want}"`, () => assert.equal(q(input), want));
  }

  const rejects: [string, number, RegExp][] = [
    ['follow=maybe', 400, /Unable to decode query: follow=maybe/],
    ['tailLines=ten', 400, /tailLines/],
    ['tailLines=-1', 422, /tailLines must be at least 0/],
    ['limitBytes=0', 422, /limitBytes/],
    ['sinceSeconds=0', 422, /sinceSeconds/],
    ['sinceSeconds=5&sinceTime=2026-01-02T03:04:05Z', 422, /at most one of sinceTime or sinceSeconds/],
    ['sinceTime=yesterday', 400, /sinceTime/],
    ['stream=Both', 400, /invalid stream type/],
  ];
  for (const [input, status, message] of rejects) {
    it(`"${input}" → ${status}`, () => {
      assert.throws(() => q(input), (err: ApiError) => err.status === status && message.test(err.message));
    });
  }
});
