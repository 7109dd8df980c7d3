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
 * like the others. Each node lists the nodes it may import (docs/architecture.md, "Layers" and "One
 * composition root"): cli → serve → dashboard/transports → app → protocol → faces →
 * runs/executions/catalogs → workflows → store → engine → model. An edge that is not listed fails; so
 * does any cycle between files.
 */
const BELOW_WORKFLOWS = ['model', 'engine', 'store'];
const SERVICES = [...BELOW_WORKFLOWS, 'workflows', 'catalogs', 'executions', 'runs', 'record'];
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
  // Signed records: the executions' chained events, signed and verified (no MCP, no store of its own).
  record: [...BELOW_WORKFLOWS, 'workflows', 'executions'],
  // What every face shares (tool, resource and prompt shapes, `next`): no face in it.
  faces: SERVICES,
  // A face is wording over the services: it may use the shared face modules, never another face.
  ...Object.fromEntries(FACES.map((face) => [face, [...SERVICES, 'faces']])),
  protocol: [...SERVICES, 'faces', ...FACES],
  // Configuration sits with the composition root: it reads the limits and policies of the layers below.
  config: BELOW_APP,
  app: [...BELOW_APP, 'config', ...STORE_ADAPTERS],
  // src/transports/http.ts composes the HTTP transport's parts (src/transports/http/, one job each),
  // which share the transports' connection and authenticators; stdio never imports them.
  transports: [...BELOW_APP, 'config', 'app', 'transports/http'],
  'transports/http': [...BELOW_APP, 'config', 'app', 'transports'],
  // The dashboard mounts on the HTTP transport (its types), never the other way round.
  dashboard: [...BELOW_APP, 'config', 'app', 'transports', 'transports/http', ...STORE_ADAPTERS],
  // The process around the app (src/serve.ts, the composition root's): HTTP with /metrics, probes and
  // the dashboard mount, stdio, OTLP and the drain. Above the transports and the dashboard it wires.
  serve: [...BELOW_APP, 'config', 'app', 'transports', 'transports/http', 'dashboard'],
  cli: [
    ...BELOW_APP,
    'config',
    'app',
    'serve',
    'transports',
    'transports/http',
    'dashboard',
    ...STORE_ADAPTERS,
  ],
};

/** Logs, traces and metrics: every node may record; telemetry imports no other node. */
const ALLOWED: Record<string, readonly string[]> = {
  telemetry: [],
  ...Object.fromEntries(Object.entries(EDGES).map(([node, edges]) => [node, [...edges, 'telemetry']])),
};

/** Services never speak MCP: only these nodes may import the MCP SDK's packages. */
const MAY_SPEAK_MCP = new Set([
  ...FACES,
  'faces',
  'protocol',
  'app',
  'serve',
  'transports',
  'transports/http',
  'dashboard',
  'cli',
]);

const SRC = join(ROOT, 'src');

function nodeOf(file: string): string {
  const parts = relative(SRC, join(ROOT, file)).split('/');
  if (parts.length === 1) return (parts[0] as string).replace(/\.ts$/, '');
  const [top, sub] = parts as [string, string];
  if ((top === 'faces' || top === 'store' || top === 'transports') && parts.length > 2)
    return `${top}/${sub}`;
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
});

/** Edges between nodes the allow-list does not list. */
function edgeViolations(list: readonly Edge[]): string[] {
  const wrong = new Set<string>();
  for (const e of list) {
    const from = nodeOf(e.from);
    const to = nodeOf(e.to);
    if (from === to) continue;
    const allowed = ALLOWED[from];
    if (allowed === undefined) wrong.add(`${e.from} is in no node of ALLOWED`);
    else if (!allowed.includes(to))
      wrong.add(`${from} → ${to}: ${e.from} imports ${e.to} (${e.typeOnly ? 'type-only' : e.kind})`);
  }
  return [...wrong];
}

/** Every cycle between files (Tarjan's strongly connected components of more than one file). */
function cyclesOf(list: readonly Edge[]): string[][] {
  const next = new Map<string, string[]>();
  for (const e of list) next.set(e.from, [...(next.get(e.from) ?? []), e.to]);
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
  return cycles;
}

/**
 * The parts of the durable-executions service (src/executions/, docs/architecture.md), lowest first: a
 * part imports only parts before it, and none imports the coordinator (execution-service.ts), which
 * alone does what crosses jobs (a decision made while a call waits, then the poll that hands out the step).
 */
const SERVICE_PARTS = [
  'step-outcomes',
  'step-checks',
  'approvals',
  'state-changes',
  'starting',
  'delegation',
  'submission',
];
const COORDINATOR = 'execution-service';

