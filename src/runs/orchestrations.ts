import type { CatalogRegistry } from '../catalogs/catalog-registry.js';
import { DomainFailure, fail } from '../engine/errors.js';
import type { InputResolution } from '../engine/inputs.js';
import type { ValidationEngine } from '../engine/validation-engine.js';
import type { Caller } from '../executions/execution-model.js';
import type { Violation } from '../model/violation.js';
import type { InputSpec, Workflow } from '../model/workflow.js';
import type { ExecutionStore } from '../store/execution-store.js';
import { contentVersion } from '../workflows/entry.js';
import { checkManifest, type ManifestReport } from '../workflows/manifest-check.js';
import { loadYaml } from '../workflows/parse.js';
import type { PersonaRegistry } from '../workflows/personas.js';
import type { WorkflowRegistry } from '../workflows/registry.js';
import type { RuntimeWorkflows } from '../workflows/runtime-workflows.js';
import type { RunSnapshot, TaskHandle } from './run-model.js';
import {
  type PreparedRun,
  type RunResult,
  type RunService,
  TERMINAL_EXECUTION_STATES,
} from './run-service.js';
import { InputFailed } from './task-service.js';

/** Repairs by sampling after the first draft, unless the caller asks for fewer (or more, up to the cap). */
export const DEFAULT_REPAIRS = 3;
export const MAX_REPAIRS = 5;
/** Rounds of asking the user for missing inputs before giving up. */
const INPUT_ROUNDS = 3;
const MAX_MANIFEST_CHARS = 1_048_576;
const SAMPLING_MAX_TOKENS = 8000;

export interface OrchestrationDeps {
  runs: RunService;
  store: ExecutionStore;
  registry: WorkflowRegistry;
  engine: ValidationEngine;
  personas: PersonaRegistry;
  catalogs: CatalogRegistry;
  /** Where saved workflows land (the runtime dir, or the database replicas share). */
  runtime: RuntimeWorkflows;
  allowedEnvNames: ReadonlySet<string>;
}

export interface AuthorInput {
  request: string;
  workflow_id?: string | undefined;
  inputs?: Record<string, unknown> | undefined;
  max_repairs?: number | undefined;
  overwrite?: boolean | undefined;
}

export interface RepairInput {
  run_id?: string | undefined;
  workflow_id?: string | undefined;
  manifest?: string | undefined;
  inputs?: Record<string, unknown> | undefined;
  max_repairs?: number | undefined;
  /** Replace an existing workflow with a repaired `manifest`'s id (a run or workflow_id needs none). */
  overwrite?: boolean | undefined;
}

export interface SavedManifest {
  workflow_id: string;
  path: string;
  version: string;
  created: boolean;
}

export interface Authored extends SavedManifest {
  /** Drafts sampled (the first plus repairs) and how many were repairs. */
  drafts: number;
  repairs: number;
  /** Violations of each rejected draft, in order. */
  rejected: Violation[][];
  inputs: Record<string, unknown>;
  run: RunResult;
  summary: string;
}

export interface Repaired extends SavedManifest {
  repaired_from: { run_id?: string; workflow_id?: string; manifest?: true };
  problems: string[];
  repairs: number;
  run: RunResult;
  summary: string;
}

const taskCancelled = (handle: TaskHandle, message: string) =>
  new DomainFailure({
    code: 'task_cancelled',
    message,
    taskId: handle.taskId,
    ...(handle.runId !== null ? { runId: handle.runId } : {}),
  });

/**
 * The seed 003 §6 orchestrations: author a workflow by sampling (validated, repaired by further
 * sampling until clean, never saved unvalidated), resolve its inputs by asking the user, run it, and
 * summarize; execute a workflow with status streaming; repair a failed run or manifest and rerun it.
 */
export class Orchestrations {
  constructor(private readonly deps: OrchestrationDeps) {}

