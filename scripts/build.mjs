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

/**
 * The SDK's server imports its default JSON Schema validator (ajv, ajv-formats: ~300 KB) from
 * `@modelcontextprotocol/server/_shims` at module load, for every start, although a server needs it only
 * to check an elicitation answer against its requested schema. This plugin puts a stand-in with the same
 * interface in its place: the real validator (the SDK's CommonJS build, which esbuild wraps so that it
 * runs only when first required) is loaded on the first getValidator call.
 */
const lazySdkValidator = {
  name: 'lazy-sdk-json-schema-validator',
  setup(b) {
    b.onResolve({ filter: /^@modelcontextprotocol\/server\/_shims$/ }, (args) =>
      args.kind === 'import-statement' ? { path: 'sdk-shims', namespace: 'lazy-sdk-validator' } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'lazy-sdk-validator' }, () => ({
      resolveDir: process.cwd(),
      loader: 'js',
      contents: `
import process from 'node:process';
let Validator;
export class DefaultJsonSchemaValidator {
  constructor(ajv) { this.ajv = ajv; }
  getValidator(schema) {
    Validator ??= require('@modelcontextprotocol/server/validators/ajv').AjvJsonSchemaValidator;
    this.inner ??= new Validator(this.ajv);
    return this.inner.getValidator(schema);
  }
}
export { process };
`,
    }));
  },
};

/**
 * The SDK tells a message's kind by zod parses that it tries in turn (isJSONRPCResultResponse, then
 * isJSONRPCErrorResponse, then isJSONRPCRequest), so each request first fails two strict-object parses,
 * and a failed zod parse builds an error with its issues: about 9 KB of garbage per request, measured by
 * bench/scenarios/step-allocation.mjs. This plugin puts a check of the one field each schema requires
 * in front of each guard: a value without it fails the parse anyway, so every answer is the same, and
 * only values that can pass are parsed. If a new SDK version no longer has these lines, the build says
 * so and leaves the SDK as it is.
 */
const GUARDS = {
  isJSONRPCRequest: ['JSONRPCRequestSchema', "typeof value.method === 'string'"],
  isJSONRPCNotification: ['JSONRPCNotificationSchema', "typeof value.method === 'string'"],
  isJSONRPCResultResponse: [
    'JSONRPCResultResponseSchema',
    "typeof value.result === 'object' && value.result !== null",
  ],
  isJSONRPCErrorResponse: [
    'JSONRPCErrorResponseSchema',
    "typeof value.error === 'object' && value.error !== null",
  ],
};
const sdkGuards = {
  name: 'sdk-message-guards',
  setup(b) {
    b.onLoad({ filter: /@modelcontextprotocol[\\/]server[\\/]dist[\\/]src-[^\\/]+\.mjs$/ }, (args) => {
      let contents = readFileSync(args.path, 'utf8');
      for (const [guard, [schema, field]] of Object.entries(GUARDS)) {
        const original = `const ${guard} = (value) => ${schema}.safeParse(value).success;`;
        if (!contents.includes(original)) {
          console.warn(
            `build: ${guard} not found in ${args.path}; the SDK's message guards are left as they are`,
          );
          return undefined;
        }
        contents = contents.replace(
          original,
          `const ${guard} = (value) => typeof value === 'object' && value !== null && ${field} && ${schema}.safeParse(value).success;`,
        );
      }
      return { contents, loader: 'js' };
    });
  },
};

// Chunk names carry content hashes: old ones would pile up beside the new.
rmSync('dist/chunks', { recursive: true, force: true });

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
  plugins: [lazySdkValidator, sdkGuards],
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
