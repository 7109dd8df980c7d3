import {
  inputRequired,
  type McpServer,
  ProtocolError,
  ProtocolErrorCode,
  RELATED_TASK_META_KEY,
  type ServerContext,
} from '@modelcontextprotocol/server';
import * as z from 'zod';
import { DomainFailure } from '../engine/errors.js';
import type { Caller } from '../executions/execution-model.js';
import type { Admitted, ToolContext, ToolDefinition } from '../faces/tool.js';
import type { ClientAbilities, RunSnapshot } from '../runs/run-model.js';
import type { RunServices } from '../runs/run-services.js';
import { isTerminalTask, type TaskEnd, type TaskService } from '../runs/task-service.js';
import type { TaskRecord } from '../store/execution-store.js';
import type { Logger } from '../telemetry/log.js';
import { canonicalArguments } from './aliases.js';
import {
  clientAbilities,
  declaresTasks,
  InputRequiredSignal,
  isModern,
  TASKS_EXTENSION,
} from './client-requests.js';
import {
  formatIssues,
  newCorrelationId,
  RpcCode,
  type RpcError,
  type StructuredErrorData,
  toRpcError,
  toToolErrorResult,
} from './error-mapping.js';
import { DEFAULT_LIMITS, type Limits, Quota } from './limits.js';
import { requestHandler } from './sdk-internals.js';
import { toolResult } from './tool-result.js';

/** `_meta` keys we add: the run a task drives, and the §10.4 status snapshot. */
export const RUN_META_KEY = 'workflowlookup/run';
export const STATUS_META_KEY = 'workflowlookup/status';
const IMMEDIATE_RESPONSE_META_KEY = 'io.modelcontextprotocol/model-immediate-response';
/** A person may take a while to answer a pushed elicitation; the SDK's default is 60 s. */
const PUSH_TIMEOUT_MS = 60 * 60_000;

/** What the task machinery needs of the tool runner (src/protocol/mcp-server.ts). */
export interface TaskToolRunner {
  tools: readonly ToolDefinition[];
  run(name: string, params: unknown, ctx: ToolContext): Promise<{ result: unknown } | { error: RpcError }>;
}

/**
 * Runs tools as tasks, for every connection of the app: starts a task's work in the background,
 * records how it ended, and takes over the tasks of a process that died (resumable ones are resumed,
 * the others failed with the reason). One per app; connections share it.
 */
export class TaskDriver {
  private readonly byName: Map<string, ToolDefinition>;
  private recovered: Promise<RunServices> | undefined;
  /** Tasks this process works on, per principal and in total. */
  private readonly working: Quota;

  constructor(
    private readonly deps: {
      services: () => Promise<RunServices>;
      runner: TaskToolRunner;
      log: Logger;
      limits?: Pick<Limits, 'tasks' | 'tasksPerPrincipal'>;
    },
  ) {
    this.byName = new Map(deps.runner.tools.map((t) => [t.name, t]));
    const limits = deps.limits ?? DEFAULT_LIMITS;
    this.working = new Quota(limits.tasks, limits.tasksPerPrincipal);
  }

  /**
   * Counts a new task of `principal` as working, or refuses it (-32000) when the principal, or the
   * server, already has as many as allowed: one principal cannot take every task slot. Each admitted
   * task is released when its work ends (`start`), or with `release` if it never starts.
   */
  admit(principal: string): void {
    const refused = this.working.take(principal);
    if (refused === undefined) return;
    const details =
      refused === 'principal'
        ? `${principal} has ${this.working.of(principal)} tasks working, the most allowed (WORKFLOWLOOKUP_MAX_TASKS_PER_PRINCIPAL); wait for one to finish or cancel one (tasks/cancel)`
        : `the server has ${this.working.size} tasks working, the most allowed (WORKFLOWLOOKUP_MAX_TASKS); try again shortly`;
    throw new ProtocolError(RpcCode.ServerError, 'Too many tasks', {
      details,
      limit: refused === 'principal' ? this.working.perPrincipal : this.working.max,
    });
  }

  release(principal: string): void {
    this.working.release(principal);
  }

