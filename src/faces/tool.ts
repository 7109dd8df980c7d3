import type * as z from 'zod';
import { fail } from '../engine/errors.js';
import type { Caller } from '../executions/execution-model.js';
import type { ClientAbilities, TaskHandle } from '../runs/run-model.js';
import type { TaskInputRequest } from '../store/execution-store.js';

export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

/** Who calls, and what a handler may ask of the client through the protocol layer. */
export interface ToolContext {
  caller: Caller;
  /** The tool groups of this connection (absent where the transport has none to switch). */
  tools?: {
    describe(): { group: string; listed: boolean; tools: string[] }[];
    enable(names: readonly string[]): { enabled: string[]; unknown: string[] };
  };
  /**
   * Asks the user a yes/no question through MCP elicitation (pushed before 2026-07-28, an
   * `input_required` round trip on 2026-07-28), on tools/call and direct methods alike. Absent when the
   * client did not declare elicitation.
   */
  confirm?: (message: string) => Promise<ConfirmAnswer>;
  /** Present when the call runs as an MCP task: status reports, input requests, cancellation. */
  task?: TaskHandle;
}

/** What a confirmation question came back with: a yes, or why it is not one (declined, failed, ...). */
export type ConfirmAnswer = { confirmed: true } | { confirmed: false; why: string };

/**
 * The one confirmation rule of every destructive tool: `confirm: true` in the arguments, else the user's
 * yes through elicitation; anything else is `confirmation_required`, saying what happened (no way to
 * ask, the user declined, the client failed the request) and how to confirm instead.
 */
export async function requireConfirmation(
  ctx: ToolContext,
  given: boolean | undefined,
  ask: {
    /** The question shown to the user. */
    question: string;
    /** What needs the yes, for the error ("deleting \"x\""). */
    doing: string;
    tool: string;
    arguments: Record<string, unknown>;
    workflowId?: string | undefined;
  },
): Promise<void> {
  if (given === true) return;
  const answer = ctx.confirm ? await ctx.confirm(ask.question) : undefined;
  if (answer?.confirmed) return;
  fail({
    code: 'confirmation_required',
    message:
      answer === undefined
        ? `${ask.doing} needs confirm: true`
        : `${ask.doing} was not confirmed: ${answer.why}`,
    tool: ask.tool,
    arguments: Object.fromEntries(Object.entries(ask.arguments).filter(([, v]) => v !== undefined)),
    ...(ask.workflowId !== undefined ? { workflowId: ask.workflowId } : {}),
  });
}

/** What a task tool checks before its task exists (fail fast), and what the task record starts with. */
export interface TaskAdmission {
  caller: Caller;
  /** What the requesting client declared it can answer (sampling, elicitation). */
  can: ClientAbilities;
  /** 2026-07-28: the answers a retried call carries to the requests of an earlier round. */
  inputResponses?: Record<string, unknown> | undefined;
  /**
   * 2026-07-28: ends this round of the call with `input_required` (these requests), before any task
   * exists; the client retries the call with the answers (multi round-trip, SEP-2322).
   */
  requireInput?: ((requests: Record<string, TaskInputRequest>) => never) | undefined;
}

export interface Admitted {
  /** The run the task will drive (known up front, so the CreateTaskResult can name it). */
  run_id?: string;
  workflow_id?: string;
  /** The first status message. */
  summary?: string;
  /** Arguments the task runs with instead of the call's (what the admission gathered). */
  arguments?: Record<string, unknown>;
}

/** How a tool takes part in MCP tasks (`execution.taskSupport` in tools/list). */
export interface TaskSupport<In> {
  /** required: only as a task (seed 003 §13.2: never a long synchronous call); optional: either way. */
  support: 'required' | 'optional';
  /** Checks made before a task is created; a failure is the call's error and no task exists. */
  admit?: (input: In, admission: TaskAdmission) => Promise<Admitted> | Admitted;
  /** A task whose process died is resumed by calling the handler again (with `task.resumed`). */
  resumable?: boolean;
}

/**
 * One tool of a face: its contract (zod schemas, which also produce the JSON Schemas that
 * `tools/list` publishes) and its handler. Handlers receive validated input and return the
 * structured result, or throw a DomainFailure.
 */
