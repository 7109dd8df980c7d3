import {
  CLIENT_CAPABILITIES_META_KEY,
  type InputRequiredResult,
  inputRequired,
  type McpServer,
  PROTOCOL_VERSION_META_KEY,
  type RequestOptions,
  type ServerContext,
} from '@modelcontextprotocol/server';
import type { ApprovalAnswer, ApprovalQuestion, Caller } from '../executions/execution-model.js';
import type { ConfirmAnswer } from '../faces/tool.js';
import type { ClientAbilities } from '../runs/run-model.js';

/** The 2026-07-28 tasks extension a client declares in each request's `_meta` envelope. */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

interface EnvelopeCapabilities {
  sampling?: unknown;
  elicitation?: unknown;
  extensions?: Record<string, unknown>;
}

/** An envelope's client capabilities (2026-07-28), or undefined for a request of an older revision. */
function envelopeOf(meta: unknown): EnvelopeCapabilities | undefined {
  const envelope = meta as Record<string, unknown> | undefined;
  if (envelope?.[PROTOCOL_VERSION_META_KEY] === undefined) return undefined;
  return (envelope[CLIENT_CAPABILITIES_META_KEY] as EnvelopeCapabilities | undefined) ?? {};
}

/** Whether a request's `_meta` is a 2026-07-28 envelope. */
export function isModernEnvelope(meta: unknown): boolean {
  return envelopeOf(meta) !== undefined;
}

/** The request's `_meta` envelope client capabilities (2026-07-28), or undefined for an older revision. */
function envelopeCapabilities(ctx: ServerContext): EnvelopeCapabilities | undefined {
  return envelopeOf(ctx.mcpReq.envelope);
}

/** Whether the request speaks 2026-07-28 (per-request envelope) rather than an `initialize` revision. */
export function isModern(ctx: ServerContext): boolean {
  return envelopeCapabilities(ctx) !== undefined;
}

/** Whether a 2026-07-28 request declared the tasks extension. */
export function declaresTasks(ctx: ServerContext): boolean {
  return envelopeCapabilities(ctx)?.extensions?.[TASKS_EXTENSION] !== undefined;
}

/** Whether the client declared an extension: in the request's envelope (2026-07-28) or at `initialize`. */
export function declaresExtension(server: McpServer, ctx: ServerContext, id: string): boolean {
  const caps = (envelopeCapabilities(ctx) ?? server.server.getClientCapabilities()) as
    | EnvelopeCapabilities
    | undefined;
  return caps?.extensions?.[id] !== undefined;
}

/** What the client can answer: from the envelope on 2026-07-28, from `initialize` before. */
export function clientAbilities(server: McpServer, ctx: ServerContext): ClientAbilities {
  const caps = envelopeCapabilities(ctx) ?? server.server.getClientCapabilities() ?? {};
  return { sampling: caps.sampling !== undefined, elicitation: caps.elicitation !== undefined };
}

/**
 * Thrown by a tool handler that needs the client's answer first on 2026-07-28 (multi round-trip
 * requests): the tool call answers with this `input_required` result and the client retries the call
 * with the answer in `inputResponses`.
 */
export class InputRequiredSignal extends Error {
  constructor(readonly result: InputRequiredResult) {
    super('input required');
    this.name = 'InputRequiredSignal';
  }
}

type Confirm = (message: string) => Promise<ConfirmAnswer>;

const CONFIRM_KEY = 'confirm';

function confirmForm(message: string) {
  return {
    mode: 'form' as const,
    message,
    requestedSchema: {
      type: 'object' as const,
      properties: { confirm: { type: 'boolean' as const, title: 'Confirm', description: message } },
      required: ['confirm'],
    },
  };
}

/**
 * Reads an elicitation answer to a confirmation: only `accept` with `confirm: true` is a yes. Anything
 * else (a decline, empty or malformed content, a value that is no elicitation result) is a no, with why.
 */
