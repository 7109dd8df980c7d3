import { spawnSync } from 'node:child_process';
import { chmodSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Makes a directory read-only for the current user, or returns undefined when this machine cannot:
 * chmod does not stop root, so as root the directory is made immutable (`chattr +i`, ext4 and
 * similar). The returned function undoes it.
 */
export function makeReadOnly(dir: string): (() => void) | undefined {
  const root = process.getuid?.() === 0;
  const undo = root
    ? () => spawnSync('chattr', ['-i', dir])
    : () => {
        chmodSync(dir, 0o755);
      };
  if (root) {
    if (spawnSync('chattr', ['+i', dir]).status !== 0) return undefined;
  } else chmodSync(dir, 0o555);
  try {
    writeFileSync(join(dir, '.probe'), 'x');
    rmSync(join(dir, '.probe'));
    undo();
    return undefined;
  } catch {
    return undo;
  }
}

/**
 * A shell preamble that limits the size of files the server may write (RLIMIT_FSIZE) and ignores the
 * signal that limit raises, so a larger write fails with EFBIG as on a full volume.
 */
export const SMALL_FILES_ONLY = "trap '' XFSZ; ulimit -f 8";
