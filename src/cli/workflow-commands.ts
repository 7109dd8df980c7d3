// `workflowlookup list | validate | sources | init`: the workflow definitions as the server reads them
// (its registry, sources and check policy, from an app built as the server builds it), and a sample to
// start from.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { loadOperatorChecks } from '../app/check-policy.js';
import { type App, createApp } from '../app.js';
import { type Config, ConfigError, type ConfigOptions, loadConfig } from '../config.js';
import { localCaller } from '../executions/execution-model.js';
import type { Violation } from '../model/violation.js';
import {
  type CheckPolicy,
  type CheckReport,
  checkDefinition,
  describeViolation,
  oversize,
} from '../workflows/check.js';
import type { Listing } from '../workflows/listing.js';
import { type DefinitionFormat, formatOf } from '../workflows/parse.js';
import { UsageError } from './usage.js';

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

/** A finding as `workflow_validate_manifest` words it, indented, warnings marked. */
function printViolation(v: Violation, prefix = ''): string {
  return `  ${prefix}${describeViolation(v)}`;
}

type FileReport = Pick<CheckReport, 'valid' | 'errors' | 'warnings'> & {
  format?: DefinitionFormat;
  id?: string;
};

/** One file named on the command line, through the one check every path uses (`authoring` level). */
async function checkFile(file: string, policy: CheckPolicy): Promise<FileReport> {
  const invalid = (violation: Violation): FileReport => ({ valid: false, errors: [violation], warnings: [] });
  const format = formatOf(file);
  if (format === undefined)
    return invalid({ path: '', rule: 'format', message: 'file must end in .json, .yaml or .yml' });
  const info = await stat(file).catch(() => undefined);
  if (info === undefined) return invalid({ path: '', rule: 'exists', message: 'file not found' });
  if (!info.isFile()) return invalid({ path: '', rule: 'exists', message: 'not a regular file' });
  const big = oversize(info.size);
  if (big) return { ...invalid(big), format };
  const report = await checkDefinition({ text: await readFile(file), format }, 'authoring', policy);
  return {
    valid: report.valid,
    format,
    ...(report.id !== undefined ? { id: report.id } : {}),
    errors: report.errors,
    warnings: report.warnings,
  };
}

export async function validateFiles(files: string[], options: ConfigOptions, json: boolean): Promise<number> {
  if (files.length === 0) {
    process.stderr.write('workflowlookup: validate: name at least one workflow file (validate FILE...)\n');
    return 2;
  }
  const config = loadConfig(options);
  // The steps' checks are looked up in the operator's checks file, which must be usable (as for serve).
  await refuseUnusableChecks(config);
  // The server's check policy (engine, env allow-list, personas, checks), from the one composition root.
  const app = createApp(config, { watch: false });
  const reports: (FileReport & { file: string })[] = [];
  try {
    const policy = await app.services.checkPolicy();
    for (const file of files) reports.push({ file, ...(await checkFile(file, policy)) });
  } finally {
    await app.close();
  }
  const failures = reports.filter((r) => !r.valid).length;
  if (json) {
    process.stdout.write(
      `${JSON.stringify({ files: reports, valid: files.length - failures, invalid: failures }, null, 2)}\n`,
    );
    return failures > 0 ? 1 : 0;
  }
  for (const r of reports) {
    const lines = [
      ...r.errors.map((v) => printViolation(v)),
      ...r.warnings.map((v) => printViolation(v, 'warning: ')),
    ];
    process.stdout.write(`${r.valid ? 'ok  ' : 'FAIL'}  ${r.file}\n${lines.map((l) => `${l}\n`).join('')}`);
  }
  process.stdout.write(`${files.length - failures} valid, ${failures} invalid\n`);
  return failures > 0 ? 1 : 0;
}

/**
 * Runs `use` on an app built as the server builds it (no watchers), closed afterwards: the CLI reads
 * the same registry, with the same sources (the database's too, with PostgreSQL), as the server.
 */
async function withApp<T>(options: ConfigOptions, use: (app: App) => Promise<T>): Promise<T> {
  const app = createApp(loadConfig(options), { watch: false });
  try {
    return await use(app);
  } finally {
    await app.close();
  }
}

/** `list --json`: what workflow_list answers, plus the warnings of every file read. */
async function listing(app: App): Promise<Listing> {
  const outcome = await app.runner.run('workflow_list', {}, { caller: localCaller() });
  if ('error' in outcome) {
    const data = outcome.error.data as { details?: unknown } | undefined;
    throw new Error(
      `workflow_list: ${outcome.error.message}${typeof data?.details === 'string' ? ` (${data.details})` : ''}`,
    );
  }
  return outcome.result as Listing;
}

