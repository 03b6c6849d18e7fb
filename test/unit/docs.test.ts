// What the README and docs/ say against the code, without clusters: every command block carries exactly one mark
// (test/integration/docs.test.ts runs those marked `run:`), every repository path they name exists, the flags
// tables of docs/configuration.md against `clusterlet --help` and the parser, and every metric the docs name
// against /metrics.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { FLAGS, HELP } from '../../src/config.ts';
import { startHealthServer } from '../../src/health.ts';
import { blocksOf, commandsOf, docBlocks, docFiles, pathsNamedIn, promisesOutput, type NamedPath } from '../support/docs.ts';
import { exposedSeries, registryLabels } from '../support/dashboard.ts';
import { ROOT } from '../support/manifests.ts';

const read = (file: string): string => readFileSync(join(ROOT, file), 'utf8');

describe('command blocks in the docs', () => {
  it('every sh, bash or console block of README.md and docs/*.md carries exactly one mark, and every mark parses', () => {
    const { blocks, problems } = docBlocks();
    assert.deepEqual(problems, []);
    const shell = blocks.filter((b) => b.mark);
    assert.ok(shell.length >= 10, `${shell.length} command blocks`);
    assert.ok(shell.some((b) => b.mark?.run), 'some blocks run');
  });

  it('catches a block without a mark, one with two, a stray mark, a mark that does not parse, unlabelled commands', () => {
    const text = [
      '```sh', 'kubectl get nodes', '```',
      '<!-- run: host -->', '<!-- not run: needs your own clusters -->', '```bash', 'kubectl get pods', '```',
      '<!-- run: host -->', 'text', '```sh', 'ls', '```',
      '<!-- run: cloud -->', '```sh', 'ls', '```',
      '<!-- not run: -->', '```sh', 'ls', '```',
      '```', 'kubectl get nodes', '```',
      '<!-- run: host with namespace results -->', '```sh', 'kubectl annotate namespace results a=b', '```',
      '```yaml', 'a: 1', '```',
    ].join('\n');
    const { blocks, problems } = blocksOf('x.md', text);
    const at = (line: number, re: RegExp): boolean => problems.some((p) => p.startsWith(`x.md:${line}: `) && re.test(p));
    assert.equal(problems.length, 8, problems.join('\n'));
    assert.ok(at(1, /block without a mark/));
    assert.ok(at(4, /not on the line right before/) && at(5, /a second mark/), 'two marks');
    assert.ok(at(9, /not on the line right before/) && at(11, /block without a mark/), 'a mark away from its block');
    assert.ok(at(14, /"run: cloud": expected host, member or print/));
    assert.ok(at(18, /needs its reason/));
    assert.ok(at(22, /commands without a language/));
    assert.deepEqual(blocks.find((b) => b.line === 26)?.mark, { run: true, target: 'host', namespace: 'results' });
    assert.deepEqual(blocks.find((b) => b.line === 6)?.mark, { run: false, reason: 'needs your own clusters' });
  });

  it('a command runs on as long as its lines end in a backslash; comments and blank lines are none', () => {
    assert.deepEqual(commandsOf({ language: 'sh', body: '# set up\nkubectl get nodes   # the nodes\n\nhelm install a b \\\n  --set x=1\nls' }),
      ['kubectl get nodes   # the nodes', 'helm install a b \\\n  --set x=1', 'ls']);
    assert.deepEqual(commandsOf({ language: 'console', body: '$ kubectl get nodes\nNAME   STATUS\nx      Ready' }), ['kubectl get nodes']);
    assert.ok(promisesOutput('kubectl -n clusterlet get leases'));
    assert.ok(promisesOutput('node src/cli.ts --help'));
    assert.ok(!promisesOutput('kubectl apply -f x.yaml   # get it'));
  });
});

