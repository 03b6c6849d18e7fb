// The dependency rule of src/ (the target layering), as a test: host and member meet only in provider/;
// forge/, kube/ and util/ know nothing of the layers above them; manager.ts (with virtualnodes.ts, which only it
// imports) alone wires host and member together, and only cli.ts imports it. Relative imports and re-exports of every src/**/*.ts are read with
// TypeScript's own pre-processor, so comments, strings and multi-line import lists cannot fool it.
// Beside it, one rule the imports cannot show (member/ uses ClusterClient for the member's own client): member/
// never takes a host client, as a parameter, field or variable named host… typed with ClusterClient; what it needs
// of the host comes through provider/.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** One relative import (or re-export): both ends as paths from the repository root, e.g. `src/host/identity.ts`. */
interface Import { from: string; to: string }

/** Matches paths under any of `parts` (relative to src/): `dir/` for a directory, else an exact file. */
function inAny(...parts: string[]): (path: string) => boolean {
  return (path) => parts.some((p) => (p.endsWith('/') ? path.startsWith(`src/${p}`) : path === `src/${p}`));
}

const BELOW_THE_SEAM = ['host/', 'member/', 'config.ts', 'config/', 'manager.ts'];

const RULES: { from: (path: string) => boolean; to: (path: string) => boolean }[] = [
  { from: inAny('host/'), to: inAny('member/') },
  { from: inAny('member/'), to: inAny('host/') },
  { from: inAny('provider/'), to: inAny(...BELOW_THE_SEAM) },
  { from: inAny('forge/', 'kube/', 'util/'), to: inAny('provider/', ...BELOW_THE_SEAM) },
  { from: (path) => !inAny('manager.ts', 'cli.ts')(path), to: inAny('manager.ts') },
  { from: (path) => !inAny('manager.ts')(path), to: inAny('virtualnodes.ts') },
];

/** The imports that break a rule, as sorted, distinct "file -> target" strings. */
function violations(imports: Import[]): string[] {
  const bad = imports.filter((i) => RULES.some((r) => r.from(i.from) && r.to(i.to)));
  return [...new Set(bad.map((i) => `${i.from} -> ${i.to}`))].sort();
}

/** The relative imports and re-exports of one file's text, resolved against its path. */
function importsIn(file: string, text: string): Import[] {
  const { importedFiles } = ts.preProcessFile(text, true, true);
  return importedFiles
    .filter((f) => f.fileName.startsWith('.'))
    .map((f) => ({ from: file, to: posix.normalize(posix.join(posix.dirname(file), f.fileName)) }));
}

function srcFiles(): string[] {
  return readdirSync(`${ROOT}src`, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => `src/${f.split(/[\\/]/).join('/')}`);
}

function srcImports(): Import[] {
  return srcFiles().flatMap((f) => importsIn(f, readFileSync(`${ROOT}${f}`, 'utf8')));
}

/**
 * The host clients a file declares, as "file: name": parameters, fields and variables named `host` or `host…`
 * (`hostClient`, `#host`; not `hostname`) whose type annotation names ClusterClient (`Pick<ClusterClient, 'core'>`
 * too). By the words written: a type alias of a host client's calls under another name is not seen.
 */