export async function list(options: ConfigOptions, json: boolean): Promise<number> {
  return withApp(options, async (app) => {
    const { registry } = app.services;
    const { workflows, broken } = await listing(app);
    if (json) {
      // Warnings of every file read (workflow_validate_manifest would report the same ones).
      const policy = await app.services.checkPolicy();
      const warnings: { file: string; source: string; id?: string; warnings: Violation[] }[] = [];
      for (const entry of registry.filesOf()) {
        const report = await registry.report(entry, policy.knownAgents).catch(() => undefined);
        if (report === undefined || report.warnings.length === 0) continue;
        warnings.push({
          file: entry.file,
          source: entry.source,
          ...(report.id !== undefined ? { id: report.id } : {}),
          warnings: report.warnings,
        });
      }
      process.stdout.write(`${JSON.stringify({ workflows, broken, warnings }, null, 2)}\n`);
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
        `broken: ${b.file}${b.id ? ` (${b.id})` : ''}\n${b.violations.map((v) => printViolation(v)).join('\n')}\n`,
      );
    }
    return 0;
  });
}

/** `sources sync`: fetches every git source now, as the server does on its interval; 1 if any failed. */
async function syncSources(options: ConfigOptions, json: boolean): Promise<number> {
  return withApp(options, async (app) => {
    await app.services.registry.ready();
    const results = await app.services.gitSources.syncAll();
    if (json) process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
    else {
      if (results.length === 0)
        process.stdout.write('No git sources configured (WORKFLOWLOOKUP_GIT_SOURCES).\n');
      for (const { source, result } of results) {
        const what =
          result.outcome === 'error'
            ? `error: ${result.error}`
            : result.outcome === 'broken'
              ? `commit ${result.commit} refused: ${result.files} broken file(s); still serving ${source.commit ?? 'nothing'}`
              : `${result.outcome}: ${result.commit}`;
        process.stdout.write(`${source.repository}#${source.ref}  ${what}\n`);
      }
    }
    return results.some((r) => r.result.outcome === 'error' || r.result.outcome === 'broken') ? 1 : 0;
  });
}

/** The git sources' lines of `workflowlookup sources`: ref, commit, last sync, last error, broken files. */
function printGitSources(app: App): void {
  const statuses = app.services.gitSources.status();
  if (statuses.length === 0) return;
  process.stdout.write('\nGit sources (`workflowlookup sources sync` fetches them now):\n');
  for (const s of statuses) {
    process.stdout.write(
      `  ${s.repository}  ref ${s.ref}${s.subdir ? `  folder ${s.subdir}` : ''}\n    commit ${s.commit ?? '(none yet)'}${s.fetchedAt ? ` fetched ${s.fetchedAt}` : ''}, ${s.workflows} workflow(s)\n    last sync ${s.lastSync ?? 'never'}${s.lastError ? `, last error: ${s.lastError}` : ''}\n`,
    );
    if (s.broken !== undefined) {
      process.stdout.write(`    refused commit ${s.broken.commit} (${s.broken.at}), broken files:\n`);
      for (const f of s.broken.files) {
        process.stdout.write(
          `      ${f.file}\n${f.violations.map((v) => `        ${printViolation(v)}`).join('\n')}\n`,
        );
      }
    }
  }
}

export async function sources(options: ConfigOptions, rest: string[], json: boolean): Promise<number> {
  const [action] = rest;
  if (action === 'sync') return syncSources(options, json);
  if (action !== undefined) throw new UsageError('sources', 'expected: sources | sources sync');
  return withApp(options, async (app) => {
    const { registry } = app.services;
    await registry.ready();
    if (json) {
      process.stdout.write(
        `${JSON.stringify({ sources: registry.sources.map((s) => ({ kind: s.kind, dir: s.dir })), git: app.services.gitSources.status() }, null, 2)}\n`,
      );
      return 0;
    }
    process.stdout.write('Sources, lowest precedence first:\n');
    for (const s of registry.sources) {
      // The database's source is no directory (it is the store's `workflow` documents).
      const missing = s.kind !== 'database' && !existsSync(s.dir);
      const label =
        s.git !== undefined ? `${s.git.url}#${s.git.ref}${s.git.subdir ? `:${s.git.subdir}` : ''}` : s.dir;
      process.stdout.write(`  ${s.kind.padEnd(8)} ${label}${missing ? '  (missing)' : ''}\n`);
    }
    process.stdout.write(`Runtime (writable) dir: ${app.config.runtimeDir}\n\nWorkflows:\n`);
    for (const entry of registry.entries()) {
      const id = entry.status === 'valid' ? entry.workflow.id : (entry.id ?? basename(entry.file));
      process.stdout.write(
        `  ${id}  ${entry.source}  ${entry.file}${entry.status === 'broken' ? '  (broken)' : ''}${entry.status === 'valid' && entry.provenance ? `  (${entry.provenance.repository}@${entry.provenance.commit})` : ''}\n`,
      );
    }
    printGitSources(app);
    return 0;
  });
}

export function init(): number {
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

/** A checks file that cannot be used is a setting that cannot work: refused before anything runs. */
export async function refuseUnusableChecks(config: Config): Promise<void> {
  try {
    await loadOperatorChecks(config);
  } catch (error) {
    throw new ConfigError(`WORKFLOWLOOKUP_CHECKS_FILE: ${(error as Error).message}`);
  }
}
