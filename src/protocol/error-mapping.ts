import type * as z from 'zod';
import { type DomainError, type DomainErrorCode, DomainFailure } from '../engine/errors.js';
import type { InputResolution } from '../engine/inputs.js';
import { currentStepUri } from '../faces/executions/execution-presenter.js';
import { type NextCall, next, resolveInputsCall } from '../faces/next.js';
import { correlationId } from '../telemetry/context.js';
import { errorFields, type Logger, messageNaming } from '../telemetry/log.js';
import { didYouMean } from './suggest.js';

/** Seed 001/002 JSON-RPC error codes. */
export const RpcCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  ServerError: -32000,
  WorkflowNotFound: -32001,
  InvalidWorkflow: -32002,
  StepNotFound: -32003,
  ValidationError: -32004,
  StateError: -32005,
  StorageError: -32006,
  SecurityError: -32007,
  /** MCP (2026-07-28 numbering): the request needs a client capability the client did not declare. */
  MissingClientCapability: -32021,
} as const;

export interface RpcError {
  code: number;
  message: string;
  data?: Record<string, unknown>;
}

export type ErrorCategory = 'validation' | 'not_found' | 'conflict' | 'execution' | 'internal';

/** Seed 003 §10 fields carried in `error.data` of every tool failure, next to seed 002's fields. */
export interface StructuredErrorData {
  error_code: string;
  category: ErrorCategory;
  message: string;
  context: {
    workflow_id?: string;
    run_id?: string;
    step_id?: string;
    path?: string;
    line?: number;
    column?: number;
  };
  retryable: boolean;
  suggested_action: string;
  correlation_id: string;
  violations: unknown[];
  /** The call that fixes it, ready to send (with `fill` for what only the caller knows), when there is one. */
  next?: NextCall[];
}

interface Mapping<C extends DomainErrorCode> {
  rpc: number;
  title: string;
  error_code: string;
  category: ErrorCategory;
  retryable: boolean;
  action: (e: Extract<DomainError, { code: C }>) => string;
  /** The call that fixes it (suggested_action names the first one). */
  fix?: (e: Extract<DomainError, { code: C }>) => NextCall[];
  /** Seed 001/002 `data` fields, kept for clients of those seeds. */
  legacy: (e: Extract<DomainError, { code: C }>) => Record<string, unknown>;
  context: (e: Extract<DomainError, { code: C }>) => StructuredErrorData['context'];
}

