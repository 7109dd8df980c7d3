import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { dirname, join, posix } from 'node:path';
import { isDefinitionFile } from '../parse.js';
import { MAX_SOURCE_DEPTH } from '../safe-files.js';
import { runGit } from './run-git.js';

/**
 * Writes the definition files of one commit (below the source's folder) into `target`, reading the
 * tree and blobs with `git ls-tree` and `git cat-file` instead of checking the commit out: no
 * filter, hook or attribute of the repository runs, and only what the registry reads is written.
 * Symbolic links are written as links; the registry refuses one that leaves the checkout, as it
 * does for a workflow directory.
 */
export async function materialize(
  gitDir: string,
  commit: string,
  subdir: string,
  target: string,
  options: { protocols: readonly string[]; timeoutMs: number; maxBytes: number; signal?: AbortSignal },
): Promise<{ files: number; outward: string[] }> {
  const base = { protocols: options.protocols, timeoutMs: options.timeoutMs, signal: options.signal };
  const listing = await runGit({
    ...base,
    args: [
      '--git-dir',
      gitDir,
      'ls-tree',
      '-r',
      '-z',
      '--long',
      commit,
      '--',
      ...(subdir === '' ? [] : [subdir]),
    ],
  });
  const wanted: { path: string; oid: string; link: boolean }[] = [];
  let total = 0;
  for (const line of listing.toString('utf8').split('\0')) {
    // `<mode> <type> <oid> <size>\t<path>`
    const match = /^(\d+) (\w+) ([0-9a-f]+) +(-|\d+)\t(.*)$/s.exec(line);
    if (match === null) continue;
    const [, mode, type, oid, size, path] = match as unknown as [
      string,
      string,
      string,
      string,
      string,
      string,
    ];
    // Submodules (gitlinks) are never fetched nor entered.
    if (type !== 'blob') continue;
    const rel = subdir === '' ? path : path.slice(subdir.length + 1);
    if (rel === '' || rel.split('/').length - 1 > MAX_SOURCE_DEPTH) continue;
    if (rel.split('/').some((part) => part.startsWith('.') || part === 'node_modules')) continue;
    if (!isDefinitionFile(posix.basename(rel))) continue;
    total += size === '-' ? 0 : Number(size);
    if (total > options.maxBytes)
      throw new Error(`the workflow files of commit ${commit} are larger than ${options.maxBytes} bytes`);
    wanted.push({ path: rel, oid, link: mode === '120000' });
  }
  // A folder a commit does not have (renamed, or a typo in the configuration) is not an empty library:
  // serving it would drop every workflow of the source.
  if (subdir !== '' && listing.length === 0) throw new Error(`commit ${commit} has no folder ${subdir}`);
  const blobs = await readBlobs(
    gitDir,
    wanted.map((w) => w.oid),
    // The blobs (already counted against the cap) and a header line each.
    { ...base, maxStdoutBytes: total + 128 * wanted.length + 1024 },
  );
  await mkdir(target, { recursive: true });
  const outward: string[] = [];
  for (const file of wanted) {
    const bytes = blobs.get(file.oid) as Buffer;
    const path = join(target, ...file.path.split('/'));
    if (file.link) {
      // Judged by its text, before it exists: a link out of the folder (even to nothing yet) is never written.
      const to = bytes.toString('utf8');
      const resolved = posix.normalize(posix.join(posix.dirname(file.path), to));
      if (posix.isAbsolute(to) || resolved === '..' || resolved.startsWith('../') || to.includes('\0')) {
        outward.push(file.path);
        continue;
      }
      await mkdir(dirname(path), { recursive: true });
      await symlink(to, path);
    } else {
      await mkdir(dirname(path), { recursive: true });
      await writeFile(path, bytes, { mode: 0o644 });
    }
  }
  return { files: wanted.length, outward };
}

/** The contents of blobs, by id, in one `git cat-file --batch`. */
async function readBlobs(
  gitDir: string,
  oids: string[],
  base: {
    protocols: readonly string[];
    timeoutMs: number;
    signal?: AbortSignal | undefined;
    maxStdoutBytes: number;
  },
): Promise<Map<string, Buffer>> {
  const blobs = new Map<string, Buffer>();
  const unique = [...new Set(oids)];
  if (unique.length === 0) return blobs;
  const out = await runGit({
    ...base,
    args: ['--git-dir', gitDir, 'cat-file', '--batch'],
    input: `${unique.join('\n')}\n`,
  });
  let at = 0;
  for (const oid of unique) {
    const eol = out.indexOf(10, at);
    const header = out.subarray(at, eol).toString('utf8');
    const [got, type, size] = header.split(' ');
    if (got !== oid || type !== 'blob') throw new Error(`git cat-file: unexpected answer for ${oid}`);
    const length = Number(size);
    blobs.set(oid, out.subarray(eol + 1, eol + 1 + length));
    at = eol + 1 + length + 1;
  }
  return blobs;
}
