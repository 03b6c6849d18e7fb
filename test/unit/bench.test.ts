import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { histogramQuantile, median, percentile } from '../../bench/bench.ts';

const h = (pairs: [number, number][]): Map<number, number> => new Map(pairs);

describe('histogramQuantile', () => {
  it('interpolates within the bucket holding the rank, over what was observed between the scrapes', () => {
    const before = h([[0.1, 10], [0.5, 10], [1, 10], [Infinity, 10]]);
    const after = h([[0.1, 10], [0.5, 30], [1, 110], [Infinity, 110]]);
    // 100 new observations: 20 in (0.1, 0.5], 80 in (0.5, 1]. The median (rank 50) is 30/80 into the third bucket.
    assert.equal(histogramQuantile(before, after, 0.5), (0.5 + 0.5 * (30 / 80)) * 1000);
    assert.equal(histogramQuantile(before, after, 0.1), (0.1 + 0.4 * (10 / 20)) * 1000);
  });

  it('answers the last finite bound for ranks in +Inf, and nothing when nothing was observed', () => {
    assert.equal(histogramQuantile(undefined, h([[1, 1], [Infinity, 10]]), 0.99), 1000);
    assert.equal(histogramQuantile(h([[1, 3], [Infinity, 3]]), h([[1, 3], [Infinity, 3]]), 0.5), undefined);
    assert.equal(histogramQuantile(undefined, undefined, 0.5), undefined);
  });
});

describe('percentile', () => {
  it('is the nearest rank', () => {
    assert.equal(percentile([5, 1, 4, 2, 3], 50), 3);
    assert.equal(percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 99), 10);
    assert.equal(percentile([], 50), 0);
  });
});

describe('median', () => {
  it('is the middle value, or the mean of the two middle ones', () => {
    assert.equal(median([3, 1, 2]), 2);
    assert.equal(median([1.9, 1.47]), 1.685);
    assert.equal(median([]), 0);
  });
});