function readConfirmation(answer: unknown): ConfirmAnswer {
  if (answer === null || typeof answer !== 'object') {
    return { confirmed: false, why: 'the client answered with something that is not an elicitation result' };
  }
  const { action, content } = answer as { action?: unknown; content?: unknown };
  if (action === 'decline') return { confirmed: false, why: 'the user declined' };
  if (action === 'cancel') return { confirmed: false, why: 'the user cancelled' };
  if (action !== 'accept') {
    return {
      confirmed: false,
      why: `the client answered with action ${JSON.stringify(action) ?? 'undefined'}`,
    };
  }
  const said =
    content !== null && typeof content === 'object'
      ? (content as Record<string, unknown>).confirm
      : undefined;
  if (said === true) return { confirmed: true };
  return {
    confirmed: false,
    why: said === false ? 'the user answered no' : 'the accepted answer did not say confirm: true',
  };
}

/**
 * Confirmation pushed to the client (before 2026-07-28). A client that fails the request (a JSON-RPC
 * error, a timeout, a connection gone) has not confirmed: that is the answer, never an internal error.
 */
function pushedConfirm(elicit: (params: ReturnType<typeof confirmForm>) => Promise<unknown>): Confirm {
  return async (message) => {
    let answer: unknown;
    try {
      answer = await elicit(confirmForm(message));
    } catch (error) {
      return {
        confirmed: false,
        why: `the client failed the confirmation request (${error instanceof Error ? error.message : String(error)})`,
      };
    }
    return readConfirmation(answer);
  };
}

/**
 * Yes/no confirmation on 2026-07-28, where servers cannot push requests: the first call answers
 * `input_required` with a form elicitation under the key `confirm`; the retried call reads the answer.
 * Undefined when the request did not declare elicitation (the tool then needs `confirm: true`).
 */
function roundTripConfirm(
  envelope: EnvelopeCapabilities | undefined,
  inputResponses: unknown,
): Confirm | undefined {
  if (envelope?.elicitation === undefined) return undefined;
  return async (message) => {
    const responses =
      inputResponses !== null && typeof inputResponses === 'object'
        ? (inputResponses as Record<string, unknown>)
        : undefined;
    if (responses !== undefined && Object.hasOwn(responses, CONFIRM_KEY)) {
      return readConfirmation(responses[CONFIRM_KEY]);
    }
    throw new InputRequiredSignal(
      inputRequired({ inputRequests: { [CONFIRM_KEY]: inputRequired.elicit(confirmForm(message)) } }),
    );
  };
}

/**
 * How a tool asks the user to confirm, the same for every entry (tools/call and direct methods): an
 * `input_required` round trip where the request speaks 2026-07-28 and declares elicitation; a pushed
 * elicitation where the client declared it at `initialize`; otherwise none (the tool needs `confirm: true`).
 */
export function confirmationFor(
  server: McpServer,
  request: { envelope: unknown; inputResponses: unknown; signal: AbortSignal; id: string | number },
): Confirm | undefined {
  const envelope = envelopeOf(request.envelope);
  if (envelope !== undefined) return roundTripConfirm(envelope, request.inputResponses);
  if (server.server.getClientCapabilities()?.elicitation === undefined) return undefined;
  // The request itself, not elicitInput: a bare `elicitation: {}` (form support before modes existed)
  // is enough, and the answer is read here (readConfirmation) rather than rejected by the SDK.
  return pushedConfirm((params) =>
    server.server.request({ method: 'elicitation/create', params }, {
      signal: request.signal,
      relatedRequestId: request.id,
    } as RequestOptions),
  );
}

/** The form an approval question is: approve or reject, and why. */
function approvalForm(q: ApprovalQuestion) {
  return {
    mode: 'form' as const,
    message: `Approval needed for step "${q.step_name}" of ${q.workflow_id} (execution ${q.execution_id}): ${q.prompt}\n\nWhat the agent reports: ${q.summary.slice(0, 2000)}`,
    requestedSchema: {
      type: 'object' as const,
      properties: {
        decision: {
          type: 'string' as const,
          title: 'Decision',
          enum: ['approve', 'reject'],
          description: 'approve lets the workflow go on; reject sends the step back to the agent',
        },
        reason: { type: 'string' as const, title: 'Reason', maxLength: 2000 },
      },
      required: ['decision'],
    },
  };
}