export interface ToolDefinition<In extends z.ZodType = z.ZodType, Out extends z.ZodType = z.ZodType> {
  name: string;
  /**
   * The OAuth scope a call needs on an authenticated server (stdio checks none). A tool that says
   * nothing needs `admin`, the safe side; test/security-http.test.ts keeps every tool of the faces
   * saying it.
   */
  scope?: ToolScope;
  /**
   * Listed by default (the `core` group): seed 001's four (list, get, next, validate: the seeds'
   * contract), seed 004's durable run (start, next_step, and resume after a context reset) and the
   * way to the other groups. The rest stay callable and are listed through workflow_tools.
   */
  core?: boolean;
  /** Tool groups it is listed in (set where the faces are composed: its face, and `core`). */
  groups?: readonly string[];
  /**
   * What the server instructions say of the tool when a connection lists it: `text` is given whether
   * a tool is listed (never name one the client cannot see) and answers undefined to say nothing;
   * `rank` orders the sentences.
   */
  instructions?: ToolInstructions;
  /** Other names accepted on tools/call and as direct methods (the dotted names of seeds 003/004). */
  aliases?: readonly string[];
  /**
   * Other argument names accepted for the canonical ones (alias → canonical), e.g. seed 004's
   * `workflow_name` for `workflow_id`. Only the canonical names are published in tools/list.
   */
  argumentAliases?: Readonly<Record<string, string>>;
  title: string;
  description: string;
  inputSchema: In;
  outputSchema: Out;
  annotations: ToolAnnotations;
  /** Absent: the tool never runs as a task (taskSupport "forbidden"). */
  task?: TaskSupport<z.output<In>>;
  /** `_meta` published in tools/list (e.g. the MCP Apps view that renders the result). */
  meta?: Record<string, unknown>;
  handler: (input: z.output<In>, ctx: ToolContext) => Promise<z.input<Out>> | z.input<Out>;
  /**
   * One line a person reads before the compact JSON in the result's text content (default: the
   * result's `message`, else the tool's title).
   */
  summarize?: (result: z.input<Out>) => string;
  /** Fields a failed call's structured result carries beside `error` (seed 004's error return). */
  errorFields?: (error: { code: number; message: string; data?: unknown }) => Record<string, unknown>;
}

/** The OAuth scopes of an authenticated server, each standing alone (see protocol/scopes.ts). */
export type ToolScope = 'read' | 'run' | 'author' | 'admin';

/** A tool's sentence in the server instructions (see ToolDefinition.instructions). */
export interface ToolInstructions {
  rank: number;
  text: (listed: (name: string) => boolean) => string | undefined;
}

/** Keeps each tool's handler checked against its own schemas while collecting them in one list. */
export function defineTool<In extends z.ZodType, Out extends z.ZodType>(
  tool: ToolDefinition<In, Out>,
): ToolDefinition {
  return tool as unknown as ToolDefinition;
}

/**
 * What a tool can do, the one fact its MCP annotations are derived from (`annotate`), each hint by the
 * spec's definition:
 * - `changes`: `nothing` (readOnlyHint); `reversibly`: creates, or changes what can be changed back
 *   without loss (a rename, a pause, a tool group listed); `destructively`: can replace, delete or end
 *   something for good, or runs command steps, which may call any operation of an imported API
 *   (destructiveHint);
 * - `repeatable`: calling again with the same arguments changes nothing more (idempotentHint);
 * - `external`: reaches outside the server: the APIs command steps and input providers call, an
 *   OpenAPI document fetched from a URL (openWorldHint).
 */
export interface ToolEffects {
  changes: 'nothing' | 'reversibly' | 'destructively';
  repeatable: boolean;
  external: boolean;
}

export function annotate(effects: ToolEffects): ToolAnnotations {
  const readOnly = effects.changes === 'nothing';
  return {
    readOnlyHint: readOnly,
    destructiveHint: effects.changes === 'destructively',
    // A tool that changes nothing has no effect to repeat.
    idempotentHint: readOnly || effects.repeatable,
    openWorldHint: effects.external,
  };
}

/** Reads what the server keeps, nothing else. */
export const READ_ONLY: ToolAnnotations = annotate({ changes: 'nothing', repeatable: true, external: false });