function hostClientsIn(file: string, text: string): string[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isParameter(node) || ts.isPropertyDeclaration(node) || ts.isPropertySignature(node) || ts.isVariableDeclaration(node))
      && node.type && /^#?host(?![a-z])/.test(node.name.getText(sf)) && /\bClusterClient\b/.test(node.type.getText(sf))) {
      found.push(`${file}: ${node.name.getText(sf)}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

describe('dependency rule of src/', () => {
  const found = violations(srcImports());

  it('no import crosses the seam: host/ and member/ meet only in provider/, manager.ts wires them', () => {
    assert.deepEqual(found, [], 'imports that break the dependency rule (file -> target)');
  });

  it('member/ never holds a host client: what it needs of the host is a port in provider/', () => {
    const clients = srcFiles().filter(inAny('member/')).flatMap((f) => hostClientsIn(f, readFileSync(`${ROOT}${f}`, 'utf8')));
    assert.deepEqual(clients, [], 'host clients declared under src/member/ (file: name)');
  });
});

describe('dependency rule checker', () => {
  it('names each breaking import and lets the allowed ones through', () => {
    const imports: Import[] = [
      { from: 'src/host/pod/controller.ts', to: 'src/member/delegates.ts' },
      { from: 'src/member/provider.ts', to: 'src/host/identity.ts' },
      { from: 'src/provider/pod.ts', to: 'src/config.ts' },
      { from: 'src/provider/pod.ts', to: 'src/member/cluster.ts' },
      { from: 'src/kube/client.ts', to: 'src/provider/errors.ts' },
      { from: 'src/forge/pod.ts', to: 'src/config.ts' },
      { from: 'src/util/backoff.ts', to: 'src/host/identity.ts' },
      { from: 'src/health.ts', to: 'src/manager.ts' },
      { from: 'src/member/reflection/mirror.ts', to: 'src/host/reflection/caches.ts' },
      { from: 'src/host/reflection/caches.ts', to: 'src/member/reflection/reflector.ts' },
      { from: 'src/kube/kinds.ts', to: 'src/provider/reflection.ts' },
      // Allowed:
      { from: 'src/host/pod/controller.ts', to: 'src/provider/pod.ts' },
      { from: 'src/member/provider.ts', to: 'src/provider/errors.ts' },
      { from: 'src/member/cluster.ts', to: 'src/config.ts' },
      { from: 'src/host/node/controller.ts', to: 'src/kube/informer.ts' },
      { from: 'src/kube/listwatch.ts', to: 'src/util/backoff.ts' },
      { from: 'src/forge/pod.ts', to: 'src/log.ts' },
      { from: 'src/provider/pod.ts', to: 'src/forge/keys.ts' },
      // Reflection: the member's reflectors see the host through provider/reflection.ts; kinds are kube/'s.
      { from: 'src/member/reflection/mirror.ts', to: 'src/provider/reflection.ts' },
      { from: 'src/host/reflection/caches.ts', to: 'src/provider/reflection.ts' },
      { from: 'src/provider/reflection.ts', to: 'src/kube/kinds.ts' },
      { from: 'src/host/reflection/caches.ts', to: 'src/kube/kinds.ts' },
      { from: 'src/member/reflection/export.ts', to: 'src/kube/kinds.ts' },
      { from: 'src/manager.ts', to: 'src/member/cluster.ts' },
      { from: 'src/manager.ts', to: 'src/host/pod/controller.ts' },
      { from: 'src/cli.ts', to: 'src/manager.ts' },
    ];
    assert.deepEqual(violations(imports), [
      'src/forge/pod.ts -> src/config.ts',
      'src/health.ts -> src/manager.ts',
      'src/host/pod/controller.ts -> src/member/delegates.ts',
      'src/host/reflection/caches.ts -> src/member/reflection/reflector.ts',
      'src/kube/client.ts -> src/provider/errors.ts',
      'src/kube/kinds.ts -> src/provider/reflection.ts',
      'src/member/provider.ts -> src/host/identity.ts',
      'src/member/reflection/mirror.ts -> src/host/reflection/caches.ts',
      'src/provider/pod.ts -> src/config.ts',
      'src/provider/pod.ts -> src/member/cluster.ts',
      'src/util/backoff.ts -> src/host/identity.ts',
    ]);
  });

  it('finds host clients by name and type, whatever the declaration, and lets the member\'s client and host values through', () => {
    const text = [
      "import type { ClusterClient } from '../kube/client.ts';",
      'export function f(host: ClusterClient, client: ClusterClient, hostName: string, hostname: ClusterClient): void {}',
      "export interface Ctx { host: Pick<ClusterClient, 'core'>; hostKey: string; hostSlices: Cache<V1EndpointSlice> }",
      'class C { #host: ClusterClient; #hostClient?: ClusterClient[\'core\']; member: ClusterClient }',
      'const hostApi: ClusterClient | undefined = undefined;',
      'const host = other;',
      '// host: ClusterClient',
    ].join('\n');
    assert.deepEqual(hostClientsIn('src/member/x.ts', text), [
      'src/member/x.ts: host', 'src/member/x.ts: host', 'src/member/x.ts: #host', 'src/member/x.ts: #hostClient',
      'src/member/x.ts: hostApi',
    ]);
  });

  it('reads imports, type imports and re-exports over several lines, and no comments or packages', () => {
    const text = [
      "import { a } from '../member/a.ts';",
      'import type {',
      '  B,',
      "} from './b.ts';",
      "export { c } from '../../config.ts';",
      "export * from './d.ts';",
      "import { Observable } from 'rxjs';",
      "// import { e } from '../member/e.ts';",
      "const s = \"import { f } from '../member/f.ts'\";",
    ].join('\n');
    assert.deepEqual(importsIn('src/host/pod/x.ts', text).map((i) => i.to), [
      'src/host/member/a.ts', 'src/host/pod/b.ts', 'src/config.ts', 'src/host/pod/d.ts',
    ]);
  });
});