/** Whether the client declared form elicitation (a bare `elicitation: {}` predates modes and means form). */
function declaresFormElicitation(caps: { elicitation?: unknown } | undefined): boolean {
  const elicitation = caps?.elicitation;
  if (elicitation === undefined || elicitation === null || typeof elicitation !== 'object') return false;
  const modes = Object.keys(elicitation as Record<string, unknown>);
  return modes.length === 0 || modes.includes('form');
}

const APPROVAL_KEY = 'approval';

/** An elicitation answer to the approval form: a decision, or undefined for anything else. */
function readApproval(answer: unknown): ApprovalAnswer | undefined {
  const { action, content } = (answer ?? {}) as { action?: unknown; content?: Record<string, unknown> };
  if (action !== 'accept' || content === null || typeof content !== 'object') return undefined;
  const decision = content.decision;
  if (decision !== 'approve' && decision !== 'reject') return undefined;
  const reason =
    typeof content.reason === 'string' && content.reason.trim() !== ''
      ? content.reason.trim().slice(0, 2000)
      : undefined;
  return { decision, ...(reason !== undefined ? { reason } : {}) };
}

/**
 * Asks the client's user to approve a step output through form elicitation: pushed on the `initialize`
 * revisions; on 2026-07-28 the call answers `input_required` with the form (the approval is recorded
 * already) and its retry, which replays the submission, reads the answer. Only `accept` with a decision
 * counts; anything else (declined, cancelled, failed, malformed) is no answer and the approval stays
 * pending for the other ways. Never rejects, except to end the call with `input_required`.
 */
export function approvalAskerFor(
  server: McpServer,
  request: { envelope: unknown; inputResponses?: unknown; signal: AbortSignal; id: string | number },
): Caller['askApproval'] {
  const envelope = envelopeOf(request.envelope);
  if (envelope !== undefined) {
    if (!declaresFormElicitation(envelope)) return undefined;
    return async (question) => {
      const responses =
        request.inputResponses !== null && typeof request.inputResponses === 'object'
          ? (request.inputResponses as Record<string, unknown>)
          : undefined;
      if (responses !== undefined && Object.hasOwn(responses, APPROVAL_KEY)) {
        return readApproval(responses[APPROVAL_KEY]);
      }
      throw new InputRequiredSignal(
        inputRequired({
          inputRequests: { [APPROVAL_KEY]: inputRequired.elicit(approvalForm(question)) },
        }),
      );
    };
  }
  if (!declaresFormElicitation(server.server.getClientCapabilities())) return undefined;
  return async (question): Promise<ApprovalAnswer | undefined> => {
    let answer: unknown;
    try {
      answer = await server.server.request({ method: 'elicitation/create', params: approvalForm(question) }, {
        signal: request.signal,
        relatedRequestId: request.id,
        // A person decides: give them time (the request is cancelled with the tool call).
        timeout: 30 * 60_000,
      } as RequestOptions);
    } catch {
      return undefined;
    }
    return readApproval(answer);
  };
}

/** The client's roots (`roots/list`), where it declared them at `initialize`; undefined otherwise. */
export function rootsFor(
  server: McpServer,
  request: { envelope: unknown; signal: AbortSignal; id: string | number },
): Caller['roots'] {
  if (envelopeOf(request.envelope) !== undefined) return undefined;
  if (server.server.getClientCapabilities()?.roots === undefined) return undefined;
  return async () => {
    try {
      const { roots } = await server.server.listRoots(undefined, {
        signal: request.signal,
        relatedRequestId: request.id,
        timeout: 10_000,
      } as RequestOptions);
      return roots.map((r) => r.uri);
    } catch {
      return undefined;
    }
  };
}
