// The command blocks of README.md and docs/*.md, and the marks that say whether and how the tests run them
// (docs/testing.md, "Command blocks in the docs"): parsed here for the unit test (every block marked, every mark
// well formed) and the integration test (the blocks marked `run:` run against the local clusters).
import { readFileSync, readdirSync } from 'node:fs';
import { join, posix } from 'node:path';
import { ROOT } from './manifests.ts';

/** README.md and every page of docs/, as paths from the repository's root. */
export function docFiles(): string[] {
  return ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`)];
}

/** Fenced blocks in these languages are commands a user runs: each carries exactly one mark. */
export const SHELL_LANGUAGES: ReadonlySet<string> = new Set(['sh', 'bash', 'console', 'shell']);

export type RunTarget = 'host' | 'member' | 'print';
export type Mark =
  /** Run against the local clusters: `kubectl` talks to `target` (print: no cluster); `namespace` is made first, on the host. */
  | { run: true; target: RunTarget; namespace?: string }
  | { run: false; reason: string };

export interface Block {
  file: string;
  /** Line of the opening fence, from 1. */
  line: number;
  language: string;
  body: string;
  mark?: Mark;
}

const FENCE = /^\s*(`{3,}|~{3,})\s*([^\s`]*)/;
const MARK = /^\s*<!--\s*(run|not run):\s*(.*?)\s*-->\s*$/;
const RUN = /^(host|member|print)(?: with namespace ([a-z0-9]([-a-z0-9]*[a-z0-9])?))?$/;

/** A mark's text parsed, or why it is not one. */
export function parseMark(kind: string, rest: string): Mark | { problem: string } {
  if (kind === 'not run') return rest.length >= 10 ? { run: false, reason: rest } : { problem: `"not run:" needs its reason, got "${rest}"` };
  const m = RUN.exec(rest);
  if (!m) return { problem: `"run: ${rest}": expected host, member or print, optionally followed by "with namespace <name>"` };
  return { run: true, target: m[1] as RunTarget, ...(m[2] ? { namespace: m[2] } : {}) };
}

/**
 * The fenced blocks of one file, each with the mark on the line right before its fence, and what is wrong with its
 * marks: a shell block with none or two, a mark that does not parse, a mark not right before a shell block.
 */
export function blocksOf(file: string, text = readFileSync(join(ROOT, file), 'utf8')): { blocks: Block[]; problems: string[] } {
  const lines = text.split('\n');
  const blocks: Block[] = [];
  const problems: string[] = [];
  const marks = new Map<number, Mark>();
  lines.forEach((l, i) => {
    const m = MARK.exec(l);
    if (!m) return;
    const mark = parseMark(m[1], m[2]);
    if ('problem' in mark) problems.push(`${file}:${i + 1}: ${mark.problem}`);
    else marks.set(i, mark);
    if (MARK.test(lines[i - 1] ?? '')) problems.push(`${file}:${i + 1}: a second mark for one block: keep exactly one`);
  });
  const used = new Set<number>();
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]);
    if (!open) continue;
    const fence = open[1];
    let end = i + 1;
    while (end < lines.length && !lines[end].trimStart().startsWith(fence)) end++;
    const language = open[2].toLowerCase();
    const block: Block = { file, line: i + 1, language, body: lines.slice(i + 1, end).join('\n') };
    if (SHELL_LANGUAGES.has(language)) {
      const mark = marks.get(i - 1);
      if (mark) {
        block.mark = mark;
        used.add(i - 1);
      } else if (!MARK.test(lines[i - 1] ?? '')) {
        problems.push(`${file}:${i + 1}: a \`\`\`${language} block without a mark: put <!-- run: host|member|print --> or `
          + '<!-- not run: <why> --> on the line before it (docs/testing.md, "Command blocks in the docs")');
      }
    } else if (language === '' && looksLikeCommands(block.body)) {
      problems.push(`${file}:${i + 1}: a block of commands without a language: make it \`\`\`sh, and mark it`);
    }
    blocks.push(block);
    i = end;
  }
  for (const i of marks.keys()) {
    if (!used.has(i)) problems.push(`${file}:${i + 1}: a mark not on the line right before a \`\`\`sh, bash or console block`);
  }
  return { blocks, problems };
}

/** Whether an unlabelled block's first line is a command a user would type. */
function looksLikeCommands(body: string): boolean {
  const first = body.split('\n').find((l) => l.trim() !== '')?.trim() ?? '';
  return /^(\$ |kubectl |helm |make |npm |node |docker |bash |curl )/.test(first);
}

/** Every block of README.md and docs/*.md, with every problem of their marks. */
export function docBlocks(): { blocks: Block[]; problems: string[] } {
  const all = docFiles().map((f) => blocksOf(f));
  return { blocks: all.flatMap((a) => a.blocks), problems: all.flatMap((a) => a.problems) };
}

/**
 * The commands of a shell block as a user types them: a line continued with `\` and the lines after it are one
 * command (kept as printed); blank and comment-only lines are none. In a console block, only `$ ` lines are commands.
 */