  async authorAndRun(input: AuthorInput, handle: TaskHandle, caller: Caller): Promise<Authored> {
    const phase = this.phases(handle);
    await phase('drafting', 'asking the client to draft a manifest');
    const commands = await this.commandList();
    const tool = 'workflow_author_and_run';
    const first = await this.sample(handle, tool, 'draft', {
      system: SYSTEM_PROMPT,
      user: authorPrompt(input.request, input.workflow_id, commands),
    });
    const clean = await this.untilValid(handle, first, {
      tool,
      goal: input.request,
      requiredId: input.workflow_id,
      maxRepairs: input.max_repairs ?? DEFAULT_REPAIRS,
    });
    await phase('saving', `saving ${clean.report.workflow?.id ?? 'the workflow'}`);
    const saved = await this.save(clean.content, caller, {
      overwrite: input.overwrite === true,
      requiredId: input.workflow_id,
    });
    const workflow = this.deps.registry.require(saved.workflow_id).workflow;
    const inputs = await this.askForInputs(handle, workflow, input.inputs ?? {}, saved.workflow_id);
    const run = await this.deps.runs.drive(
      await this.prepared(handle, { workflow_id: saved.workflow_id, inputs }),
      handle,
      caller,
      'running',
    );
    return {
      ...saved,
      drafts: clean.drafts,
      repairs: clean.drafts - 1,
      rejected: clean.rejected,
      inputs,
      run,
      summary: `authored ${saved.workflow_id} (${clean.drafts} draft(s), ${clean.drafts - 1} repair(s)), saved to ${saved.path}, and ran it: ${run.summary}`,
    };
  }

  /** workflow_execute: resolve inputs (asking for missing ones), run with status updates, summarize. */
  async execute(
    request: {
      workflow_id?: string | undefined;
      manifest?: string | undefined;
      inputs?: Record<string, unknown> | undefined;
      context?: Record<string, unknown> | undefined;
    },
    handle: TaskHandle,
    caller: Caller,
  ): Promise<RunResult> {
    let inputs = request.inputs ?? {};
    if (!handle.resumed) {
      const draft = await this.deps.runs.prepare(request, { inputs: 'report' });
      inputs = await this.askForInputs(handle, draft.workflow, inputs, draft.workflow.id);
    }
    const prepared = await this.prepared(handle, { ...request, inputs });
    return this.deps.runs.drive(prepared, handle, caller, 'running');
  }

  /**
   * Repairs the one workflow it was asked about (the run's, `workflow_id`, or the manifest's own id)
   * and reruns it. Every sampled draft must keep that id (one with another id is refused and asked
   * again, and nothing is written); the save follows workflow_save's rules: it replaces the workflow
   * only at the version the repair read (a run or workflow_id), or with `overwrite` (a manifest).
   */
  async repairAndRerun(input: RepairInput, handle: TaskHandle, caller: Caller): Promise<Repaired> {
    const tool = 'workflow_repair_and_rerun';
    const phase = this.phases(handle);
    await phase('validating', 'collecting what failed');
    const subject = await this.subject(input, caller);
    const report = await this.check(subject.content);
    const target = subject.workflowId ?? report.workflow?.id ?? (await declaredId(subject.content));
    // What the save may replace, decided before anything is sampled: a conflict fails fast.
    const rules = await this.replaceRules(target, subject, input.overwrite === true);
    const problems = [
      ...report.errors.map(violationLine),
      ...(subject.failure !== undefined ? [`the last run failed: ${subject.failure}`] : []),
    ];
    let content = subject.content;
    let repairs = 0;
    if (problems.length > 0) {
      await phase('repairing', `${problems.length} problem(s); asking the client for a repaired manifest`);
      const first = await this.sample(handle, tool, 'repair', {
        system: SYSTEM_PROMPT,
        user: repairPrompt(subject.content, problems, await this.commandList(), target),
      });
      const clean = await this.untilValid(handle, first, {
        tool,
        goal: 'repair the workflow',
        requiredId: target,
        maxRepairs: Math.max(0, (input.max_repairs ?? DEFAULT_REPAIRS) - 1),
      });
      content = clean.content;
      repairs = clean.drafts;
    } else if (!report.valid) {
      fail({
        code: 'manifest_invalid',
        message: 'the manifest does not validate',
        violations: report.errors,
      });
    }
    await phase('saving', `saving the repaired ${target ?? 'workflow'}`);
    const saved = await this.save(content, caller, { ...rules, requiredId: target });
    const workflow = this.deps.registry.require(saved.workflow_id).workflow;
    const inputs = await this.askForInputs(
      handle,
      workflow,
      input.inputs ?? subject.inputs ?? {},
      saved.workflow_id,
    );
    const run = await this.deps.runs.drive(
      await this.prepared(handle, { workflow_id: saved.workflow_id, inputs }),
      handle,
      caller,
      'running',
    );
    return {
      ...saved,
      repaired_from: subject.from,
      problems,
      repairs,
      run,
      summary: `${repairs > 0 ? `repaired ${saved.workflow_id} (${repairs} sampled draft(s))` : `${saved.workflow_id} needed no repair`}, saved to ${saved.path}, and reran it: ${run.summary}`,
    };
  }

