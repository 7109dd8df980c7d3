import {
  completable,
  McpServer,
  ProtocolError,
  ResourceNotFoundError,
  ResourceTemplate,
  type ServerContext,
  type StandardSchemaWithJSON,
  UriTemplate,
  type Variables,
} from '@modelcontextprotocol/server';
import * as z from 'zod';
import { DomainFailure, fail } from '../engine/errors.js';
import type { PromptDefinition } from '../faces/prompt.js';
import type { ResourceDefinition } from '../faces/resource.js';
import type { ToolContext, ToolDefinition } from '../faces/tool.js';
import {
  domainToRpc,
  formatIssues,
  RpcCode,
  type RpcError,
  toRpcError,
  toToolErrorResult,
} from './error-mapping.js';

export const SERVER_NAME = 'workflowlookup';

export const INSTRUCTIONS =
  'workflowlookup keeps you on the rails of a multi-step workflow. Call workflow_list to find a workflow, ' +
  'then workflow_next with the completed step ids and your context to get one step at a time; check your ' +
  'output with workflow_validate before marking a step complete. Send back the completedSteps and context ' +
  'that workflow_next returns.';

export interface ToolRunner {
  tools: readonly ToolDefinition[];
  /** Runs a tool from raw params: validation, handler and error mapping in one place. */
  run(name: string, params: unknown, ctx?: ToolContext): Promise<{ result: unknown } | { error: RpcError }>;
}

export function createToolRunner(tools: readonly ToolDefinition[], log: (line: string) => void): ToolRunner {
  const byName = new Map(tools.map((t) => [t.name, t]));
  return {
    tools,
    async run(name, params, ctx = {}) {
      const tool = byName.get(name);
      if (tool === undefined) {
        return {
          error: { code: RpcCode.MethodNotFound, message: 'Method not found', data: { method: name } },
        };
      }
      try {
        // Seed 001 sends `"params": null` for tools without arguments.
        const parsed = tool.inputSchema.safeParse(params ?? {});
        if (!parsed.success) {
          fail({
            code: 'invalid_params',
            message: 'Invalid params',
            details: formatIssues(parsed.error.issues),
          });
        }
        return { result: await tool.handler(parsed.data, ctx) };
      } catch (error) {
        return { error: toRpcError(error, log) };
      }
    },
  };
}

/**
 * Publishes a zod schema's JSON Schema to `tools/list` without letting the SDK validate against it:
 * inputs are validated once, by the tool runner, so `tools/call` and direct calls fail the same way;
 * outputs are produced by handlers typed against the same schema (and checked in the tests), and
 * re-validating a 1,000-entry list on every call was the largest cost of `workflow_list`.
 */
function publishOnly(schema: z.ZodType): StandardSchemaWithJSON {
  const { jsonSchema } = (schema as unknown as StandardSchemaWithJSON)['~standard'];
  // tools/list repeats `$schema` in every input and output schema; 2020-12 is the MCP default anyway.
  const lean =
    (convert: (o: Parameters<typeof jsonSchema.input>[0]) => Record<string, unknown>) =>
    (options: Parameters<typeof jsonSchema.input>[0]) => {
      const { $schema: _drop, ...rest } = convert(options);
      return rest;
    };
  return {
    '~standard': {
      version: 1,
      vendor: 'workflowlookup',
      validate: (value: unknown) => ({ value }),
      jsonSchema: { input: lean(jsonSchema.input), output: lean(jsonSchema.output) },
    },
  };
}

/** Text copies of results the faces hand out repeatedly (e.g. the cached workflow list). */
const textCache = new WeakMap<object, string>();
function textOf(result: Record<string, unknown>): string {
  let text = textCache.get(result);
  if (text === undefined) {
    text = JSON.stringify(result);
    textCache.set(result, text);
  }
  return text;
}

const NOT_FOUND = new Set([
  'execution_not_found',
  'workflow_not_found',
  'workflow_invalid',
  'step_not_found',
]);

/** Reads a resource; unknown ids become resource-not-found, other domain errors their JSON-RPC error. */
async function readResource(resource: ResourceDefinition, uri: URL, variables: Record<string, string>) {
  try {
    const value = await resource.read(variables, uri);
    const mimeType = resource.mimeType ?? 'application/json';
    const text = mimeType === 'application/json' ? JSON.stringify(value, null, 2) : String(value);
    return { contents: [{ uri: uri.href, mimeType, text }] };
  } catch (error) {
    if (!(error instanceof DomainFailure)) throw error;
    if (NOT_FOUND.has(error.error.code)) {
      throw new ResourceNotFoundError(uri.href, `Resource not found: ${uri.href} (${error.message})`);
    }
    const rpc = domainToRpc(error.error);
    throw new ProtocolError(rpc.code, rpc.message, rpc.data);
  }
}

/**
 * The SDK matches `{?a,b}` only when every query parameter is present, in order. This template
 * matches the path part with the SDK and reads any subset of the declared query parameters, in any
 * order; path variables never swallow a query string.
 */
class QueryTolerantTemplate extends UriTemplate {
  private readonly path: UriTemplate;
  private readonly queryNames: string[];