  get log(): Logger {
    return this.deps.log;
  }

  get tools(): readonly ToolDefinition[] {
    return this.deps.runner.tools;
  }

  /** The services, with orphaned tasks taken over once (on first use, and then at every upkeep). */
  services(): Promise<RunServices> {
    this.recovered ??= this.deps.services().then((services) => {
      services.tasks.onOrphans = (records) => void this.adoptAll(services, records);
      void services.tasks
        .orphans()
        .then((records) => this.adoptAll(services, records))
        .catch((error: unknown) => this.deps.log.error(`task recovery failed: ${String(error)}`));
      return services;
    });
    return this.recovered.catch((error: unknown) => {
      this.recovered = undefined;
      throw error;
    });
  }

  async tasks(): Promise<TaskService> {
    return (await this.services()).tasks;
  }

  /**
   * Starts a task's work in the background; its end (result, error, cancellation) is recorded. A task
   * taken over from a dead process was not admitted: it counts while it works if there is room.
   */
  start(
    services: RunServices,
    record: TaskRecord,
    tool: ToolDefinition,
    can: ClientAbilities,
    resumed: boolean,
    admitted = false,
  ) {
    const { tasks } = services;
    const counted = admitted || this.working.take(record.principal) === undefined;
    const controller = tasks.claim(record.task_id);
    const handle = tasks.handle(record, controller.signal, can, resumed);
    const caller: Caller = { principal: record.principal, signal: controller.signal };
    void (async () => {
      let end: TaskEnd;
      try {
        const outcome = await this.deps.runner.run(tool.name, record.arguments, { caller, task: handle });
        if ('error' in outcome) {
          const data = outcome.error.data as Partial<StructuredErrorData> | undefined;
          // A failure inside the server is the task's protocol-level error (status failed, SEP-2663);
          // an error the tool reports is its result (status completed, isError).
          end =
            data?.error_code === 'TASK_CANCELLED'
              ? { cancelled: data.message ?? 'cancelled' }
              : outcome.error.code === RpcCode.InternalError
                ? { error: { ...outcome.error } }
                : { result: toToolErrorResult(outcome.error), isError: true };
        } else {
          const structured = outcome.result as Record<string, unknown>;
          end = { result: toolResult(tool, structured), isError: false };
        }
      } catch (error) {
        end = { error: { ...toRpcError(error, this.deps.log) } };
      }
      await tasks.finish(record.task_id, end).catch((error: unknown) => {
        this.deps.log.error(`task ${record.task_id}: recording its end failed: ${String(error)}`);
      });
    })().finally(() => {
      if (counted) this.working.release(record.principal);
    });
  }

  private async adoptAll(services: RunServices, records: TaskRecord[]): Promise<void> {
    for (const orphan of records) {
      try {
        const record = await services.tasks.adopt(orphan.task_id);
        if (!record) continue;
        const tool = this.byName.get(record.tool);
        const can = (record.meta.can as ClientAbilities | undefined) ?? {
          sampling: false,
          elicitation: false,
        };
        if (tool?.task?.resumable) {
          this.deps.log.warn(`task ${record.task_id} (${record.tool}): its process died; resuming it`);
          this.start(services, record, tool, can, true);
          continue;
        }
        this.deps.log.warn(`task ${record.task_id} (${record.tool}): its process died; marking it failed`);
        const reason = `the server stopped while ${record.tool} was running (task ${record.task_id}); it cannot be resumed: call ${record.tool} again`;
        if (record.run_id !== null) {
          await services.runs.executions
            .markFailed(record.run_id, reason, { principal: record.principal })
            .catch(() => undefined);
        }
        await services.tasks.finish(record.task_id, {
          result: toToolErrorResult(restartError(reason, record.run_id)),
          isError: true,
        });
      } catch (error) {
        this.deps.log.error(`task ${orphan.task_id}: taking it over failed: ${String(error)}`);
      }
    }
  }
}

