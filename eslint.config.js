// Lint: typescript-eslint's type-aware rules for what the compiler does not catch and a review easily misses — a
// promise nobody awaits or handles (its rejection is lost, or crashes the process), a promise where a callback's
// result is ignored (an async handler passed to an event emitter), and a switch that forgets a member of a union.
// `make test` runs it (npm run lint).
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'e2e/kind/.work/**'] },
  {
    files: ['src/**/*.ts', 'test/**/*.ts', 'e2e/**/*.ts', 'hack/**/*.ts', 'bench/**/*.ts'],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // node:test's describe/it/test return promises the runner itself awaits. `void promise` is no handler: a
      // promise left to run on gets one (src/util/settle.ts logs its rejection).
      '@typescript-eslint/no-floating-promises': ['error', {
        allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['describe', 'it', 'test', 'suite'] }],
        ignoreVoid: false,
      }],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
    },
  },
);
