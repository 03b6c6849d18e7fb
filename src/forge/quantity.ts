// Exact Kubernetes resource.Quantity arithmetic.
//
// A quantity is held as a BigInt count of nano units (1e-9), so sums and differences are exact. Like
// Kubernetes, values finer than 1n are rounded up (away from zero). The format remembers how the value was
// written so that it can be printed back the way Kubernetes canonicalises it.

export type QuantityFormat = 'DecimalSI' | 'BinarySI' | 'DecimalExponent';

export interface Quantity {
  /** The value in nano units (1e-9). */
  readonly nanos: bigint;
  readonly format: QuantityFormat;
}

/** Nano units in one whole unit. */
export const NANO = 1_000_000_000n;

const DECIMAL_SUFFIXES: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const BINARY_SUFFIXES: Record<string, number> = { Ki: 1, Mi: 2, Gi: 3, Ti: 4, Pi: 5, Ei: 6 };
// Bounds the size of the BigInts an exponent can ask for; Kubernetes never needs anything near it.
const MAX_EXPONENT = 1000;

const NUMBER = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(.*)$/;
const EXPONENT = /^[eE]([+-]?\d+)$/;

/** Parses any quantity string the Kubernetes API accepts. Throws an Error naming the string otherwise. */
export function parseQuantity(text: string): Quantity {
  // The same few strings ("100m", "128Mi") come back for every pod of a Deployment: parse each once.
  let q = PARSED.get(text);
  if (!q) {
    q = Object.freeze(parseQuantityText(text));
    if (PARSED.size >= PARSED_MAX) PARSED.clear();
    PARSED.set(text, q);
  }
  return q;
}

const PARSED = new Map<string, Readonly<Quantity>>();
const PARSED_MAX = 4096;

function parseQuantityText(text: string): Quantity {
  const match = NUMBER.exec(text);
  if (!match) throw new Error(`invalid quantity ${JSON.stringify(text)}`);
  const [, sign, number, suffix] = match;
  const [whole, fraction = ''] = number.split('.');
  // mantissa * 10^exp10 * 1024^exp1024 (before the sign)
  let mantissa = BigInt((whole + fraction) || '0');
  let exp10 = -fraction.length;
  let exp1024 = 0;
  let format: QuantityFormat;
  const exponent = EXPONENT.exec(suffix);
  if (suffix in BINARY_SUFFIXES) {
    format = 'BinarySI';
    exp1024 = BINARY_SUFFIXES[suffix];
  } else if (suffix in DECIMAL_SUFFIXES) {
    format = 'DecimalSI';
    exp10 += DECIMAL_SUFFIXES[suffix];
  } else if (exponent) {
    format = 'DecimalExponent';
    const e = Number(exponent[1]);
    if (Math.abs(e) > MAX_EXPONENT) throw new Error(`quantity ${JSON.stringify(text)} is out of range`);
    exp10 += e;
  } else {
    throw new Error(`invalid quantity ${JSON.stringify(text)}: unknown suffix ${JSON.stringify(suffix)}`);
  }
  mantissa *= 1024n ** BigInt(exp1024);
  const scale = exp10 + 9; // power of ten from the mantissa to nano units
  const nanos = scale >= 0 ? mantissa * 10n ** BigInt(scale) : ceilDiv(mantissa, 10n ** BigInt(-scale));
  return { nanos: sign === '-' ? -nanos : nanos, format };
}

/** True when `text` is a valid quantity. */
export function isQuantity(text: string): boolean {
  try {
    parseQuantity(text);
    return true;
  } catch {
    return false;
  }
}

/** A quantity of `nanos` nano units. */
export function quantity(nanos: bigint, format: QuantityFormat = 'DecimalSI'): Quantity {
  return { nanos, format };
}

export function add(a: Quantity, b: Quantity): Quantity {
  return { nanos: a.nanos + b.nanos, format: combine(a, b) };
}

export function subtract(a: Quantity, b: Quantity): Quantity {
  return { nanos: a.nanos - b.nanos, format: combine(a, b) };
}

/** -1, 0 or 1 as a is less than, equal to or greater than b. */
export function compare(a: Quantity, b: Quantity): -1 | 0 | 1 {
  return a.nanos < b.nanos ? -1 : a.nanos > b.nanos ? 1 : 0;
}

/** The quantity, or zero (in the same format) when it is negative. */
export function clampZero(q: Quantity): Quantity {
  return q.nanos < 0n ? { nanos: 0n, format: q.format } : q;
}

/** Canonical string, as Kubernetes prints a quantity of this value and format. */
export function formatQuantity(q: Quantity): string {
  const { nanos, format } = q;
  if (nanos === 0n) return '0';
  const sign = nanos < 0n ? '-' : '';
  const abs = nanos < 0n ? -nanos : nanos;

  // Binary SI only for whole numbers of at least 1Ki; anything else is printed as decimal SI.
  if (format === 'BinarySI' && abs % NANO === 0n && abs >= 1024n * NANO) {
    let value = abs / NANO;
    let power = 0;
    while (power < 6 && value % 1024n === 0n) {
      value /= 1024n;
      power++;
    }
    return `${sign}${value}${['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'][power]}`;
  }

  // The largest exponent (a multiple of 3, from -9) that leaves an integer mantissa.
  let value = abs;
  let exp = -9;
  while (value % 1000n === 0n && (format === 'DecimalExponent' || exp < 18)) {
    value /= 1000n;
    exp += 3;
  }
  if (format === 'DecimalExponent') return `${sign}${value}${exp === 0 ? '' : `e${exp}`}`;
  const suffix = Object.keys(DECIMAL_SUFFIXES).find((s) => DECIMAL_SUFFIXES[s] === exp);
  return `${sign}${value}${suffix}`;
}

/** Parses, then prints in canonical form. */
export function canonicalQuantity(text: string): string {
  return formatQuantity(parseQuantity(text));
}

// A zero takes the other operand's format; otherwise mixed formats fall back to decimal SI.
function combine(a: Quantity, b: Quantity): QuantityFormat {
  if (a.nanos === 0n) return b.format;
  if (b.nanos === 0n || a.format === b.format) return a.format;
  return 'DecimalSI';
}

// Division of non-negative a by positive b, rounded up.
function ceilDiv(a: bigint, b: bigint): bigint {
  return (a + b - 1n) / b;
}
