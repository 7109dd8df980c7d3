import {
  type CallToolResult,
  CLIENT_CAPABILITIES_META_KEY,
  type InputRequiredResult,
  type McpServer,
  MissingRequiredClientCapabilityError,
  ProtocolError,
  ProtocolErrorCode,
  type ServerContext,
  type StandardSchemaWithJSON,
} from '@modelcontextprotocol/server';
import * as z from 'zod';
import type { ToolDefinition } from '../../faces/tool.js';
import { isModern } from '../client-requests.js';
import { requestHandler } from '../sdk-internals.js';
import { openState } from './asking.js';
import { registerAskingTools } from './asking-tools.js';
import { registerContentTools, registerSchemaTools } from './content-tools.js';
import { type FixtureHooks, PLAIN_TOOLS } from './kit.js';
import { registerFixturePrompts, registerFixtureResources } from './resources-prompts.js';
import { registerListChangeTools, registerRoundTripTools } from './round-trip-tools.js';
import { conformanceTaskTools } from './task-tools.js';

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

  // In this order: tools/list, resources/list and prompts/list show the fixtures as they are registered.
  registerContentTools(tool);
  registerAskingTools(tool);
  registerSchemaTools(tool);
  registerRoundTripTools(tool);
  registerListChangeTools(tool, hooks);
  registerFixtureResources(server);
  registerFixturePrompts(server);
  return tools;
}
