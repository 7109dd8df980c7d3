import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../src/app.js';
import { commandReference } from '../src/cli/commands.js';
import { ENVIRONMENT, loadConfig, PROFILES, TOOL_GROUPS } from '../src/config.js';
import type { ToolDefinition } from '../src/faces/tool.js';
import { aliasRows } from '../src/protocol/aliases.js';
import { ERROR_TABLE, RpcCode } from '../src/protocol/error-mapping.js';
import { silentLogger } from '../src/telemetry/log.js';
import { ROOT, type Sandbox, sandbox } from './helpers/server.js';
import { validationWorkerUrl } from './helpers/validation-worker.js';

const cell = (text: string) => text.replaceAll('|', '\\|');

/** The Environment table (docs/environment.md), made from the same table `--help` prints. */
function environmentTable(): string {
  return [
    '| variable | effect |',
    '| --- | --- |',
    ...ENVIRONMENT.map((e) => `| \`${e.name}\` | ${cell(e.description)} |`),
  ].join('\n');
}

/** Every alias beside its canonical tool or argument, from the tool definitions. */
function aliasTable(tools: readonly ToolDefinition[]): string {
  return [
    '| accepted | stands for |',
    '| --- | --- |',
    ...aliasRows(tools).map((r) =>
      r.kind === 'tool'
        ? `| tool \`${r.alias}\` | \`${r.canonical}\` |`
        : `| \`${r.tool}\` argument \`${r.alias}\` | \`${r.canonical}\` |`,
    ),
  ].join('\n');
}

/** The tool groups, what each is for and its tools, from the groups the app gives each tool. */
function groupTable(tools: readonly ToolDefinition[]): string {
  return [
    '| group | for | tools |',
    '| --- | --- | --- |',
    ...PROFILES.map(
      (group) =>
        `| \`${group}\` | ${cell(TOOL_GROUPS[group])} | ${tools
          .filter((t) => t.groups?.includes(group))
          .map((t) => `\`${t.name}\``)
          .join(', ')} |`,
    ),
  ].join('\n');
}

/** What each JSON-RPC code means; the error codes under each come from the error table. */
const RPC_MEANINGS: Record<number, string> = {
  [RpcCode.ParseError]: 'Parse error (invalid JSON; `id: null`, `data.details`)',
  [RpcCode.InvalidRequest]:
    'Invalid Request (no `method`, bad `jsonrpc`, batch, message over the size limit, or a call before `initialize`: message `Server not initialized`)',
  [RpcCode.MethodNotFound]:
    'Method not found (`data.method`, `data.did_you_mean`); a task-only tool called without a task',
  [RpcCode.InvalidParams]:
    'Invalid params (`data.details`, e.g. `workflowId is required`; an unknown argument names the closest ones)',
  [RpcCode.InternalError]: 'Internal error (details in the server log, under `data.correlation_id`)',
  [RpcCode.ServerError]:
    'Unsupported protocol version (`data.supportedVersions`, `data.requestedVersion`); a command step that failed (`data.reason`); a sampling request the client refused or failed (`data.details`); `Too many subscriptions` or `Too many tasks` (`data.limit`, `data.details`, see [Limits](http.md#limits)); a server-run check this server will not run (`data.check`, `data.reason`)',
  [RpcCode.WorkflowNotFound]:
    'Workflow not found (`data.workflowId`; `data.did_you_mean`: the nearest ids, when an id is misspelled or cut short)',
  [RpcCode.InvalidWorkflow]:
    'Invalid workflow (`data.violations`, `data.file`); also a schema rule whose JSON Schema does not compile, and a submitted manifest that does not validate',
  [RpcCode.StepNotFound]:
    'Step not found (`data.stepId`): unknown `stepId`, `currentStep` or id in `completedSteps`',
  [RpcCode.ValidationError]: 'Validation error: criteria that cannot be evaluated (bad regex, `min` > `max`)',
  [RpcCode.StateError]:
    'State error: unknown execution, invalid transition (`data.allowed`), paused execution, reused or superseded token; a save, rename or import conflict',
  [RpcCode.StorageError]:
    'Storage error: the execution store cannot be opened; a workflow from a read-only source cannot be changed; the runtime dir is not writable or the disk is full',
  [RpcCode.SecurityError]:
    'Security error: forged, altered or malformed token; `Token expired` with where to get a fresh one; a path outside the runtime dir; `Insufficient scope` for a resource (`data.required_scope`)',
  [RpcCode.MissingClientCapability]:
    'Missing required client capability (`data.requiredCapabilities`): the tasks extension on 2026-07-28, sampling or elicitation for an orchestration',
};

/** The error codes of the one error table, each under its JSON-RPC code. */
function errorTables(): string {
  const entries = [
    ...Object.values(ERROR_TABLE).map((m) => ({
      rpc: m.rpc,
      code: m.error_code,
      category: m.category,
      retryable: m.retryable,
    })),
    // Unexpected failures (toRpcError): never a domain value, always this.
    { rpc: RpcCode.InternalError, code: 'INTERNAL_ERROR', category: 'internal', retryable: true },
  ];
  const codes = Object.values(RpcCode); // declaration order: JSON-RPC's own, then the seeds'
  const byRpc = (rpc: number) => [...new Set(entries.filter((e) => e.rpc === rpc).map((e) => e.code))];
  return [
    '| code | meaning | `error_code` |',
    '| --- | --- | --- |',
    ...codes.map(
      (rpc) =>
        `| ${rpc} | ${cell(RPC_MEANINGS[rpc] ?? 'UNDOCUMENTED: add it to RPC_MEANINGS in test/docs.test.ts')} | ${
          byRpc(rpc)
            .map((c) => `\`${c}\``)
            .join(', ') || '—'
        } |`,
    ),
    '',
    '| `error_code` | code | category | retryable |',
    '| --- | --- | --- | --- |',
    ...entries.map(
      (e) =>
        `| \`${e.code}\` | ${e.rpc} | ${e.category} | ${
          // A command step says per failure whether a retry can succeed (a credential set, an API back).
          e.code === 'COMMAND_FAILED' ? 'per failure (`data.retryable`)' : e.retryable ? 'yes' : 'no'
        } |`,
    ),
  ].join('\n');
}

