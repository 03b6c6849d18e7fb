// Small shape helpers the forge functions share (no undefined keys, no empty lists, API-precision times). Pure.

export function compact<T extends object>(value: T): T {
  // A loop, not entries → filter → fromEntries: status forging calls this on every sync of every pod.
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    const v = (value as Record<string, unknown>)[key];
    if (v !== undefined) out[key] = v;
  }
  return out as T;
}

export function nonEmpty<T>(items: T[] | undefined): T[] | undefined {
  return items && items.length > 0 ? items : undefined;
}

export function wholeSeconds(date: Date): Date {
  return new Date(Math.floor(date.getTime() / 1000) * 1000);
}

/** RFC 3339 with microseconds, as metav1.MicroTime is written. */
export function microTime(d: Date): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/**
 * Whether two parsed API values are equal: what their JSON would say, without writing it (hot paths compare every
 * watched version of a pod with the one before). Keys whose value is undefined count as absent, as in JSON; an
 * object's keys in any order; Dates by their time.
 */
export function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (a instanceof Date || b instanceof Date) return a instanceof Date && b instanceof Date && a.getTime() === b.getTime();
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameValue(a[i], b[i])) return false;
    return true;
  }
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  let keys = 0;
  for (const k in x) {
    if (x[k] === undefined) continue;
    keys++;
    if (!sameValue(x[k], y[k])) return false;
  }
  for (const k in y) if (y[k] !== undefined) keys--;
  return keys === 0;
}
