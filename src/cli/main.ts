import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { type ConfigOptions, loadConfig } from '../config.js';
import { ValidationEngine } from '../engine/validation-engine.js';
import { runStdioServer } from '../protocol/serve-stdio.js';
import { workflowJsonSchema } from '../workflows/model.js';
import { formatOf, parseDefinition, type SyntaxViolation } from '../workflows/parse.js';
import { MAX_DEFINITION_BYTES, WorkflowRegistry } from '../workflows/registry.js';
import { validateDefinition } from '../workflows/validate-definition.js';

const HELP = `workflowlookup - MCP server that keeps coding agents on the rails of multi-step workflows

Usage:
  workflowlookup [serve] [options]     run the MCP server on stdio (the default)
  workflowlookup list [--json]         list the workflows every source provides
  workflowlookup validate <files...>   validate workflow files (exit 1 on any violation)
  workflowlookup init                  create ./.workflowlookup/workflows with a sample workflow
  workflowlookup sources               show the sources and which one each workflow comes from
  workflowlookup schema                print the workflow JSON Schema
  workflowlookup --help | --version

Options:
  --no-bundled    leave out the bundled workflows   (env WORKFLOWLOOKUP_INCLUDE_BUNDLED=false)
  --no-user       leave out ~/.workflowlookup/workflows (env WORKFLOWLOOKUP_INCLUDE_USER=false)
  --no-project    leave out ./.workflowlookup/workflows (env WORKFLOWLOOKUP_INCLUDE_PROJECT=false)
  --tools LIST    tool groups to expose: guidance,executions,authoring,automation or all (env WORKFLOWLOOKUP_TOOLS)

Environment: WORKFLOW_STORAGE_PATH, WORKFLOWLOOKUP_WORKFLOWS_PATH, WORKFLOWLOOKUP_CONFIG_PATH,
WORKFLOWLOOKUP_MAX_MESSAGE_BYTES (see README).`;

const SAMPLE = `# A sample workflow. Edit it, then run: workflowlookup validate .workflowlookup/workflows/*.yaml
id: my-first-workflow
name: My first workflow
description: Plan, implement and verify a small change
version: 0.1.0
category: development
preconditions:
  - The change is described in a sentence or two
steps:
  - id: plan
    title: Plan the change
    prompt: List the files you will touch and the tests that will prove the change works.
    requireConfirmation: true
    validationCriteria:
      - type: length
        min: 40
        message: The plan should be at least a few sentences long
  - id: implement
    title: Implement
    prompt: Make the change described in the plan.
  - id: verify
    title: Verify
    prompt: Run the tests and report the results.
    validationCriteria:
      - type: regex
        pattern: "(pass|passed|green)"
        flags: i
        message: Report that the tests pass
`;

function parseArgs(argv: string[]): {
  command: string;
  rest: string[];
  options: ConfigOptions;
  json: boolean;
} {
  const options: ConfigOptions = {};
  const rest: string[] = [];
  let json = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--tools') options.tools = argv[++i] ?? '';
    else if (arg.startsWith('--tools=')) options.tools = arg.slice('--tools='.length);
    else if (arg === '--no-bundled') options.includeBundled = false;
    else if (arg === '--no-user') options.includeUser = false;
    else if (arg === '--no-project') options.includeProject = false;
    else if (arg === '--json') json = true;
    else rest.push(arg);
  }
  const command = rest.shift() ?? 'serve';
  return { command, rest, options, json };
}

function printViolation(v: SyntaxViolation): string {
  const where = v.line !== undefined ? ` (line ${v.line}, column ${v.column ?? 0})` : '';
  const detail = [v.expected ? `expected ${v.expected}` : '', v.actual ? `got ${v.actual}` : '']
    .filter(Boolean)
    .join(', ');
  return `  ${v.path || '(root)'}${where}: ${v.message} [${v.rule}]${detail ? ` (${detail})` : ''}`;
}

/** Everything wrong with one definition file: syntax, schema, semantics and unevaluable criteria. */
async function fileViolations(file: string, engine: ValidationEngine): Promise<SyntaxViolation[]> {
  const format = formatOf(file);
  if (format === undefined)
    return [{ path: '', rule: 'format', message: 'file must end in .json, .yaml or .yml' }];
  if (!existsSync(file)) return [{ path: '', rule: 'exists', message: 'file not found' }];
  const text = readFileSync(file, 'utf8');
  if (Buffer.byteLength(text) > MAX_DEFINITION_BYTES) {
    return [{ path: '', rule: 'maxFileSize', message: `larger than ${MAX_DEFINITION_BYTES} bytes` }];
  }
  const parsed = await parseDefinition(text, format);
  if (!parsed.ok) return parsed.violations;
  const result = validateDefinition(parsed.data);
  return result.ok ? engine.checkWorkflow(result.workflow) : result.violations;
}

