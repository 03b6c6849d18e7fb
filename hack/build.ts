// `npm run build`, after the type check: bundles src/cli.ts and its dependencies into dist/ with esbuild, so that
// clusterlet loads only the code it uses, from a few files instead of hundreds.
// Idle RSS (bench/tools/idle-rss.ts): 90.0 MB as tsc's one file per module, 81.4 MB bundled (3 runs each); requiring
// the built-in modules (below) took another 2.4 MB off (78.3 -> 75.9 MB, 2 runs each).
// - rxjs comes from its ES modules, which esbuild tree-shakes (its "node" export is the CommonJS whole: 400 files).
// - Whitespace and syntax are minified: V8 keeps every script's source in memory, and one non-ASCII character in a
//   comment would store the whole bundle as two bytes per character. Names are kept, so stack traces still name
//   the functions; dist/cli.js.map maps them back to src/ (`node --enable-source-maps dist/cli.js`).
// - Node's built-in modules are required, not imported: importing one makes Node read every export of it once,
//   which runs its lazy getters: `node:http`'s load undici, http2, webstreams and more (8 MB of RSS), `node:tls`'s
//   build the root certificates, `node:fs`'s load fs/promises and its streams.
// - prom-client gives only the classes src/metrics.ts uses: its index also loads its default metrics, Pushgateway,
//   cluster aggregation and Summary (node:v8, @opentelemetry/api, tdigest). A class not listed here fails the build.
// - iconv-lite, a third of the bundle (its code pages), is left out: only express's body parsers use it, and the
//   health port parses no request body.
// - mime-db (the type of every file extension, a fifth of the bundle) keeps only the types the health port answers
//   with: express reads all of it when it loads (through mime-types), and the health port serves no files. RSS of
//   `dist/cli.js --help`: 65.7 -> 61.9 MB; idle RSS (bench/tools/idle-rss.ts, 3 runs each): 73.5 -> 71.8 MB. A unit test
//   (test/unit/health.test.ts) runs the health port from a bundle made with these options.
// - The dependencies are inside: the image needs no node_modules.
import { build, type BuildOptions, type OnResolveArgs, type Plugin } from 'esbuild';
import { realpathSync, rmSync } from 'node:fs';
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

/** Gives the modules that `filter` matches (and `when` accepts) the source `source(path)` instead of their own. */
function replaceModules(name: string, filter: RegExp, source: (path: string) => string,
  when: (args: OnResolveArgs) => boolean = () => true): Plugin {
  return {
    name,
    setup(b) {
      b.onResolve({ filter }, (args) => (when(args) ? { path: args.path, namespace: name } : undefined));
      b.onLoad({ filter: /.*/, namespace: name }, (args) => ({ contents: source(args.path), resolveDir: root }));
    },
  };
}

const builtinsRequired = replaceModules('builtins-required', /^[\w:/]+$/,
  (path) => `module.exports = require(${JSON.stringify(path)});`,
  (args) => args.kind === 'import-statement' && isBuiltin(args.path));

const promClientClasses = replaceModules('prom-client-classes', /^prom-client$/, () => ['Registry', 'Counter', 'Gauge', 'Histogram']
  .map((c) => `export { default as ${c} } from 'prom-client/lib/${c.toLowerCase()}.js';`).join('\n'));

const iconvLeftOut = replaceModules('iconv-lite-left-out', /^iconv-lite$/, () => `
  const leftOut = () => { throw new Error('iconv-lite is left out of the bundle (hack/build.ts)'); };
  module.exports = { getDecoder: leftOut, encodingExists: leftOut, decode: leftOut };`);

/** The types the health port answers with (express's res.type('text'), res.send and res.json, finalhandler). */
const MIME_TYPES_KEPT = ['text/plain', 'text/html', 'application/json', 'application/octet-stream'];
const mimeDbKept = replaceModules('mime-db-kept', /^mime-db$/, () => {
  const db = createRequire(`${root}package.json`)('mime-db') as Record<string, unknown>;
  return `module.exports = ${JSON.stringify(Object.fromEntries(MIME_TYPES_KEPT.map((t) => [t, db[t]])))};`;
});

/** The bundle's options: `entryPoints` into `outdir`. */
export const bundleOptions = (entryPoints: string[], outdir: string): BuildOptions => ({
  absWorkingDir: root,
  entryPoints,
  outdir,
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
  plugins: [rxjsModules, promClientClasses, iconvLeftOut, mimeDbKept, builtinsRequired],
  logLevel: 'warning',
});

// Run (not imported): argv[1] as given, this module's URL with symlinks resolved.
if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  rmSync(`${root}dist`, { recursive: true, force: true });
  await build(bundleOptions(['src/cli.ts'], 'dist'));
}
