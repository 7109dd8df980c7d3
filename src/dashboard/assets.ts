// The dashboard's stylesheet, script and icon: files of the build, read once and served from memory.
import { readFile } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { join } from 'node:path';
import { HttpError, SECURITY_HEADERS } from './responses.js';

const TYPES: Record<string, string> = {
  'dashboard.css': 'text/css; charset=utf-8',
  'dashboard.js': 'text/javascript; charset=utf-8',
  'favicon.svg': 'image/svg+xml',
};

/** Whether a request asks for an asset (`<base>/assets/<name>`): they hold no data, anyone may load them. */
export function isAssetPath(url: string | undefined, base: string): boolean {
  const pathname = (url ?? '').split('?')[0] ?? '';
  return pathname.startsWith(`${base}/assets/`) && !pathname.slice(base.length + 8).includes('/');
}

export class Assets {
  private readonly loaded = new Map<string, Promise<Buffer>>();

  /** `dir`: where dashboard.js and dashboard.css are (dist/dashboard in the package). */
  constructor(private readonly dir: string) {}

  async serve(name: string, res: ServerResponse): Promise<void> {
    const type = TYPES[name];
    if (type === undefined) throw new HttpError(404, 'Not found.');
    let loading = this.loaded.get(name);
    if (loading === undefined) {
      loading = readFile(join(this.dir, name));
      this.loaded.set(name, loading);
      // A file missing now (no build yet) is looked for again next time.
      loading.catch(() => this.loaded.delete(name));
    }
    const bytes = await loading.catch(() => {
      throw new HttpError(404, `${name} is missing; run the build (npm run build).`);
    });
    res.writeHead(200, {
      'content-type': type,
      'content-length': String(bytes.length),
      'cache-control': 'no-cache',
      ...SECURITY_HEADERS,
    });
    res.end(res.req.method === 'HEAD' ? undefined : bytes);
  }
}