function restartError(message: string, runId: string | null): RpcError {
  const data: StructuredErrorData = {
    error_code: 'INTERNAL_ERROR',
    category: 'internal',
    message,
    context: runId !== null ? { run_id: runId } : {},
    retryable: true,
    suggested_action: 'Call the tool again; the work it had done is in the run history.',
    correlation_id: newCorrelationId(),
    violations: [],
  };
  return { code: ProtocolErrorCode.InternalError, message: 'Internal error', data: { ...data } };
}

export interface TaskWiring {
  driver: TaskDriver;
  /** Who is calling (the authenticated principal, or the server's own). */
  principalOf: (ctx: ServerContext) => string;
  /** Lets the transport serve later requests while request `id` waits (a blocking tasks/result). */
  detach?: ((id: string | number) => void) | undefined;
}

// Built once: a stateless HTTP request installs these handlers on a server of its own.
const TaskIdParams = z.looseObject({ taskId: z.string().min(1).max(200) });
const ToolCallParams = z.looseObject({
  name: z.string(),
  arguments: z.record(z.string(), z.unknown()).optional(),
  task: z.looseObject({ ttl: z.number().int().min(0).optional() }).optional(),
});
const ListParams = z.looseObject({ cursor: z.string().max(1000).optional() });

/**
 * MCP tasks on one SDK server, for both protocol eras:
 * - 2025-11-25: `capabilities.tasks`, `execution.taskSupport`, task-augmented tools/call (`params.task`),
 *   tasks/get, tasks/result (blocking, never holding the ordering queue), tasks/list, tasks/cancel,
 *   notifications/tasks/status and progress; input requests pushed with the related-task `_meta`.
 * - 2026-07-28 (`io.modelcontextprotocol/tasks`): flat CreateTaskResult, tasks/get with inputRequests,
 *   result or error inline, tasks/update with inputResponses, tasks/cancel as an acknowledgement.
 * Call before connecting; tools must already be registered.
 */