async function validateFiles(files: string[]): Promise<number> {
  if (files.length === 0) {
    process.stderr.write('validate: name at least one workflow file\n');
    return 2;
  }
  const engine = new ValidationEngine();
  await engine.load();
  let failures = 0;
  for (const file of files) {
    const violations = await fileViolations(file, engine);
    if (violations.length === 0) {
      process.stdout.write(`ok    ${file}\n`);
    } else {
      failures++;
      process.stdout.write(`FAIL  ${file}\n${violations.map(printViolation).join('\n')}\n`);
    }
  }
  process.stdout.write(`${files.length - failures} valid, ${failures} invalid\n`);
  return failures > 0 ? 1 : 0;
}

async function list(options: ConfigOptions, json: boolean): Promise<number> {
  const registry = new WorkflowRegistry(loadConfig(options).sources);
  await registry.ready();
  const { workflows, broken } = registry.list();
  if (json) {
    process.stdout.write(`${JSON.stringify({ workflows, broken }, null, 2)}\n`);
    return 0;
  }
  const width = Math.max(2, ...workflows.map((w) => w.id.length));
  for (const w of workflows) {
    process.stdout.write(
      `${w.id.padEnd(width)}  ${w.version.padEnd(8)} ${w.category.padEnd(14)} ${w.name}\n`,
    );
  }
  for (const b of broken) {
    process.stdout.write(
      `broken: ${b.file}${b.id ? ` (${b.id})` : ''}\n${b.violations.map(printViolation).join('\n')}\n`,
    );
  }
  return 0;
}

async function sources(options: ConfigOptions): Promise<number> {
  const config = loadConfig(options);
  const registry = new WorkflowRegistry(config.sources);
  await registry.ready();
  process.stdout.write('Sources, lowest precedence first:\n');
  for (const s of config.sources) {
    process.stdout.write(`  ${s.kind.padEnd(8)} ${s.dir}${existsSync(s.dir) ? '' : '  (missing)'}\n`);
  }
  process.stdout.write(`Runtime (writable) dir: ${config.runtimeDir}\n\nWorkflows:\n`);
  for (const entry of registry.entries()) {
    const id = entry.status === 'valid' ? entry.workflow.id : (entry.id ?? basename(entry.file));
    process.stdout.write(
      `  ${id}  ${entry.source}  ${entry.file}${entry.status === 'broken' ? '  (broken)' : ''}\n`,
    );
  }
  return 0;
}

function init(): number {
  const dir = resolve('.workflowlookup', 'workflows');
  const file = join(dir, 'my-first-workflow.yaml');
  if (existsSync(file)) {
    process.stderr.write(`init: ${file} already exists; nothing written\n`);
    return 1;
  }
  mkdirSync(dir, { recursive: true });
  writeFileSync(file, SAMPLE, { flag: 'wx' });
  process.stdout.write(
    `Created ${file}\nThe server picks it up from ./.workflowlookup/workflows when started here.\n`,
  );
  return 0;
}

async function main(argv: string[]): Promise<number | undefined> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${HELP}\n`);
    return 0;
  }
  if (argv.includes('--version') || argv.includes('-v')) {
    process.stdout.write(`${loadConfig().version}\n`);
    return 0;
  }
  const { command, rest, options, json } = parseArgs(argv);
  switch (command) {
    case 'serve': {
      const config = loadConfig(options);
      const max = Number(process.env.WORKFLOWLOOKUP_MAX_MESSAGE_BYTES);
      if (process.stdin.isTTY) {
        process.stderr.write(
          `workflowlookup ${config.version}: MCP server on stdio; waiting for a client (Ctrl-C to quit)\n`,
        );
      }
      runStdioServer(config, Number.isInteger(max) && max > 0 ? { maxMessageBytes: max } : {});
      return undefined;
    }
    case 'list':
      return list(options, json);
    case 'validate':
      return validateFiles(rest);
    case 'init':
      return init();
    case 'sources':
      return sources(options);
    case 'schema':
      process.stdout.write(`${JSON.stringify(workflowJsonSchema(), null, 2)}\n`);
      return 0;
    default:
      process.stderr.write(`Unknown command "${command}".\n\n${HELP}\n`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code !== undefined) process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`workflowlookup: ${(error as Error)?.message ?? String(error)}\n`);
    process.exitCode = 1;
  },
);
