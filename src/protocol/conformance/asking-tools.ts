// The fixture tools that ask the client (sampling, elicitation) before they answer, in either era.
import type { ServerContext } from '@modelcontextprotocol/server';
import * as z from 'zod';
import { answerText, ask, asking, elicitation } from './asking.js';
import { type FixtureTool, NO_ARGS, type PLAIN_TOOLS, text } from './kit.js';

/** Sampling and elicitation fixtures (pushed, or an input_required round on 2026-07-28). */
export function registerAskingTools(tool: FixtureTool): void {
  // --- asking the client ---
  tool(
    'test_sampling',
    'Asks the client to sample a message',
    z.object({ prompt: z.string().describe('The prompt to send to the LLM') }) as never,
    (async (args: { prompt: string }, ctx: ServerContext) =>
      asking(async () => {
        const answer = await ask(ctx, 'sample', {
          method: 'sampling/createMessage',
          params: {
            messages: [{ role: 'user', content: { type: 'text', text: args.prompt } }],
            maxTokens: 100,
          },
        });
        return text(`LLM response: ${answerText(answer, 'text') ?? 'No response'}`);
      })(args, ctx)) as never,
  );
  tool(
    'test_elicitation',
    'Asks the user for input',
    z.object({ message: z.string().describe('The message to show the user') }) as never,
    (async (args: { message: string }, ctx: ServerContext) =>
      asking(async () => {
        const answer = (await ask(ctx, 'response', {
          method: 'elicitation/create',
          params: {
            mode: 'form',
            ...elicitation(args.message, { response: { type: 'string', description: "User's response" } }, [
              'response',
            ]),
          },
        })) as { action?: string; content?: unknown };
        return text(
          `User response: action=${answer.action}, content=${JSON.stringify(answer.content ?? {})}`,
        );
      })(args, ctx)) as never,
  );
  const elicitTool = (
    name: (typeof PLAIN_TOOLS)[number],
    description: string,
    message: string,
    properties: Record<string, unknown>,
  ) =>
    tool(
      name,
      description,
      NO_ARGS,
      asking(async (ctx) => {
        const answer = (await ask(ctx, 'form', {
          method: 'elicitation/create',
          params: { mode: 'form', ...elicitation(message, properties, []) },
        })) as { action?: string; content?: unknown };
        return text(
          `Elicitation completed: action=${answer.action}, content=${JSON.stringify(answer.content ?? {})}`,
        );
      }),
    );
  elicitTool(
    'test_elicitation_sep1034_defaults',
    'Asks with a default for every primitive type (SEP-1034)',
    'Please review and update the form fields with defaults',
    {
      name: { type: 'string', description: 'User name', default: 'John Doe' },
      age: { type: 'integer', description: 'User age', default: 30 },
      score: { type: 'number', description: 'User score', default: 95.5 },
      status: {
        type: 'string',
        description: 'User status',
        enum: ['active', 'inactive', 'pending'],
        default: 'active',
      },
      verified: { type: 'boolean', description: 'Verification status', default: true },
    },
  );
  elicitTool(
    'test_elicitation_sep1330_enums',
    'Asks with all five enum forms (SEP-1330)',
    'Please select options from the enum fields',
    {
      untitledSingle: {
        type: 'string',
        description: 'Select one option',
        enum: ['option1', 'option2', 'option3'],
      },
      titledSingle: {
        type: 'string',
        description: 'Select one option with titles',
        oneOf: [
          { const: 'value1', title: 'First Option' },
          { const: 'value2', title: 'Second Option' },
          { const: 'value3', title: 'Third Option' },
        ],
      },
      legacyEnum: {
        type: 'string',
        description: 'Select one option (legacy)',
        enum: ['opt1', 'opt2', 'opt3'],
        enumNames: ['Option One', 'Option Two', 'Option Three'],
      },
      untitledMulti: {
        type: 'array',
        description: 'Select multiple options',
        minItems: 1,
        maxItems: 3,
        items: { type: 'string', enum: ['option1', 'option2', 'option3'] },
      },
      titledMulti: {
        type: 'array',
        description: 'Select multiple options with titles',
        minItems: 1,
        maxItems: 3,
        items: {
          anyOf: [
            { const: 'value1', title: 'First Choice' },
            { const: 'value2', title: 'Second Choice' },
            { const: 'value3', title: 'Third Choice' },
          ],
        },
      },
    },
  );
}
