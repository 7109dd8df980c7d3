import { closeSync, openSync, readSync, statSync } from 'node:fs';

export const DATABASE_FILE = 'workflowlookup.db';

/** An existing store file that is not a usable database. */
export class StoreFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StoreFileError';
  }
}

const SQLITE_HEADER = Buffer.from('SQLite format 3\0', 'latin1');

/**
 * SQLite treats an empty file as a new database, so a truncated store would silently start over
 * without its executions. An existing file must be a database; anything else is left untouched.
 */
export function refuseDamagedFile(file: string): void {
  let size: number;
  try {
    size = statSync(file).size;
  } catch {
    return; // no file yet: a new store
  }
  const head = Buffer.alloc(SQLITE_HEADER.length);
  let read = 0;
  if (size > 0) {
    const fd = openSync(file, 'r');
    try {
      read = readSync(fd, head, 0, head.length, 0);
    } finally {
      closeSync(fd);
    }
  }
  if (read < head.length || !head.equals(SQLITE_HEADER)) {
    throw new StoreFileError(
      `${file} exists but is ${size === 0 ? 'empty' : 'not a SQLite database'}; refusing to replace it. ` +
        'Restore it from a backup, or move it aside to start with an empty store.',
    );
  }
}