function partViolations(list: readonly Edge[]): string[] {
  const part = (file: string) => /^src\/executions\/([a-z-]+)\.ts$/.exec(file)?.[1];
  const wrong: string[] = [];
  for (const e of list) {
    const from = part(e.from);
    const to = part(e.to);
    if (from === undefined || to === undefined || !SERVICE_PARTS.includes(from)) continue;
    if (to === COORDINATOR) wrong.push(`${e.from} imports the coordinator ${e.to}`);
    else if (SERVICE_PARTS.includes(to) && SERVICE_PARTS.indexOf(to) >= SERVICE_PARTS.indexOf(from))
      wrong.push(`${e.from} imports ${e.to}, a part that is not below it`);
  }
  return wrong;
}

/** The SDK's private fields: reached only through src/protocol/sdk-internals.ts (its test fails loudly). */
const SDK_PRIVATE =
  /\b_(?:registeredTools|registeredPrompts|registeredResources|registeredResourceTemplates|getRequestHandler|clientCapabilities|clientVersion)\b/;
const SDK_DOOR = 'src/protocol/sdk-internals.ts';

function sdkReaches(files: readonly { file: string; text: string }[]): string[] {
  return files.filter((f) => f.file !== SDK_DOOR && SDK_PRIVATE.test(f.text)).map((f) => f.file);
}

const edge = (from: string, to: string): Edge => ({ from, to, kind: 'import-statement', typeOnly: false });

describe('architecture (the import graph esbuild resolves)', () => {
  it('sees the kinds of import a source-text scan missed', () => {
    const kinds = new Set(edges.map((e) => e.kind));
    expect(kinds).toContain('import-statement');
    expect(kinds).toContain('dynamic-import');
    expect(edges.some((e) => e.typeOnly)).toBe(true);
    // Every file of src/ is in the graph, as a node with a rule.
    for (const file of sources(SRC)) expect(ALLOWED).toHaveProperty([nodeOf(relative(ROOT, file))]);
  });

  it('imports follow the allow-list of folder-to-folder edges (cli → serve → dashboard/transports → app → protocol → faces → services → workflows → store → engine → model)', () => {
    expect(edgeViolations(edges)).toEqual([]);
  });

  it('no cycle between files, type-only imports included', () => {
    expect(cyclesOf(edges)).toEqual([]);
  });

  it('services never speak MCP: only faces, protocol, app, serve, transports, dashboard and cli import the SDK', () => {
    const wrong = externals
      .filter((e) => e.to.startsWith('@modelcontextprotocol/') && !MAY_SPEAK_MCP.has(nodeOf(e.from)))
      .map((e) => `${e.from} imports ${e.to}`);
    expect(wrong).toEqual([]);
  });

  it("the execution service's parts import only the parts below them, never the coordinator", () => {
    // Every part is a file that exists: a renamed one would make the rule check nothing.
    for (const part of [...SERVICE_PARTS, COORDINATOR])
      expect(sources(SRC)).toContain(join(SRC, 'executions', `${part}.ts`));
    expect(partViolations(edges)).toEqual([]);
  });

  it("the SDK's private fields are reached through one door", () => {
    const files = sources(SRC).map((f) => ({ file: relative(ROOT, f), text: readFileSync(f, 'utf8') }));
    expect(files.some((f) => f.file === SDK_DOOR && SDK_PRIVATE.test(f.text))).toBe(true);
    expect(sdkReaches(files)).toEqual([]);
  });

  it('catches planted violations of every rule', () => {
    // A layer importing upwards, a face importing another, a file outside every node.
    expect(edgeViolations([edge('src/engine/conditions.ts', 'src/app.ts')])).toHaveLength(1);
    expect(
      edgeViolations([edge('src/faces/guidance/guidance-tools.ts', 'src/faces/runs/run-tools.ts')]),
    ).toHaveLength(1);
    expect(edgeViolations([edge('src/transports/stdio.ts', 'src/dashboard/dashboard.ts')])).toHaveLength(1);
    expect(edgeViolations([edge('src/store/open-store.ts', 'src/transports/http/sessions.ts')])).toHaveLength(
      1,
    );
    // A cycle of three files.
    expect(
      cyclesOf([edge('src/a.ts', 'src/b.ts'), edge('src/b.ts', 'src/c.ts'), edge('src/c.ts', 'src/a.ts')]),
    ).toEqual([['src/a.ts', 'src/b.ts', 'src/c.ts']]);
    // A part reaching back into the coordinator, or up to a part above it.
    expect(
      partViolations([
        edge('src/executions/approvals.ts', 'src/executions/execution-service.ts'),
        edge('src/executions/approvals.ts', 'src/executions/submission.ts'),
        edge('src/executions/step-outcomes.ts', 'src/executions/approvals.ts'),
      ]),
    ).toHaveLength(3);
    // An SDK private field anywhere but the door.
    expect(
      sdkReaches([
        { file: 'src/transports/http.ts', text: 'server._clientCapabilities = undefined;' },
        { file: SDK_DOOR, text: 'server._getRequestHandler(m)' },
      ]),
    ).toEqual(['src/transports/http.ts']);
  });
});
