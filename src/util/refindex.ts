// Who refers to what: holders (e.g. delegate pods) each refer to a set of keys (e.g. the objects they mount), and
// the index tells when a key gets its first holder and when it loses its last one.

export interface RefChange<T> {
  /** Keys that had no holder before. */
  added: string[];
  /** Keys that have no holder any more. */
  released: string[];
  /** The tag the holder had before this update. */
  previousTag: T | undefined;
}

export class RefIndex<T = undefined> {
  #holdersOf = new Map<string, Set<string>>();
  #keysOf = new Map<string, { keys: string[]; tag: T }>();

  /** Sets what `holder` refers to (none: it is gone); undefined when that is what it referred to already. */
  update(holder: string, keys: string[], tag: T): RefChange<T> | undefined {
    const before = this.#keysOf.get(holder);
    if (sameKeys(before?.keys ?? NO_KEYS, keys)) return undefined;
    const change: RefChange<T> = { added: [], released: [], previousTag: before?.tag };
    for (const k of before?.keys ?? []) {
      const s = this.#holdersOf.get(k);
      s?.delete(holder);
      if (s?.size === 0) { this.#holdersOf.delete(k); change.released.push(k); }
    }
    for (const k of keys) {
      let s = this.#holdersOf.get(k);
      if (!s) { this.#holdersOf.set(k, s = new Set()); change.added.push(k); }
      s.add(holder);
    }
    if (keys.length) this.#keysOf.set(holder, { keys, tag }); else this.#keysOf.delete(holder);
    return change;
  }

  /** Whether anyone refers to `key`. */
  has(key: string): boolean { return this.#holdersOf.has(key); }

  /** Every key someone refers to. */
  keys(): IterableIterator<string> { return this.#holdersOf.keys(); }

  /** The holders that refer to `key`. */
  holders(key: string): ReadonlySet<string> { return this.#holdersOf.get(key) ?? NONE; }
}

const NONE: ReadonlySet<string> = new Set();
const NO_KEYS: readonly string[] = [];

/** The same keys in the same order (compared in place: this runs on every event of every holder). */
function sameKeys(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
