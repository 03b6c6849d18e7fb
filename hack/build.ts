// `npm run build`, after the type check: bundles src/cli.ts and its dependencies into dist/ with esbuild, so that
// clusterlet loads only the code it uses, from a few files instead of hundreds.
// Measured with hack/idle-rss.ts (3 runs each): idle RSS 90.0 MB as tsc's one file per module, 81.4 MB bundled.
// - rxjs comes from its ES modules, which esbuild tree-shakes (its "node" export is the CommonJS whole: 400 files).
// - Whitespace and syntax are minified: V8 keeps every script's source in memory, and one non-ASCII character in a
//   comment would store the whole bundle as two bytes per character. Names are kept, so stack traces still name
//   the functions; dist/cli.js.map maps them back to src/ (`node --enable-source-maps dist/cli.js`).
// - Node's built-in modules are required, not imported: importing one makes Node read every export of it once,
//   which runs its lazy getters: `node:http`'s load undici, http2, webstreams and more (8 MB of RSS), `node:tls`'s
//   build the root certificates, `node:fs`'s load fs/promises and its streams.
// - The dependencies are inside: the image needs no node_modules.
import { build, type Plugin } from 'esbuild';
import { rmSync } from 'node:fs';
import { createRequire, isBuiltin } from 'node:module';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

const rxjsModules: Plugin = {
  name: 'rxjs-es-modules',
  setup(b) {
    const resolveFrom = createRequire(`${root}package.json`);
    b.onResolve({ filter: /^rxjs$/ }, () => ({ path: resolveFrom.resolve('rxjs').replace(/dist\/cjs\/index\.js$/, 'dist/esm/index.js') }));
  },
};

const builtinsRequired: Plugin = {
  name: 'builtins-required',
  setup(b) {
    b.onResolve({ filter: /^[\w:/]+$/ }, (args) =>
      args.kind === 'import-statement' && isBuiltin(args.path) ? { path: args.path, namespace: 'builtin' } : undefined);
    b.onLoad({ filter: /.*/, namespace: 'builtin' }, (args) => ({ contents: `module.exports = require(${JSON.stringify(args.path)});` }));
  },
};

rmSync(`${root}dist`, { recursive: true, force: true });
await build({
  absWorkingDir: root,
  entryPoints: ['src/cli.ts'],
  outdir: 'dist',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node22.19',
  // Modules imported with import() go to chunks of their own, loaded on first use.
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
  sourcemap: true,
  minifyWhitespace: true,
  minifySyntax: true,
  // The bundled CommonJS modules require Node's built-in modules, which an ES module has no `require` for.
  banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
  plugins: [rxjsModules, builtinsRequired],
  logLevel: 'warning',
});
