import type * as z from 'zod';
import type { Caller } from '../executions/execution-model.js';
import type { ClientAbilities, TaskHandle } from '../runs/run-model.js';

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
   * `input_required` round trip on 2026-07-28). Absent when the client cannot be asked (no elicitation
   * capability, or a direct JSON-RPC call).
   */
  confirm?: (message: string) => Promise<boolean>;
  /** Present when the call runs as an MCP task: status reports, input requests, cancellation. */
  task?: TaskHandle;
}

/** What a task tool checks before its task exists (fail fast), and what the task record starts with. */
export interface TaskAdmission {
  caller: Caller;
  /** What the requesting client declared it can answer (sampling, elicitation). */
  can: ClientAbilities;
}

export interface Admitted {
  /** The run the task will drive (known up front, so the CreateTaskResult can name it). */
  run_id?: string;
  workflow_id?: string;
  /** The first status message. */
  summary?: string;
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
  /** Tool groups it is listed in (set where the faces are composed). */
  groups?: readonly string[];
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

/** Keeps each tool's handler checked against its own schemas while collecting them in one list. */
export function defineTool<In extends z.ZodType, Out extends z.ZodType>(
  tool: ToolDefinition<In, Out>,
): ToolDefinition {
  return tool as unknown as ToolDefinition;
}

export const READ_ONLY: ToolAnnotations = {
  readOnlyHint: true,
  destructiveHint: false,
  idempotentHint: true,
  openWorldHint: false,
};
