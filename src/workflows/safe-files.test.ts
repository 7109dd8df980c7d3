import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readInside, readSourceFile, realDir, resolveInside, UnsafeFileError } from './safe-files.js';

let base: string;
let dir: string;
beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), 'wl-safe-'));
  dir = join(base, 'source');
  mkdirSync(join(dir, 'sub'), { recursive: true });
  writeFileSync(join(base, 'secret.txt'), 'TOPSECRET');
  writeFileSync(join(dir, 'plain.json'), '{}');
  writeFileSync(join(dir, 'sub', 'real.json'), '{"inside": true}');
});
afterEach(() => rmSync(base, { recursive: true, force: true }));

describe('reading inside a source directory', () => {
  it('follows links that stay inside, never those that leave', async () => {
    symlinkSync(join(dir, 'sub', 'real.json'), join(dir, 'inside.json'));
    symlinkSync(join(base, 'secret.txt'), join(dir, 'outside.json'));
    symlinkSync('../secret.txt', join(dir, 'relative.json'));
    symlinkSync(join(base, 'missing.json'), join(dir, 'dangling.json'));
    symlinkSync(join(dir, 'sub'), join(dir, 'folder.json'));
    const root = (await realDir(dir)) as string;
    expect(await resolveInside(root, 'plain.json')).toMatchObject({
      kind: 'file',
      path: join(root, 'plain.json'),
    });
    expect(await resolveInside(root, 'inside.json')).toMatchObject({
      kind: 'file',
      path: join(root, 'sub', 'real.json'),
    });
    expect(await resolveInside(root, 'outside.json')).toEqual({ kind: 'outside' });
    expect(await resolveInside(root, 'relative.json')).toEqual({ kind: 'outside' });
    expect(await resolveInside(root, 'dangling.json')).toEqual({ kind: 'skip' });
    expect(await resolveInside(root, 'folder.json')).toEqual({ kind: 'skip' });
    expect((await readSourceFile(dir, 'inside.json', 1024)).toString()).toBe('{"inside": true}');
    await expect(readSourceFile(dir, 'outside.json', 1024)).rejects.toMatchObject({ reason: 'outside' });
  });

  it('a file swapped for a link after the check is not followed', async () => {
    const root = (await realDir(dir)) as string;
    const checked = await resolveInside(root, 'plain.json');
    if (checked.kind !== 'file') throw new Error('expected a file');
    unlinkSync(join(dir, 'plain.json'));
    symlinkSync(join(base, 'secret.txt'), join(dir, 'plain.json'));
    await expect(readInside(root, checked.path, 1024)).rejects.toThrow();
    const error = await readInside(root, checked.path, 1024).catch((e: unknown) => e);
    expect(String(error)).not.toContain('TOPSECRET');
  });

  it('refuses paths outside the root and files over the limit', async () => {
    const root = (await realDir(dir)) as string;
    await expect(readInside(root, join(base, 'secret.txt'), 1024)).rejects.toBeInstanceOf(UnsafeFileError);
    writeFileSync(join(dir, 'big.json'), 'x'.repeat(2048));
    await expect(readInside(root, join(root, 'big.json'), 1024)).rejects.toMatchObject({
      reason: 'too-large',
    });
  });

  it.skipIf(process.platform === 'win32')('a FIFO is skipped, never opened (it would block)', async () => {
    execFileSync('mkfifo', [join(dir, 'pipe.json')]);
    const root = (await realDir(dir)) as string;
    expect(await resolveInside(root, 'pipe.json')).toEqual({ kind: 'skip' });
    await expect(readInside(root, join(root, 'pipe.json'), 1024)).rejects.toMatchObject({
      reason: 'not-file',
    });
  });
});
