import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { DefinitionCache, type FileStamp } from './definition-cache.js';
import type { RegistryEntry } from './entry.js';

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

it('writes ASCII only (read back, a one-byte string) and reads back every character', () => {
  dir = mkdtempSync(join(tmpdir(), 'wl-definition-cache-'));
  const path = join(dir, 'definition-cache.json');
  const file = join(dir, 'workflows', 'arrows.json');
  const stamp: FileStamp = { real: file, size: 10, mtimeMs: 1, ctimeMs: 2, ino: 3 };
  const entry = {
    status: 'valid',
    file,
    source: 'storage',
    format: 'json',
    hash: 'h',
    workflow: {
      id: 'arrows',
      name: 'Ünïcode 名前',
      description: 'plan → build → ship 🚀, a lone \ud800 too',
      version: '1.0.0',
      steps: [{ id: 'one', title: 'One', prompt: '"quoted" \\ back\u2028slash' }],
    },
  } as unknown as RegistryEntry;
  const writer = new DefinitionCache(path, 'checker', new Set());
  writer.set(file, stamp, entry);
  writer.flush();
  const bytes = readFileSync(path);
  expect(bytes.every((b) => b < 0x80)).toBe(true);
  const reader = new DefinitionCache(path, 'checker', new Set());
  expect(reader.get(file, 'storage', stamp)).toEqual(entry);
});
