import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { build, type Metafile } from 'esbuild';
import { beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from './helpers/server.js';

/**
 * The architecture is the real import graph of src/, as esbuild resolves it (the same bundler that
 * builds dist/): static, dynamic (however written: assigned, parenthesised, awaited or not) and
 * side-effect imports, and, in a second pass, type-only imports too. No regex over source text, which
 * missed the last three kinds.
 *
 * A node is a top-level folder or file of src/; the faces and the store's adapters are nodes of their
 * own (faces/guidance, store/sqlite, …) so that "a face never imports another face" is an edge rule
 * like the others. Each node lists the nodes it may import (PRODUCT.md, "The shape today"):
 * cli/dashboard/transports → app → protocol → faces → runs/executions/catalogs → workflows → store →
 * engine → model. An edge that is not listed fails; so does any cycle between files.
 */
const BELOW_WORKFLOWS = ['model', 'engine', 'store'];
const SERVICES = [...BELOW_WORKFLOWS, 'workflows', 'catalogs', 'executions', 'runs'];
const FACES = ['faces/authoring', 'faces/automation', 'faces/executions', 'faces/guidance', 'faces/runs'];
const STORE_ADAPTERS = ['store/sql', 'store/sqlite', 'store/postgres'];
const BELOW_APP = [...SERVICES, 'faces', ...FACES, 'protocol'];

const EDGES: Record<string, readonly string[]> = {
  model: [],
  engine: ['model'],
  // open-store.ts picks an adapter (a dynamic import, so the unused one is never loaded).
  store: ['model', 'engine', 'store/sqlite', 'store/postgres'],
  // The SQL both adapters share (row mappers, filters, purge plan).
  'store/sql': ['model', 'engine', 'store'],
  'store/sqlite': ['model', 'engine', 'store', 'store/sql'],
  'store/postgres': ['model', 'engine', 'store', 'store/sql'],
  workflows: BELOW_WORKFLOWS,
  catalogs: [...BELOW_WORKFLOWS, 'workflows'],
  executions: [...BELOW_WORKFLOWS, 'workflows', 'catalogs'],
  runs: [...BELOW_WORKFLOWS, 'workflows', 'catalogs', 'executions'],
  // What every face shares (tool, resource and prompt shapes, `next`): no face in it.
  faces: SERVICES,
  // A face is wording over the services: it may use the shared face modules, never another face.
  ...Object.fromEntries(FACES.map((face) => [face, [...SERVICES, 'faces']])),
  protocol: [...SERVICES, 'faces', ...FACES],
  // Configuration sits with the composition root: it reads the limits and policies of the layers below.
  config: BELOW_APP,
  app: [...BELOW_APP, 'config', ...STORE_ADAPTERS],
  transports: [...BELOW_APP, 'config', 'app'],
  // The dashboard mounts on the HTTP transport (its types), never the other way round.
  dashboard: [...BELOW_APP, 'config', 'app', 'transports', ...STORE_ADAPTERS],
  cli: [...BELOW_APP, 'config', 'app', 'transports', 'dashboard', ...STORE_ADAPTERS],
};

/** Logs, traces and metrics: every node may record; telemetry imports no other node. */
const ALLOWED: Record<string, readonly string[]> = {
  telemetry: [],
  ...Object.fromEntries(Object.entries(EDGES).map(([node, edges]) => [node, [...edges, 'telemetry']])),
};

/** Services never speak MCP: only these nodes may import the MCP SDK's packages. */
const MAY_SPEAK_MCP = new Set([...FACES, 'faces', 'protocol', 'app', 'transports', 'dashboard', 'cli']);

const SRC = join(ROOT, 'src');

function nodeOf(file: string): string {
  const parts = relative(SRC, join(ROOT, file)).split('/');
  if (parts.length === 1) return (parts[0] as string).replace(/\.ts$/, '');
  const [top, sub] = parts as [string, string];
  if ((top === 'faces' || top === 'store') && parts.length > 2) return `${top}/${sub}`;
  return top;
}

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return path.endsWith('.ts') && !path.endsWith('.test.ts') ? [path] : [];
  });
}

/** `import type … from 'x'` and `export type … from 'x'`: esbuild erases them, so they are made side-effect imports. */
const TYPE_ONLY = /^(?:import|export)\s+type\s+(?:\*\s+as\s+\w+|\{[^}]*\}|\w+)\s+from\s+('[^']+'|"[^"]+")/gm;