const defined = (o: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Record<string, never>;

const resume = (executionId: string) => next('workflow_resume', { execution_id: executionId });
const source = (workflowId: string) => next('workflow_get', { workflow_id: workflowId, view: 'source' });

/** What must change before a waiting command step can succeed when retried. */
function commandCause(reason: string): string {
  if (reason === 'missing_credential')
    return "Set the credential the message names in the server's environment (or re-bind it as it says) and restart the server";
  if (reason === 'host') return 'Allow the host in WORKFLOWLOOKUP_ALLOW_PRIVATE_HOSTS and restart the server';
  if (reason === 'unknown_command') return 'Import or enable the catalog that provides the command';
  if (reason === 'not_checked')
    return 'Once the machine is less busy (the output_contract was not checked in time)';
  return 'Once the API answers again';
}

/** The one table from domain errors to protocol errors. A test proves every entry is reachable. */
export const ERROR_TABLE: { [C in DomainErrorCode]: Mapping<C> } = {
  workflow_not_found: {
    rpc: RpcCode.WorkflowNotFound,
    title: 'Workflow not found',
    error_code: 'WORKFLOW_NOT_FOUND',
    category: 'not_found',
    retryable: false,
    action: (e) =>
      e.didYouMean?.[0] !== undefined
        ? `Did you mean "${e.didYouMean[0]}"? workflow_get {"workflow_id": "${e.didYouMean[0]}"} shows it; workflow_list {} lists every workflow id.`
        : 'Call workflow_list {} to see the available workflow ids.',
    fix: (e) => [
      ...(e.didYouMean?.[0] !== undefined ? [next('workflow_get', { workflow_id: e.didYouMean[0] })] : []),
      next('workflow_list', {}),
    ],
    legacy: (e) => defined({ workflowId: e.workflowId, did_you_mean: e.didYouMean }),
    context: (e) => ({ workflow_id: e.workflowId }),
  },
  workflow_invalid: {
    rpc: RpcCode.InvalidWorkflow,
    title: 'Invalid workflow',
    error_code: 'WORKFLOW_INVALID',
    category: 'validation',
    retryable: false,
    action: (e) =>
      `Fix the violations in ${e.file ?? 'the definition'} (workflow_fix_validation can help), then retry.`,
    fix: (e) => (e.workflowId !== undefined ? [source(e.workflowId)] : []),
    legacy: (e) => defined({ workflowId: e.workflowId, file: e.file, violations: e.violations }),
    context: (e) => defined({ workflow_id: e.workflowId, path: e.file }),
  },
  step_not_found: {
    rpc: RpcCode.StepNotFound,
    title: 'Step not found',
    error_code: 'STEP_NOT_FOUND',
    category: 'not_found',
    retryable: false,
    action: (e) => `Call workflow_get {"workflow_id": "${e.workflowId}"} to see its step ids.`,
    fix: (e) => [next('workflow_get', { workflow_id: e.workflowId })],
    legacy: (e) => ({ stepId: e.stepId, workflowId: e.workflowId }),
    context: (e) => ({ workflow_id: e.workflowId, step_id: e.stepId }),
  },
  criteria_invalid: {
    rpc: RpcCode.ValidationError,
    title: 'Validation error',
    error_code: 'VALIDATION_CRITERIA_INVALID',
    category: 'validation',
    retryable: false,
    action: () => "Fix the step's validationCriteria in the workflow definition.",
    fix: (e) => [source(e.workflowId)],
    legacy: (e) => ({ workflowId: e.workflowId, stepId: e.stepId, details: e.details }),
    context: (e) => ({ workflow_id: e.workflowId, step_id: e.stepId }),
  },
  invalid_params: {
    rpc: RpcCode.InvalidParams,
    title: 'Invalid params',
    error_code: 'INVALID_PARAMS',
    category: 'validation',
    retryable: false,
    action: () => "Correct the arguments to match the tool's inputSchema (see tools/list).",
    legacy: (e) => ({ details: e.details }),
    context: () => ({}),
  },
  storage_error: {
    rpc: RpcCode.StorageError,
    title: 'Storage error',
    error_code: 'STORAGE_ERROR',
    category: 'internal',
    retryable: true,
    action: () => 'Retry; if it persists, check the data and workflow directories (permissions, disk space).',
    legacy: (e) => ({ details: e.details }),
    context: () => ({}),
  },
  execution_not_found: {
    rpc: RpcCode.StateError,
    title: 'Execution not found',
    error_code: 'EXECUTION_NOT_FOUND',
    category: 'not_found',
    retryable: false,
    action: () => 'Call workflow_executions {} to find the execution, or workflow_start to begin one.',
    fix: () => [next('workflow_executions', {})],
    legacy: (e) => ({ executionId: e.executionId, details: e.message }),
    context: (e) => ({ run_id: e.executionId }),
  },
  state_conflict: {
    rpc: RpcCode.StateError,
    title: 'State error',
    error_code: 'EXECUTION_STATE_CONFLICT',
    category: 'conflict',
    retryable: false,
    action: (e) =>
      e.pausedBy !== undefined
        ? `A person paused the execution (${e.pausedBy.by}, ${e.pausedBy.at}${e.pausedBy.reason ? `: ${JSON.stringify(e.pausedBy.reason)}` : ''}): tell the user it waits for them, and call workflow_resume {"execution_id": "${e.executionId}"} later to see whether it runs again.`
        : e.state === 'paused'
          ? `The execution is paused: call workflow_set_state {"execution_id": "${e.executionId}", "state": "running"}, then workflow_resume.`
          : `Call workflow_resume {"execution_id": "${e.executionId}"} for the current step and token.`,
    // A person's pause is waited out (workflow_resume), never overridden by the call in next.
    fix: (e) =>
      e.state === 'paused' && e.pausedBy === undefined
        ? [next('workflow_set_state', { execution_id: e.executionId, state: 'running' })]
        : [resume(e.executionId)],
    legacy: (e) =>
      defined({
        executionId: e.executionId,
        details: e.details,
        state: e.state,
        allowed: e.allowed,
        paused_by: e.pausedBy,
      }),
    context: (e) => ({ run_id: e.executionId }),
  },
  token_invalid: {
    rpc: RpcCode.SecurityError,
    title: 'Security error',
    error_code: 'TOKEN_INVALID',
    category: 'validation',
    retryable: false,
    action: () =>
      'Send the token exactly as the last answer gave it; to get the current one, find the execution with workflow_executions {} and call workflow_resume on it.',
    fix: () => [next('workflow_executions', {})],
    legacy: (e) => ({ details: e.details }),
    context: () => ({}),
  },
  token_expired: {
    rpc: RpcCode.SecurityError,
    title: 'Token expired',
    error_code: 'TOKEN_EXPIRED',
    category: 'validation',
    retryable: true,
    action: (e) =>
      `Call workflow_resume {"execution_id": "${e.executionId}"} for a fresh token, then resubmit.`,
    fix: (e) => [resume(e.executionId)],
    legacy: (e) => ({
      reason: 'expired',
      executionId: e.executionId,
      expiredAt: e.expiredAt,
      details: `${e.message}. Get a fresh one with workflow_resume {"execution_id": "${e.executionId}"} or by reading ${currentStepUri(e.executionId)}.`,
      freshToken: currentStepUri(e.executionId),
    }),
    context: (e) => ({ run_id: e.executionId }),
  },
  manifest_invalid: {
    rpc: RpcCode.InvalidWorkflow,
    title: 'Invalid workflow',
    error_code: 'WORKFLOW_VALIDATION_FAILED',
    category: 'validation',
    retryable: false,
    action: () => 'Fix the listed violations and submit again; nothing was written.',
    fix: () => [
      next('workflow_validate_manifest', {}, { content: 'the manifest with the violations fixed' }),
    ],
    legacy: (e) => defined({ workflowId: e.workflowId, violations: e.violations }),
    context: (e) => {
      const first = e.violations[0] as { path?: string; line?: number; column?: number } | undefined;
      return defined({
        workflow_id: e.workflowId,
        path: first?.path,
        line: first?.line,
        column: first?.column,
      });
    },
  },
  workflow_conflict: {
    rpc: RpcCode.StateError,
    title: 'Conflict',
    error_code: 'WORKFLOW_CONFLICT',
    category: 'conflict',
    retryable: false,
    action: (e) =>
      `Read the current version with workflow_get {"workflow_id": "${e.workflowId}", "view": "source"}, then save again with overwrite and expected_version.`,
    fix: (e) => [source(e.workflowId)],
    legacy: (e) => defined({ workflowId: e.workflowId, path: e.path, details: e.details }),
    context: (e) => defined({ workflow_id: e.workflowId, path: e.path }),
  },
  workflow_read_only: {
    rpc: RpcCode.StorageError,
    title: 'Read-only workflow',
    error_code: 'WORKFLOW_READ_ONLY',
    category: 'conflict',
    retryable: false,
    action: (e) =>
      `Only workflows in the runtime dir can be changed; save a copy with workflow_save to override '${e.workflowId}' there.`,
    fix: (e) => [source(e.workflowId)],
    legacy: (e) => ({ workflowId: e.workflowId, source: e.source, path: e.path }),
    context: (e) => ({ workflow_id: e.workflowId, path: e.path }),
  },
  runtime_dir_read_only: {
    rpc: RpcCode.StorageError,
    title: 'Storage error',
    error_code: 'RUNTIME_DIR_READ_ONLY',
    category: 'internal',
    retryable: false,
    action: (e) =>
      `Make ${e.path} writable for the server, or set WORKFLOWLOOKUP_WORKFLOWS_PATH to a writable directory and restart it.`,
    legacy: (e) => ({ path: e.path, details: e.details }),
    context: (e) => ({ path: e.path }),
  },
  storage_full: {
    rpc: RpcCode.StorageError,
    title: 'Storage error',
    error_code: 'STORAGE_FULL',
    category: 'internal',
    retryable: true,
    action: (e) => `Free disk space (or quota) where ${e.path} lives, then retry; nothing was written.`,
    legacy: (e) => ({ path: e.path, details: e.details }),
    context: (e) => ({ path: e.path }),
  },
  path_outside_runtime: {
    rpc: RpcCode.SecurityError,
    title: 'Security error',
    error_code: 'PATH_OUTSIDE_RUNTIME_DIR',
    category: 'validation',
    retryable: false,
    action: () =>
      'Use a plain workflow id (lowercase letters, digits, hyphens); files are always named after it.',
    legacy: (e) => ({ path: e.path, details: e.message }),
    context: (e) => ({ path: e.path }),
  },
  command_failed: {
    rpc: RpcCode.ServerError,
    title: 'Command failed',
    error_code: 'COMMAND_FAILED',
    category: 'execution',
    retryable: false,
    action: (e) =>
      e.retryable && e.executionId !== undefined
        ? `The execution waits on step "${e.stepId}". ${commandCause(e.reason)}, then call workflow_resume {"execution_id": "${e.executionId}"} to retry it.`
        : `Check the "${e.command}" call (${e.reason}): its parameters, the catalog's base URL and credentials.`,
    fix: (e) => (e.retryable && e.executionId !== undefined ? [resume(e.executionId)] : []),
    legacy: (e) => ({
      step_id: e.stepId,
      command: e.command,
      reason: e.reason,
      ...(e.status !== undefined ? { status: e.status } : {}),
      ...(e.responsePayload !== undefined ? { response_payload: e.responsePayload } : {}),
    }),
    context: (e) => ({
      step_id: e.stepId,
      ...(e.executionId !== undefined ? { run_id: e.executionId } : {}),
    }),
  },
  catalog_invalid: {
    rpc: RpcCode.InvalidParams,
    title: 'Invalid OpenAPI document',
    error_code: 'CATALOG_SOURCE_INVALID',
    category: 'validation',
    retryable: false,
    action: () =>
      'Fix the OpenAPI document (see violations) or point source at another one; catalog_validate_openapi checks it.',
    legacy: (e) => ({ violations: e.violations }),
    context: () => ({}),
  },
  catalog_not_found: {
    rpc: RpcCode.InvalidParams,
    title: 'Catalog not found',
    error_code: 'CATALOG_NOT_FOUND',
    category: 'not_found',
    retryable: false,
    action: (e) =>
      `Import the OpenAPI document of "${e.catalog}": catalog_import_openapi {"catalog_title": "${e.catalog}", "source": "<path or URL>"} (command_list {} shows the catalogs there are).`,
    fix: (e) => [
      next(
        'catalog_import_openapi',
        { catalog_title: e.catalog },
        { source: `path (or allowed URL) of the OpenAPI document of "${e.catalog}"` },
      ),
    ],
    legacy: (e) => ({ catalog: e.catalog }),
    context: () => ({}),
  },
  catalog_conflict: {
    rpc: RpcCode.StateError,
    title: 'Conflict',
    error_code: 'CATALOG_CONFLICT',
    category: 'conflict',
    retryable: false,
    action: () => 'Pass overwrite: true to replace the existing catalog.',
    legacy: (e) => ({ catalog: e.catalog }),
    context: () => ({}),
  },
  precondition_failed: {
    rpc: RpcCode.InvalidParams,
    title: 'Precondition failed',
    error_code: 'PRECONDITION_FAILED',
    category: 'validation',
    retryable: false,
    action: (e) =>
      `Set context['${e.variable}'] to ${e.expected}${e.retry ? ` and send the ${e.retry.tool} call in next (its fill names it)` : ''}; nothing advanced.`,
    fix: (e) => (e.retry ? [next(e.retry.tool, e.retry.arguments, e.retry.fill)] : []),
    legacy: (e) =>
      defined({ workflowId: e.workflowId, variable: e.variable, expected: e.expected, loopId: e.loopId }),
    context: (e) => defined({ workflow_id: e.workflowId, step_id: e.loopId }),
  },
  inputs_not_ready: {
    rpc: RpcCode.InvalidParams,
    title: 'Inputs not ready',
    error_code: 'INPUTS_NOT_READY',
    category: 'validation',
    retryable: false,
    action: (e) =>
      `Call workflow_resolve_inputs {"workflow_id": "${e.workflowId}", "inputs": {...}} with the inputs it reports fixed, then start again.`,
    fix: (e) => [resolveInputsCall(e.workflowId, e.inputs as InputResolution[])],
    legacy: (e) => ({ workflowId: e.workflowId, inputs: e.inputs }),
    context: (e) => ({ workflow_id: e.workflowId }),
  },
  confirmation_required: {
    rpc: RpcCode.InvalidParams,
    title: 'Confirmation required',
    error_code: 'CONFIRMATION_REQUIRED',
    category: 'validation',
    retryable: false,
    action: (e) =>
      `Ask the user, then call ${e.tool ?? 'workflow_delete'} ${JSON.stringify({ ...(e.arguments ?? (e.workflowId !== undefined ? { workflow_id: e.workflowId } : {})), confirm: true })}.`,
    // Never `confirm: true` ready to send: that is the user's word to give.
    fix: (e) => [
      next(
        e.tool ?? 'workflow_delete',
        e.arguments ?? (e.workflowId !== undefined ? { workflow_id: e.workflowId } : {}),
        { confirm: 'true, only after the user said yes' },
      ),
    ],
    legacy: (e) => defined({ workflowId: e.workflowId, details: e.message }),
    context: (e) => defined({ workflow_id: e.workflowId }),
  },
  task_capability_required: {
    // MCP 2025-11-25: a tool whose taskSupport is "required", called without a task, is -32601.
    rpc: RpcCode.MethodNotFound,
    title: 'Task augmentation required',
    error_code: 'TASK_CAPABILITY_REQUIRED',
    category: 'execution',
    retryable: false,
    action: (e) =>
      `Connect with a tasks-capable MCP client and call ${e.tool} as a task (2025-11-25: tools/call with params.task; 2026-07-28: declare the io.modelcontextprotocol/tasks extension).`,
    legacy: (e) => ({ tool: e.tool }),
    context: () => ({}),
  },
  client_capability_required: {
    rpc: RpcCode.MissingClientCapability,
    title: 'Missing required client capability',
    error_code: 'CLIENT_CAPABILITY_REQUIRED',
    category: 'execution',
    retryable: false,
    action: (e) =>
      `Connect with an MCP client that supports ${e.capabilities.join(' and ')} (declared in its capabilities), then call ${e.tool} again.`,
    legacy: (e) => ({
      tool: e.tool,
      missing: e.capabilities,
      requiredCapabilities: Object.fromEntries(e.capabilities.map((c) => [c, {}])),
    }),
    context: () => ({}),
  },
  client_request_failed: {
    // An outside party failed a request, as a failed command step does: -32000.
    rpc: RpcCode.ServerError,
    title: 'Client request failed',
    error_code: 'CLIENT_REQUEST_FAILED',
    category: 'execution',
    retryable: true,
    action: (e) =>
      `The client refused or failed ${e.method} (${e.details}); call ${e.tool} again when it can answer (its user may have declined).`,
    legacy: (e) => ({ tool: e.tool, method: e.method, details: e.details }),
    context: () => ({}),
  },
  task_not_found: {
    // MCP tasks: an unknown (or expired, or another principal's) task id is invalid params.
    rpc: RpcCode.InvalidParams,
    title: 'Task not found',
    error_code: 'TASK_NOT_FOUND',
    category: 'not_found',
    retryable: false,
    action: () => 'Use a taskId from a CreateTaskResult (or tasks/list); expired tasks are deleted.',
    legacy: (e) => ({ taskId: e.taskId, details: e.message }),
    context: () => ({}),
  },
  task_terminal: {
    rpc: RpcCode.InvalidParams,
    title: 'Task already finished',
    error_code: 'TASK_ALREADY_TERMINAL',
    category: 'conflict',
    retryable: false,
    action: (e) => `Nothing to cancel; read the outcome with tasks/result {"taskId": "${e.taskId}"}.`,
    legacy: (e) => ({ taskId: e.taskId, status: e.status, details: e.message }),
    context: () => ({}),
  },
  task_cancelled: {
    rpc: RpcCode.InvalidParams,
    title: 'Task cancelled',
    error_code: 'TASK_CANCELLED',
    category: 'execution',
    retryable: false,
    action: () => 'Start it again if it is still wanted (workflow_run, or the orchestration tool).',
    legacy: (e) => defined({ taskId: e.taskId, details: e.message }),
    context: (e) => defined({ run_id: e.runId }),
  },
  check_unavailable: {
    // The server cannot verify the step now: a setting of the operator's, like a missing credential.
    rpc: RpcCode.ServerError,
    title: 'Check unavailable',
    error_code: 'CHECK_UNAVAILABLE',
    category: 'execution',
    retryable: false,
    action: (e) =>
      e.reason === 'http_not_allowed'
        ? `Ask the server's operator to allow checks on the HTTP server (WORKFLOWLOOKUP_HTTP_CHECKS=1) or run the workflow over stdio; nothing advanced.`
        : e.reason === 'not_configured'
          ? `Ask the server's operator to define check "${e.check}" in WORKFLOWLOOKUP_CHECKS_FILE; nothing advanced.`
          : `Ask the server's operator to enable check "${e.check}" in WORKFLOWLOOKUP_CHECKS_FILE; nothing advanced.`,
    legacy: (e) =>
      defined({ check: e.check, reason: e.reason, executionId: e.executionId, details: e.message }),
    context: (e) => defined({ workflow_id: e.workflowId, step_id: e.stepId, run_id: e.executionId }),
  },
  check_busy: {
    // A capacity limit of the server, like `Too many tasks` (-32000): the execution's state is fine
    // (-32005 would say the call itself conflicts with it), and the same call succeeds later.
    rpc: RpcCode.ServerError,
    title: 'Checks busy',
    error_code: 'CHECK_BUSY',
    category: 'execution',
    retryable: true,
    action: (e) =>
      `The server is running as many checks as it allows and its queue is full; nothing ran and nothing advanced. Send the same call again (the same token and output) later${e.retryAfterMs !== undefined ? `, in about ${Math.ceil(e.retryAfterMs / 1000)} s` : ''}.`,
    legacy: (e) =>
      defined({
        check: e.check,
        principal: e.principal,
        limit: e.limit,
        retry_after_ms: e.retryAfterMs,
        details: e.message,
      }),
    context: () => ({}),
  },
  validation_not_checked: {
    // The server could not finish the check this time, like a busy check (-32000): the call itself is
    // fine and nothing was decided, so it is no failed validation (-32004) and no invalid workflow (-32002).
    rpc: RpcCode.ServerError,
    title: 'Validation not checked',
    error_code: 'VALIDATION_NOT_CHECKED',
    category: 'execution',
    retryable: true,
    action: (e) =>
      `Nothing was decided or recorded (a token stays valid): send the same ${e.retry?.tool ?? 'call'} again, with the same arguments. If it keeps happening, a regex or JSON Schema rule is probably too expensive for this input: simplify it.`,
    fix: (e) => (e.retry ? [next(e.retry.tool, e.retry.arguments, e.retry.fill)] : []),
    legacy: (e) => defined({ workflowId: e.workflowId, stepId: e.stepId, details: e.details }),
    context: (e) => defined({ workflow_id: e.workflowId, step_id: e.stepId }),
  },
  delegation_refused: {
    // A bound of the server (how deep, how many open) or the step's own template: the call itself was fine.
    rpc: RpcCode.ServerError,
    title: 'Delegation refused',
    error_code: 'DELEGATION_REFUSED',
    category: 'execution',
    retryable: false,
    action: (e) =>
      e.reason === 'fan_out'
        ? 'Finish or abandon open child executions (workflow_executions lists them), then send the same call again.'
        : e.reason === 'depth'
          ? 'The child workflows delegate too deep for this server: give the deepest level work of its own instead of delegating again, or ask the operator to raise WORKFLOWLOOKUP_MAX_DELEGATION_DEPTH.'
          : "Fix the step's delegate context (workflow_get shows the source), then start again.",
    fix: (e) => (e.reason === 'fan_out' ? [next('workflow_executions', {})] : []),
    legacy: (e) =>
      defined({
        executionId: e.executionId,
        workflowId: e.workflowId,
        stepId: e.stepId,
        reason: e.reason,
        limit: e.limit,
      }),
    context: (e) => ({ run_id: e.executionId, workflow_id: e.workflowId, step_id: e.stepId }),
  },
  tests_too_large: {
    // The tests given are more than the call may run: its arguments, as -32602 says, not the server's state.
    rpc: RpcCode.InvalidParams,
    title: 'Tests too large',
    error_code: 'TESTS_TOO_LARGE',
    category: 'validation',
    retryable: false,
    action: (e) =>
      e.limit === 'work'
        ? `No verdict was given: split the scenarios over several workflow_test calls, or run them on the command line with workflowlookup test <test file>, which allows more work per file.`
        : `Give at most ${e.max} ${e.limit === 'scenarios' ? 'scenarios per call' : 'as any max_reports'}, or run the tests on the command line with workflowlookup test <test file>, which allows more.`,
    legacy: (e) => defined({ workflowId: e.workflowId, limit: e.limit, max: e.max, details: e.details }),
    context: (e) => defined({ workflow_id: e.workflowId }),
  },
  tests_busy: {
    // A capacity limit, like `Too many tasks` and CHECK_BUSY (-32000): the same call succeeds later.
    rpc: RpcCode.ServerError,
    title: 'Tests busy',
    error_code: 'TESTS_BUSY',
    category: 'execution',
    retryable: true,
    action: (e) =>
      `You have ${e.running} workflow test run(s) going, the most one principal may have at once (${e.max}); nothing ran. Send the same call again when one has answered.`,
    legacy: (e) => ({ principal: e.principal, running: e.running, limit: e.max, details: e.message }),
    context: () => ({}),
  },
};

export function newCorrelationId(): string {
  return correlationId();
}

/** The one place domain errors become JSON-RPC errors (the same object serves direct calls and tools/call). */
export function domainToRpc(error: DomainError, correlationId: string = newCorrelationId()): RpcError {
  const m = ERROR_TABLE[error.code] as Mapping<typeof error.code>;
  const legacy = m.legacy(error as never);
  const violations = (legacy.violations as unknown[] | undefined) ?? [];
  const calls = m.fix?.(error as never) ?? [];
  const structured: StructuredErrorData = {
    error_code: m.error_code,
    category: m.category,
    message: error.message !== m.title ? error.message : ((legacy.details as string | undefined) ?? m.title),
    context: m.context(error as never),
    retryable: 'retryable' in error && typeof error.retryable === 'boolean' ? error.retryable : m.retryable,
    suggested_action: m.action(error as never),
    correlation_id: correlationId,
    violations,
    ...(calls.length > 0 ? { next: calls } : {}),
  };
  return { code: m.rpc, message: m.title, data: { ...legacy, ...structured } };
}

/** Any thrown value as a JSON-RPC error; unexpected ones become -32603 without leaking internals. */
export function toRpcError(error: unknown, log?: Logger): RpcError {
  // The request's own id when there is one, so its log lines and its error answer name the same.
  const correlationId = newCorrelationId();
  if (error instanceof DomainFailure) {
    const rpc = domainToRpc(error.error, correlationId);
    const data = rpc.data as unknown as StructuredErrorData;
    // An agent's mistake (a rejected step, an unknown workflow) is routine: info, not an error. Its
    // line names what it is about ("Workflow not found: nightly-release"), as the docs show.
    log?.info(
      { correlation_id: correlationId, error_code: data.error_code },
      messageNaming(error.message, Object.values(data.context), rpc.message),
    );
    return rpc;
  }
  log?.error(
    { correlation_id: correlationId, error_code: 'INTERNAL_ERROR', ...errorFields(error) },
    'internal error',
  );
  const structured: StructuredErrorData = {
    error_code: 'INTERNAL_ERROR',
    category: 'internal',
    message: 'The server failed unexpectedly; details are in its log.',
    context: {},
    retryable: true,
    suggested_action: `Retry; if it fails again, report correlation id ${correlationId}.`,
    correlation_id: correlationId,
    violations: [],
  };
  return { code: RpcCode.InternalError, message: 'Internal error', data: { ...structured } };
}

/**
 * Zod issues as one readable line, e.g. "workflowId is required; completedSteps[1] ...". Unknown
 * arguments name the closest known ones ("did you mean").
 */
export function formatIssues(issues: readonly z.core.$ZodIssue[], knownKeys: readonly string[] = []): string {
  return issues
    .slice(0, 10)
    .map((issue) => {
      const path = issue.path.reduce<string>(
        (acc, key) =>
          typeof key === 'number' ? `${acc}[${key}]` : acc ? `${acc}.${String(key)}` : String(key),
        '',
      );
      let message =
        issue.code === 'invalid_type' && /received undefined/.test(issue.message)
          ? 'is required'
          : issue.message;
      if (issue.code === 'unrecognized_keys' && issue.path.length === 0 && knownKeys.length > 0) {
        // A few, each cut short: the keys are the client's, as many and as long as it likes.
        const shown = issue.keys.slice(0, 10).map((k) => {
          const name = k.length > 200 ? `${k.slice(0, 200)}…` : k;
          return `unknown argument "${name}"${didYouMean(k, knownKeys)}`;
        });
        if (issue.keys.length > 10) shown.push(`and ${issue.keys.length - 10} more unknown arguments`);
        message = shown.join('; ');
      }
      // A message that already names its path ("workflow_name is required") is not prefixed again.
      return path && !message.startsWith(path) ? `${path} ${message}` : message;
    })
    .join('; ');
}

/** A tools/call failure: an isError result carrying the same code and data as a direct call. */
export function toToolErrorResult(
  error: RpcError,
  /** Fields the tool's failures carry beside `error` (ToolDefinition.errorFields). */
  extra: Record<string, unknown> = {},
): {
  isError: true;
  content: { type: 'text'; text: string }[];
  structuredContent: Record<string, unknown>;
} {
  const payload = { code: error.code, message: error.message, ...(error.data ? { data: error.data } : {}) };
  const data = error.data as Partial<StructuredErrorData> | undefined;
  // "Workflow not found: Workflow not found" says nothing twice.
  const summary =
    data?.message === undefined || data.message.toLowerCase().startsWith(error.message.toLowerCase())
      ? (data?.message ?? error.message)
      : `${error.message}: ${data.message}`;
  return {
    isError: true,
    content: [
      {
        type: 'text',
        text: `${summary} (${error.code}${data?.error_code ? ` ${data.error_code}` : ''})\n${JSON.stringify(payload)}`,
      },
    ],
    structuredContent: { ...extra, error: payload },
  };
}
