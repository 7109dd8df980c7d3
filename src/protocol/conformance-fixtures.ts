import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import {
  type CallToolResult,
  CLIENT_CAPABILITIES_META_KEY,
  type InputRequest,
  type InputRequiredResult,
  inputRequired,
  type McpServer,
  MissingRequiredClientCapabilityError,
  ProtocolError,
  ProtocolErrorCode,
  ResourceTemplate,
  type ServerContext,
  type StandardSchemaWithJSON,
} from '@modelcontextprotocol/server';
import * as z from 'zod';
import { DomainFailure, fail } from '../engine/errors.js';
import { annotate, defineTool, type ToolDefinition } from '../faces/tool.js';
import { isModern } from './client-requests.js';
import { requestHandler } from './sdk-internals.js';

// The reference fixtures of the official MCP conformance suite (@modelcontextprotocol/conformance),
// served by `serve --http --conformance-fixtures` only, never by default: the tools, prompts and
// resources its scenarios call by name, with the behaviour each scenario's description asks for.
// They sit beside ours so that every scenario of both protocol eras exercises this server's
// protocol layer (rules, transports, tasks); they know nothing of workflows.

/** What createApp takes to serve the fixtures (AppOptions.conformanceFixtures). */
export interface ConformanceFixtures {
  /** The tool group the task-backed fixtures are listed in. */
  group: string;
  /** The fixtures of the tasks extension, run by our task machinery. */
  tools: ToolDefinition[];
  /** The names of the other fixture tools (those `register` adds). */
  plainTools: readonly string[];
  /** Registers the other fixtures on one SDK server; returns the tool names it listed. */
  register(server: McpServer, hooks: FixtureHooks): string[];
}

export function conformanceFixtures(): ConformanceFixtures {
  return {
    group: 'conformance',
    tools: conformanceTaskTools(),
    plainTools: PLAIN_TOOLS,
    register: registerConformanceFixtures,
  };
}

/** The plain fixture tools, by the names the suite's scenarios call. */
const PLAIN_TOOLS = [
  'greet',
  'test_simple_text',
  'test_image_content',
  'test_audio_content',
  'test_embedded_resource',
  'test_multiple_content_types',
  'test_error_handling',
  'test_tool_with_logging',
  'test_tool_with_progress',
  'test_reconnection',
  'test_logging_tool',
  'test_streaming_elicitation',
  'test_sampling',
  'test_elicitation',
  'test_elicitation_sep1034_defaults',
  'test_elicitation_sep1330_enums',
  'json_schema_2020_12_tool',
  'test_custom_headers',
  'test_missing_capability',
  'test_input_required_result_elicitation',
  'test_input_required_result_sampling',
  'test_input_required_result_list_roots',
  'test_input_required_result_request_state',
  'test_input_required_result_multiple_inputs',
  'test_input_required_result_multi_round',
  'test_input_required_result_tampered_state',
  'test_input_required_result_capabilities',
  'test_trigger_tool_change',
  'test_trigger_prompt_change',
] as const;

/** A 1x1 red PNG and a minimal WAV, as the suite's reference server sends them. */
const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
const WAV = 'UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=';

const text = (value: string): CallToolResult => ({ content: [{ type: 'text', text: value }] });
const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });

/** A JSON Schema published exactly as written (the SDK neither rewrites nor validates it). */
function rawSchema(json: Record<string, unknown>): StandardSchemaWithJSON {
  return {
    '~standard': {
      version: 1,
      vendor: 'workflowlookup-conformance',
      validate: (value: unknown) => ({ value }),
      jsonSchema: { input: () => json, output: () => json },
    },
  } as StandardSchemaWithJSON;
}

const NO_ARGS = z.object({});

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

const elicitation = (message: string, properties: Record<string, unknown>, required: string[]) => ({
  message,
  requestedSchema: { type: 'object' as const, properties, required },
});
const askName = (message: string) =>
  inputRequired.elicit(elicitation(message, { name: { type: 'string' } }, ['name']) as never);

