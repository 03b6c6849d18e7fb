import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  NANO,
  add,
  canonicalQuantity,
  clampZero,
  compare,
  formatQuantity,
  isQuantity,
  parseQuantity,
  subtract,
} from '../../../src/forge/quantity.ts';

describe('parseQuantity', () => {
  const cases: [string, bigint][] = [
    ['1500m', 1_500_000_000n],
    ['1', NANO],
    ['0', 0n],
    ['0.5', 500_000_000n],
    ['.5', 500_000_000n],
    ['1.', NANO],
    ['+1', NANO],
    ['-1', -NANO],
    ['1n', 1n],
    ['1u', 1000n],
    ['100k', 100_000n * NANO],
    ['1G', 1_000_000_000n * NANO],
    ['1Gi', 1_073_741_824n * NANO],
    ['12Mi', 12n * 1_048_576n * NANO],
    ['100Mi', 104_857_600n * NANO],
    ['1.5Gi', 1_610_612_736n * NANO],
    ['1Ki', 1024n * NANO],
    ['129e6', 129_000_000n * NANO],
    ['129E6', 129_000_000n * NANO],
    ['1e-3', 1_000_000n],
    ['1e+3', 1000n * NANO],
    ['1E', 10n ** 18n * NANO],
    ['1Ei', 1024n ** 6n * NANO],
    ['0.1n', 1n], // finer than nano: rounded up
    ['1.5n', 2n],
    ['-1.5n', -2n],
  ];
  for (const [text, nanos] of cases) {
    it(`parses ${text}`, () => assert.equal(parseQuantity(text).nanos, nanos));
  }

  it('records the format', () => {
    assert.equal(parseQuantity('1Gi').format, 'BinarySI');
    assert.equal(parseQuantity('1G').format, 'DecimalSI');
    assert.equal(parseQuantity('4').format, 'DecimalSI');
    assert.equal(parseQuantity('129e6').format, 'DecimalExponent');
  });

  for (const text of ['', ' ', '.', 'abc', '1.5.5', '1 Gi', ' 1', '1e', '1GiB', '1gi', 'Gi', '--1', '1e3.5', '1K', '0x10', 'e3', '1e1001']) {
    it(`rejects ${JSON.stringify(text)}`, () => {
      assert.throws(() => parseQuantity(text), (err: Error) => err.message.includes(JSON.stringify(text)));
      assert.equal(isQuantity(text), false);
    });
  }
});

describe('formatQuantity', () => {
  const cases: [string, string][] = [
    ['1500m', '1500m'],
    ['1.5', '1500m'],
    ['0.5', '500m'],
    ['3', '3'],
    ['3000', '3k'],
    ['1500000', '1500k'],
    ['0', '0'],
    ['0Gi', '0'],
    ['1n', '1n'],
    ['1000n', '1u'],
    ['100Mi', '100Mi'],
    ['1024Mi', '1Gi'],
    ['1.5Gi', '1536Mi'],
    ['1025Ki', '1025Ki'],
    ['1025', '1025'],
    ['512Ki', '512Ki'],
    ['1Ki', '1Ki'],
    ['0.5Ki', '512'], // below 1024: decimal
    ['0.5', '500m'],
    ['129e6', '129e6'],
    ['1e3', '1e3'],
    ['1e-3', '1e-3'],
    ['1000e0', '1e3'],
    ['1E', '1E'],
    ['2000E', '2000E'],
    ['-1500m', '-1500m'],
    ['-2Gi', '-2Gi'],
    ['16393252Ki', '16393252Ki'],
    ['128G', '128G'],
  ];
  for (const [text, expected] of cases) {
    it(`formats ${text} as ${expected}`, () => assert.equal(canonicalQuantity(text), expected));
  }

  it('round-trips to the same value', () => {
    for (const text of [...cases.map(([t]) => t), '7Ki', '3.25', '0.001n', '123456789n', '2.5e-4', '1Pi', '17Ti', '8E']) {
      const q = parseQuantity(text);
      assert.equal(parseQuantity(formatQuantity(q)).nanos, q.nanos, text);
    }
  });
});

describe('arithmetic', () => {
  const sums: [string, string, string][] = [
    ['1500m', '1500m', '3'],
    ['500m', '250m', '750m'],
    ['1Gi', '1Gi', '2Gi'],
    ['1Gi', '512Mi', '1536Mi'],
    ['100Mi', '0', '100Mi'],
    ['0', '100Mi', '100Mi'],
    ['1Gi', '1G', '2073741824'], // mixed formats: plain decimal
    ['129e6', '1e6', '130e6'],
    ['1', '0.000000001', '1000000001n'],
  ];
  for (const [a, b, expected] of sums) {
    it(`${a} + ${b} = ${expected}`, () => assert.equal(formatQuantity(add(parseQuantity(a), parseQuantity(b))), expected));
  }

  const differences: [string, string, string][] = [
    ['4', '1500m', '2500m'],
    ['16Gi', '100Mi', '16284Mi'],
    ['110', '3', '107'],
    ['1', '1', '0'],
    ['1', '2', '-1'],
  ];
  for (const [a, b, expected] of differences) {
    it(`${a} - ${b} = ${expected}`, () =>
      assert.equal(formatQuantity(subtract(parseQuantity(a), parseQuantity(b))), expected));
  }

  it('clamps at zero', () => {
    assert.equal(formatQuantity(clampZero(subtract(parseQuantity('1'), parseQuantity('2')))), '0');
    assert.equal(formatQuantity(clampZero(parseQuantity('2Gi'))), '2Gi');
  });

  it('compares', () => {
    assert.equal(compare(parseQuantity('1Gi'), parseQuantity('1G')), 1);
    assert.equal(compare(parseQuantity('1000m'), parseQuantity('1')), 0);
    assert.equal(compare(parseQuantity('0.5'), parseQuantity('501m')), -1);
  });
});