interface Edge {
  from: string;
  to: string;
  kind: string;
  typeOnly: boolean;
}

/** Every import of every source file, resolved by esbuild; `withTypes` adds the type-only ones. */
async function graph(withTypes: boolean): Promise<Metafile> {
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: sources(SRC),
    bundle: true,
    write: false,
    metafile: true,
    outdir: 'out',
    platform: 'node',
    format: 'esm',
    packages: 'external',
    logLevel: 'silent',
    plugins: withTypes
      ? [
          {
            name: 'type-imports-as-edges',
            setup(b) {
              b.onLoad({ filter: /\.ts$/ }, (args) => ({
                loader: 'ts',
                contents: readFileSync(args.path, 'utf8').replace(TYPE_ONLY, 'import $1'),
              }));
            },
          },
        ]
      : [],
  });
  return result.metafile;
}

let edges: Edge[] = [];
let externals: { from: string; to: string }[] = [];

beforeAll(async () => {
  const [runtime, all] = await Promise.all([graph(false), graph(true)]);
  const key = (from: string, to: string) => `${from}\0${to}`;
  const atRuntime = new Set<string>();
  for (const [from, { imports }] of Object.entries(runtime.inputs))
    for (const i of imports) atRuntime.add(key(from, i.path));
  for (const [from, { imports }] of Object.entries(all.inputs)) {
    for (const i of imports) {
      if (i.external) externals.push({ from, to: i.path });
      else edges.push({ from, to: i.path, kind: i.kind, typeOnly: !atRuntime.has(key(from, i.path)) });
    }
  }
  edges = edges.filter((e) => e.from.startsWith('src/') && e.to.startsWith('src/'));
  externals = externals.filter((e) => e.from.startsWith('src/'));
}, 60_000);

describe('architecture (the import graph esbuild resolves)', () => {
  it('sees the kinds of import a source-text scan missed', () => {
    const kinds = new Set(edges.map((e) => e.kind));
    expect(kinds).toContain('import-statement');
    expect(kinds).toContain('dynamic-import');
    expect(edges.some((e) => e.typeOnly)).toBe(true);
    // Every file of src/ is in the graph, as a node with a rule.
    for (const file of sources(SRC)) expect(ALLOWED).toHaveProperty([nodeOf(relative(ROOT, file))]);
  });

  it('imports follow the allow-list of folder-to-folder edges (cli/dashboard/transports → app → protocol → faces → services → workflows → store → engine → model)', () => {
    const wrong = new Set<string>();
    for (const e of edges) {
      const from = nodeOf(e.from);
      const to = nodeOf(e.to);
      if (from === to) continue;
      const allowed = ALLOWED[from];
      if (allowed === undefined) wrong.add(`${e.from} is in no node of ALLOWED`);
      else if (!allowed.includes(to))
        wrong.add(`${from} → ${to}: ${e.from} imports ${e.to} (${e.typeOnly ? 'type-only' : e.kind})`);
    }
    expect([...wrong]).toEqual([]);
  });

  it('no cycle between files, type-only imports included', () => {
    const next = new Map<string, string[]>();
    for (const e of edges) next.set(e.from, [...(next.get(e.from) ?? []), e.to]);
    // Tarjan's strongly connected components: any component of more than one file is a cycle.
    let counter = 0;
    const index = new Map<string, number>();
    const low = new Map<string, number>();
    const stack: string[] = [];
    const onStack = new Set<string>();
    const cycles: string[][] = [];
    const visit = (v: string): void => {
      index.set(v, counter);
      low.set(v, counter++);
      stack.push(v);
      onStack.add(v);
      for (const w of next.get(v) ?? []) {
        if (!index.has(w)) {
          visit(w);
          low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
        } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
      }
      if (low.get(v) === index.get(v)) {
        const component: string[] = [];
        let w: string;
        do {
          w = stack.pop() as string;
          onStack.delete(w);
          component.push(w);
        } while (w !== v);
        if (component.length > 1) cycles.push(component.sort());
      }
    };
    for (const v of next.keys()) if (!index.has(v)) visit(v);
    expect(cycles).toEqual([]);
  });

  it('services never speak MCP: only faces, protocol, app, transports, dashboard and cli import the SDK', () => {
    const wrong = externals
      .filter((e) => e.to.startsWith('@modelcontextprotocol/') && !MAY_SPEAK_MCP.has(nodeOf(e.from)))
      .map((e) => `${e.from} imports ${e.to}`);
    expect(wrong).toEqual([]);
  });
});
