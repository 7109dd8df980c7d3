// The fixture tools that answer without asking the client: content of every kind, notifications during
// a call, and input schemas published exactly as written.
import * as z from 'zod';
import { type FixtureTool, NO_ARGS, PNG, rawSchema, sleep, text, WAV } from './kit.js';

/** greet, content of every kind (tools-call-*) and notifications during a call. */
export function registerContentTools(tool: FixtureTool): void {
  // A sync-only tool of the tasks scenarios: never a task.
  tool(
    'greet',
    'Returns Hello, {name}!',
    z.object({ name: z.string().max(200).default('World') }) as never,
    (async (args: { name: string }) => text(`Hello, ${args.name}!`)) as never,
  );

  // --- content of every kind (tools-call-*) ---
  tool('test_simple_text', 'Returns simple text', NO_ARGS, async () =>
    text('This is a simple text response for testing.'),
  );
  tool('test_image_content', 'Returns an image', NO_ARGS, async () => ({
    content: [{ type: 'image', data: PNG, mimeType: 'image/png' }],
  }));
  tool('test_audio_content', 'Returns audio', NO_ARGS, async () => ({
    content: [{ type: 'audio', data: WAV, mimeType: 'audio/wav' }],
  }));
  tool('test_embedded_resource', 'Returns an embedded resource', NO_ARGS, async () => ({
    content: [
      {
        type: 'resource',
        resource: {
          uri: 'test://embedded-resource',
          mimeType: 'text/plain',
          text: 'This is an embedded resource content.',
        },
      },
    ],
  }));
  tool('test_multiple_content_types', 'Returns text, an image and a resource', NO_ARGS, async () => ({
    content: [
      { type: 'text', text: 'Multiple content types test:' },
      { type: 'image', data: PNG, mimeType: 'image/png' },
      {
        type: 'resource',
        resource: {
          uri: 'test://mixed-content-resource',
          mimeType: 'application/json',
          text: JSON.stringify({ test: 'data', value: 123 }),
        },
      },
    ],
  }));
  tool('test_error_handling', 'Always reports a tool error', NO_ARGS, async () => ({
    isError: true,
    content: [{ type: 'text', text: 'This tool intentionally returns an error for testing' }],
  }));

  // --- notifications during a call ---
  tool('test_tool_with_logging', 'Logs three messages while it runs', NO_ARGS, async (_a, ctx) => {
    for (const [i, message] of [
      'Tool execution started',
      'Tool processing data',
      'Tool execution completed',
    ].entries()) {
      if (i > 0) await sleep(50, ctx.mcpReq.signal);
      await ctx.mcpReq.log('info', message);
    }
    return text('Tool with logging executed successfully');
  });
  tool('test_tool_with_progress', 'Reports progress 0, 50 and 100 of 100', NO_ARGS, async (_a, ctx) => {
    const progressToken = ctx.mcpReq._meta?.progressToken;
    for (const progress of [0, 50, 100]) {
      if (progress > 0) await sleep(50, ctx.mcpReq.signal);
      if (progressToken !== undefined) {
        await ctx.mcpReq.notify({
          method: 'notifications/progress',
          params: { progressToken, progress, total: 100, message: `Completed step ${progress} of 100` },
        });
      }
    }
    return text(String(progressToken ?? 'no progress token'));
  });
  tool(
    'test_reconnection',
    'Closes its SSE stream mid-call; the result follows the reconnection',
    NO_ARGS,
    async (_a, ctx) => {
      (ctx.http as { closeSSE?: () => void } | undefined)?.closeSSE?.();
      await sleep(100, ctx.mcpReq.signal);
      return text('Reconnection test completed successfully.');
    },
  );
  tool(
    'test_logging_tool',
    'Logs only when the request set a log level (2026-07-28)',
    NO_ARGS,
    async (_a, ctx) => {
      await ctx.mcpReq.log('info', 'Diagnostic trace logging activated');
      return text('Logging evaluated');
    },
  );
  tool(
    'test_streaming_elicitation',
    'Answers on its own stream, with no request of its own',
    NO_ARGS,
    async () => text('Streaming complete'),
  );
}

/** The JSON Schema 2020-12 vocabulary the json-schema-2020-12 scenario looks for, kept verbatim. */
const SCHEMA_2020_12 = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  $defs: {
    address: {
      $anchor: 'addressDef',
      type: 'object',
      properties: { street: { type: 'string' }, city: { type: 'string' } },
    },
  },
  properties: {
    name: { type: 'string' },
    address: { $ref: '#/$defs/address' },
    contactMethod: { type: 'string', enum: ['phone', 'email'] },
    phone: { type: 'string' },
    email: { type: 'string' },
  },
  allOf: [{ anyOf: [{ required: ['phone'] }, { required: ['email'] }] }],
  if: { properties: { contactMethod: { const: 'phone' } }, required: ['contactMethod'] },
  // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then/else keyword; never awaited
  then: { required: ['phone'] },
  else: { required: ['email'] },
  additionalProperties: false,
};

/** Tools whose input schemas are published as written (SEP-1613, SEP-2106, SEP-2243). */
export function registerSchemaTools(tool: FixtureTool): void {
  // --- schemas published as written ---
  tool(
    'json_schema_2020_12_tool',
    'Tool with JSON Schema 2020-12 features (SEP-1613, SEP-2106)',
    rawSchema(SCHEMA_2020_12),
    async (args) => text(`JSON Schema 2020-12 tool called with: ${JSON.stringify(args)}`),
  );
  tool(
    'test_custom_headers',
    'Mirrors its region argument into the Mcp-Param-Region header (SEP-2243)',
    rawSchema({
      type: 'object',
      properties: { region: { type: 'string', description: 'A region', 'x-mcp-header': 'Region' } },
      required: ['region'],
    }),
    async (args: { region?: unknown }) => text(`region: ${String(args.region)}`),
  );
}
