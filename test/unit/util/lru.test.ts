import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LRUCache } from 'lru-cache';
import { upTo } from '../../../src/util/lru.ts';

test('upTo bounds the number of entries, evicting the least recently used', () => {
  const c = new LRUCache<string, number>(upTo(3));
  for (const [i, k] of ['a', 'b', 'c'].entries()) c.set(k, i);
  c.get('a');
  c.set('d', 3);
  assert.deepEqual([...c.keys()].sort(), ['a', 'c', 'd']);
  for (let i = 0; i < 100; i++) c.set(`k${i}`, i);
  assert.equal(c.size, 3);
});

test('upTo keeps a ttl cache working (expired entries are gone)', () => {
  let now = 1000;
  const c = new LRUCache<string, true>({ ...upTo(2), ttl: 10, ttlResolution: 0, perf: { now: () => now } });
  c.set('a', true);
  now += 5;
  assert.equal(c.get('a'), true);
  now += 10;
  assert.equal(c.get('a'), undefined);
});

test('no cache of clusterlet preallocates its slots (`max`): each is bounded with upTo', () => {
  const src = fileURLToPath(new URL('../../../src/', import.meta.url));
  const preallocating = readdirSync(src, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'))
    .filter((f) => /new LRUCache\b[^(]*\(\s*\{[^;]*?\bmax\s*:/.test(readFileSync(join(src, f), 'utf8')));
  assert.deepEqual(preallocating, []);
});