export function installTasks(server: McpServer, wiring: TaskWiring): void {
  const { driver, principalOf } = wiring;
  const log = driver.log;
  const byName = new Map(driver.tools.map((t) => [t.name, t]));
  server.server.registerCapabilities({
    tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
    extensions: { [TASKS_EXTENSION]: {} },
  });

  // Renewed at each close: a stateless HTTP server is connected again, for its next request.
  let connection = new AbortController();
  const following = new Map<string, () => void>();
  const pushes = new Map<string, AbortController>();
  const previousClose = server.server.onclose;
  server.server.onclose = () => {
    connection.abort(new Error('connection closed'));
    connection = new AbortController();
    for (const off of following.values()) off();
    following.clear();
    for (const p of pushes.values()) p.abort();
    pushes.clear();
    previousClose?.();
  };

  const fail = (error: unknown, modern = false): never => {
    const rpc = toRpcError(error, log);
    const data = rpc.data as Partial<StructuredErrorData> | undefined;
    if (modern && data?.error_code === 'TASK_CAPABILITY_REQUIRED') {
      throw new ProtocolError(
        ProtocolErrorCode.MissingRequiredClientCapability,
        'Missing required client capability',
        {
          requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } },
          ...rpc.data,
        },
      );
    }
    throw new ProtocolError(rpc.code, rpc.message, rpc.data);
  };
  const guarded = async <T>(fn: () => Promise<T>, modern = false): Promise<T> => {
    try {
      return await fn();
    } catch (error) {
      if (error instanceof InputRequiredSignal) throw error;
      return fail(error, modern);
    }
  };
  const refuseWithoutExtension = (ctx: ServerContext) => {
    if (isModern(ctx) && !declaresTasks(ctx)) {
      throw new ProtocolError(
        ProtocolErrorCode.MissingRequiredClientCapability,
        'Missing required client capability',
        {
          requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } },
        },
      );
    }
  };

  // --- 2025-11-25: status notifications, progress and input requests pushed on this connection ---

  const notify = (method: string, params: Record<string, unknown>) => {
    if (!server.isConnected()) return;
    server.server
      .notification({ method, params } as never)
      .catch((error: unknown) => log.warn(`${method}: ${String(error)}`));
  };

  const push = (tasks: TaskService, r: TaskRecord, can: ClientAbilities) => {
    for (const key of pushes.keys()) {
      const [taskId, k] = key.split(' ');
      if (taskId === r.task_id && (isTerminalTask(r.status) || !Object.hasOwn(r.input_requests, k ?? ''))) {
        pushes.get(key)?.abort();
        pushes.delete(key);
      }
    }
    if (isTerminalTask(r.status) || !server.isConnected()) return;
    for (const [key, request] of Object.entries(r.input_requests)) {
      if (Object.hasOwn(r.input_responses, key)) continue;
      const elicit = request.method === 'elicitation/create';
      if (!(elicit ? can.elicitation : request.method === 'sampling/createMessage' && can.sampling)) continue;
      if (!tasks.markDelivered(r.task_id, key)) continue;
      const abort = new AbortController();
      pushes.set(`${r.task_id} ${key}`, abort);
      const params = { ...request.params, _meta: { [RELATED_TASK_META_KEY]: { taskId: r.task_id } } };
      const options = { timeout: PUSH_TIMEOUT_MS, signal: abort.signal };
      const sent: Promise<unknown> = elicit
        ? server.server.elicitInput(params as never, options)
        : server.server.createMessage(params as never, options);
      sent
        .then(
          (answer) => tasks.answer(r.task_id, r.principal, { [key]: answer as Record<string, unknown> }),
          (error: unknown) =>
            abort.signal.aborted
              ? undefined
              : tasks.answerFailed(r.task_id, key, error instanceof Error ? error.message : String(error)),
        )
        .catch((error: unknown) => log.warn(`task ${r.task_id}: input ${key}: ${String(error)}`))
        .finally(() => pushes.delete(`${r.task_id} ${key}`));
    }
  };

  /** This connection reports the task's status and delivers its input requests from now on. */
  const follow = (
    tasks: TaskService,
    record: TaskRecord,
    can: ClientAbilities,
    progressToken?: string | number,
  ) => {
    if (following.has(record.task_id) || isTerminalTask(record.status)) return;
    let progress = 0;
    const off = tasks.on(record.task_id, (event, r) => {
      if (event !== 'input') {
        notify('notifications/tasks/status', { ...task2025(r), _meta: { [STATUS_META_KEY]: r.snapshot } });
        if (progressToken !== undefined) {
          notify('notifications/progress', {
            progressToken,
            progress: ++progress,
            message: r.status_message ?? r.status,
          });
        }
      }
      push(tasks, r, can);
      if (isTerminalTask(r.status)) {
        off();
        following.delete(r.task_id);
      }
    });
    following.set(record.task_id, off);
    push(tasks, record, can);
  };

  // --- tools/call: task tools become tasks; everything else goes to the SDK's own handler ---

  const sdkToolsCall = requestHandler(server.server, 'tools/call');
  if (sdkToolsCall === undefined) throw new Error('installTasks: the SDK server has no tools/call handler');
  server.server.setRequestHandler(
    'tools/call',
    {
      params: ToolCallParams,
    },
    async (params, ctx) => {
      const delegate = () => sdkToolsCall(params, ctx);
      const tool = byName.get(params.name);
      const modern = isModern(ctx);
      if (tool?.task === undefined) {
        if (tool !== undefined && !modern && params.task !== undefined) {
          // taskSupport "forbidden" (MCP 2025-11-25): a task-augmented call of this tool is -32601.
          throw new ProtocolError(
            ProtocolErrorCode.MethodNotFound,
            `Tool ${params.name} does not run as a task (taskSupport: forbidden); call it without params.task`,
            { tool: params.name },
          );
        }
        return delegate();
      }
      const asTask = modern ? declaresTasks(ctx) : params.task !== undefined;
      if (!asTask) {
        if (tool.task.support === 'optional') return delegate();
        fail(
          new DomainFailure({
            code: 'task_capability_required',
            message: `${tool.name} requires MCP tasks support: it runs long work and is never run as a plain (synchronous) tool call`,
            tool: tool.name,
          }),
          modern,
        );
      }
      const parsed = tool.inputSchema.safeParse(canonicalArguments(tool, params.arguments ?? {}));
      if (!parsed.success) {
        fail(
          new DomainFailure({
            code: 'invalid_params',
            message: 'Invalid params',
            details: formatIssues(parsed.error.issues),
          }),
        );
      }
      const principal = principalOf(ctx);
      // Counted before anything is created (a run, a task row); given back if it never starts.
      driver.admit(principal);
      const counted = <T>(fn: () => Promise<T>, era = false) =>
        guarded(fn, era).catch((error: unknown) => {
          driver.release(principal);
          throw error;
        });
      const can = clientAbilities(server, ctx);
      let admitted: Admitted;
      try {
        admitted = await counted(
          async () =>
            (await tool.task?.admit?.(parsed.data, {
              caller: { principal },
              can,
              ...(modern
                ? {
                    inputResponses: ctx.mcpReq.inputResponses,
                    requireInput: (requests) => {
                      throw new InputRequiredSignal(inputRequired({ inputRequests: requests as never }));
                    },
                  }
                : {}),
            })) ?? {},
          modern,
        );
      } catch (error) {
        // An input_required round before the task exists (multi round-trip): no task, nothing counted.
        if (error instanceof InputRequiredSignal) return error.result as never;
        throw error;
      }
      const services = await counted(() => driver.services());
      const progressToken = ctx.mcpReq._meta?.progressToken;
      const snapshot: RunSnapshot = {
        run_id: admitted.run_id ?? null,
        workflow_id: admitted.workflow_id ?? null,
        step_id: null,
        step_name: null,
        state: 'pending',
        summary: admitted.summary ?? `${tool.name} queued`,
      };
      const record = await counted(() =>
        services.tasks.create({
          principal,
          tool: tool.name,
          arguments: admitted.arguments ?? params.arguments ?? {},
          run_id: admitted.run_id,
          workflow_id: admitted.workflow_id,
          ttl_ms: modern ? undefined : params.task?.ttl,
          snapshot,
          meta: {
            era: modern ? '2026-07-28' : '2025-11-25',
            can,
            ...(progressToken !== undefined ? { progress_token: progressToken } : {}),
          },
        }),
      );
      if (!modern) follow(services.tasks, record, can, progressToken);
      driver.start(services, record, tool, can, false, true);
      const meta = {
        [IMMEDIATE_RESPONSE_META_KEY]: `${tool.name} started as task ${record.task_id}${record.run_id ? ` (run ${record.run_id})` : ''}; poll tasks/get for its status.`,
        [RUN_META_KEY]: { task_id: record.task_id, run_id: record.run_id, workflow_id: record.workflow_id },
      };
      return modern
        ? { resultType: 'task', ...task2026(record, false), _meta: meta }
        : { task: task2025(record), content: [], _meta: meta };
    },
  );

  // --- tasks/* ---

  server.server.setRequestHandler('tasks/get', { params: TaskIdParams }, async ({ taskId }, ctx) => {
    refuseWithoutExtension(ctx);
    const tasks = await guarded(() => driver.tasks());
    const r = await guarded(() => tasks.get(taskId, principalOf(ctx)));
    const meta = { _meta: { [STATUS_META_KEY]: r.snapshot } };
    return isModern(ctx) ? { ...task2026(r, true), ...meta } : { ...task2025(r), ...meta };
  });

  server.server.setRequestHandler('tasks/result', { params: TaskIdParams }, async ({ taskId }, ctx) => {
    const tasks = await guarded(() => driver.tasks());
    const principal = principalOf(ctx);
    let r = await guarded(() => tasks.get(taskId, principal));
    if (!isTerminalTask(r.status)) {
      // Blocks until the task ends: the ordering queue moves on meanwhile, and this connection
      // delivers the task's input requests (the requestor is now listening on it).
      wiring.detach?.(ctx.mcpReq.id);
      follow(tasks, r, clientAbilities(server, ctx));
      const signal = AbortSignal.any([ctx.mcpReq.signal, connection.signal]);
      r = await guarded(() => tasks.waitTerminal(taskId, principal, signal));
    }
    if (r.status === 'cancelled') {
      fail(
        new DomainFailure({
          code: 'task_cancelled',
          message: r.status_message ?? 'The task was cancelled',
          taskId,
          ...(r.run_id !== null ? { runId: r.run_id } : {}),
        }),
      );
    }
    if (r.error !== null) {
      throw new ProtocolError(Number(r.error.code), String(r.error.message), r.error.data);
    }
    const result = r.result ?? { content: [] };
    return {
      ...result,
      _meta: {
        ...((result._meta as Record<string, unknown> | undefined) ?? {}),
        [RELATED_TASK_META_KEY]: { taskId },
      },
    } as never;
  });

  server.server.setRequestHandler('tasks/list', { params: ListParams }, async ({ cursor }, ctx) => {
    const tasks = await guarded(() => driver.tasks());
    const page = await guarded(() => tasks.list(principalOf(ctx), cursor));
    return { tasks: page.tasks.map(task2025), ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}) };
  });

  server.server.setRequestHandler('tasks/cancel', { params: TaskIdParams }, async ({ taskId }, ctx) => {
    refuseWithoutExtension(ctx);
    const modern = isModern(ctx);
    const services = await guarded(() => driver.services());
    const principal = principalOf(ctx);
    const before = await guarded(() => services.tasks.get(taskId, principal));
    const terminal = (status: string): never =>
      fail(
        new DomainFailure({
          code: 'task_terminal',
          message: `Cannot cancel task: already in terminal status '${status}'`,
          taskId,
          status,
        }),
      );
    if (isTerminalTask(before.status)) {
      if (modern) return {};
      terminal(before.status);
    }
    const outcome = await guarded(() =>
      services.runs.cancel(taskId, { principal }, 'The task was cancelled by request.'),
    );
    if (modern) return {};
    const after = await guarded(() => services.tasks.get(taskId, principal));
    if (outcome.status === 'already_terminal') terminal(after.status);
    return task2025(after);
  });

  server.server.setRequestHandler('tasks/update', { params: TaskIdParams }, async ({ taskId }, ctx) => {
    refuseWithoutExtension(ctx);
    const tasks = await guarded(() => driver.tasks());
    const responses = (ctx.mcpReq.inputResponses ?? {}) as Record<string, unknown>;
    await guarded(() => tasks.answer(taskId, principalOf(ctx), responses));
    return {};
  });
}

