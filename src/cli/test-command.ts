// `workflowlookup test`: runs workflow tests through the app and prints what they found.
import { relative } from 'node:path';
import { createApp } from '../app.js';
import { type ConfigOptions, loadConfig } from '../config.js';
import type { SuiteResult, TestRun } from '../executions/workflow-tests.js';

const shortPath = (file: string) => {
  const rel = relative(process.cwd(), file);
  return rel.startsWith('..') || rel === '' ? file : rel;
};

/** One line per scenario (its failures under it), then the coverage and the paths no scenario walks. */
function suiteLines(suite: SuiteResult): string[] {
  const id = suite.workflow_id ?? '?';
  const lines: string[] = [];
  for (const s of suite.scenarios) {
    lines.push(`${s.passed ? 'ok  ' : 'FAIL'}  ${id}: ${s.name}`);
    for (const f of s.failures) lines.push(`        ${f}`);
  }
  const c = suite.coverage;
  if (c !== undefined) {
    lines.push(
      `coverage ${id} (${suite.file ? shortPath(suite.file) : 'inline'}): steps ${c.steps.covered}/${c.steps.total}, branches ${c.branches.covered}/${c.branches.total}, loop exits ${c.loops.covered}/${c.loops.total}${c.joins.total > 0 ? `, join outcomes ${c.joins.covered}/${c.joins.total}` : ''}`,
    );
    for (const u of c.untested) lines.push(`  untested: ${u}`);
  }
  return lines;
}

/** A malformed test file (or workflow under test), compiler style: "file:line:column: message". */
function errorLines(suite: SuiteResult): string[] {
  const file = suite.invalid === 'workflow' && suite.workflow_file ? suite.workflow_file : suite.file;
  return suite.errors.map((v) => {
    const at = v.line !== undefined ? `:${v.line}:${v.column ?? 0}` : '';
    return `${file ? shortPath(file) : '(inline)'}${at}: ${v.path ? `${v.path}: ` : ''}${v.message}`;
  });
}

/** Exit code: 2 when something could not run (a malformed file, a path naming nothing), 1 on a failure. */
function exitCode(run: TestRun): number {
  return run.errors > 0 ? 2 : run.failed > 0 ? 1 : 0;
}

export async function testCommand(paths: string[], options: ConfigOptions, json: boolean): Promise<number> {
  const app = createApp(loadConfig(options), { watch: false });
  let run: TestRun;
  try {
    run = await (await app.services.tests()).runPaths(paths);
  } finally {
    await app.close();
  }
  if (json) {
    process.stdout.write(`${JSON.stringify(run, null, 2)}\n`);
    return exitCode(run);
  }
  const errors = [...run.problems.map((p) => `${p.path}: ${p.message}`), ...run.suites.flatMap(errorLines)];
  for (const line of errors) process.stderr.write(`workflowlookup test: ${line}\n`);
  const out = run.suites.flatMap(suiteLines);
  if (run.suites.length === 0 && run.problems.length === 0)
    process.stderr.write('workflowlookup test: no test files found (<id>.test.yaml beside a workflow)\n');
  process.stdout.write(`${[...out, `${run.passed} passed, ${run.failed} failed`].join('\n')}\n`);
  return exitCode(run);
}
