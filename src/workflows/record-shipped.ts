// Build step (scripts/build.mjs): checks the bundled workflows once, the way every start would, and
// prints the record of the valid ones (shipped-definitions.ts) on stdout, for dist/bundled-definitions.json.
import { join } from 'node:path';
import { ValidationEngine } from '../engine/validation-engine.js';
import { BUILD_CHECKER_ID } from './definition-cache.js';
import { WorkflowRegistry } from './registry.js';
import { shippedRecord } from './shipped-definitions.js';

const dir = process.argv[2] ?? join(process.cwd(), 'workflows');
if (BUILD_CHECKER_ID === undefined) throw new Error('record-shipped runs from the build only');
const engine = new ValidationEngine();
// No allowed env names: a verdict that holds with none holds with any (shipped-definitions.ts).
const registry = new WorkflowRegistry([{ kind: 'bundled', dir }], { engine, watch: false });
await registry.ready();
registry.close();
engine.unload();
process.stdout.write(`${JSON.stringify(shippedRecord(BUILD_CHECKER_ID, registry.filesOf('bundled')))}\n`);
