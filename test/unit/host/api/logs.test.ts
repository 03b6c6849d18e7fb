// The kubelet's container-log query → the member's pod-log query (src/host/api/logs.ts).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { memberLogQuery } from '../../../../src/host/api/logs.ts';
import type { ApiError } from '../../../../src/host/api/errors.ts';

const q = (s: string): string => memberLogQuery(new URLSearchParams(s), 'main').toString();

describe('container log query', () => {
  const cases: [string, string][] = [
    ['', 'container=main'],
    ['follow=true&timestamps=true&previous=true', 'container=main&follow=true&previous=true&timestamps=true'],
    ['follow=1&timestamps=false', 'container=main&follow=true'],
    ['tailLines=10', 'container=main&tailLines=10'],
    ['tail=5', 'container=main&tailLines=5'],
    ['tail=all&tailLines=3', 'container=main'],
    ['tailLines=0', 'container=main&tailLines=0'],
    ['limitBytes=100', 'container=main&limitBytes=100'],
    ['sinceSeconds=60', 'container=main&sinceSeconds=60'],
    ['sinceTime=2026-01-02T03:04:05Z', 'container=main&sinceTime=2026-01-02T03%3A04%3A05Z'],
    ['stream=Stderr', 'container=main&stream=Stderr'],
    ['stream=All', 'container=main'],
    ['pretty=true&insecureSkipTLSVerifyBackend=true', 'container=main'],
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
