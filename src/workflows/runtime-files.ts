import { randomBytes } from 'node:crypto';
import { mkdir, open, rename, unlink } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fail } from '../engine/errors.js';

/**
 * The path of `name` inside `dir`, or a `path_outside_runtime` failure when it would land anywhere
 * else (absolute names, `..`, separators).
 */
export function insideDir(dir: string, name: string): string {
  const root = resolve(dir);
  const target = resolve(root, name);
  const rel = relative(root, target);
  if (rel === '' || rel.startsWith('..') || rel.includes(sep) || resolve(root, rel) !== target) {
    fail({
      code: 'path_outside_runtime',
      message: `"${name}" would be written outside the runtime workflow directory ${root}`,
      path: name,
    });
  }
  return target;
}

/** Writes a file so that readers see the old content or the new, never a mix: temp file, fsync, rename. */
export async function writeAtomically(file: string, content: string): Promise<void> {
  const dir = dirname(file);
  await mkdir(dir, { recursive: true });
  const temp = join(dir, `.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await open(temp, 'wx', 0o644);
  try {
    await handle.writeFile(content, 'utf8');
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await rename(temp, file);
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw error;
  }
  // Persist the rename itself (best effort: not every platform can fsync a directory).
  const dirHandle = await open(dir, 'r').catch(() => undefined);
  await dirHandle?.sync().catch(() => undefined);
  await dirHandle?.close();
}
