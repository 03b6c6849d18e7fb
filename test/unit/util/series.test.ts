import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Counter, Histogram, Registry } from 'prom-client';
import { HotCounter, HotHistogram } from '../../../src/util/series.ts';

/** The samples of an exposition, each as `name{labels sorted} value`, sorted: what a scraper reads, whatever the order. */
function samples(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split('\n')) {
    const m = /^(\w+)(?:\{([^}]*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels = [...(m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((x) => `${x[1]}=${x[2]}`).sort().join(',');
    out.push(`${m[1]}{${labels}} ${m[3]}`);
  }
  return out.sort();
}

const comments = (text: string): string[] => text.split('\n').filter((l) => l.startsWith('#'));

describe('HotCounter and HotHistogram', () => {
  // Label objects in either order, a series seen once, values on a bucket's bound, above the last one, and zero.
  const calls: [Record<'cluster' | 'verb', string>, number][] = [
    [{ cluster: 'host', verb: 'get' }, 0.05], [{ verb: 'get', cluster: 'host' }, 0.1], [{ cluster: 'host', verb: 'get' }, 0.7],
    [{ cluster: 'm-1', verb: 'list' }, 12], [{ cluster: 'm-1', verb: 'create' }, 0], [{ cluster: 'host', verb: 'patch' }, 1],
  ];
  const opts = { help: 'Some help.', labelNames: ['cluster', 'verb'] as const };
  const buckets = [0.1, 0.5, 1, 10];

  it('expose the samples, HELP and TYPE lines prom-client\'s Counter and Histogram expose for the same calls', async () => {
    const theirs = new Registry();
    const ours = new Registry();
    const c = new Counter({ ...opts, name: 't_total', registers: [theirs] });
    const h = new Histogram({ ...opts, name: 't_seconds', buckets, registers: [theirs] });
    const hc = new HotCounter({ ...opts, name: 't_total', registers: [ours] });
    const hh = new HotHistogram({ ...opts, name: 't_seconds', buckets, registers: [ours] });
    for (const [labels, v] of calls) {
      c.inc(labels);
      c.inc(labels, v);
      h.observe(labels, v);
      hc.inc(labels);
      hc.inc(labels, v);
      hh.observe(labels, v);
    }
    const [a, b] = [await theirs.metrics(), await ours.metrics()];
    assert.deepEqual(samples(b), samples(a));
    assert.deepEqual(comments(b), comments(a));
    assert.equal(samples(b).length, 4 + 4 * 7, '4 counter series; 4 histogram series of 7 lines (4 buckets, +Inf, sum, count)');
  });

  it('write a bucket\'s le first and the other labels in labelNames\' order, as the bench and the tests read them', async () => {
    const r = new Registry();
    const hh = new HotHistogram({ ...opts, name: 'o_seconds', buckets: [1], registers: [r] });
    hh.observe({ verb: 'get', cluster: 'host' }, 0.5);
    assert.match(await r.metrics(), /^o_seconds_bucket\{le="1",cluster="host",verb="get"\} 1$/m);
  });

  it('remove and reset drop series as prom-client\'s do; get() gives the series with their labels', async () => {
    const r = new Registry();
    const hc = new HotCounter({ ...opts, name: 'r_total', registers: [r] });
    const hh = new HotHistogram({ ...opts, name: 'r_seconds', buckets: [1], registers: [r] });
    for (const [labels, v] of calls) { hc.inc(labels, v); hh.observe(labels, v); }
    hc.remove({ verb: 'get', cluster: 'host' });
    hh.remove({ cluster: 'host', verb: 'get' });
    const text = await r.metrics();
    assert.doesNotMatch(text, /cluster="host",verb="get"/);
    assert.match(text, /^r_total\{cluster="host",verb="patch"\} 1$/m);
    assert.deepEqual((await hc.get()).values.map((v) => v.labels), [
      { cluster: 'm-1', verb: 'list' }, { cluster: 'm-1', verb: 'create' }, { cluster: 'host', verb: 'patch' }]);
    assert.ok((await hh.get()).values.some((v) => v.metricName === 'r_seconds_bucket' && v.labels.le === '+Inf'));
    hc.reset();
    hh.reset();
    assert.deepEqual(samples(await r.metrics()), []);
  });

  it('startTimer observes the seconds since it started, and returns them', async () => {
    const hh = new HotHistogram({ ...opts, name: 's_seconds', buckets: [0.001, 60], registers: [] });
    // Read around the timer's own start: the seconds it gives lie between the two spans.
    const before = performance.now();
    const end = hh.startTimer({ cluster: 'host', verb: 'get' });
    const t0 = performance.now();
    while (performance.now() - t0 < 3) { /* a few ms pass */ }
    const seconds = end();
    const took = (performance.now() - before) / 1000;
    assert.ok(seconds >= 0.003 && seconds <= took, `${seconds} s`);
    const { values } = await hh.get();
    assert.equal(values.find((v) => v.metricName === 's_seconds_sum')?.value, seconds);
    assert.equal(values.find((v) => v.labels.le === 0.001)?.value, 0, 'above the first bound');
    assert.equal(values.find((v) => v.labels.le === 60)?.value, 1);
  });

  it('refuse what prom-client refuses: a counter going down, a value that is not a number', () => {
    const hc = new HotCounter({ ...opts, name: 'e_total', registers: [] });
    const hh = new HotHistogram({ ...opts, name: 'e_seconds', buckets: [1], registers: [] });
    assert.throws(() => hc.inc({ cluster: 'host' }, -1), RangeError);
    assert.throws(() => hc.inc({ cluster: 'host' }, NaN), RangeError);
    assert.throws(() => hh.observe({ cluster: 'host' }, NaN), TypeError);
  });
});
