// A PromQL parser for what dashboards query: it accepts the language's expression grammar (numbers, strings, vector
// selectors with matchers, range and subquery brackets, offset and @, function calls, aggregations with by/without
// before or after their arguments, unary and binary operators with bool/on/ignoring/group_left/group_right) and
// refuses anything else with the position, so a typo in a dashboard fails its test. It keeps what the dashboard
// test checks: every vector selector (metric name and the labels its matchers use) and every aggregation's
// grouping labels with the selectors under it. Grafana's $__ interval variables stand for a duration.

export interface Selector { metric?: string; labels: string[] }
export interface Grouping { labels: string[]; selectors: Selector[] }
export interface Parsed { selectors: Selector[]; groupings: Grouping[] }

const FUNCTIONS = new Set([
  'abs', 'absent', 'absent_over_time', 'avg_over_time', 'ceil', 'changes', 'clamp', 'clamp_max', 'clamp_min',
  'count_over_time', 'day_of_month', 'day_of_week', 'day_of_year', 'days_in_month', 'delta', 'deriv', 'exp', 'floor',
  'histogram_avg', 'histogram_count', 'histogram_fraction', 'histogram_quantile', 'histogram_stddev', 'histogram_stdvar',
  'histogram_sum', 'holt_winters', 'hour', 'idelta', 'increase', 'irate', 'label_join', 'label_replace', 'last_over_time',
  'ln', 'log10', 'log2', 'max_over_time', 'min_over_time', 'minute', 'month', 'predict_linear', 'present_over_time',
  'quantile_over_time', 'rate', 'resets', 'round', 'scalar', 'sgn', 'sort', 'sort_desc', 'sqrt', 'stddev_over_time',
  'stdvar_over_time', 'sum_over_time', 'time', 'timestamp', 'vector', 'year',
]);
const AGGREGATIONS = new Set(['sum', 'avg', 'count', 'min', 'max', 'group', 'stddev', 'stdvar', 'topk', 'bottomk',
  'quantile', 'count_values', 'limitk', 'limit_ratio']);
/** Binary operators by precedence, lowest first; `^` is right-associative. */
const PRECEDENCE: string[][] = [['or'], ['and', 'unless'], ['==', '!=', '<=', '<', '>=', '>'], ['+', '-'], ['*', '/', '%', 'atan2'], ['^']];
const COMPARISONS = new Set(PRECEDENCE[2]);

type Token = { kind: 'ident' | 'number' | 'string' | 'duration' | 'op' | 'end'; text: string; at: number };

const DURATION = /^(\d+(ms|s|m|h|d|w|y))+/;
const NUMBER = /^(0x[0-9a-fA-F]+|\d*\.?\d+(e[+-]?\d+)?|Inf|NaN)/i;
// A leading ':' is left to subqueries ([1h:5m]); recording rules' names start with a letter in practice.
const IDENT = /^[a-zA-Z_][a-zA-Z0-9_:]*/;
const OPS = ['==', '!=', '=~', '!~', '<=', '>=', '<', '>', '=', '+', '-', '*', '/', '%', '^', '(', ')', '{', '}', '[', ']', ',', ':', '@'];

function tokenize(src: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const rest = src.slice(i);
    const space = /^(\s+|#[^\n]*)/.exec(rest);
    if (space) { i += space[0].length; continue; }
    const grafana = /^\$(__[a-z_]+|\{__[a-z_]+\})/.exec(rest); // $__rate_interval, $__range, ...: a duration
    if (grafana) { out.push({ kind: 'duration', text: '5m', at: i }); i += grafana[0].length; continue; }
    if (rest[0] === '"' || rest[0] === "'" || rest[0] === '`') {
      const q = rest[0];
      let j = 1;
      while (j < rest.length && rest[j] !== q) j += rest[j] === '\\' && q !== '`' ? 2 : 1;
      if (j >= rest.length) throw new Error(`unterminated string at ${i}`);
      out.push({ kind: 'string', text: rest.slice(1, j), at: i });
      i += j + 1;
      continue;
    }
    const m = DURATION.exec(rest) ?? undefined;
    if (m && !/^[a-zA-Z0-9_.]/.test(rest.slice(m[0].length))) { out.push({ kind: 'duration', text: m[0], at: i }); i += m[0].length; continue; }
    const id = IDENT.exec(rest);
    const num = NUMBER.exec(rest);
    if (num && (!id || /^(inf|nan)$/i.test(id[0]) && id[0].length === num[0].length)) {
      out.push({ kind: 'number', text: num[0], at: i }); i += num[0].length; continue;
    }
    if (id) { out.push({ kind: 'ident', text: id[0], at: i }); i += id[0].length; continue; }
    const op = OPS.find((o) => rest.startsWith(o));
    if (!op) throw new Error(`unexpected character ${JSON.stringify(rest[0])} at ${i}`);
    out.push({ kind: 'op', text: op, at: i });
    i += op.length;
  }
  out.push({ kind: 'end', text: '', at: src.length });
  return out;
}

