/**
 * Workflow test files: where they are (beside the workflow, `<id>.test.yaml|yml|json`, in any source
 * directory), reading them, and checking them (syntax, the test-file schema, and the step and loop ids
 * they name against the workflow), every finding with its line and column. A malformed test file is an
 * error of that file only: it never hides a workflow (sources never load test files as workflows).
 */
import { stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { allStepIds, findActionStep } from '../engine/next-step.js';
import type { Violation } from '../model/violation.js';
import { isCommandStep, type Workflow } from '../model/workflow.js';
import { DEFINITION_LIMITS } from './check.js';
import { type Locator, NO_LOCATION } from './locate.js';
import { type DefinitionFormat, formatOf, isDefinitionFile, isTestFile, parseDefinition } from './parse.js';
import {
  listSourceEntries,
  MAX_SOURCE_DEPTH,
  readSourceFile,
  realDir,
  UnsafeFileError,
} from './safe-files.js';
import { propertyNamesAt } from './schema-names.js';
import { type TestFile, TestFileSchema, testFileJsonSchema } from './test-format.js';
import { issuesToViolations, toPointer } from './validate-definition.js';

/** The test file extensions, in the order a workflow's test files are looked for. */
const TEST_EXTENSIONS = ['.test.yaml', '.test.yml', '.test.json'] as const;

/** Where the test file for workflow `id` beside `workflowFile` would be, one name per extension. */
export function testFileNames(workflowFile: string, id: string): string[] {
  const dir = dirname(workflowFile);
  const stem = basename(workflowFile).replace(/\.(?:json|ya?ml)$/i, '');
  const stems = [...new Set([id, stem])];
  return stems.flatMap((s) => TEST_EXTENSIONS.map((ext) => join(dir, `${s}${ext}`)));
}

/** The test files that exist beside a workflow file. */
export async function testFilesBeside(workflowFile: string, id: string): Promise<string[]> {
  const found: string[] = [];
  for (const file of testFileNames(workflowFile, id)) {
    const info = await stat(file).catch(() => undefined);
    if (info?.isFile()) found.push(file);
  }
  return found;
}

/** The workflow a test file tests: its `workflow` field, else the id in its name (`<id>.test.yaml`). */
export function testedWorkflowId(file: string | undefined, tests: TestFile | undefined): string | undefined {
  if (tests?.workflow !== undefined) return tests.workflow;
  if (file === undefined) return undefined;
  return basename(file).replace(/\.test\.(?:json|ya?ml)$/i, '');
}

export interface CollectedTestFiles {
  /** Test files, absolute, in the order found (no duplicates). */
  files: string[];
  /** Paths that name nothing to test, each with why. */
  problems: { path: string; message: string }[];
}

/**
 * The test files `paths` name: a test file itself, a workflow file (its test files beside it), or a
 * directory (every test file in it and its subfolders, as deep as sources are read).
 */
export async function collectTestFiles(paths: readonly string[]): Promise<CollectedTestFiles> {
  const files: string[] = [];
  const problems: CollectedTestFiles['problems'] = [];
  const add = (file: string) => {
    if (!files.includes(file)) files.push(file);
  };
  for (const given of paths) {
    const path = resolve(given);
    const info = await stat(path).catch(() => undefined);
    if (info === undefined) {
      problems.push({ path: given, message: 'not found' });
    } else if (info.isDirectory()) {
      const root = await realDir(path);
      const listed =
        root === undefined ? { names: [] } : await listSourceEntries(root, isTestFile, MAX_SOURCE_DEPTH);
      for (const name of listed.names) add(join(path, name));
    } else if (isTestFile(path)) {
      add(path);
    } else if (isDefinitionFile(path)) {
      const stem = basename(path).replace(/\.(?:json|ya?ml)$/i, '');
      const beside = await testFilesBeside(path, stem);
      if (beside.length === 0)
        problems.push({
          path: given,
          message: `no test file beside it (${stem}.test.yaml or ${stem}.test.json)`,
        });
      for (const file of beside) add(file);
    } else {
      problems.push({
        path: given,
        message: 'not a test file (<id>.test.yaml, .test.yml or .test.json), a workflow file or a directory',
      });
    }
  }
  return { files, problems };
}

export interface ParsedTests {
  valid: boolean;
  errors: Violation[];
  tests?: TestFile;
  /**
   * An invalid file's step and loop ids, where they have the right shape: checked against the workflow
   * in the same pass as the schema, so a file with two mistakes reports both (as a workflow file does).
   */
  salvaged?: TestFile;
  /** Places findings made later (ids the workflow does not have) in the text. */
  locate: Locator;
}

/** A test file's text (with its format), or an already parsed value (a tool's `tests` object). */
export type TestSource = { text: string | Uint8Array; format: DefinitionFormat } | { data: unknown };

/** Reads a test file safely (no link out of its directory, at most 1 MiB) and parses it. */
export async function readTestFile(file: string): Promise<ParsedTests> {
  const format = formatOf(file) ?? 'yaml';
  let bytes: Buffer;
  try {
    bytes = await readSourceFile(dirname(file), basename(file), DEFINITION_LIMITS.maxBytes);
  } catch (error) {
    const reason = error instanceof UnsafeFileError ? error.reason : undefined;
    const message =
      reason === 'too-large'
        ? `the test file is larger than ${DEFINITION_LIMITS.maxBytes} bytes (1 MiB)`
        : reason === 'outside'
          ? 'the test file links outside its directory; links that leave it are never followed'
          : 'the test file cannot be read';
    return { valid: false, errors: [{ path: '', rule: 'read', message }], locate: NO_LOCATION };
  }
  return parseTests({ text: bytes, format });
}

/** Parses and checks a test file against the format (syntax and schema), with lines and columns. */
export async function parseTests(source: TestSource): Promise<ParsedTests> {
  let data: unknown;
  let locate: Locator = NO_LOCATION;
  if ('text' in source) {
    const size = typeof source.text === 'string' ? Buffer.byteLength(source.text) : source.text.byteLength;
    if (size > DEFINITION_LIMITS.maxBytes) {
      return {
        valid: false,
        errors: [
          {
            path: '',
            rule: 'maxFileSize',
            message: `the test file is ${size} bytes; at most ${DEFINITION_LIMITS.maxBytes} bytes (1 MiB) are accepted`,
          },
        ],
        locate,
      };
    }
    const text = typeof source.text === 'string' ? source.text : Buffer.from(source.text).toString('utf8');
    const parsed = await parseDefinition(text, source.format, {
      maxDepth: DEFINITION_LIMITS.maxDepth,
      maxAliasCount: DEFINITION_LIMITS.maxAliasCount,
    });
    if (!parsed.ok) return { valid: false, errors: parsed.violations, locate };
    data = parsed.data;
    locate = parsed.locate;
  } else {
    data = source.data;
  }
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    const actual = data === null ? 'null' : Array.isArray(data) ? 'an array' : `a ${typeof data}`;
    return {
      valid: false,
      errors: [
        {
          path: '',
          rule: 'type',
          message: `a test file is an object (a YAML mapping) with scenarios; this holds ${actual}`,
        },
      ],
      locate,
    };
  }
  const result = TestFileSchema.safeParse(data);
  if (!result.success) {
    // Did-you-mean from the test file's own schema (the workflow's names would suggest nothing useful).
    const namesAt = (path: readonly PropertyKey[]) => propertyNamesAt(path, testFileJsonSchema);
    return {
      valid: false,
      errors: placed(issuesToViolations(result.error.issues, data, [], namesAt), locate),
      salvaged: salvageTests(data as Record<string, unknown>),
      locate,
    };
  }
  return { valid: true, errors: [], tests: result.data, locate };
}

