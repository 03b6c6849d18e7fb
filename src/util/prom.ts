// The Prometheus text exposition format, as much as the kubelet's /metrics/resource uses: parsing samples
// (name, labels, value, optional timestamp) and writing families back. Pure.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
  /** Milliseconds since the epoch, when the line carries one. */
  timestamp?: number;
}

function parseValue(s: string): number {
  if (s === '+Inf') return Infinity;
  if (s === '-Inf') return -Infinity;
  if (s === 'NaN') return NaN;
  return Number(s);
}

/** Samples of a text exposition; comments and malformed lines are skipped. */
export function parsePrometheus(text: string): Sample[] {
  const out: Sample[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)/.exec(line);
    if (!m) continue;
    const name = m[1];
    let i = name.length;
    const labels: Record<string, string> = {};
    if (line[i] === '{') {
      i++;
      let ok = false;
      while (i < line.length) {
        while (line[i] === ' ' || line[i] === ',') i++;
        if (line[i] === '}') { i++; ok = true; break; }
        const lm = /^([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"/.exec(line.slice(i));
        if (!lm) break;
        i += lm[0].length;
        let v = '';
        while (i < line.length && line[i] !== '"') {
          if (line[i] === '\\' && i + 1 < line.length) {
            const c = line[i + 1];
            v += c === 'n' ? '\n' : c;
            i += 2;
          } else {
            v += line[i++];
          }
        }
        i++; // closing quote
        labels[lm[1]] = v;
      }
      if (!ok) continue;
    }
    const rest = line.slice(i).trim().split(/\s+/);
    if (!rest[0]) continue;
    const value = parseValue(rest[0]);
    if (Number.isNaN(value) && rest[0] !== 'NaN') continue;
    const ts = rest[1] !== undefined ? Number(rest[1]) : undefined;
    out.push({ name, labels, value, ...(ts !== undefined && Number.isFinite(ts) ? { timestamp: ts } : {}) });
  }
  return out;
}

export interface Family {
  name: string;
  help: string;
  type: 'counter' | 'gauge';
  samples: { labels?: Record<string, string>; value: number; timestamp?: number }[];
}

const escape = (v: string): string => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');

function formatValue(v: number): string {
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}

/** Families in the text format, in the order given; a family without samples still gets HELP and TYPE. */
export function writePrometheus(families: Family[]): string {
  let out = '';
  for (const f of families) {
    out += `# HELP ${f.name} ${f.help}\n# TYPE ${f.name} ${f.type}\n`;
    for (const s of f.samples) {
      const labels = Object.entries(s.labels ?? {});
      const l = labels.length ? `{${labels.map(([k, v]) => `${k}="${escape(v)}"`).join(',')}}` : '';
      out += `${f.name}${l} ${formatValue(s.value)}${s.timestamp !== undefined ? ` ${Math.round(s.timestamp)}` : ''}\n`;
    }
  }
  return out;
}