/** The 2025-11-25 Task. */
export function task2025(r: TaskRecord) {
  return {
    taskId: r.task_id,
    status: r.status,
    ...(r.status_message !== null ? { statusMessage: r.status_message } : {}),
    createdAt: r.created_at,
    lastUpdatedAt: r.last_updated_at,
    ttl: r.ttl_ms,
    pollInterval: r.poll_interval_ms,
  };
}

/**
 * The 2026-07-28 Task; `detailed` adds what tasks/get carries: outstanding inputRequests, the result
 * (a tool error result is `completed` there: `failed` is for JSON-RPC errors only) or the error.
 */
export function task2026(r: TaskRecord, detailed: boolean): Record<string, unknown> {
  const base = {
    taskId: r.task_id,
    status: r.status as string,
    ...(r.status_message !== null ? { statusMessage: r.status_message } : {}),
    createdAt: r.created_at,
    lastUpdatedAt: r.last_updated_at,
    ttlMs: r.ttl_ms,
    pollIntervalMs: r.poll_interval_ms,
  };
  if (!detailed) return base;
  if (r.status === 'input_required') {
    const pending = Object.fromEntries(
      Object.entries(r.input_requests).filter(([key]) => !Object.hasOwn(r.input_responses, key)),
    );
    // Waiting for the agent without a request to show (it answers through workflow_next_step).
    return Object.keys(pending).length > 0
      ? { ...base, inputRequests: pending }
      : { ...base, status: 'working' };
  }
  if (r.result !== null)
    return { ...base, status: 'completed', result: { ...r.result, resultType: 'complete' } };
  if (r.error !== null) return { ...base, error: r.error };
  return base;
}
