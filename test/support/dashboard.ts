// The Grafana dashboard's queries against clusterlet's /metrics: every PromQL expression of the dashboard (panel
// targets and label_values() variables) parsed, and each metric it names, each label its matchers and groupings
// use, looked up in the exposition text clusterlet serves. Shared by the unit test (the registry, through the
// health server) and the chart's integration test (a running clusterlet).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parsePromQL, type Parsed } from './promql.ts';
import { ROOT } from './manifests.ts';
import { registry } from '../../src/metrics.ts';

export const DASHBOARD = join(ROOT, 'charts/clusterlet/dashboards/clusterlet.json');

interface Panel { title?: string; targets?: { expr?: string }[]; panels?: Panel[] }
interface Dashboard { panels: Panel[]; templating?: { list: { name: string; query?: string | { query?: string } }[] } }

export interface Query { where: string; expr: string }

export function loadDashboard(): Dashboard {
  return JSON.parse(readFileSync(DASHBOARD, 'utf8')) as Dashboard;
}

/** Every PromQL expression of the dashboard, with where it is (panel title or variable name). */
export function dashboardQueries(d: Dashboard = loadDashboard()): Query[] {
  const out: Query[] = [];
  const walk = (panels: Panel[]): void => {
    for (const p of panels) {
      for (const t of p.targets ?? []) if (t.expr) out.push({ where: `panel "${p.title}"`, expr: t.expr });
      walk(p.panels ?? []);
    }
  };
  walk(d.panels);
  for (const v of d.templating?.list ?? []) {
    const q = typeof v.query === 'string' ? v.query : v.query?.query;
    // Grafana's label_values(<series selector>, <label>): the selector is PromQL, the label one of its series'.
    const lv = q === undefined ? undefined : /^label_values\((.+),\s*([a-zA-Z_]\w*)\)$/.exec(q);
    if (lv) out.push({ where: `variable "${v.name}"`, expr: lv[1] });
  }
  return out;
}

/** A metric family of the exposition text: its type and the labels of its samples. */
export interface Family { type: string; labels: Set<string> }

/** The series names of the exposition text (`# TYPE` lines; a histogram as its _bucket, _sum and _count). */
export function exposedSeries(text: string, labelsOf: (family: string) => string[]): Map<string, Family> {
  const out = new Map<string, Family>();
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const [, name, type] = m;
    const labels = new Set(labelsOf(name));
    const suffixes = type === 'histogram' ? ['_bucket', '_sum', '_count'] : type === 'summary' ? ['', '_sum', '_count'] : [''];
    for (const s of suffixes) out.set(name + s, { type, labels: s === '_bucket' ? new Set([...labels, 'le']) : labels });
  }
  return out;
}

/** The labels clusterlet's registry declares for a metric family (none for most default metrics). */
export const registryLabels = (family: string): string[] =>
  [...(registry.getSingleMetric(family) as { labelNames?: readonly string[] } | undefined)?.labelNames ?? []];

/** Labels Prometheus adds to every scraped series. */
const TARGET_LABELS = ['job', 'instance'];

/**
 * What is wrong with the dashboard's queries against `series`: expressions that do not parse, metrics not exposed,
 * labels a matcher or grouping uses that its series do not have. Empty when every query can be answered.
 */
export function dashboardProblems(queries: Query[], series: Map<string, Family>): string[] {
  const problems: string[] = [];
  for (const q of queries) {
    let parsed: Parsed;
    try {
      parsed = parsePromQL(q.expr);
    } catch (err) {
      problems.push(`${q.where}: ${(err as Error).message}`);
      continue;
    }
    const labelsOf = (metric: string | undefined): string[] => [...TARGET_LABELS, ...series.get(metric ?? '')?.labels ?? []];
    for (const s of parsed.selectors) {
      if (s.metric === undefined || !series.has(s.metric)) {
        problems.push(`${q.where}: metric ${s.metric ?? '(none)'} is not in /metrics`);
        continue;
      }
      for (const l of s.labels) if (!labelsOf(s.metric).includes(l)) problems.push(`${q.where}: ${s.metric} has no label ${l}`);
    }
    for (const g of parsed.groupings) {
      if (g.selectors.some((s) => !series.has(s.metric ?? ''))) continue; // reported above
      const known = new Set(g.selectors.flatMap((s) => labelsOf(s.metric)));
      for (const l of g.labels) if (!known.has(l)) problems.push(`${q.where}: groups by ${l}, which none of its series has`);
    }
  }
  return problems;
}

/** The metric names the dashboard queries. */
export function queriedMetrics(queries: Query[]): Set<string> {
  return new Set(queries.flatMap((q) => parsePromQL(q.expr).selectors.map((s) => s.metric ?? '')));
}
