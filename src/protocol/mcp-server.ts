import { McpServer, type StandardSchemaWithJSON } from '@modelcontextprotocol/server';
import type * as z from 'zod';
import type { ToolDefinition } from '../faces/tool.js';
import { formatIssues, RpcCode, type RpcError, toRpcError, toToolErrorResult } from './error-mapping.js';

export const SERVER_NAME = 'workflowlookup';

export const INSTRUCTIONS =
  'workflowlookup keeps you on the rails of a multi-step workflow. Call workflow_list to find a workflow, ' +
  'then workflow_next with the completed step ids and your context to get one step at a time; check your ' +
  'output with workflow_validate before marking a step complete. Send back the completedSteps and context ' +
  'that workflow_next returns.';

export interface ToolRunner {
  tools: readonly ToolDefinition[];
  /** Runs a tool from raw params: validation, handler and error mapping in one place. */
  run(name: string, params: unknown): Promise<{ result: unknown } | { error: RpcError }>;
}

export function createToolRunner(tools: readonly ToolDefinition[], log: (line: string) => void): ToolRunner {
  const byName = new Map(tools.map((t) => [t.name, t]));
  return {
    tools,
    async run(name, params) {
      const tool = byName.get(name);
      if (tool === undefined) {
        return {
          error: { code: RpcCode.MethodNotFound, message: 'Method not found', data: { method: name } },
        };
      }
      // Seed 001 sends `"params": null` for tools without arguments.
      const parsed = tool.inputSchema.safeParse(params ?? {});
      if (!parsed.success) {
        return {
          error: {
            code: RpcCode.InvalidParams,
            message: 'Invalid params',
            data: { details: formatIssues(parsed.error.issues) },
          },
        };
      }
      try {
        return { result: await tool.handler(parsed.data) };
      } catch (error) {
        const rpc = toRpcError(error);
        if (rpc.code === RpcCode.InternalError)
          log(`tool ${name} failed: ${(error as Error)?.stack ?? String(error)}`);
        return { error: rpc };
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
  const standard = (schema as unknown as StandardSchemaWithJSON)['~standard'];
  return {
    '~standard': {
      version: 1,
      vendor: 'workflowlookup',
      validate: (value: unknown) => ({ value }),
      jsonSchema: standard.jsonSchema,
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

/** Builds the SDK server with every tool registered for `tools/call`. */
export function createMcpServer(runner: ToolRunner, version: string): McpServer {
  const server = new McpServer(
    { name: SERVER_NAME, version, description: 'Workflow Orchestration System MCP Server' } as {
      name: string;
      version: string;
    },
    { capabilities: { tools: { listChanged: true } }, instructions: INSTRUCTIONS },
  );
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
      async (args: unknown) => {
        const outcome = await runner.run(tool.name, args);
        if ('error' in outcome) return toToolErrorResult(outcome.error);
        const structured = outcome.result as Record<string, unknown>;
        return { content: [{ type: 'text', text: textOf(structured) }], structuredContent: structured };
      },
    );
  }
  return server;
}
