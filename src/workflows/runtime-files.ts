import { randomBytes } from 'node:crypto';
import { mkdir, open, rename, unlink } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fail } from '../engine/errors.js';
import { formatOf, isTestFile } from './parse.js';

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

/** Windows device names: a file named `CON.json` or `nul.yaml` is the device, on any drive. */
const RESERVED = /^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³]|conin\$|conout\$)$/i;
/** The one shape a workflow file name may have: what every platform stores as named and the registry serves. */
const FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)*$/;
export const MAX_FILE_NAME_LENGTH = 128;

/**
 * Why a workflow file name is refused, or undefined when it is fine. Names are plain ASCII letters,
 * digits, `-`, `_` and single dots, start with a letter or digit (hidden files are never served), end
 * in .json, .yaml or .yml, and are not a Windows device name. That leaves out traversal and its
 * disguises (percent-encoding, full-width dots), drive letters (`C:x.json`), control characters and
 * newlines without listing them one by one.
 */
export function fileNameProblem(name: string): string | undefined {
  if (name.length > MAX_FILE_NAME_LENGTH) return `it is longer than ${MAX_FILE_NAME_LENGTH} characters`;
  if (name.startsWith('.')) return 'it starts with a dot: hidden files are never served';
  if (!FILE_NAME.test(name)) {
    return 'only ASCII letters, digits, "-", "_" and single dots between them are allowed (no spaces, control characters, ":", "%", "\\\\" or non-ASCII look-alikes)';
  }
  if (formatOf(name) === undefined) return 'it must end in .json, .yaml or .yml';
  if (isTestFile(name))
    return 'names ending in .test.json, .test.yaml or .test.yml hold workflow tests, never a workflow';
  if (RESERVED.test(name.split('.')[0] as string)) return 'it is a reserved device name on Windows';
  return undefined;
}

/**
 * The runtime-dir path for a workflow file name: `path_outside_runtime` for names that point
 * elsewhere (separators, `..`, absolute paths), `invalid_params` for names no source would serve.
 */
export function runtimeFile(dir: string, name: string): string {
  checkFileName(name, `the runtime workflow directory ${resolve(dir)}`);
  return insideDir(dir, name);
}

/**
 * Refuses a workflow file name that names a path (`path_outside_runtime`, saying it would land
 * outside `where`) or that no source would serve (`invalid_params`): the same names for files and
 * for definitions kept in a database.
 */
export function checkFileName(name: string, where: string): void {
  // Separators of any platform and drive letters (`C:x.json` is relative to drive C's cwd) name a path.
  if (/[\\/]|^[A-Za-z]:/.test(name) || name === '..') {
    fail({
      code: 'path_outside_runtime',
      message: `"${printable(name)}" would be written outside ${where}`,
      path: name,
    });
  }
  const problem = fileNameProblem(name);
  if (problem !== undefined) {
    fail({
      code: 'invalid_params',
      message: 'Invalid params',
      details: `file name "${printable(name)}": ${problem}`,
    });
  }
}

/** A name as it can be shown in a message: control characters escaped, length bounded. */
function printable(name: string): string {
  const shown = JSON.stringify(name.length > 80 ? `${name.slice(0, 80)}…` : name);
  return shown.slice(1, -1);
}

/** Writes a file so that readers see the old content or the new, never a mix: temp file, fsync, rename. */
export async function writeAtomically(file: string, content: string): Promise<void> {
  const dir = dirname(file);
  await mkdir(dir, { recursive: true });
  const temp = join(dir, `.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await open(temp, 'wx', 0o644);
  try {
    try {
      await handle.writeFile(content, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, file);
  } catch (error) {
    // A full disk leaves a partial temp file: never leave it behind.
    await unlink(temp).catch(() => undefined);
    throw error;
  }
  // Persist the rename itself (best effort: not every platform can fsync a directory).
  const dirHandle = await open(dir, 'r').catch(() => undefined);
  await dirHandle?.sync().catch(() => undefined);
  await dirHandle?.close();
}

const READ_ONLY = new Set(['EROFS', 'EACCES', 'EPERM']);
const FULL = new Set(['ENOSPC', 'EDQUOT', 'EFBIG']);

/**
 * Runs a change to the runtime workflow dir, turning file-system failures into errors that say what
 * happened: a read-only directory, a full disk (or quota), or another storage error. Anything else
 * (domain failures included) passes through.
 */
export async function changeRuntimeDir<T>(dir: string, change: () => Promise<T>): Promise<T> {
  try {
    return await change();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException | undefined)?.code;
    if (code === undefined) throw error;
    if (READ_ONLY.has(code)) {
      fail({
        code: 'runtime_dir_read_only',
        message: `the runtime workflow directory ${dir} is not writable (${code}); nothing was changed`,
        path: dir,
        details: code,
      });
    }
    if (FULL.has(code)) {
      fail({
        code: 'storage_full',
        message: `no space left to write in ${dir} (${code}); nothing was changed`,
        path: dir,
        details: code,
      });
    }
    fail({
      code: 'storage_error',
      message: 'Storage error',
      details: `cannot change ${dir}: ${code}`,
    });
  }
}
