// Orders strings by UTF-16 code units, as Array.prototype.sort does by default. Not localeCompare: that loads
// ICU's collation data and a collator, resident memory for keys and names that need no language rules
// (docs/performance.md, 'Small caches, no ICU collation, no fs/promises').

export const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
