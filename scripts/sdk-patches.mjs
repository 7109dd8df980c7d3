// The build's changes to the MCP SDK's code (scripts/build.mjs bundles the server with these esbuild
// plugins). Each one names exactly what it replaces, and the build fails, naming the patch, the SDK file
// and the text it expected, when that is not what the installed SDK has: a new SDK release can neither
// silently undo a patch nor be patched in the wrong place. package.json pins the SDK's exact version;
// test/sdk-patch.test.ts checks that dist/ has every patch and answers as the unpatched SDK does.
// Why each patch exists, and the change the SDK itself could make instead: docs/performance-startup.md.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { formatMessagesSync } from 'esbuild';

const require = createRequire(import.meta.url);
const SDK = '@modelcontextprotocol/server';
/** The SDK's ES module files: the ones the server's bundle is made of. */
const SDK_ESM = /@modelcontextprotocol[\\/]server[\\/]dist[\\/].+\.mjs$/;

/** The installed SDK's package directory and version. */
function installedSdk() {
  // `<package>/dist/index.cjs`; the package's exports do not include its package.json.
  const root = dirname(dirname(require.resolve(SDK)));
  return { root, version: JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version };
}

const shown = (path) => relative(process.cwd(), path);

/** An esbuild error of `patch`, at `file` (and the line holding `at`, when given). */
function failure(patch, text, { file, contents, at, notes = [] } = {}) {
  let location = null;
  if (file !== undefined) {
    location = { file: shown(file) };
    const index = at === undefined || contents === undefined ? -1 : contents.indexOf(at);
    if (index >= 0) {
      const line = contents.slice(0, index).split('\n').length;
      location = { ...location, line, column: 0, lineText: contents.split('\n')[line - 1] };
    }
  }
  return { pluginName: patch, text: `${patch}: ${text}`, location, notes: notes.map((n) => ({ text: n })) };
}

/** Errors of an onEnd callback, printed with `log`: esbuild prints those of onStart and onLoad itself. */
function reported(errors, log) {
  if (errors.length > 0)
    log(formatMessagesSync(errors, { kind: 'error', color: process.stderr.isTTY }).join(''));
  return { errors };
}

/**
 * package.json must pin the SDK to one version (a devDependency: it is bundled), and node_modules must
 * hold that version: the patches below are written against its text.
 */
function pinProblems(patch) {
  const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  const pinned = manifest.devDependencies?.[SDK] ?? manifest.dependencies?.[SDK];
  const { root, version } = installedSdk();
  if (typeof pinned !== 'string' || !/^\d+\.\d+\.\d+$/.test(pinned))
    return [
      failure(patch, `package.json must pin ${SDK} to an exact version, not "${pinned}"`, {
        notes: [
          "the build patches the SDK's code; a version range lets an install bring code it was not written for",
        ],
      }),
    ];
  if (pinned !== version)
    return [
      failure(patch, `package.json pins ${SDK} ${pinned}, but ${shown(root)} holds ${version}`, {
        notes: ['run npm ci'],
      }),
    ];
  return [];
}

/**
 * The SDK tells a message's kind by zod parses that it tries in turn (isJSONRPCResultResponse, then
 * isJSONRPCErrorResponse, then isJSONRPCRequest), so each request first fails two strict-object parses,
 * and a failed zod parse builds an error with its issues: about 7 KB of garbage per request, measured by
 * bench/scenarios/step-allocation.mjs. This patch puts a check of the one field each schema requires in
 * front of each guard: a value without it fails the parse anyway, so every answer is the same, and only
 * values that can pass are parsed.
 */
export const GUARDS = [
  ['isJSONRPCRequest', 'JSONRPCRequestSchema', "typeof value.method === 'string'"],
  ['isJSONRPCNotification', 'JSONRPCNotificationSchema', "typeof value.method === 'string'"],
  [
    'isJSONRPCResultResponse',
    'JSONRPCResultResponseSchema',
    "typeof value.result === 'object' && value.result !== null",
  ],
  [
    'isJSONRPCErrorResponse',
    'JSONRPCErrorResponseSchema',
    "typeof value.error === 'object' && value.error !== null",
  ],
].map(([guard, schema, field]) => ({
  guard,
  schema,
  /** The guard's body as the SDK has it, and as the bundle has it after the patch. */
  originalBody: `${schema}.safeParse(value).success`,
  patchedBody: `typeof value === 'object' && value !== null && ${field} && ${schema}.safeParse(value).success`,
  original: `const ${guard} = (value) => ${schema}.safeParse(value).success;`,
  patched: `const ${guard} = (value) => typeof value === 'object' && value !== null && ${field} && ${schema}.safeParse(value).success;`,
}));

export const MESSAGE_GUARDS = 'sdk-message-guards';

