import {
  CLIENT_CAPABILITIES_META_KEY,
  type InputRequiredResult,
  inputRequired,
  inputResponse,
  type McpServer,
  PROTOCOL_VERSION_META_KEY,
  type ServerContext,
} from '@modelcontextprotocol/server';
import type { ClientAbilities } from '../runs/run-model.js';

/** The 2026-07-28 tasks extension a client declares in each request's `_meta` envelope. */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

interface EnvelopeCapabilities {
  sampling?: unknown;
  elicitation?: unknown;
  extensions?: Record<string, unknown>;
}

/** The request's `_meta` envelope client capabilities (2026-07-28), or undefined for an older revision. */
function envelopeCapabilities(ctx: ServerContext): EnvelopeCapabilities | undefined {
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  if (envelope?.[PROTOCOL_VERSION_META_KEY] === undefined) return undefined;
  return (envelope[CLIENT_CAPABILITIES_META_KEY] as EnvelopeCapabilities | undefined) ?? {};
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

/**
 * Yes/no confirmation on 2026-07-28, where servers cannot push requests: the first call answers
 * `input_required` with a form elicitation under the key `confirm`; the retried call reads the answer.
 * Undefined when the client did not declare elicitation (the tool then needs `confirm: true`).
 */
export function roundTripConfirm(ctx: ServerContext): ((message: string) => Promise<boolean>) | undefined {
  const caps = envelopeCapabilities(ctx);
  if (caps?.elicitation === undefined) return undefined;
  return async (message) => {
    const answer = inputResponse(ctx.mcpReq.inputResponses, 'confirm');
    if (answer.kind === 'elicit') return answer.action === 'accept' && answer.content?.confirm === true;
    throw new InputRequiredSignal(
      inputRequired({
        inputRequests: {
          confirm: inputRequired.elicit({
            mode: 'form',
            message,
            requestedSchema: {
              type: 'object',
              properties: { confirm: { type: 'boolean', title: 'Confirm', description: message } },
              required: ['confirm'],
            },
          }),
        },
      }),
    );
  };
}