/** The command reference, made from the same table that parses the command line and prints --help. */
function commandBlock(): string {
  return ['```', commandReference(), '```'].join('\n');
}

let sb: Sandbox;
let tools: readonly ToolDefinition[] = [];
beforeAll(async () => {
  sb = sandbox();
  const app = createApp(loadConfig({ env: sb.env, cwd: sb.project }), {
    watch: false,
    log: silentLogger,
    validationWorker: await validationWorkerUrl(),
  });
  tools = app.runner.tools;
  await app.close();
});
afterAll(() => sb.cleanup());

/** Checks (or, with WORKFLOWLOOKUP_WRITE_DOCS=1, rewrites) the text between two markers of a docs/ file. */
function generated(file: string, name: string, make: () => string): void {
  const path = join(ROOT, 'docs', file);
  const text = readFileSync(path, 'utf8');
  const start = new RegExp(`<!-- ${name}:start[^>]*-->\\n`).exec(text);
  const endMarker = `<!-- ${name}:end -->`;
  const end = text.indexOf(endMarker);
  expect(start, `docs/${file} needs the ${name} markers`).not.toBeNull();
  expect(end).toBeGreaterThan(start?.index ?? 0);
  const at = (start?.index ?? 0) + (start?.[0].length ?? 0);
  if (process.env.WORKFLOWLOOKUP_WRITE_DOCS === '1') {
    writeFileSync(path, `${text.slice(0, at)}${make()}\n${text.slice(end)}`);
    return;
  }
  expect(text.slice(at, end).trim(), `docs/${file} is out of date: run \`npm run docs\``).toBe(make());
}

describe('docs stay true', () => {
  it('the Environment table (docs/environment.md) is the one --help prints (npm run docs rewrites it)', () => {
    generated('environment.md', 'environment', environmentTable);
  });

  it('the alias table (docs/tools.md) lists every alias the tools declare, beside its canonical name', () => {
    expect(aliasRows(tools).length).toBeGreaterThan(30);
    generated('tools.md', 'aliases', () => aliasTable(tools));
  });

  it('the tool group table (docs/tools.md) is the grouping the server lists (npm run docs rewrites it)', () => {
    // Every tool but workflow_tools (core only) is in exactly one group besides core; task tools share one.
    for (const t of tools.filter((t) => t.name !== 'workflow_tools'))
      expect(
        t.groups?.filter((g) => g !== 'core'),
        t.name,
      ).toHaveLength(1);
    const group = (name: string) => tools.find((t) => t.name === name)?.groups?.find((g) => g !== 'core');
    for (const name of ['workflow_run', 'workflow_cancel', 'workflow_author_and_run', 'workflow_execute'])
      expect(group(name), name).toBe('tasks');
    expect(group('workflow_purge_history')).toBe('executions');
    generated('tools.md', 'groups', () => groupTable(tools));
  });

  it('the error tables (docs/errors.md) are the error mapping: every error_code and its JSON-RPC code', () => {
    for (const rpc of Object.values(RpcCode)) expect(RPC_MEANINGS[rpc], `meaning of ${rpc}`).toBeDefined();
    generated('errors.md', 'errors', errorTables);
  });

  it('the command reference (docs/cli.md) is the table the command line parses (and --help prints)', () => {
    expect(commandReference()).toContain('workflowlookup serve [--http');
    for (const command of ['migrate', 'export', 'import', 'token']) {
      expect(commandReference()).toContain(`workflowlookup ${command}`);
    }
    generated('cli.md', 'commands', commandBlock);
  });

  it('the README stays a ten-minute read, and every relative link in it and docs/ reaches a file and heading', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    expect(readme.split('\n').length).toBeLessThanOrEqual(300);
    const pages = [
      'README.md',
      ...readdirSync(join(ROOT, 'docs'))
        .filter((f) => f.endsWith('.md'))
        .map((f) => `docs/${f}`),
    ];
    // GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens (fenced code skipped).
    const anchors = (page: string) =>
      new Set(
        [
          ...readFileSync(join(ROOT, page), 'utf8')
            .replace(/```[\s\S]*?```/g, '')
            .matchAll(/^#+ (.*)$/gm),
        ].map((m) =>
          (m[1] as string)
            .trim()
            .toLowerCase()
            .replace(/[^\w\- ]/g, '')
            .replaceAll(' ', '-'),
        ),
      );
    const broken: string[] = [];
    for (const page of pages) {
      for (const [, link] of readFileSync(join(ROOT, page), 'utf8').matchAll(/\]\(([^)\s]+)\)/g)) {
        if (!link || /^[a-z]+:/.test(link)) continue;
        const [path = '', anchor] = link.split('#');
        const target = path ? normalize(join(dirname(page), path)) : page;
        if (!existsSync(join(ROOT, target))) broken.push(`${page}: ${link} (no such file)`);
        else if (anchor && target.endsWith('.md') && !anchors(target).has(anchor))
          broken.push(`${page}: ${link} (no such heading)`);
      }
    }
    expect(broken).toEqual([]);
  });
});