  /**
   * How a repair of `id` may save, by workflow_save's rules. A repair of a run or of `workflow_id`
   * replaces that workflow in the runtime source at the version read now (a change made meanwhile is a
   * conflict); a repaired manifest replaces an existing workflow of its id only with `overwrite`.
   * Without a known id, it may only create.
   */
  private async replaceRules(
    id: string | undefined,
    subject: { from: Repaired['repaired_from'] },
    overwrite: boolean,
  ): Promise<{ overwrite: boolean; expectedVersion?: string }> {
    if (id === undefined) return { overwrite: false };
    const { registry, runtime } = this.deps;
    await registry.ready();
    const existing = registry.inSource(runtime.kind, id);
    if (existing === undefined) return { overwrite: false };
    if (subject.from.manifest === true) {
      if (!overwrite) {
        fail({
          code: 'workflow_conflict',
          message: 'Conflict',
          workflowId: id,
          path: existing.file,
          details: `workflow "${id}" already exists at ${existing.file}; pass overwrite: true to replace it with the repaired manifest`,
        });
      }
      return { overwrite: true };
    }
    return { overwrite: false, expectedVersion: contentVersion(await registry.readSource(existing)) };
  }

  // ------------------------------------------------------------------------------------------

  private phases(handle: TaskHandle) {
    return (phase: string, summary: string, workflowId: string | null = null) => {
      const snapshot: RunSnapshot = {
        run_id: handle.runId,
        workflow_id: workflowId,
        step_id: null,
        step_name: null,
        state: 'running',
        summary,
        phase,
      };
      return handle.report(snapshot);
    };
  }

  private async prepared(
    handle: TaskHandle,
    request: {
      workflow_id?: string | undefined;
      manifest?: string | undefined;
      inputs: Record<string, unknown>;
      context?: Record<string, unknown> | undefined;
    },
  ): Promise<PreparedRun> {
    return this.deps.runs.prepare(request, {
      runId: handle.runId ?? undefined,
      inputs: 'require',
      resumed: handle.resumed,
    });
  }

