import {
  appendFileSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { inProcessClient } from '../../test/helpers/in-process.js';
import { ROOT, sandbox } from '../../test/helpers/server.js';
import { validationWorkerUrl } from '../../test/helpers/validation-worker.js';
import { ValidationEngine } from '../engine/validation-engine.js';
import { contentVersion } from './entry.js';
import { formatOf, isDefinitionFile } from './parse.js';
import { WorkflowRegistry } from './registry.js';
import {
  SHIPPED_DEFINITIONS_FILE,
  ShippedDefinitions,
  type ShippedDefinitionsFile,
  shippedRecord,
} from './shipped-definitions.js';

const BUNDLED = join(ROOT, 'workflows');
/** A JSON workflow with regex rules (its check needs the worker) and a YAML one. */
const FILES = ['ai-task-implementation.json', 'adaptive-ticket-creation.yaml'];

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

const engine = async () => new ValidationEngine({ workerUrl: await validationWorkerUrl() });

/** What the build does (record-shipped.ts): check the folder once, keep the valid definitions. */
async function record(folder: string, checker: string): Promise<ShippedDefinitionsFile> {
  const checking = await engine();
  const registry = new WorkflowRegistry([{ kind: 'bundled', dir: folder }], { engine: checking });
  await registry.ready();
  checking.unload();
  return shippedRecord(checker, registry.filesOf('bundled'));
}

async function start(folder: string, shipped: ShippedDefinitions) {
  const fresh = await engine();
  const registry = new WorkflowRegistry([{ kind: 'bundled', dir: folder }], { engine: fresh, shipped });
  await registry.ready();
  return { registry, engine: fresh };
}

describe('the bundled workflows checked at build time', () => {
  it('serves the shipped verdicts without checking or starting the worker, and checks a changed file', async () => {
    dir = mkdtempSync(join(tmpdir(), 'wl-shipped-'));
    const folder = join(dir, 'workflows');
    mkdirSync(folder);
    for (const file of FILES) copyFileSync(join(BUNDLED, file), join(folder, file));
    const shipped = await record(folder, 'build-1');
    expect(Object.keys(shipped.definitions)).toHaveLength(2);

    // Unchanged files: both verdicts come from the build, no check runs, no worker thread starts.
    const first = await start(folder, ShippedDefinitions.of(shipped, 'build-1'));
    expect(first.registry.counts).toEqual({ checked: 0, shipped: 2, cached: 0 });
    expect(first.engine.workerStarts).toBe(0);
    const checked = await start(folder, ShippedDefinitions.of({ checker: 'other', definitions: {} }, 'x'));
    expect(checked.registry.counts.checked).toBe(2);
    // The same entries as a full check gives.
    const byFile = (r: WorkflowRegistry) => r.filesOf().sort((a, b) => (a.file < b.file ? -1 : 1));
    expect(byFile(first.registry)).toEqual(byFile(checked.registry));
    checked.engine.unload();

    // One byte more in one file: its content hash differs, so it is checked again (and its regex rules
    // need the worker); the other still comes from the build.
    appendFileSync(join(folder, 'ai-task-implementation.json'), '\n');
    const changed = await start(folder, ShippedDefinitions.of(shipped, 'build-1'));
    expect(changed.registry.counts).toEqual({ checked: 1, shipped: 1, cached: 0 });
    expect(changed.engine.workerStarts).toBe(1);
    expect(changed.registry.get('ai-task-implementation')?.status).toBe('valid');
    changed.engine.unload();
  });

  it('ignores verdicts of another build, and serves a changed definition as it now reads', async () => {
    dir = mkdtempSync(join(tmpdir(), 'wl-shipped-'));
    const folder = join(dir, 'workflows');
    mkdirSync(folder);
    const file = join(folder, 'ai-task-implementation.json');
    copyFileSync(join(BUNDLED, 'ai-task-implementation.json'), file);
    const shipped = await record(folder, 'build-1');

    const stale = await start(folder, ShippedDefinitions.of(shipped, 'build-2'));
    expect(stale.registry.counts).toEqual({ checked: 1, shipped: 0, cached: 0 });
    stale.engine.unload();

    const data = JSON.parse(readFileSync(file, 'utf8')) as { name: string; steps: unknown };
    rmSync(file);
    // Broken now: no verdict of the build stands for it.
    appendFileSync(file, JSON.stringify({ ...data, steps: 'none' }));
    const broken = await start(folder, ShippedDefinitions.of(shipped, 'build-1'));
    expect(broken.registry.counts.shipped).toBe(0);
    expect(broken.registry.get('ai-task-implementation')?.status).toBe('broken');
    broken.engine.unload();
  });

  it('the build ships a verdict for every bundled definition file as it is now', () => {
    const built = JSON.parse(
      readFileSync(join(ROOT, 'dist', SHIPPED_DEFINITIONS_FILE), 'utf8'),
    ) as ShippedDefinitionsFile;
    const files = readdirSync(BUNDLED).filter((f) => isDefinitionFile(f));
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) {
      const key = `${formatOf(file)}:${contentVersion(readFileSync(join(BUNDLED, file)))}`;
      expect(Object.keys(built.definitions), file).toContain(key);
    }
  });

  it('lists the bundled workflows over MCP on a fresh data dir with no worker thread started', async () => {
    const sb = sandbox();
    try {
      const shipped = ShippedDefinitions.of(await record(BUNDLED, 'build-1'), 'build-1');
      const { client, app, close } = await inProcessClient(sb, {}, { app: { shippedDefinitions: shipped } });
      try {
        const listed = await client.callTool({ name: 'workflow_list', arguments: {} });
        const ids = (listed.structuredContent as { workflows: { id: string }[] }).workflows.map((w) => w.id);
        expect(ids).toContain('ai-task-implementation');
        expect(app.services.registry.counts.checked).toBe(0);
        expect(app.services.registry.counts.shipped).toBe(ids.length);
        expect(app.services.engine.workerStarts).toBe(0);
        // A step output checked against a regex rule still starts it, on demand.
        const validated = await client.callTool({
          name: 'workflow_validate',
          arguments: {
            workflowId: 'ai-task-implementation',
            stepId: 'implement',
            output: 'changed src/a.ts',
          },
        });
        expect(validated.structuredContent).toMatchObject({ valid: true });
        expect(app.services.engine.workerStarts).toBe(1);
      } finally {
        await close();
      }
    } finally {
      sb.cleanup();
    }
  });
});