export function commandsOf(block: Pick<Block, 'language' | 'body'>): string[] {
  const lines = block.body.split('\n');
  const console = block.language === 'console';
  const out: string[] = [];
  let cur: string[] | undefined;
  for (const raw of lines) {
    if (cur) {
      cur.push(raw);
    } else {
      const l = console ? (raw.startsWith('$ ') ? raw.slice(2) : undefined) : raw;
      if (l === undefined || l.trim() === '' || l.trim().startsWith('#')) continue;
      cur = [l];
    }
    if (!/\\\s*$/.test(cur[cur.length - 1])) {
      out.push(cur.join('\n'));
      cur = undefined;
    }
  }
  if (cur) out.push(cur.join('\n'));
  return out;
}

/** Whether a command promises output: it reads (kubectl get, describe, logs, top; helm list, status) or prints help. */
export function promisesOutput(command: string): boolean {
  const words = command.replace(/#.*$/gm, '').split(/\s+/);
  return words.some((w) => w === '--help' || w === '--version' || w === '-h')
    || (words.includes('kubectl') && words.some((w) => ['get', 'describe', 'logs', 'top'].includes(w)))
    || (words.includes('helm') && words.some((w) => ['list', 'status'].includes(w)));
}

/** A repository path a doc names, where. */
export interface NamedPath {
  file: string;
  line: number;
  /** As written (without an anchor or `:line`). */
  written: string;
  /** From the repository's root. */
  path: string;
  how: 'code' | 'link';
}

/** The words of `text` that start with one of `dirs` and a slash (at the start, or after a space, quote, `=`, `(`, `[`). */
function pathWords(text: string, dirs: readonly string[]): string[] {
  const re = new RegExp(`(?:^|[\\s"'=(\\[])((?:${dirs.map((d) => d.replace('.', '\\.')).join('|')})/[^\\s"'\`()\\[\\]]*)`, 'g');
  return [...text.matchAll(re)].map((m) => m[1]);
}

/** Where repository paths start, in code spans and shell blocks. */
const TOP_DIRS = ['src', 'test', 'hack', 'bench', 'e2e', 'manifests', 'charts', 'docs', '.ci'];
/** The directories of src/: `host/pod/controller.ts` in a code span is written from src/, as docs/ARCHITECTURE.md does. */
const SRC_DIRS = readdirSync(join(ROOT, 'src'), { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name);
/** A pattern or a placeholder, not one path: globs, `<name>`, `{a,b}`, `$VAR`, elisions. */
const NOT_ONE_PATH = /[*?<>{}$…]|\.\.\.|\|/;

/** One written path, cleaned: anchors, `:line` and closing punctuation go; a pattern or placeholder is undefined. */
function cleanPath(written: string): string | undefined {
  const p = written.replace(/#.*$/, '').replace(/(:\d+)+$/, '').replace(/[.,;:!]+$/, '');
  return p === '' || NOT_ONE_PATH.test(p) ? undefined : p;
}

/**
 * The repository paths one doc names: in code spans and the lines of shell blocks, each word starting with a top
 * directory (src/, test/, hack/, bench/, e2e/, manifests/, charts/, docs/, .ci/), from the repository's root; in code
 * spans, each word starting with a directory of src/ (`host/`, `member/` …), from src/; in markdown links, every
 * target that is not a URL or an anchor, from the doc's own directory. Patterns and placeholders
 * (`bench/results/<name>.md`, `test/unit/**`) are not paths.
 */
export function pathsNamedIn(file: string, text = readFileSync(join(ROOT, file), 'utf8')): NamedPath[] {
  const out: NamedPath[] = [];
  const dir = posix.dirname(file);
  const add = (line: number, written: string, how: NamedPath['how'], base: string): void => {
    const p = cleanPath(written);
    if (p !== undefined) out.push({ file, line, written: p, path: posix.normalize(posix.join(base, p)), how });
  };
  const lines = text.split('\n');
  let fence: { marker: string; shell: boolean } | undefined;
  lines.forEach((l, i) => {
    const open = FENCE.exec(l);
    if (fence) {
      if (l.trimStart().startsWith(fence.marker)) fence = undefined;
      else if (fence.shell) for (const w of pathWords(l, TOP_DIRS)) add(i + 1, w, 'code', '.');
      return;
    }
    if (open) {
      fence = { marker: open[1], shell: SHELL_LANGUAGES.has(open[2].toLowerCase()) };
      return;
    }
    for (const [, , span] of l.matchAll(/(`+)([^`]+?)\1/g)) {
      for (const w of pathWords(span, TOP_DIRS)) add(i + 1, w, 'code', '.');
      for (const w of pathWords(span, SRC_DIRS)) add(i + 1, w, 'code', 'src');
    }
    const prose = l.replace(/(`+)[^`]+?\1/g, '');
    for (const m of prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(m[1]) || m[1].startsWith('#')) continue;
      add(i + 1, m[1], 'link', m[1].startsWith('/') ? '.' : dir);
    }
  });
  return out;
}
