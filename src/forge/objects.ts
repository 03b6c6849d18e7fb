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