/** Parses one PromQL expression; throws with the position of the first thing that is not PromQL. */
export function parsePromQL(src: string): Parsed {
  const toks = tokenize(src);
  let pos = 0;
  const selectors: Selector[] = [];
  const groupings: Grouping[] = [];
  const peek = (): Token => toks[pos];
  const fail = (what: string): never => {
    const t = peek();
    throw new Error(`expected ${what} at ${t.at}, found ${t.kind === 'end' ? 'the end' : JSON.stringify(t.text)} in: ${src}`);
  };
  const isOp = (text: string): boolean => peek().kind === 'op' && peek().text === text;
  const isWord = (text: string): boolean => peek().kind === 'ident' && peek().text.toLowerCase() === text;
  const expect = (text: string): void => { if (!isOp(text)) fail(`"${text}"`); pos++; };
  const ident = (): string => { if (peek().kind !== 'ident') fail('a name'); return toks[pos++].text; };

  function labelList(): string[] {
    expect('(');
    const labels: string[] = [];
    while (!isOp(')')) {
      labels.push(ident());
      if (!isOp(')')) expect(',');
    }
    pos++;
    return labels;
  }

  function matchers(sel: Selector): void {
    expect('{');
    while (!isOp('}')) {
      const label = ident();
      if (!['=', '!=', '=~', '!~'].some((o) => isOp(o))) fail('a label matcher operator');
      pos++;
      if (peek().kind !== 'string') fail('a string');
      pos++;
      if (label === '__name__') sel.metric = toks[pos - 1].text; else sel.labels.push(label);
      if (!isOp('}')) expect(',');
    }
    pos++;
  }

  function duration(): void {
    if (peek().kind !== 'duration' && peek().kind !== 'number') fail('a duration');
    pos++;
  }

  function postfix(): void {
    if (isOp('[')) {
      pos++;
      duration();
      if (isOp(':')) { pos++; if (!isOp(']')) duration(); }
      expect(']');
    }
    for (;;) {
      if (isWord('offset')) { pos++; if (isOp('-')) pos++; duration(); continue; }
      if (isOp('@')) {
        pos++;
        if (peek().kind === 'number') pos++;
        else if (isWord('start') || isWord('end')) { pos++; expect('('); expect(')'); } else fail('a timestamp, start() or end()');
        continue;
      }
      return;
    }
  }

  function args(): void {
    expect('(');
    while (!isOp(')')) {
      expr(0);
      if (!isOp(')')) expect(',');
    }
    pos++;
  }

  function primary(): void {
    const t = peek();
    if (t.kind === 'number' || t.kind === 'string') { pos++; return; }
    if (t.kind === 'duration') fail('an expression'); // a bare duration is not a value
    if (isOp('(')) { pos++; expr(0); expect(')'); return; }
    if (isOp('{')) { const sel: Selector = { labels: [] }; matchers(sel); selectors.push(sel); return; }
    if (t.kind !== 'ident') fail('an expression');
    const name = t.text;
    pos++;
    if (AGGREGATIONS.has(name.toLowerCase())) {
      let labels: string[] | undefined;
      if (isWord('by') || isWord('without')) { pos++; labels = labelList(); }
      const before = selectors.length;
      args();
      if (isWord('by') || isWord('without')) { pos++; labels = labelList(); }
      if (labels) groupings.push({ labels, selectors: selectors.slice(before) });
      return;
    }
    if (isOp('(')) {
      if (!FUNCTIONS.has(name)) throw new Error(`unknown function "${name}" at ${t.at} in: ${src}`);
      args();
      return;
    }
    const sel: Selector = { metric: name, labels: [] };
    if (isOp('{')) matchers(sel);
    selectors.push(sel);
  }

  function unary(): void {
    if (isOp('-') || isOp('+')) { pos++; unary(); return; }
    primary();
    postfix();
  }

  function binaryOp(level: number): boolean {
    const t = peek();
    return PRECEDENCE[level].includes(t.kind === 'ident' ? t.text.toLowerCase() : t.kind === 'op' ? t.text : '');
  }

  function expr(level: number): void {
    if (level === PRECEDENCE.length) { unary(); return; }
    expr(level + 1);
    while (binaryOp(level)) {
      const op = toks[pos++].text;
      if (isWord('bool')) { if (!COMPARISONS.has(op)) fail('a comparison before bool'); pos++; }
      if (isWord('on') || isWord('ignoring')) { pos++; labelList(); }
      if (isWord('group_left') || isWord('group_right')) { pos++; if (isOp('(')) labelList(); }
      expr(op === '^' ? level : level + 1);
    }
  }

  expr(0);
  if (peek().kind !== 'end') fail('the end of the expression');
  return { selectors, groupings };
}
