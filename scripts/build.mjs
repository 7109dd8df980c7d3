// Bundles the CLI: one module to load instead of hundreds keeps start-up fast, and libraries that are
// only needed after `initialize` (YAML, ajv, RE2) are split into chunks loaded on first use.
// --optimize-for-size keeps peak RSS under 100 MB through bursts of calls (see bench/); it is in the
// shebang so every launch (bin, npx, MCP client configs) gets it, and in `npm start`.
import { build } from 'esbuild';

await build({
  entryPoints: ['src/cli/main.ts'],
  outdir: 'dist',
  entryNames: 'cli',
  chunkNames: 'chunks/[name]-[hash]',
  splitting: true,
  // A native module: loaded from node_modules at run time.
  external: ['better-sqlite3'],
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: true,
  minifySyntax: true,
  legalComments: 'linked',
  banner: {
    js: "#!/usr/bin/env -S node --optimize-for-size\nimport { createRequire as __wlCreateRequire } from 'node:module';\nconst require = __wlCreateRequire(import.meta.url);",
  },
  logLevel: 'warning',
});