/**
 * The message guards' patch: every guard replaced where the SDK defines it, or the build fails. `log`
 * prints what esbuild does not (the errors found once every file is loaded).
 */
export function messageGuards({ log = console.error } = {}) {
  const applied = new Map();
  return {
    name: MESSAGE_GUARDS,
    setup(b) {
      b.onStart(() => {
        applied.clear();
        return { errors: pinProblems(MESSAGE_GUARDS) };
      });
      b.onLoad({ filter: SDK_ESM }, (args) => {
        const source = readFileSync(args.path, 'utf8');
        let contents = source;
        const errors = [];
        for (const g of GUARDS) {
          const definition = new RegExp(`\\b(?:const|let|var|function)\\s+${g.guard}\\b`).exec(contents);
          if (definition === null) continue;
          if (!contents.includes(g.original)) {
            errors.push(
              failure(MESSAGE_GUARDS, `the SDK's ${g.guard} is not the code this patch replaces`, {
                file: args.path,
                contents,
                at: definition[0],
                notes: [
                  `expected: ${g.original}`,
                  'if the SDK now checks the field before parsing, remove this patch (GUARDS in scripts/sdk-patches.mjs)',
                ],
              }),
            );
            continue;
          }
          contents = contents.replaceAll(g.original, g.patched);
          applied.set(g.guard, [...(applied.get(g.guard) ?? []), args.path]);
        }
        if (errors.length > 0) return { errors };
        return contents === source ? undefined : { contents, loader: 'js' };
      });
      b.onEnd(() => {
        const { root, version } = installedSdk();
        return reported(
          GUARDS.filter((g) => !applied.has(g.guard)).map((g) =>
            failure(MESSAGE_GUARDS, `no file of ${SDK} ${version} that the bundle loads defines ${g.guard}`, {
              notes: [`expected in one of ${shown(join(root, 'dist'))}/*.mjs: ${g.original}`],
            }),
          ),
          log,
        );
      });
    },
  };
}

export const LAZY_VALIDATOR = 'lazy-sdk-json-schema-validator';

/** What the stand-in exports and answers; the real module must not have more. */
const STAND_IN_EXPORTS = ['DefaultJsonSchemaValidator', 'process'];
const STAND_IN_MEMBERS = ['ajv', 'getValidator'];

/**
 * The SDK's server imports its default JSON Schema validator (ajv, ajv-formats: ~300 KB) from
 * `@modelcontextprotocol/server/_shims` at module load, for every start, although a server needs it only
 * to check an elicitation answer against its requested schema. This patch puts a stand-in with the same
 * interface in its place: the real validator (the SDK's CommonJS build, which esbuild wraps so that it
 * runs only when first required) is loaded on the first getValidator call. The build fails when the SDK
 * no longer imports the module so, or when the module exports or its validator answers more than the
 * stand-in does.
 */
export function lazySdkValidator({ log = console.error } = {}) {
  let replaced = 0;
  return {
    name: LAZY_VALIDATOR,
    setup(b) {
      b.onStart(async () => {
        replaced = 0;
        const real = await import(`${SDK}/_shims`);
        const errors = [];
        const exported = Object.keys(real).sort();
        if (exported.join() !== STAND_IN_EXPORTS.join())
          errors.push(
            failure(LAZY_VALIDATOR, `${SDK}/_shims exports ${exported.join(', ')}`, {
              notes: [`expected: ${STAND_IN_EXPORTS.join(', ')} (what the stand-in exports)`],
            }),
          );
        const validator = real.DefaultJsonSchemaValidator?.prototype ?? {};
        const members = Object.getOwnPropertyNames(validator)
          .filter((m) => m !== 'constructor' && !m.startsWith('_'))
          .sort();
        if (members.join() !== STAND_IN_MEMBERS.join())
          errors.push(
            failure(LAZY_VALIDATOR, `the SDK's DefaultJsonSchemaValidator has ${members.join(', ')}`, {
              notes: [`expected: ${STAND_IN_MEMBERS.join(', ')} (what the stand-in answers)`],
            }),
          );
        return { errors };
      });
      b.onResolve({ filter: /^@modelcontextprotocol\/server\/_shims$/ }, (args) => {
        if (args.kind !== 'import-statement') return undefined;
        replaced++;
        return { path: 'sdk-shims', namespace: 'lazy-sdk-validator' };
      });
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
      b.onEnd(() =>
        reported(
          replaced > 0
            ? []
            : [
                failure(LAZY_VALIDATOR, `no module of ${SDK} that the bundle loads imports ${SDK}/_shims`, {
                  notes: [`expected: import { DefaultJsonSchemaValidator } from "${SDK}/_shims"`],
                }),
              ],
          log,
        ),
      );
    },
  };
}
