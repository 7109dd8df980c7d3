import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const ROOT = resolve(import.meta.dirname, '..', '..');

let built: Promise<URL> | undefined;

/**
 * The validation worker bundled from the current sources (a worker thread cannot load TypeScript),
 * once per test process, as a data: URL so that no file is left behind, for unit tests that
 * construct a ValidationEngine.
 */
export function validationWorkerUrl(): Promise<URL> {
  built ??= (async () => {
    const result = await build({
      entryPoints: [join(ROOT, 'src', 'engine', 'validation-worker.ts')],
      write: false,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      logLevel: 'warning',
      banner: {
        js: `import { createRequire as __wlCreateRequire } from 'node:module';\nconst require = __wlCreateRequire(${JSON.stringify(pathToFileURL(join(ROOT, 'package.json')).href)});`,
      },
    });
    const code = result.outputFiles[0]?.text ?? '';
    return new URL(`data:text/javascript;base64,${Buffer.from(code).toString('base64')}`);
  })();
  return built;
}
