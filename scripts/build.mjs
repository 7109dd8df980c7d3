// Bundles the CLI: one module to load instead of hundreds keeps start-up fast, and libraries that are
// only needed after `initialize` (YAML) are split into chunks loaded on first use; ajv and RE2 live in
// the validation worker's bundle.
// dist/cli.js is a small entry (src/cli/entry.ts): it sets V8's size-optimised mode from code (clients
// launch `node dist/cli.js` with no flags) and answers a stdio client's `initialize` and `tools/list`
// from dist/prelude.json, recorded below, while the server (a chunk) loads.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { lazySdkValidator, messageGuards } from './sdk-patches.mjs';

/**
 * The checker id keying the definition cache (src/workflows/definition-cache.ts): a hash of every
 * source file and the locked dependency versions, so a changed check never serves an old verdict.
 */
function checkerId() {
  const hash = createHash('sha256');
  const walk = (dir) => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (path.endsWith('.ts') && !path.endsWith('.test.ts'))
        hash.update(path).update(readFileSync(path));
    }
  };
  walk('src');
  for (const file of ['package.json', 'package-lock.json']) hash.update(readFileSync(file));
  return hash.digest('hex').slice(0, 32);
}

// Chunk names carry content hashes: old ones would pile up beside the new.
rmSync('dist/chunks', { recursive: true, force: true });

// The SDK's code is patched (scripts/sdk-patches.mjs); a patch that no longer applies is an error, which
// esbuild prints (naming the patch, the file and the text expected), and the build stops there.
await build({
  // The validation worker is a thread of its own (regex and JSON Schema checks under a time budget);
  // ValidationEngine finds it beside cli.js. So does the SQLite store its checkpoint thread.
  entryPoints: {
    cli: 'src/cli/entry.ts',
    'validation-worker': 'src/engine/validation-worker.ts',
    'checkpoint-worker': 'src/store/sqlite/checkpoint-worker.ts',
    'prelude-answers': 'src/cli/prelude-answers.ts',
    'record-shipped': 'src/workflows/record-shipped.ts',
  },
  define: { __WORKFLOWLOOKUP_CHECKER_ID__: JSON.stringify(checkerId()) },
  plugins: [lazySdkValidator(), messageGuards()],
  outdir: 'dist',
  entryNames: '[name]',
  chunkNames: 'chunks/[name]-[hash]',
  splitting: true,
  // A native module: loaded from node_modules at run time. `pg-native` is pg's optional libpq binding,
  // which pg requires only when asked to (NODE_PG_FORCE_NATIVE); we use pg's JavaScript client.
  external: ['better-sqlite3', 'pg-native'],
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: true,
  minifySyntax: true,
  legalComments: 'linked',
  banner: {
    js: "#!/usr/bin/env node\nimport { createRequire as __wlCreateRequire } from 'node:module';\nconst require = __wlCreateRequire(import.meta.url);",
  },
  logLevel: 'warning',
}).catch((error) => {
  // esbuild has printed its errors already.
  if (Array.isArray(error?.errors) && error.errors.length > 0) {
    console.error(`build: failed with ${error.errors.length} error(s); dist/ is incomplete`);
    process.exit(1);
  }
  throw error;
});

// pino, the log (src/telemetry/log.ts), in a file of its own: required on the first line actually
// written, so the ~8 ms it costs to load are not paid by every start, and bundled, so the installed
// package needs no node_modules but better-sqlite3's. CommonJS, as pino is: log.ts `require`s it.
await build({
  entryPoints: { pino: 'node_modules/pino/pino.js' },
  outdir: 'dist/vendor',
  outExtension: { '.js': '.cjs' },
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  minifySyntax: true,
  legalComments: 'linked',
  logLevel: 'warning',
});

// The bundled workflows' checked definitions, keyed by content hash (src/workflows/shipped-definitions.ts):
// a first start serves them without parsing them or starting the regex and JSON Schema worker.
writeFileSync(
  'dist/bundled-definitions.json',
  execFileSync(process.execPath, ['dist/record-shipped.js', 'workflows'], {
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  }),
);
rmSync('dist/record-shipped.js');
rmSync('dist/record-shipped.js.map');

// The recorded answers of the stdio prelude, made by the server itself through its real stdio path.
writeFileSync(
  'dist/prelude.json',
  execFileSync(process.execPath, ['dist/prelude-answers.js'], { encoding: 'utf8', maxBuffer: 64 << 20 }),
);
rmSync('dist/prelude-answers.js');
rmSync('dist/prelude-answers.js.map');

// Browser code, built beside the server bundle (which stays as above).
// The dashboard's script and stylesheet, served by the dashboard from dist/dashboard.
await build({
  entryPoints: ['src/dashboard/client/dashboard.ts'],
  outfile: 'dist/dashboard/dashboard.js',
  bundle: true,
  platform: 'browser',
  format: 'esm',
  target: 'es2022',
  minify: true,
  legalComments: 'none',
  logLevel: 'warning',
});
mkdirSync('dist/dashboard', { recursive: true });
for (const asset of ['dashboard.css', 'favicon.svg'])
  copyFileSync(`src/dashboard/assets/${asset}`, `dist/dashboard/${asset}`);

// The MCP App view: one self-contained HTML file (hosts render it in a sandboxed iframe from the ui://
// resource, so its script and style are inline and it loads nothing else).
const view = await build({
  entryPoints: ['src/faces/executions/view/execution-view.ts'],
  write: false,
  bundle: true,
  platform: 'browser',
  format: 'esm',
  target: 'es2022',
  minify: true,
  legalComments: 'none',
  logLevel: 'warning',
});
const viewJs = view.outputFiles[0].text.replaceAll('</script', '<\\/script');
const viewHtml = readFileSync('src/faces/executions/view/execution-view.html', 'utf8');
if (!viewHtml.includes('/*__VIEW_JS__*/')) throw new Error('execution-view.html lost its script placeholder');
mkdirSync('dist/views', { recursive: true });
writeFileSync(
  'dist/views/execution-progress.html',
  viewHtml.replace('<script>/*__VIEW_JS__*/', () => `<script type="module">${viewJs}`),
);