/** Directories .gitignore names (`e2e/kind/.work/`): made at run time, never in the tree. */
const madeAtRunTime = read('.gitignore').split('\n').map((l) => l.trim().replace(/^\//, ''))
  .filter((l) => l.endsWith('/') && !/[*?[]/.test(l));

/** What is wrong with the paths named: each one that neither exists nor is made at run time, said where. */
function missingPaths(named: NamedPath[], exists: (path: string) => boolean): string[] {
  return named.filter((n) => !exists(n.path) && !madeAtRunTime.some((d) => `${n.path}/`.startsWith(d)))
    .map((n) => `${n.file}:${n.line}: ${n.how === 'link' ? 'link' : 'code'} \`${n.written}\` names ${n.path}, which is not in the tree`);
}

describe('repository paths in the docs', () => {
  it('every path README.md and docs/*.md name (in code, shell blocks and relative links) exists', () => {
    const named = docFiles().flatMap((f) => pathsNamedIn(f));
    assert.ok(new Set(named.map((n) => n.path)).size >= 150, `${named.length} paths named`);
    assert.deepEqual(missingPaths(named, (p) => existsSync(join(ROOT, p))), []);
  });

  it('every result file in bench/results/ is cited by README.md or docs/ (the others live in git history)', () => {
    const cited = new Set(docFiles().flatMap((f) => pathsNamedIn(f)).map((n) => n.path));
    const results = readdirSync(join(ROOT, 'bench/results')).filter((f) => f.endsWith('.md')).map((f) => `bench/results/${f}`);
    assert.ok(results.length >= 1, 'bench/results/ holds result files');
    assert.deepEqual(results.filter((r) => !cited.has(r)), [], 'cite them in docs/performance.md, or git rm them');
  });

  it('finds paths in code spans, shell blocks and relative links; leaves URLs, anchors, patterns and placeholders', () => {
    const text = [
      'See `src/cli.ts` and `node hack/demo.ts --help`, `host/pod/controller.ts:42` and `src/gone.ts`.',
      '[pods](pods-and-nodes.md#fit), [code](../src/manager.ts), [site](https://example.com/src/x.ts), [top](#top).',
      'Not paths: `test/unit/**/*.test.ts`, `bench/results/<name>.md`, `manifests/{host,member}`, src/prose.ts.',
      '```sh', 'kubectl apply -k manifests/host', '```',
      '```yaml', 'file: src/in-yaml.ts', '```',
    ].join('\n');
    const named = pathsNamedIn('docs/x.md', text);
    assert.deepEqual(named.map((n) => `${n.line} ${n.how} ${n.path}`), [
      '1 code src/cli.ts', '1 code hack/demo.ts', '1 code src/host/pod/controller.ts', '1 code src/gone.ts',
      '2 link docs/pods-and-nodes.md', '2 link src/manager.ts',
      '5 code manifests/host',
    ]);
    const tree = new Set(['src/cli.ts', 'hack/demo.ts', 'src/host/pod/controller.ts', 'docs/pods-and-nodes.md', 'src/manager.ts']);
    assert.deepEqual(missingPaths(named, (p) => tree.has(p)), [
      'docs/x.md:1: code `src/gone.ts` names src/gone.ts, which is not in the tree',
      'docs/x.md:5: code `manifests/host` names manifests/host, which is not in the tree',
    ]);
    assert.deepEqual(missingPaths(pathsNamedIn('docs/x.md', 'Files go to `e2e/kind/.work/` and `e2e/kind/.work/a.log`.'), () => false), []);
  });
});

/** Flags written in the first column of each table of docs/configuration.md whose first column is `flag`. */
function documentedFlags(): Set<string> {
  const out = new Set<string>();
  let inTable = false;
  for (const line of read('docs/configuration.md').split('\n')) {
    if (/^\|\s*flag\s*\|/.test(line)) { inTable = true; continue; }
    if (!line.startsWith('|')) { inTable = false; continue; }
    if (!inTable || /^\|\s*-+\s*\|/.test(line)) continue;
    const cell = line.split('|')[1];
    for (const code of cell.matchAll(/`([^`]+)`/g)) {
      // `--clusterprofile-*` stands for a group listed in full in another table.
      for (const m of code[1].matchAll(/(?<![\w-])(--?[a-z][a-z0-9-]*)(\*?)/g)) if (!m[2]) out.add(m[1]);
    }
  }
  return out;
}

const parserFlags = new Set(Object.entries(FLAGS).flatMap(([name, o]) => ['--' + name, ...'short' in o ? ['-' + o.short] : []]));
const helpFlags = new Set([...HELP.matchAll(/(?<![\w-])(--?[a-z][a-z0-9-]*)/g)].map((m) => m[1]));

describe('docs/configuration.md flags tables', () => {
  const documented = documentedFlags();
  it('every documented flag is in --help and the parser', () => {
    assert.ok(documented.size >= 40, `${documented.size} flags`);
    assert.deepEqual([...documented].filter((f) => !helpFlags.has(f)), [], 'documented, not in clusterlet --help (src/config/help.ts)');
    assert.deepEqual([...documented].filter((f) => !parserFlags.has(f)), [], 'documented, not accepted (src/config.ts FLAGS)');
  });
  it('every flag the parser accepts is documented and in --help', () => {
    assert.deepEqual([...parserFlags].filter((f) => !documented.has(f)), [], 'accepted, not in docs/configuration.md\'s tables');
    assert.deepEqual([...parserFlags].filter((f) => !helpFlags.has(f)), [], 'accepted, not in --help');
  });
  it('--help names no flag the parser refuses', () => {
    assert.deepEqual([...helpFlags].filter((f) => !parserFlags.has(f)), []);
  });
});

describe('docs/CONVENTIONS.md keys', () => {
  it('every clusterlet.io/ key of src/forge/keys.ts has a row', () => {
    const conventions = read('docs/CONVENTIONS.md');
    const keys = [...read('src/forge/keys.ts').matchAll(/'(clusterlet\.io\/[A-Za-z-]+)'/g)].map((m) => m[1]);
    assert.ok(keys.length >= 20, `${keys.length} keys`);
    assert.deepEqual(keys.filter((k) => !conventions.includes(`\`${k}\``)), []);
  });
});

describe('metrics named in the docs', () => {
  let server: Server;
  let families: Set<string>;
  let series: Set<string>;
  before(async () => {
    server = await startHealthServer(0, []);
    const text = await (await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`)).text();
    families = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]));
    series = new Set(exposedSeries(text, registryLabels).keys());
  });
  after(() => { server.close(); });

  it('every clusterlet_* name in README.md and docs/*.md is served on /metrics', () => {
    const named = new Map<string, string>();
    for (const f of docFiles()) {
      for (const m of read(f).matchAll(/\bclusterlet_[a-z0-9_]*[a-z0-9](?![a-z0-9_*])/g)) named.set(m[0], f);
    }
    assert.ok(named.size >= 25, `${named.size} metrics named`);
    assert.deepEqual([...named].filter(([n]) => !families.has(n) && !series.has(n)).map(([n, f]) => `${n} (${f})`), []);
  });

  it('every metric served has a row in docs/CONVENTIONS.md (the process\'s own: named in its prose)', () => {
    const conventions = read('docs/CONVENTIONS.md');
    const section = conventions.slice(conventions.indexOf('\n## Metrics\n'), conventions.indexOf('\n## Logging\n'));
    const missing = [...families].filter((n) => /^clusterlet_(process|nodejs)_/.test(n)
      ? !section.includes(`\`${n.slice('clusterlet_'.length)}\``) : !section.includes(`| \`${n}\` |`));
    assert.deepEqual(missing, []);
  });
});