  /** What a repair starts from: the manifest text, why it failed, and the inputs it ran with. */
  private async subject(input: RepairInput, caller: Caller) {
    const { store, registry } = this.deps;
    if (input.run_id !== undefined) {
      const exec = await store.getExecution(input.run_id);
      if (!exec || exec.principal !== caller.principal) {
        fail({ code: 'execution_not_found', message: 'Execution not found', executionId: input.run_id });
      }
      if (!(TERMINAL_EXECUTION_STATES as readonly string[]).includes(exec.state)) {
        fail({
          code: 'state_conflict',
          message: 'State error',
          executionId: exec.execution_id,
          state: exec.state,
          details: `run ${exec.execution_id} is still ${exec.state}; cancel it (workflow_cancel) before repairing it`,
        });
      }
      const pinned = await store.getDefinition(exec.definition_hash);
      const content = `${JSON.stringify(JSON.parse(pinned ?? '{}'), null, 2)}\n`;
      return {
        content,
        workflowId: exec.workflow_name,
        failure: await this.failureOf(exec.execution_id, exec.state, exec.metadata),
        inputs: (exec.context.inputs ?? undefined) as Record<string, unknown> | undefined,
        from: { run_id: exec.execution_id },
      };
    }
    if (input.workflow_id !== undefined) {
      await registry.ready();
      const entry = registry.get(input.workflow_id);
      if (entry === undefined) {
        return registry.missing(input.workflow_id);
      }
      const content = (await registry.readSource(entry)).toString('utf8');
      const [last] = await store.listExecutions({
        principal: caller.principal,
        workflow_name: input.workflow_id,
        states: ['failed'],
        limit: 1,
      });
      return {
        content,
        workflowId: input.workflow_id,
        failure: last ? await this.failureOf(last.execution_id, last.state, last.metadata) : undefined,
        inputs: (last?.context.inputs ?? undefined) as Record<string, unknown> | undefined,
        from: { workflow_id: input.workflow_id, ...(last ? { run_id: last.execution_id } : {}) },
      };
    }
    return {
      content: input.manifest ?? '',
      workflowId: undefined,
      failure: undefined,
      inputs: undefined,
      from: { manifest: true as const },
    };
  }

  private async failureOf(
    executionId: string,
    state: string,
    metadata: Record<string, unknown>,
  ): Promise<string | undefined> {
    if (state === 'completed') return undefined;
    const steps = await this.deps.store.getSteps(executionId);
    const failed = [...steps]
      .reverse()
      .find((s) => s.status === 'failed' || (s.output as { error?: unknown })?.error);
    const error = (
      failed?.output as { error?: { message?: string; reason?: string; status?: number } } | null
    )?.error;
    const reason = metadata[`${state}_reason`];
    return [
      `execution ${executionId} ended ${state}${typeof reason === 'string' ? ` (${reason})` : ''}`,
      failed && error
        ? `step "${failed.step_name}" failed: ${error.message ?? ''}${error.reason ? ` [${error.reason}${error.status !== undefined ? ` ${error.status}` : ''}]` : ''}`
        : '',
    ]
      .filter(Boolean)
      .join('; ');
  }

  /** Sampled text is only ever used once it validates: repair by sampling until clean, or give up. */
  private async untilValid(
    handle: TaskHandle,
    first: string,
    options: { tool: string; goal: string; requiredId: string | undefined; maxRepairs: number },
  ): Promise<{ content: string; report: ManifestReport; drafts: number; rejected: Violation[][] }> {
    const phase = this.phases(handle);
    const maxRepairs = Math.min(MAX_REPAIRS, Math.max(0, options.maxRepairs));
    const rejected: Violation[][] = [];
    let text = first;
    for (let drafts = 1; ; drafts++) {
      const content = manifestText(text);
      await phase('validating', `validating draft ${drafts}`);
      const report = await this.check(content);
      const problems = [...report.errors];
      const id = report.workflow?.id;
      if (options.requiredId !== undefined && id !== undefined && id !== options.requiredId) {
        problems.push(requiredIdViolation(options.requiredId, id));
      }
      if (problems.length === 0 && report.valid) return { content, report, drafts, rejected };
      rejected.push(problems);
      if (drafts > maxRepairs) {
        fail({
          code: 'manifest_invalid',
          message: `the sampled manifest still has ${problems.length} violation(s) after ${drafts - 1} repair(s); nothing was saved`,
          ...(id !== undefined ? { workflowId: id } : {}),
          violations: problems,
        });
      }
      await phase(
        'repairing',
        `draft ${drafts} has ${problems.length} violation(s); asking for repair ${drafts}`,
      );
      text = await this.sample(handle, options.tool, 'repair', {
        system: SYSTEM_PROMPT,
        user: fixPrompt(content, problems, options.goal),
      });
    }
  }

