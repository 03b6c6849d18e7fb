// Reading a Prometheus text exposition (kube-apiserver's or clusterlet's /metrics) in tests.

/**
 * The samples of metric `name` (exactly: not its _bucket/_sum/_count), keyed by the values of `labels` joined with
 * '/', in that order whatever the order of the labels in the text.
 */
export function metricSeries(text: string, name: string, labels: string[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of text.matchAll(/^(\w+)\{([^}]*)\} (\S+)$/gm)) {
    if (m[1] !== name) continue;
    const values = Object.fromEntries([...m[2]!.matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    out.set(labels.map((l) => values[l] ?? '').join('/'), Number(m[3]));
  }
  return out;
}
