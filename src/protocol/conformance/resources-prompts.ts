// The fixture resources and prompts the suite reads by name (test:// resources, templates, prompts
// with arguments and embedded content).
import { inputRequired, type McpServer, ResourceTemplate } from '@modelcontextprotocol/server';
import * as z from 'zod';
import { answerText, elicitation, mrtr } from './asking.js';
import { PNG } from './kit.js';

/** The test:// resources and the resource template. */
export function registerFixtureResources(server: McpServer): void {
  // --- resources ---
  server.registerResource(
    'static-text',
    'test://static-text',
    { title: 'Static Text Resource', description: 'A static text resource', mimeType: 'text/plain' },
    async () => ({
      contents: [
        {
          uri: 'test://static-text',
          mimeType: 'text/plain',
          text: 'This is the content of the static text resource.',
        },
      ],
    }),
  );
  server.registerResource(
    'static-binary',
    'test://static-binary',
    { title: 'Static Binary Resource', description: 'A static image', mimeType: 'image/png' },
    async () => ({ contents: [{ uri: 'test://static-binary', mimeType: 'image/png', blob: PNG }] }),
  );
  server.registerResource(
    'template',
    new ResourceTemplate('test://template/{id}/data', { list: undefined }),
    { title: 'Resource Template', description: 'Substitutes its id', mimeType: 'application/json' },
    async (uri, variables) => ({
      contents: [
        {
          uri: uri.href,
          mimeType: 'application/json',
          text: JSON.stringify({
            id: variables.id,
            templateTest: true,
            data: `Data for ID: ${variables.id}`,
          }),
        },
      ],
    }),
  );
  server.registerResource(
    'watched-resource',
    'test://watched-resource',
    { title: 'Watched Resource', description: 'A resource clients may subscribe to', mimeType: 'text/plain' },
    async () => ({
      contents: [
        { uri: 'test://watched-resource', mimeType: 'text/plain', text: 'Watched resource content' },
      ],
    }),
  );
}

/** The fixture prompts. */
export function registerFixturePrompts(server: McpServer): void {
  // --- prompts ---
  server.registerPrompt(
    'test_simple_prompt',
    { title: 'Simple Test Prompt', description: 'No arguments' },
    () => ({
      messages: [{ role: 'user', content: { type: 'text', text: 'This is a simple prompt for testing.' } }],
    }),
  );
  server.registerPrompt(
    'test_prompt_with_arguments',
    {
      title: 'Prompt With Arguments',
      description: 'Two required arguments',
      argsSchema: z.object({
        arg1: z.string().describe('First test argument'),
        arg2: z.string().describe('Second test argument'),
      }),
    },
    ({ arg1, arg2 }) => ({
      messages: [
        {
          role: 'user',
          content: { type: 'text', text: `Prompt with arguments: arg1='${arg1}', arg2='${arg2}'` },
        },
      ],
    }),
  );
  server.registerPrompt(
    'test_prompt_with_embedded_resource',
    {
      title: 'Prompt With Embedded Resource',
      description: 'Embeds the resource it is given',
      argsSchema: z.object({ resourceUri: z.string().describe('URI of the resource to embed') }),
    },
    ({ resourceUri }) => ({
      messages: [
        {
          role: 'user',
          content: {
            type: 'resource',
            resource: {
              uri: resourceUri,
              mimeType: 'text/plain',
              text: 'Embedded resource content for testing.',
            },
          },
        },
        { role: 'user', content: { type: 'text', text: 'Please process the embedded resource above.' } },
      ],
    }),
  );
  server.registerPrompt(
    'test_prompt_with_image',
    { title: 'Prompt With Image', description: 'An image' },
    () => ({
      messages: [
        { role: 'user', content: { type: 'image', data: PNG, mimeType: 'image/png' } },
        { role: 'user', content: { type: 'text', text: 'Please analyze the image above.' } },
      ],
    }),
  );
  server.registerPrompt(
    'test_input_required_result_prompt',
    { title: 'MRTR prompt', description: 'Asks for context before it renders (2026-07-28)' },
    (ctx) => {
      const answer = ctx.mcpReq.inputResponses?.user_context;
      if (answer === undefined) {
        return mrtr({
          user_context: inputRequired.elicit(
            elicitation('What context should the prompt use?', { context: { type: 'string' } }, [
              'context',
            ]) as never,
          ),
        });
      }
      return {
        messages: [
          {
            role: 'user',
            content: { type: 'text', text: `Prompt with context: ${answerText(answer, 'context')}` },
          },
        ],
      };
    },
  );
}