  private async check(content: string): Promise<ManifestReport> {
    if (content.trim() === '') {
      return {
        valid: false,
        format: 'yaml',
        errors: [{ path: '', rule: 'syntax', message: 'the reply contains no manifest' }],
        warnings: [],
      };
    }
    if (content.length > MAX_MANIFEST_CHARS) {
      return {
        valid: false,
        format: 'yaml',
        errors: [
          { path: '', rule: 'size', message: `the manifest is longer than ${MAX_MANIFEST_CHARS} characters` },
        ],
        warnings: [],
      };
    }
    const { personas, engine, allowedEnvNames } = this.deps;
    await personas.ready();
    return checkManifest({ content }, engine, new Set(personas.list().map((p) => p.name)), allowedEnvNames);
  }

  /**
   * Saves a validated manifest where workflow_save would (re-validated here: nothing unvalidated is
   * saved), under the same rules: never over another workflow, an existing one only with `overwrite`
   * or at `expectedVersion`; and, when `requiredId` is given, only a manifest with that id.
   */
  private async save(
    content: string,
    caller: Caller,
    rules: { overwrite: boolean; expectedVersion?: string | undefined; requiredId?: string | undefined },
  ): Promise<SavedManifest> {
    const report = await this.check(content);
    if (!report.valid || !report.workflow) {
      fail({
        code: 'manifest_invalid',
        message: 'the manifest does not validate; nothing was saved',
        violations: report.errors,
      });
    }
    const id = report.workflow.id;
    if (rules.requiredId !== undefined && id !== rules.requiredId) {
      fail({
        code: 'manifest_invalid',
        message: `the manifest's id is "${id}", not "${rules.requiredId}"; nothing was saved`,
        workflowId: rules.requiredId,
        violations: [requiredIdViolation(rules.requiredId, id)],
      });
    }
    const saved = await this.deps.runtime.save({
      id,
      content,
      format: report.format,
      overwrite: rules.overwrite,
      expectedVersion: rules.expectedVersion,
      principal: caller.principal,
    });
    return { workflow_id: id, path: saved.path, version: saved.version, created: saved.created };
  }

  /** Asks the user (elicitation) for inputs that are missing or invalid, a few rounds at most. */
  private async askForInputs(
    handle: TaskHandle,
    workflow: Workflow,
    given: Record<string, unknown>,
    workflowId: string,
  ): Promise<Record<string, unknown>> {
    let values = { ...given };
    for (let round = 0; ; round++) {
      const resolution = this.deps.runs.resolve(workflow, values);
      if (resolution.ready) return values;
      const askable = resolution.inputs.filter(
        (i) =>
          i.status !== 'provided' &&
          i.status !== 'default' &&
          i.status !== 'unset' &&
          workflow.inputs?.[i.name],
      );
      const notReady = () =>
        fail({
          code: 'inputs_not_ready',
          message: `inputs are not ready: ${resolution.inputs
            .filter((i) => i.message)
            .map((i) => i.message)
            .join('; ')}`,
          workflowId,
          inputs: resolution.inputs,
        });
      if (askable.length === 0 || !handle.can.elicitation || round >= INPUT_ROUNDS) notReady();
      await this.phases(handle)(
        'inputs',
        `asking the user for ${askable.map((i) => i.name).join(', ')}`,
        workflowId,
      );
      let answer: Record<string, unknown>;
      try {
        answer = await handle.ask('inputs', inputsRequest(workflow, askable));
      } catch (error) {
        if (error instanceof InputFailed) notReady();
        throw error;
      }
      if (answer.action === 'cancel') throw taskCancelled(handle, 'the user cancelled while giving inputs');
      if (answer.action !== 'accept') notReady();
      values = { ...values, ...typedAnswers(workflow, answer.content) };
    }
  }

