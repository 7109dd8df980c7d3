// Asking the client (elicitation, sampling) the way each protocol era allows: pushed before 2026-07-28,
// an input_required round with a requestState the client cannot forge on 2026-07-28 (SEP-2322).
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import {
  type CallToolResult,
  type InputRequest,
  type InputRequiredResult,
  inputRequired,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { isModern } from '../client-requests.js';
import { text } from './kit.js';

export const elicitation = (message: string, properties: Record<string, unknown>, required: string[]) => ({
  message,
  requestedSchema: { type: 'object' as const, properties, required },
});
export const askName = (message: string) =>
  inputRequired.elicit(elicitation(message, { name: { type: 'string' } }, ['name']) as never);

/** A text field of an accepted elicitation answer, or of a sampling result's content. */
export function answerText(answer: unknown, field: string): string | undefined {
  const a = answer as { content?: Record<string, unknown> } | undefined;
  const value = a?.content?.[field] ?? (a?.content as { text?: unknown } | undefined)?.text;
  return typeof value === 'string' ? value : undefined;
}

/** requestState the client cannot forge: HMAC-signed with a key of this process. */
const STATE_KEY = randomBytes(32);
export function sealState(state: Record<string, unknown>): string {
  const body = Buffer.from(JSON.stringify(state)).toString('base64url');
  return `${body}.${createHmac('sha256', STATE_KEY).update(body).digest('base64url')}`;
}
export function openState(sealed: unknown): Record<string, unknown> | undefined {
  if (typeof sealed !== 'string') return undefined;
  const [body, mac] = sealed.split('.');
  if (body === undefined || mac === undefined) return undefined;
  const expected = createHmac('sha256', STATE_KEY).update(body).digest();
  const given = Buffer.from(mac, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  try {
    return JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

export const mrtr = (
  inputRequests: Record<string, InputRequest>,
  state?: Record<string, unknown>,
): InputRequiredResult =>
  inputRequired({ inputRequests, ...(state ? { requestState: sealState(state) } : {}) });

/**
 * Asks the client one request the way the request's era allows: pushed before 2026-07-28, an
 * input_required round on 2026-07-28 (answered by the retry's inputResponses).
 */
export async function ask(
  ctx: ServerContext,
  key: string,
  request: { method: 'elicitation/create' | 'sampling/createMessage'; params: Record<string, unknown> },
): Promise<unknown> {
  if (!isModern(ctx)) return ctx.mcpReq.send(request as never);
  const answer = ctx.mcpReq.inputResponses?.[key];
  if (answer !== undefined) return answer;
  throw new AskFirst(
    mrtr({
      [key]:
        request.method === 'elicitation/create'
          ? inputRequired.elicit(request.params as never)
          : inputRequired.createMessage(request.params as never),
    }),
  );
}
export class AskFirst extends Error {
  constructor(readonly result: InputRequiredResult) {
    super('input required');
  }
}
export const asking =
  (fn: (ctx: ServerContext) => Promise<CallToolResult>) =>
  async (_args: unknown, ctx: ServerContext): Promise<CallToolResult | InputRequiredResult> => {
    try {
      return await fn(ctx);
    } catch (error) {
      if (error instanceof AskFirst) return error.result;
      return text(`Not supported or failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  };
