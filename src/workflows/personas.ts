import { readdir } from 'node:fs/promises';
import { basename, extname, join } from 'node:path';
import { parseDefinition } from './parse.js';
import { readInside, realDir, resolveInside } from './safe-files.js';
import { DirectoryWatcher } from './watch.js';

/** An agent persona: a markdown file with YAML front matter (name, description, and any other keys). */
export interface Persona {
  name: string;
  description: string;
  /** The markdown body, without the front matter. */
  content: string;
  file: string;
  metadata: Record<string, unknown>;
}

const NAME = /^[a-z0-9-]+$/;
const MAX_PERSONA_BYTES = 256 * 1024;

/** Splits `---\nyaml\n---\nbody`; a file without front matter is all body. */
async function parsePersona(file: string, text: string): Promise<Persona | undefined> {
  let metadata: Record<string, unknown> = {};
  let body = text;
  const match = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?/.exec(text);
  if (match) {
    const parsed = await parseDefinition(match[1] ?? '', 'yaml', { maxDepth: 32 });
    if (!parsed.ok) return undefined;
    const data = parsed.data;
    if (data !== null && typeof data === 'object' && !Array.isArray(data))
      metadata = data as Record<string, unknown>;
    body = text.slice(match[0].length);
  }
  const name = typeof metadata.name === 'string' ? metadata.name : basename(file, extname(file));
  if (!NAME.test(name)) return undefined;
  return {
    name,
    description: typeof metadata.description === 'string' ? metadata.description : '',
    content: body.trim(),
    file,
    metadata,
  };
}

/**
 * Personas from `agents/` directories, layered like workflows: a later directory overrides an earlier
 * one by name. Loaded once, refreshed when a directory changes.
 */
export class PersonaRegistry {
  private byName = new Map<string, Persona>();
  private loading: Promise<void> | undefined;
  private readonly watcher = new DirectoryWatcher(() => {
    this.loading = this.load();
  });

  constructor(private readonly dirs: readonly string[]) {}

  ready(): Promise<void> {
    this.loading ??= this.load().then(() => {
      for (const dir of this.dirs) this.watcher.add(dir);
    });
    return this.loading;
  }

  get(name: string): Persona | undefined {
    return this.byName.get(name);
  }

  list(): Persona[] {
    return [...this.byName.values()].sort((a, b) => (a.name < b.name ? -1 : 1));
  }

  close(): void {
    this.watcher.close();
  }

  /** Reads every `.md` file; a link that leaves its directory is never followed (like workflow sources). */
  private async load(): Promise<void> {
    const next = new Map<string, Persona>();
    for (const dir of this.dirs) {
      const root = await realDir(dir);
      if (root === undefined) continue;
      let names: string[];
      try {
        names = (await readdir(root)).filter((n) => n.endsWith('.md')).sort();
      } catch {
        continue;
      }
      for (const name of names) {
        try {
          const target = await resolveInside(root, name);
          if (target.kind !== 'file') continue;
          const text = (await readInside(root, target.path, MAX_PERSONA_BYTES)).toString('utf8');
          const persona = await parsePersona(join(dir, name), text);
          if (persona) next.set(persona.name, persona);
        } catch {
          // unreadable, too large, a link swapped in, or vanished: skip
        }
      }
    }
    this.byName = next;
  }
}