/** A text field of an accepted elicitation answer, or of a sampling result's content. */
function answerText(answer: unknown, field: string): string | undefined {
  const a = answer as { content?: Record<string, unknown> } | undefined;
  const value = a?.content?.[field] ?? (a?.content as { text?: unknown } | undefined)?.text;
  return typeof value === 'string' ? value : undefined;
}

/** requestState the client cannot forge: HMAC-signed with a key of this process. */
const STATE_KEY = randomBytes(32);
function sealState(state: Record<string, unknown>): string {
  const body = Buffer.from(JSON.stringify(state)).toString('base64url');
  return `${body}.${createHmac('sha256', STATE_KEY).update(body).digest('base64url')}`;
}
function openState(sealed: unknown): Record<string, unknown> | undefined {
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

const mrtr = (
  inputRequests: Record<string, InputRequest>,
  state?: Record<string, unknown>,
): InputRequiredResult =>
  inputRequired({ inputRequests, ...(state ? { requestState: sealState(state) } : {}) });

/**
 * Asks the client one request the way the request's era allows: pushed before 2026-07-28, an
 * input_required round on 2026-07-28 (answered by the retry's inputResponses).
 */
async function ask(
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
class AskFirst extends Error {
  constructor(readonly result: InputRequiredResult) {
    super('input required');
  }
}
const asking =
  (fn: (ctx: ServerContext) => Promise<CallToolResult>) =>
  async (_args: unknown, ctx: ServerContext): Promise<CallToolResult | InputRequiredResult> => {
    try {
      return await fn(ctx);
    } catch (error) {
      if (error instanceof AskFirst) return error.result;
      return text(`Not supported or failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  };

/**
 * The SDK turns anything a tool handler throws into a tool error result; two fixtures must answer
 * with a JSON-RPC error instead, so they are checked here, in front of the SDK's tools/call.
 */
function preflight(server: McpServer): void {
  const sdkCall = requestHandler(server.server, 'tools/call');
  if (sdkCall === undefined) return;
  server.server.setRequestHandler(
    'tools/call',
    { params: z.looseObject({ name: z.string() }) },
    async (params, ctx) => {
      if (params.name === 'test_missing_capability' && isModern(ctx)) {
        const declared = (ctx.mcpReq.envelope?.[CLIENT_CAPABILITIES_META_KEY as never] ?? {}) as {
          sampling?: unknown;
        };
        if (declared.sampling === undefined) {
          throw new MissingRequiredClientCapabilityError({ requiredCapabilities: { sampling: {} } });
        }
      }
      if (params.name === 'test_input_required_result_tampered_state') {
        const sealed = ctx.mcpReq.requestState();
        if (sealed !== undefined && openState(sealed) === undefined) {
          throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'requestState integrity check failed');
        }
      }
      return sdkCall(params, ctx) as never;
    },
  );
}

/**
 * resources/subscribe (2025 era) accepts only the server's own resources; the fixtures' `test://` ones
 * are subscribed here (the resources-subscribe scenarios use test://watched-resource).
 */
function subscribable(server: McpServer): void {
  for (const method of ['resources/subscribe', 'resources/unsubscribe'] as const) {
    const ours = requestHandler(server.server, method);
    if (ours === undefined) continue;
    server.server.setRequestHandler(method, async (request, ctx) => {
      if (request.params.uri.startsWith('test://')) return {};
      return ours(request.params, ctx) as never;
    });
  }
}

export interface FixtureHooks {
  /** Tells every connected client (and 2026-07-28 listen stream) that the tool or prompt list changed. */
  listChanged(kind: 'tools' | 'prompts'): void;
}

/**
 * Registers the suite's plain fixtures (content, logging, progress, errors, elicitation and sampling,
 * the 2026-07-28 multi round-trip tools, resources and prompts) on one SDK server; returns the names
 * of the tools, which tools/list shows beside ours.
 */
export function registerConformanceFixtures(server: McpServer, hooks: FixtureHooks): string[] {
  const tools: string[] = [];
  preflight(server);
  subscribable(server);
  const tool = (
    name: (typeof PLAIN_TOOLS)[number],
    description: string,
    schema: StandardSchemaWithJSON,
    handler: (args: never, ctx: ServerContext) => Promise<CallToolResult | InputRequiredResult>,
  ) => {
    tools.push(name);
    server.registerTool(name, { description, inputSchema: schema }, handler as never);
  };

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

  // --- 2026-07-28: capabilities and multi round-trip requests (SEP-2575, SEP-2322) ---
  // Refused before it runs when the request did not declare sampling (see preflight).
  tool(
    'test_missing_capability',
    'Needs the sampling capability declared on the request',
    NO_ARGS,
    async () => text('Success'),
  );
  const responses = (ctx: ServerContext) => ctx.mcpReq.inputResponses ?? {};
  tool('test_input_required_result_elicitation', 'MRTR: asks for a name', NO_ARGS, async (_a, ctx) => {
    const answer = responses(ctx).user_name;
    if (answer === undefined) return mrtr({ user_name: askName('What is your name?') });
    return text(`Hello, ${answerText(answer, 'name') ?? 'stranger'}!`);
  });
  tool('test_input_required_result_sampling', 'MRTR: asks the client to sample', NO_ARGS, async (_a, ctx) => {
    const answer = responses(ctx).sample_request;
    if (answer === undefined) {
      return mrtr({
        sample_request: inputRequired.createMessage({
          messages: [{ role: 'user', content: { type: 'text', text: 'What is the capital of France?' } }],
          maxTokens: 100,
        }),
      });
    }
    return text(`Sampling result: ${answerText(answer, 'text') ?? 'no response'}`);
  });
  tool(
    'test_input_required_result_list_roots',
    'MRTR: asks for the client roots',
    NO_ARGS,
    async (_a, ctx) => {
      const answer = responses(ctx).roots_request as { roots?: unknown } | undefined;
      if (answer === undefined) return mrtr({ roots_request: inputRequired.listRoots() });
      return text(`Found ${Array.isArray(answer.roots) ? answer.roots.length : 0} root(s)`);
    },
  );
  const confirmRequest = () =>
    inputRequired.elicit(elicitation('Please confirm', { ok: { type: 'boolean' } }, ['ok']) as never);
  tool(
    'test_input_required_result_request_state',
    'MRTR: round-trips requestState',
    NO_ARGS,
    async (_a, ctx) => {
      const state = openState(ctx.mcpReq.requestState());
      const ok = (responses(ctx).confirm as { content?: { ok?: unknown } } | undefined)?.content?.ok;
      if (state?.kind === 'request-state' && ok === true) return text('state-ok: requestState validated');
      return mrtr(
        { confirm: confirmRequest() },
        { kind: 'request-state', nonce: randomBytes(8).toString('hex') },
      );
    },
  );
  tool(
    'test_input_required_result_multiple_inputs',
    'MRTR: asks three requests at once',
    NO_ARGS,
    async (_a, ctx) => {
      const state = openState(ctx.mcpReq.requestState());
      const r = responses(ctx);
      if (state?.kind === 'multiple-inputs' && r.user_name && r.greeting && r.client_roots) {
        const roots = (r.client_roots as { roots?: unknown }).roots;
        return text(
          `Name: ${answerText(r.user_name, 'name')}; Greeting: ${answerText(r.greeting, 'text') ?? 'Hello there!'}; Roots: ${Array.isArray(roots) ? roots.length : 0}`,
        );
      }
      return mrtr(
        {
          user_name: askName('What is your name?'),
          greeting: inputRequired.createMessage({
            messages: [{ role: 'user', content: { type: 'text', text: 'Generate a greeting' } }],
            maxTokens: 50,
          }),
          client_roots: inputRequired.listRoots(),
        },
        { kind: 'multiple-inputs', nonce: randomBytes(8).toString('hex') },
      );
    },
  );
  tool(
    'test_input_required_result_multi_round',
    'MRTR: two rounds, state carried between them',
    NO_ARGS,
    async (_a, ctx) => {
      const state = openState(ctx.mcpReq.requestState());
      const r = responses(ctx);
      if (state?.round === 1 && r.step1 !== undefined) {
        return mrtr(
          {
            step2: inputRequired.elicit(
              elicitation('Step 2: What is your favorite color?', { color: { type: 'string' } }, [
                'color',
              ]) as never,
            ),
          },
          { round: 2, name: answerText(r.step1, 'name') ?? 'friend' },
        );
      }
      if (state?.round === 2 && r.step2 !== undefined) {
        return text(
          `Multi-round complete for ${String(state.name)} who likes ${answerText(r.step2, 'color')}`,
        );
      }
      return mrtr({ step1: askName('Step 1: What is your name?') }, { round: 1 });
    },
  );
  // A requestState it did not sign is refused before it runs (see preflight).
  tool(
    'test_input_required_result_tampered_state',
    'MRTR: refuses a requestState it did not sign',
    NO_ARGS,
    async (_a, ctx) => {
      const state = openState(ctx.mcpReq.requestState());
      if (state?.kind === 'tamper-test' && responses(ctx).confirm !== undefined) {
        return text('integrity-ok: state verified');
      }
      return mrtr(
        { confirm: confirmRequest() },
        { kind: 'tamper-test', nonce: randomBytes(8).toString('hex') },
      );
    },
  );
  tool(
    'test_input_required_result_capabilities',
    'MRTR: asks only what the request declared',
    NO_ARGS,
    async (_a, ctx) => {
      const declared = (ctx.mcpReq.envelope?.[CLIENT_CAPABILITIES_META_KEY as never] ?? {}) as {
        elicitation?: unknown;
        sampling?: unknown;
      };
      const given = Object.keys(responses(ctx));
      if (given.length > 0) return text(`capabilities-ok: received ${given.join(',')}`);
      const requests: Record<string, InputRequest> = {};
      if (declared.elicitation !== undefined) {
        requests.elicit_input = inputRequired.elicit(
          elicitation('Elicitation input', { value: { type: 'string' } }, ['value']) as never,
        );
      }
      if (declared.sampling !== undefined) {
        requests.sample_input = inputRequired.createMessage({
          messages: [{ role: 'user', content: { type: 'text', text: 'Sample request' } }],
          maxTokens: 50,
        });
      }
      if (Object.keys(requests).length === 0) return text('No supported capabilities declared');
      return mrtr(requests, { kind: 'capabilities-test' });
    },
  );
  tool('test_trigger_tool_change', 'Announces that the tool list changed', NO_ARGS, async () => {
    hooks.listChanged('tools');
    return text('Mutation triggered');
  });
  tool('test_trigger_prompt_change', 'Announces that the prompt list changed', NO_ARGS, async () => {
    hooks.listChanged('prompts');
    return text('Mutation triggered');
  });

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
  return tools;
}

const taskCancelled = (message: string): never => {
  throw new DomainFailure({ code: 'task_cancelled', message });
};

/**
 * The fixtures of the tasks extension (SEP-2663), as our own task tools so that our task machinery
 * (tasks/get, tasks/update, tasks/cancel, input requests) is what the scenarios exercise.
 */
export function conformanceTaskTools(): ToolDefinition[] {
  const FIXTURE = annotate({ changes: 'nothing', repeatable: true, external: false });
  const Message = z.object({ message: z.string() });
  return [
    defineTool({
      name: 'slow_compute',
      title: 'Slow compute (conformance fixture)',
      description: 'Sleeps `seconds` seconds, then answers; as a task when the client declared tasks.',
      inputSchema: z.strictObject({
        seconds: z.number().min(0).max(60).default(1),
        label: z.string().max(200).optional(),
      }),
      outputSchema: Message,
      annotations: FIXTURE,
      task: { support: 'optional' },
      handler: async ({ seconds, label }, ctx) => {
        const signal = ctx.task?.signal ?? ctx.caller.signal;
        await sleep(seconds * 1000, signal).catch(() => taskCancelled('slow_compute was cancelled'));
        return { message: `Computed ${label ?? 'a result'} in ${seconds} second(s)` };
      },
    }),
    defineTool({
      name: 'failing_job',
      title: 'Failing job (conformance fixture)',
      description: 'Runs only as a task and ends with a tool error after about a second.',
      inputSchema: z.strictObject({}),
      outputSchema: Message,
      annotations: FIXTURE,
      task: { support: 'required' },
      handler: async (_input, ctx) => {
        await sleep(1000, ctx.task?.signal).catch(() => taskCancelled('failing_job was cancelled'));
        return fail({
          code: 'invalid_params',
          message: 'Invalid params',
          details: 'failing_job always fails',
        });
      },
    }),
    defineTool({
      name: 'protocol_error_job',
      title: 'Protocol error job (conformance fixture)',
      description: 'Runs as a task and fails inside the server (a protocol-level error, not a tool error).',
      inputSchema: z.strictObject({}),
      outputSchema: Message,
      annotations: FIXTURE,
      task: { support: 'optional' },
      handler: async () => {
        throw new Error('protocol_error_job failed inside the server, as it always does');
      },
    }),
    defineTool({
      name: 'confirm_delete',
      title: 'Confirm delete (conformance fixture)',
      description: 'A task that asks the user to confirm (elicitation), then completes.',
      inputSchema: z.strictObject({ filename: z.string().max(200).optional() }),
      outputSchema: Message,
      annotations: FIXTURE,
      task: { support: 'optional' },
      handler: async ({ filename }, ctx) => {
        const answer = ctx.task
          ? await ctx.task.ask('confirm', {
              method: 'elicitation/create',
              params: elicitation(`Delete ${filename ?? 'the file'}?`, { confirm: { type: 'boolean' } }, [
                'confirm',
              ]),
            })
          : { action: 'accept', content: { confirm: true } };
        return { message: `confirm_delete: action=${String(answer.action)}` };
      },
    }),
    defineTool({
      name: 'multi_input',
      title: 'Multiple inputs (conformance fixture)',
      description: 'A task that asks two questions at once, then completes.',
      inputSchema: z.strictObject({}),
      outputSchema: Message,
      annotations: FIXTURE,
      task: { support: 'optional' },
      handler: async (_input, ctx) => {
        const task = ctx.task;
        if (task === undefined) return { message: 'multi_input: nothing to ask without a task' };
        const question = (message: string) => ({
          method: 'elicitation/create' as const,
          params: elicitation(message, { value: { type: 'string' } }, ['value']),
        });
        const [first, second] = await Promise.all([
          task.ask('first', question('First value?')),
          task.ask('second', question('Second value?')),
        ]);
        return { message: `multi_input: ${answerText(first, 'value')}, ${answerText(second, 'value')}` };
      },
    }),
    defineTool({
      name: 'test_tool_with_task',
      title: 'MRTR, then a task (conformance fixture)',
      description:
        'Asks for a name in an input_required round, then runs as a task whose result names it (2026-07-28).',
      inputSchema: z.strictObject({ user_name: z.string().max(200).optional() }),
      outputSchema: Message,
      annotations: FIXTURE,
      task: {
        support: 'required',
        admit: (_input, { inputResponses, requireInput }) => {
          const name = answerText(inputResponses?.user_name, 'name');
          if (name === undefined) {
            requireInput?.({
              user_name: {
                method: 'elicitation/create',
                params: elicitation('What is your name?', { name: { type: 'string' } }, ['name']),
              },
            });
          }
          return { summary: 'greeting', arguments: { user_name: name ?? 'stranger' } };
        },
      },
      handler: ({ user_name }) => ({ message: `Hello from the task, ${user_name ?? 'stranger'}!` }),
    }),
  ];
}