/**
 * The parts of a test file that name steps, loops and the workflow, each kept only where it has the
 * shape checkTestsAgainst reads (scenarios keep their places, so the paths stay right).
 */
function salvageTests(data: Record<string, unknown>): TestFile {
  const object = (v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  const keys = (v: unknown) => Object.fromEntries(Object.keys(object(v) ?? {}).map((k) => [k, {}]));
  const list = (v: unknown) => (Array.isArray(v) ? v.map((x) => (typeof x === 'string' ? x : '')) : []);
  const scenarios = (Array.isArray(data.scenarios) ? data.scenarios : []).map((raw) => {
    const scenario = object(raw) ?? {};
    const expect = object(scenario.expect);
    return {
      steps: keys(scenario.steps),
      commands: keys(scenario.commands),
      ...(expect !== undefined
        ? {
            expect: {
              path: list(expect.path),
              skipped: list(expect.skipped),
              visits: keys(expect.visits),
              rejected: (Array.isArray(expect.rejected) ? expect.rejected : []).map((r) => ({
                step: typeof object(r)?.step === 'string' ? (object(r)?.step as string) : '',
              })),
              ...(typeof expect.stopped_at === 'string' ? { stopped_at: expect.stopped_at } : {}),
              requests: keys(expect.requests),
              loops: keys(expect.loops),
            },
          }
        : {}),
    };
  });
  return {
    ...(typeof data.workflow === 'string' ? { workflow: data.workflow } : {}),
    steps: keys(data.steps),
    commands: keys(data.commands),
    scenarios,
  } as unknown as TestFile;
}

/**
 * A salvaged file's unknown ids, beside its schema errors: none at a place the schema faulted already
 * (a misshapen value there is that error, not an unknown id), and none for the blanks salvageTests left.
 */
export function salvagedFindings(errors: readonly Violation[], found: readonly Violation[]): Violation[] {
  const faulted = errors.map((e) => e.path);
  return found.filter(
    (f) =>
      f.actual !== '' &&
      !faulted.some((p) => f.path === p || f.path.startsWith(`${p}/`) || p.startsWith(`${f.path}/`)),
  );
}

/** Violations with the line and column of their node, where the text is known. */
export function placed(violations: readonly Violation[], locate: Locator): Violation[] {
  const where = locate(violations.filter((v) => v.line === undefined).map((v) => v.path));
  return violations.map((v) => (v.line === undefined ? { ...v, ...where.get(v.path) } : v));
}

/** Ids shown when an unknown one is named: enough to spot the right one, never a flood. */
const MAX_IDS_SHOWN = 20;

function idList(ids: readonly string[]): string {
  const shown = ids.slice(0, MAX_IDS_SHOWN).join(', ');
  return ids.length > MAX_IDS_SHOWN ? `${shown} and ${ids.length - MAX_IDS_SHOWN} more` : shown || 'none';
}

/**
 * The step and loop ids a test file names that the workflow does not have (or has as another kind of
 * step: an agent's answer for a command step, a canned API answer for a prompt step), with their place.
 */
export function checkTestsAgainst(workflow: Workflow, tests: TestFile, locate: Locator): Violation[] {
  const prompts: string[] = [];
  const commands: string[] = [];
  const loops: string[] = [];
  for (const id of allStepIds(workflow)) {
    const action = findActionStep(workflow, id);
    if (action === undefined) loops.push(id);
    else if (isCommandStep(action)) commands.push(id);
    else prompts.push(id);
  }
  const actions = [...prompts, ...commands];
  const out: Violation[] = [];
  const bad = (path: PropertyKey[], message: string, id: string) =>
    out.push({ path: toPointer(path), rule: 'unknownStep', message, actual: id });
  const step = (path: PropertyKey[], id: string) => {
    if (!actions.includes(id))
      bad(path, `workflow "${workflow.id}" has no step "${id}"; its steps are ${idList(actions)}`, id);
  };
  const answered = (path: PropertyKey[], id: string) => {
    if (prompts.includes(id)) return;
    if (commands.includes(id))
      bad(path, `"${id}" is a command step: give its canned API answers under commands, not steps`, id);
    else step(path, id);
  };
  const canned = (path: PropertyKey[], id: string) => {
    if (commands.includes(id)) return;
    if (prompts.includes(id))
      bad(
        path,
        `"${id}" is a step the agent carries out: give what it reports under steps, not commands`,
        id,
      );
    else
      bad(
        path,
        `workflow "${workflow.id}" has no command step "${id}"; its command steps are ${idList(commands)}`,
        id,
      );
  };
  for (const id of Object.keys(tests.steps ?? {})) answered(['steps', id], id);
  for (const id of Object.keys(tests.commands ?? {})) canned(['commands', id], id);
  tests.scenarios.forEach((scenario, i) => {
    const at = ['scenarios', i];
    for (const id of Object.keys(scenario.steps ?? {})) answered([...at, 'steps', id], id);
    for (const id of Object.keys(scenario.commands ?? {})) canned([...at, 'commands', id], id);
    const expect = scenario.expect;
    if (expect === undefined) return;
    const e = [...at, 'expect'];
    (expect.path ?? []).forEach((id, n) => {
      step([...e, 'path', n], id);
    });
    (expect.skipped ?? []).forEach((id, n) => {
      step([...e, 'skipped', n], id);
    });
    for (const id of Object.keys(expect.visits ?? {})) step([...e, 'visits', id], id);
    (expect.rejected ?? []).forEach((r, n) => {
      answered([...e, 'rejected', n, 'step'], r.step);
    });
    if (expect.stopped_at !== undefined) step([...e, 'stopped_at'], expect.stopped_at);
    for (const id of Object.keys(expect.requests ?? {})) canned([...e, 'requests', id], id);
    for (const id of Object.keys(expect.loops ?? {})) {
      if (!loops.includes(id))
        bad(
          [...e, 'loops', id],
          `workflow "${workflow.id}" has no loop "${id}"; its loops are ${idList(loops)}`,
          id,
        );
    }
  });
  return placed(out, locate);
}