  private async sample(
    handle: TaskHandle,
    tool: string,
    prefix: string,
    prompt: { system: string; user: string },
  ): Promise<string> {
    let answer: Record<string, unknown>;
    try {
      answer = await handle.ask(prefix, {
        method: 'sampling/createMessage',
        params: {
          messages: [{ role: 'user', content: { type: 'text', text: prompt.user } }],
          systemPrompt: prompt.system,
          maxTokens: SAMPLING_MAX_TOKENS,
          includeContext: 'none',
        },
      });
    } catch (error) {
      if (error instanceof InputFailed) {
        fail({
          code: 'client_request_failed',
          message: `the client refused or failed the sampling request: ${error.message}`,
          tool,
          method: 'sampling/createMessage',
          details: error.message,
        });
      }
      throw error;
    }
    return textOf(answer.content);
  }

  private async commandList(): Promise<string[]> {
    const { catalogs } = this.deps;
    await catalogs.ready();
    return catalogs
      .all()
      .filter((c) => c.config.enabled)
      .flatMap((c) =>
        c.manifest.commands.map(
          (cmd) =>
            `${c.config.id} ${cmd.name}: ${cmd.method} ${cmd.path}${cmd.parameters.length > 0 ? ` (with: ${cmd.parameters.map((p) => p.name).join(', ')})` : ''}${cmd.body_schema ? ' (takes a JSON body)' : ''}${cmd.summary ? ` - ${cmd.summary}` : ''}`,
        ),
      )
      .slice(0, 60);
  }
}

// ---------------------------------------------------------------------------------------------
// Prompts and the text they bring back

const SYSTEM_PROMPT = [
  'You write workflow manifests for workflowlookup, an MCP server that runs multi-step workflows.',
  'Answer with the manifest only: one YAML document, no commentary.',
  'Format: id (kebab-case, 3-64 characters of a-z, 0-9 and -), name, description, version (semver such as 1.0.0),',
  'optional inputs (name -> {type: string|number|integer|boolean|array|object, description, required?, default?, enum?}),',
  'optional final_output (a value with ${{ }} templates, rendered when the workflow completes), and steps: a list where',
  'every step has a unique kebab-case id and a title, and is one of:',
  '- an agent step: prompt (what the agent does), optional validationCriteria such as [{type: length, min: 20, message: "..."}];',
  '- a command step the server runs: run: "<catalog> <command>", with: {parameter: value}, optional body (JSON),',
  '  optional repeat: {until: {var: output.status, equals: done}, every: 2s, max_attempts: 10, timeout: 1m};',
  '- a loop step: type: loop, loop: {type: for, count: 3, maxIterations: 3}, body: [agent steps].',
  'Templates: ${{ inputs.<name> }} and ${{ steps.<step-id>.output.<field> }} (a field of a command step response).',
].join('\n');

function commandLines(commands: string[]): string {
  return commands.length > 0
    ? `Commands available to command steps:\n${commands.map((c) => `- ${c}`).join('\n')}`
    : 'No API catalogs are imported: use agent steps only.';
}

function authorPrompt(request: string, workflowId: string | undefined, commands: string[]): string {
  return [
    `Write a workflow for this request:\n${request}`,
    workflowId !== undefined ? `Its id must be "${workflowId}".` : '',
    commandLines(commands),
  ]
    .filter(Boolean)
    .join('\n\n');
}

function fixPrompt(content: string, problems: Violation[], goal: string): string {
  return [
    `This manifest (for: ${goal}) does not validate. Fix every problem and answer with the corrected manifest only.`,
    `Problems:\n${problems
      .map(violationLine)
      .map((l) => `- ${l}`)
      .join('\n')}`,
    `Manifest:\n${content}`,
  ].join('\n\n');
}

function repairPrompt(
  content: string,
  problems: string[],
  commands: string[],
  id: string | undefined,
): string {
  return [
    `This workflow failed. Repair it so that it validates and runs, keeping its id${id !== undefined ? ` "${id}"` : ''}, and answer with the corrected manifest only.`,
    `Problems:\n${problems.map((p) => `- ${p}`).join('\n')}`,
    commandLines(commands),
    `Manifest:\n${content}`,
  ].join('\n\n');
}

