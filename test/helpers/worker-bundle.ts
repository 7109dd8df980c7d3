import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const ROOT = resolve(import.meta.dirname, '..', '..');

const built = new Map<string, Promise<URL>>();

/**
 * A worker-thread entry point bundled from the current sources (a worker thread cannot load
 * TypeScript), once per test process, as a data: URL so that no file is left behind. A data: URL
 * module cannot resolve a package name, so better-sqlite3 (native, never bundled) is imported by
 * its absolute file URL.
 */
export function workerBundleUrl(entry: string): Promise<URL> {
  let url = built.get(entry);
  if (url === undefined) {
    url = (async () => {
      const sqlite = pathToFileURL(createRequire(join(ROOT, 'package.json')).resolve('better-sqlite3')).href;
      const result = await build({
        entryPoints: [join(ROOT, entry)],
        write: false,
        bundle: true,
        platform: 'node',
        format: 'esm',
        target: 'node20',
        logLevel: 'warning',
        plugins: [
          {
            name: 'better-sqlite3-by-url',
            setup(b) {
              b.onResolve({ filter: /^better-sqlite3$/ }, () => ({ path: sqlite, external: true }));
            },
          },
        ],
        banner: {
          js: `import { createRequire as __wlCreateRequire } from 'node:module';\nconst require = __wlCreateRequire(${JSON.stringify(pathToFileURL(join(ROOT, 'package.json')).href)});`,
        },
      });
      const code = result.outputFiles[0]?.text ?? '';
      return new URL(`data:text/javascript;base64,${Buffer.from(code).toString('base64')}`);
    })();
    built.set(entry, url);
  }
  return url;
}