  constructor(template: string) {
    super(template);
    const query = /\{\?([^}]*)\}$/.exec(template);
    this.queryNames = query?.[1]?.split(',').map((n) => n.trim()) ?? [];
    this.path = new UriTemplate(query ? template.slice(0, query.index) : template);
  }

  override match(uri: string): Variables | null {
    const q = uri.indexOf('?');
    const vars = this.path.match(q === -1 ? uri : uri.slice(0, q));
    if (vars === null) return null;
    const params = new URLSearchParams(q === -1 ? '' : uri.slice(q + 1));
    for (const name of this.queryNames) {
      const value = params.get(name);
      if (value !== null) vars[name] = value;
    }
    return vars;
  }
}

function flatVariables(variables: Record<string, string | string[]>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(variables).map(([k, v]) => [k, Array.isArray(v) ? (v[0] ?? '') : v]),
  );
}

/** Elicitation, where the client declared it (push-style requests exist only before 2026-07-28). */
function toolContext(server: McpServer, ctx: ServerContext): ToolContext {
  const canElicit = server.server.getClientCapabilities()?.elicitation !== undefined;
  if (!canElicit) return {};
  return {
    confirm: async (message) => {
      const answer = await ctx.mcpReq.elicitInput({
        mode: 'form',
        message,
        requestedSchema: {
          type: 'object',
          properties: { confirm: { type: 'boolean', title: 'Confirm', description: message } },
          required: ['confirm'],
        },
      });
      return answer.action === 'accept' && answer.content?.confirm === true;
    },
  };
}

function registerPrompt(
  server: McpServer,
  prompt: PromptDefinition,
  workflowIds: (prefix: string) => Promise<string[]>,
) {
  const shape: Record<string, z.ZodType> = {};
  for (const arg of prompt.args) {
    const base = z.string().describe(arg.description);
    const field = arg.completeWorkflowId ? completable(base, (value: string) => workflowIds(value)) : base;
    shape[arg.name] = arg.required ? field : field.optional();
  }
  server.registerPrompt(
    prompt.name,
    {
      title: prompt.title,
      description: prompt.description,
      argsSchema: z.object(shape) as z.ZodObject<z.ZodRawShape>,
    },
    async (args: Record<string, unknown>) => {
      try {
        const messages = await prompt.render(args as Record<string, string | undefined>);
        return {
          description: prompt.description,
          messages: messages.map((m) =>
            m.kind === 'text'
              ? { role: 'user' as const, content: { type: 'text' as const, text: m.text } }
              : {
                  role: 'user' as const,
                  content: {
                    type: 'resource' as const,
                    resource: { uri: m.uri, mimeType: m.mimeType, text: m.text },
                  },
                },
          ),
        };
      } catch (error) {
        if (!(error instanceof DomainFailure)) throw error;
        const rpc = domainToRpc(error.error);
        throw new ProtocolError(rpc.code, rpc.message, rpc.data);
      }
    },
  );
}

export interface ServerParts {
  runner: ToolRunner;
  resources: readonly ResourceDefinition[];
  prompts: readonly PromptDefinition[];
  /** Workflow ids starting with a prefix, for prompt argument completion. */
  workflowIds: (prefix: string) => Promise<string[]>;
  version: string;
}

/** Builds the SDK server with every tool, resource and prompt registered. */
export function createMcpServer({
  runner,
  resources,
  prompts,
  workflowIds,
  version,
}: ServerParts): McpServer {
  const server = new McpServer(
    { name: SERVER_NAME, version, description: 'Workflow Orchestration System MCP Server' } as {
      name: string;
      version: string;
    },
    {
      capabilities: {
        tools: { listChanged: true },
        resources: { listChanged: true },
        ...(prompts.length > 0 ? { prompts: { listChanged: false } } : {}),
      },
      instructions: INSTRUCTIONS,
    },
  );
  for (const prompt of prompts) registerPrompt(server, prompt, workflowIds);
  for (const resource of resources) {
    const meta = {
      title: resource.title,
      description: resource.description,
      mimeType: resource.mimeType ?? 'application/json',
    };
    if (!resource.uri.includes('{')) {
      server.registerResource(resource.name, resource.uri, meta, (uri) => readResource(resource, uri, {}));
      continue;
    }
    const list = resource.list;
    const template = new ResourceTemplate(new QueryTolerantTemplate(resource.uri), {
      list: list ? async () => ({ resources: await list() }) : undefined,
      ...(resource.complete ? { complete: resource.complete } : {}),
    });
    server.registerResource(resource.name, template, meta, (uri, variables) =>
      readResource(resource, uri, flatVariables(variables as Record<string, string | string[]>)),
    );
  }
  for (const tool of runner.tools) {
    server.registerTool(
      tool.name,
      {
        title: tool.title,
        description: tool.description,
        inputSchema: publishOnly(tool.inputSchema),
        outputSchema: publishOnly(tool.outputSchema),
        annotations: { title: tool.title, ...tool.annotations },
      },
      async (args: unknown, ctx: ServerContext) => {
        const outcome = await runner.run(tool.name, args, toolContext(server, ctx));
        if ('error' in outcome) return toToolErrorResult(outcome.error);
        const structured = outcome.result as Record<string, unknown>;
        return { content: [{ type: 'text', text: textOf(structured) }], structuredContent: structured };
      },
    );
  }
  return server;
}