function requiredIdViolation(expected: string, actual: string): Violation {
  return {
    path: '/id',
    rule: 'required_id',
    message: `id must be "${expected}" (the workflow asked for), not "${actual}"`,
    expected,
    actual,
  };
}

/** The id a manifest declares, even one that does not validate (undefined when none can be read). */
async function declaredId(content: string): Promise<string | undefined> {
  try {
    const parsed = (await loadYaml()).parse(content) as unknown;
    const id = parsed !== null && typeof parsed === 'object' ? (parsed as { id?: unknown }).id : undefined;
    return typeof id === 'string' && id.trim() !== '' ? id : undefined;
  } catch {
    return undefined;
  }
}

function violationLine(v: Violation): string {
  return `${v.path || '(root)'}${v.line !== undefined ? ` (line ${v.line})` : ''}: ${v.message}`;
}

/** The text of a sampling result's content (one block or several). */
function textOf(content: unknown): string {
  const blocks = Array.isArray(content) ? content : [content];
  return blocks
    .map((b) =>
      b && typeof b === 'object' && (b as { type?: unknown }).type === 'text'
        ? String((b as { text?: unknown }).text ?? '')
        : '',
    )
    .join('\n');
}

/** The manifest inside a model's reply: the first fenced block if there is one, else the whole text. */
export function manifestText(reply: string): string {
  const fenced = /```[a-zA-Z]*[ \t]*\r?\n([\s\S]*?)```/.exec(reply);
  return (fenced ? (fenced[1] ?? '') : reply).trim();
}

/** A form asking for the given inputs (elicitation schemas are flat: strings, numbers, booleans, enums). */
function inputsRequest(workflow: Workflow, asks: InputResolution[]) {
  const properties: Record<string, Record<string, unknown>> = {};
  for (const ask of asks) {
    const spec = workflow.inputs?.[ask.name] as InputSpec;
    const description = `${spec.description}${ask.message ? ` (${ask.message})` : ''}`;
    const choices = ask.choices?.map((c) => c.value) ?? spec.enum;
    if (choices?.every((c) => typeof c === 'string')) {
      properties[ask.name] = { type: 'string', title: ask.name, description, enum: choices };
    } else if (spec.type === 'number' || spec.type === 'integer' || spec.type === 'boolean') {
      properties[ask.name] = {
        type: spec.type,
        title: ask.name,
        description,
        ...(spec.minimum !== undefined ? { minimum: spec.minimum } : {}),
        ...(spec.maximum !== undefined ? { maximum: spec.maximum } : {}),
      };
    } else {
      properties[ask.name] = {
        type: 'string',
        title: ask.name,
        description: spec.type === 'string' ? description : `${description} (JSON ${spec.type})`,
        ...(spec.minLength !== undefined ? { minLength: spec.minLength } : {}),
        ...(spec.maxLength !== undefined ? { maxLength: spec.maxLength } : {}),
      };
    }
  }
  return {
    method: 'elicitation/create',
    params: {
      mode: 'form',
      message: `Workflow "${workflow.id}" needs ${asks.length === 1 ? 'a value' : 'values'} for ${asks.map((a) => a.name).join(', ')}.`,
      requestedSchema: { type: 'object', properties, required: asks.map((a) => a.name) },
    },
  };
}

/** Form answers as the inputs' types (arrays and objects arrive as JSON text). */
function typedAnswers(workflow: Workflow, content: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (content === null || typeof content !== 'object') return out;
  for (const [name, value] of Object.entries(content as Record<string, unknown>)) {
    // Declared inputs only: the client's name is never looked up on the object's prototype.
    const spec =
      workflow.inputs !== undefined && Object.hasOwn(workflow.inputs, name)
        ? workflow.inputs[name]
        : undefined;
    if (!spec) continue;
    if ((spec.type === 'array' || spec.type === 'object') && typeof value === 'string') {
      try {
        out[name] = JSON.parse(value);
      } catch {
        out[name] = value;
      }
    } else out[name] = value;
  }
  return out;
}
