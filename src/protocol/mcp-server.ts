import {
  completable,
  McpServer,
  ProtocolError,
  ResourceNotFoundError,
  ResourceTemplate,
  type ServerContext,
  type StandardSchemaWithJSON,
  type UriTemplate,
} from '@modelcontextprotocol/server';
import * as z from 'zod';
import { DomainFailure, fail } from '../engine/errors.js';
import type { Caller } from '../executions/execution-model.js';
import type { PromptDefinition } from '../faces/prompt.js';
import type { ResourceDefinition } from '../faces/resource.js';
import type { ToolContext, ToolDefinition } from '../faces/tool.js';
import type { Logger } from '../telemetry/log.js';
import { type Metrics, NO_METRICS } from '../telemetry/metrics.js';
import { ATTR, failed, inSpan, tracingEnabled } from '../telemetry/trace.js';
import { canonicalArguments } from './aliases.js';
import {
  approvalAskerFor,
  confirmationFor,
  declaresExtension,
  InputRequiredSignal,
  isModernEnvelope,
  rootsFor,
} from './client-requests.js';
import {
  domainToRpc,
  formatIssues,
  RpcCode,
  type RpcError,
  toRpcError,
  toToolErrorResult,
} from './error-mapping.js';
import { DEFAULT_LIMITS, MAX_SUBSCRIBE_URI_CHARS, Quota } from './limits.js';
import { principalOf } from './principal.js';
import { flatVariables, ResourceIndex } from './resource-match.js';
import type { DirectCall, DirectHandler } from './rules.js';
import { hasScope, resourceScope } from './scopes.js';
import { requestHandler, withoutPrototypes } from './sdk-internals.js';
import { installTasks, type TaskDriver } from './tasks-protocol.js';
import { toolResult } from './tool-result.js';
import type { ToolSwitch } from './tool-switch.js';

export const SERVER_NAME = 'workflowlookup';

/** Where the sentence every connection gets sits among the tools' own (ToolDefinition.instructions). */
const ANSWERS_RANK = 70;

/**
 * The server instructions, for the tools this connection lists: each tool's own sentence (on its
 * definition), never one naming a tool the client cannot see in tools/list (unlisted tools stay
 * callable, and workflow_tools names them).
 */
export function instructionsFor(tools: ToolSwitch, definitions: readonly ToolDefinition[]): string {
  const listed = (name: string) => tools.listed(name);
  const sentences = [
    ...definitions.flatMap((t) => (t.instructions ? [t.instructions] : [])),
    {
      rank: ANSWERS_RANK,
      text: () =>
        "Answers of the execution, authoring and automation tools list in next the calls to make, ready to send (fill names what only you can supply); a failure's error.data.next is the call that fixes it.",
    },
  ].sort((a, b) => a.rank - b.rank);
  return [
    'workflowlookup keeps you on the rails of a multi-step workflow.',
    ...sentences.flatMap((s) => s.text(listed) ?? []),
  ].join(' ');
}

export interface ToolRunner {
  tools: readonly ToolDefinition[];
  /** Runs a tool from raw params: validation, handler and error mapping in one place. */
  run(name: string, params: unknown, ctx: ToolContext): Promise<{ result: unknown } | { error: RpcError }>;
}

export function createToolRunner(
  tools: readonly ToolDefinition[],
  log: Logger,
  /** The app's instruments (tool calls by outcome); default: nothing recorded. */
  metrics: Metrics = NO_METRICS,
): ToolRunner {
  const byName = new Map(tools.map((t) => [t.name, t]));
  const runTool = async (
    tool: ToolDefinition,
    params: unknown,
    ctx: ToolContext,
  ): Promise<{ result: unknown } | { error: RpcError }> => {
    try {
      // Seed 001 sends `"params": null` for tools without arguments.
      const parsed = tool.inputSchema.safeParse(canonicalArguments(tool, params ?? {}));
      if (!parsed.success) {
        fail({
          code: 'invalid_params',
          message: 'Invalid params',
          details: formatIssues(parsed.error.issues, schemaKeys(tool.inputSchema)),
        });
      }
      return { result: await tool.handler(parsed.data, ctx) };
    } catch (error) {
      if (error instanceof InputRequiredSignal) throw error;
      return { error: toRpcError(error, log) };
    }
  };
  return {
    tools,
    async run(name, params, ctx) {
      const tool = byName.get(name);
      if (tool === undefined) {
        return {
          error: { code: RpcCode.MethodNotFound, message: 'Method not found', data: { method: name } },
        };
      }
      const started = metrics.start();
      const attributes = tracingEnabled() ? toolAttributes(name, params, ctx) : {};
      const outcome = await inSpan(`tool ${name}`, attributes, async (span) => {
        const answer = await runTool(tool, params, ctx);
        if (span !== undefined && 'error' in answer) failed(span, answer.error.message);
        return answer;
      });
      metrics.toolCall(name, 'error' in outcome ? errorCodeOf(outcome.error) : undefined, started);
      return outcome;
    },
  };
}

/** What a tool span says of the call: ids only, never a token, an output or a secret. */
function toolAttributes(name: string, params: unknown, ctx: ToolContext) {
  const args = (params ?? {}) as Record<string, unknown>;
  const id = (value: unknown) => (typeof value === 'string' && value.length <= 200 ? value : undefined);
  return {
    [ATTR.tool]: name,
    [ATTR.principal]: ctx.caller.principal,
    [ATTR.workflow]: id(args.workflowId ?? args.workflow_id),
    [ATTR.execution]: id(args.execution_id ?? args.executionId),
  };
}

/** The structured error code of a failed call (`VALIDATION_FAILED`…), else its JSON-RPC code. */
function errorCodeOf(error: RpcError): string {
  const code = (error.data as { error_code?: unknown } | undefined)?.error_code;
  return typeof code === 'string' ? code : String(error.code);
}

/** The argument names a tool's input object accepts. */
function schemaKeys(schema: z.ZodType): string[] {
  const shape = (schema as unknown as { shape?: Record<string, unknown> }).shape;
  return shape ? Object.keys(shape) : [];
}

/**
 * Publishes a zod schema's JSON Schema to `tools/list` without letting the SDK validate against it:
 * inputs are validated once, by the tool runner, so `tools/call` and direct calls fail the same way;
 * outputs are produced by handlers typed against the same schema (and checked in the tests), and
 * re-validating a 1,000-entry list on every call was the largest cost of `workflow_list`.
 */
function publishOnly(schema: z.ZodType, compact = false): StandardSchemaWithJSON {
  const cache = compact ? publishedCompact : published;
  const known = cache.get(schema);
  if (known !== undefined) return known;
  const { jsonSchema } = (schema as unknown as StandardSchemaWithJSON)['~standard'];
  // tools/list repeats `$schema` in every input and output schema; 2020-12 is the MCP default anyway.
  // Converted once per schema and target, not once per server: a stateless HTTP request builds a
  // server, and converting the schemas again (for tools/list, the Mcp-Param header scan, the result's
  // projection) was a third of its cost. The SDK copies what it is given, never changes it.
  const lean = (convert: (o: Parameters<typeof jsonSchema.input>[0]) => Record<string, unknown>) => {
    const byTarget = new Map<string, Record<string, unknown>>();
    return (options: Parameters<typeof jsonSchema.input>[0]) => {
      const key = String(options?.target);
      let json = byTarget.get(key);
      if (json === undefined) {
        const { $schema: _drop, ...rest } = convert(options);
        json = (compact ? structureOnly(rest) : withoutNoise(rest)) as Record<string, unknown>;
        byTarget.set(key, json);
      }
      return json;
    };
  };
  const standard: StandardSchemaWithJSON = {
    '~standard': {
      version: 1,
      vendor: 'workflowlookup',
      validate: (value: unknown) => ({ value }),
      jsonSchema: { input: lean(jsonSchema.input), output: lean(jsonSchema.output) },
    },
  };
  cache.set(schema, standard);
  return standard;
}

/** The published form of each schema, built once (a tool's schemas live as long as the app). */
const published = new WeakMap<z.ZodType, StandardSchemaWithJSON>();
const publishedCompact = new WeakMap<z.ZodType, StandardSchemaWithJSON>();

/**
 * A schema without what zod emits that says nothing: `propertyNames: {type: "string"}` (every JSON key
 * is a string) and `additionalProperties: {}` (anything goes, the default).
 */
function withoutNoise(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(withoutNoise);
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'propertyNames') continue;
    if (
      key === 'additionalProperties' &&
      typeof value === 'object' &&
      value !== null &&
      Object.keys(value).length === 0
    )
      continue;
    out[key] =
      key === 'properties'
        ? Object.fromEntries(
            Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, withoutNoise(v)]),
          )
        : withoutNoise(value);
  }
  return out;
}

/** Keywords an output schema keeps: what a value is, never how a server checks what it receives. */
const STRUCTURE = new Set(['type', 'properties', 'items', 'required', 'enum', 'const', 'anyOf']);
/**
 * An output schema as published: its structure (types, required fields, enums) for the top-level fields
 * and the items of the lists every answer has, nested fields as their type only, without descriptions (the tool's
 * description and input schema give them) or limits. Seed 001 publishes output schemas in this form;
 * the zod schema stays the handlers' full contract.
 */
function structureOnly(schema: unknown, depth = 0, item = false): unknown {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return schema;
  const source = schema as Record<string, unknown>;
  // `X or null` reads as one schema whose type admits null.
  const options = source.anyOf;
  if (Array.isArray(options) && options.length === 2 && options.some((o) => o?.type === 'null')) {
    const other = structureOnly(
      options.find((o) => o?.type !== 'null'),
      depth,
      item,
    ) as Record<string, unknown>;
    if (typeof other.type === 'string') return { ...other, type: [other.type, 'null'] };
  }
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(source)) {
    if (!STRUCTURE.has(key)) continue;
    const expand = depth === 0 || (item && depth === 1);
    if (key === 'properties') {
      const fields = Object.entries(value as Record<string, unknown>);
      const required = new Set(Array.isArray(source.required) ? (source.required as string[]) : []);
      // Lists every answer has (workflows, next) show their items; optional ones only their type.
      if (expand && fields.length > 0)
        out.properties = Object.fromEntries(
          fields.map(([k, v]) => [
            k,
            depth === 0 && !required.has(k) ? typeOnly(v) : structureOnly(v, depth + 1),
          ]),
        );
    } else if (key === 'required') {
      if (expand) out.required = value;
    } else if (key === 'items') out.items = structureOnly(value, depth, true);
    else if (key === 'anyOf') out.anyOf = (value as unknown[]).map((v) => structureOnly(v, depth, item));
    else out[key] = value;
  }
  return out;
}

/** A field as its type alone (a list keeps its items' type). */
function typeOnly(schema: unknown): unknown {
  const compact = structureOnly(schema, 2) as Record<string, unknown>;
  return compact.items === undefined ? compact : { ...compact, items: structureOnly(compact.items, 2) };
}

const NOT_FOUND = new Set([
  'execution_not_found',
  'workflow_not_found',
  'workflow_invalid',
  'step_not_found',
]);

/** The scopes the transport authenticated the request with; undefined when it authenticates nobody. */
const scopesOf = (ctx: ServerContext): readonly string[] | undefined => ctx.http?.authInfo?.scopes;

/** Whether the caller may read `resource` (stdio, and HTTP without authentication, may read all). */
function mayRead(ctx: ServerContext, resource: ResourceDefinition): boolean {
  const scopes = scopesOf(ctx);
  return scopes === undefined || hasScope(scopes, resourceScope(resource.name));
}

/**
 * Refuses a read the caller's scopes do not allow. The HTTP transport answers 403 before this, with
 * the same resolution; this check is made on the resource the SDK itself resolved, whatever the URI's
 * spelling, so no spelling can get past it.
 */
function requireScope(ctx: ServerContext, resource: ResourceDefinition): void {
  if (mayRead(ctx, resource)) return;
  const needed = resourceScope(resource.name);
  throw new ProtocolError(RpcCode.SecurityError, 'Insufficient scope', {
    details: `reading ${resource.name} needs the "${needed}" scope`,
    required_scope: needed,
  });
}

/** Reads a resource; unknown ids become resource-not-found, other domain errors their JSON-RPC error. */
async function readResource(
  resource: ResourceDefinition,
  uri: URL,
  variables: Record<string, string>,
  caller: Caller,
) {
  try {
    const value = await resource.read(variables, uri, caller);
    const mimeType = resource.mimeType ?? 'application/json';
    // Compact: agents pay for every byte they read, and indentation was a third of them.
    const text = mimeType === 'application/json' ? JSON.stringify(value) : String(value);
    return {
      contents: [{ uri: uri.href, mimeType, text, ...(resource.meta ? { _meta: resource.meta } : {}) }],
    };
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
 * Who calls: the principal the HTTP layer authenticated (carried in the auth info), else the one the
 * server was built for (the local user on stdio).
 */
function callerOf(ctx: ServerContext, parts: Pick<ServerParts, 'principal' | 'detach'>): Caller {
  const { detach } = parts;
  return {
    principal: principalOf(ctx.http?.authInfo, parts.principal),
    signal: ctx.mcpReq.signal,
    ...(detach ? { onNetworkWait: () => detach(ctx.mcpReq.id) } : {}),
  };
}

/** What a tools/call handler is given: the caller, the connection's tool groups, and confirmation. */
function toolContext(server: McpServer, ctx: ServerContext, parts: ServerParts): ToolContext {
  const confirm = confirmationFor(server, {
    envelope: ctx.mcpReq.envelope,
    inputResponses: ctx.mcpReq.inputResponses,
    signal: ctx.mcpReq.signal,
    id: ctx.mcpReq.id,
  });
  return {
    caller: {
      ...callerOf(ctx, parts),
      ...personAndRoots(
        server,
        {
          envelope: ctx.mcpReq.envelope,
          inputResponses: ctx.mcpReq.inputResponses,
          signal: ctx.mcpReq.signal,
          id: ctx.mcpReq.id,
        },
        parts,
      ),
    },
    tools: parts.tools,
    ...(confirm ? { confirm } : {}),
  };
}

/** What a caller may ask the client: its user's approval (where allowed) and its roots. */
function personAndRoots(
  server: McpServer,
  request: { envelope: unknown; inputResponses?: unknown; signal: AbortSignal; id: string | number },
  parts: Pick<ServerParts, 'approvalElicitation'>,
): Pick<Caller, 'askApproval' | 'roots'> {
  const ask = parts.approvalElicitation === true ? approvalAskerFor(server, request) : undefined;
  const roots = rootsFor(server, request);
  return { ...(ask ? { askApproval: ask } : {}), ...(roots ? { roots } : {}) };
}

/**
 * Direct JSON-RPC tool methods (seed 001: `"method": "workflow_purge_history"`), given what tools/call
 * gives a handler: the caller, the connection's tool groups, and the same confirmation path (through
 * the connection's SDK server, once it exists). On 2026-07-28 a confirmation answers `input_required`,
 * and the retried request's `inputResponses` are the protocol's, not the tool's arguments.
 */
export function directCalls(options: {
  runner: ToolRunner;
  tools?: ToolSwitch | undefined;
  server: () => McpServer | undefined;
  caller: (call: DirectCall) => Caller;
  /** Ask the client's user to approve step outputs (WORKFLOWLOOKUP_APPROVAL_ELICITATION). */
  approvalElicitation?: boolean | undefined;
}): DirectHandler {
  const { runner, tools } = options;
  return async (method, params, call) => {
    const server = options.server();
    const modern = isModernEnvelope(call.meta);
    const { inputResponses, requestState: _state, ...args } = (params ?? {}) as Record<string, unknown>;
    const confirm =
      server &&
      confirmationFor(server, { envelope: call.meta, inputResponses, signal: call.signal, id: call.id });
    const ctx: ToolContext = {
      caller: {
        ...options.caller(call),
        ...(server
          ? personAndRoots(
              server,
              { envelope: call.meta, inputResponses, signal: call.signal, id: call.id },
              { approvalElicitation: options.approvalElicitation },
            )
          : {}),
      },
      ...(tools ? { tools } : {}),
      ...(confirm ? { confirm } : {}),
    };
    try {
      return await runner.run(method, modern ? args : params, ctx);
    } catch (error) {
      if (error instanceof InputRequiredSignal) return { result: error.result };
      throw error;
    }
  };
}

/** Each prompt's argument schema, built once (the app's prompts and completions outlive its servers). */
const promptSchemas = new WeakMap<PromptDefinition, z.ZodObject<z.ZodRawShape>>();

function promptArgs(
  prompt: PromptDefinition,
  workflowIds: (prefix: string) => Promise<string[]>,
): z.ZodObject<z.ZodRawShape> {
  const known = promptSchemas.get(prompt);
  if (known !== undefined) return known;
  const shape: Record<string, z.ZodType> = {};
  for (const arg of prompt.args) {
    const base = z.string().describe(arg.description);
    const field = arg.completeWorkflowId ? completable(base, (value: string) => workflowIds(value)) : base;
    shape[arg.name] = arg.required ? field : field.optional();
  }
  const schema = z.object(shape) as z.ZodObject<z.ZodRawShape>;
  promptSchemas.set(prompt, schema);
  return schema;
}

function registerPrompt(
  server: McpServer,
  prompt: PromptDefinition,
  workflowIds: (prefix: string) => Promise<string[]>,
) {
  server.registerPrompt(
    prompt.name,
    {
      title: prompt.title,
      description: prompt.description,
      argsSchema: promptArgs(prompt, workflowIds),
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
  /** The tool groups this connection lists. */
  tools: ToolSwitch;
  /** The principal requests are attributed to when the transport authenticates nobody. */
  principal: string;
  /** Lets the transport serve later requests while request `id` waits on the network. */
  detach?: ((id: string | number) => void) | undefined;
  /** The era the transport will speak; 2025-only surfaces (resources/subscribe) exist only there. */
  era?: 'legacy' | 'modern' | undefined;
  /** Subscribes to changes of the workflow definitions (for resources/updated); returns an unsubscribe. */
  onDefinitionsChanged?: ((listener: () => void) => () => void) | undefined;
  runner: ToolRunner;
  resources: readonly ResourceDefinition[];
  prompts: readonly PromptDefinition[];
  /** Runs task tools as MCP tasks (absent: no tasks capability). */
  tasks?: TaskDriver | undefined;
  /** Workflow ids starting with a prefix, for prompt argument completion. */
  workflowIds: (prefix: string) => Promise<string[]>;
  version: string;
  /** Registers the conformance suite's fixtures (`--conformance-fixtures`); returns the tools it listed. */
  fixtures?: ((server: McpServer) => string[]) | undefined;
  /** resources/subscribe bounds (default: DEFAULT_LIMITS, with a quota of this server's own). */
  subscriptionLimits?: SubscriptionLimits | undefined;
  /** Ask the client's user to approve step outputs through elicitation (WORKFLOWLOOKUP_APPROVAL_ELICITATION). */
  approvalElicitation?: boolean | undefined;
}

/** Resources whose subscribers hear of changes: the definitions, which change on disk or by authoring. */
const DEFINITION_RESOURCES = new Set([
  'available_workflows',
  'workflow_details',
  'workflow.manifests',
  'workflow.manifest',
]);

/** What a session may subscribe to: so many URIs itself, and its principal's share of the quota. */
export interface SubscriptionLimits {
  perSession: number;
  /** Shared by every session of the app: subscriptions per principal. */
  perPrincipal: Quota;
}

const tooMany = (details: string, limit: number) =>
  new ProtocolError(RpcCode.ServerError, 'Too many subscriptions', { details, limit });

/**
 * resources/subscribe (2025 era): a subscribed workflow resource gets notifications/resources/updated
 * when definitions change on disk or through the authoring tools. A subscription names a resource the
 * caller may read, resolved as resources/read resolves it and read once (so an unknown id, or another
 * principal's execution, is not found); URIs are bounded in length, and subscriptions per session and
 * per principal in number.
 */
function subscriptions(
  server: McpServer,
  index: ResourceIndex,
  parts: ServerParts,
  limits: SubscriptionLimits,
): void {
  /** Resolved URI → the URI as the client wrote it, the resource, and whose quota it counts against. */
  const subscribed = new Map<string, { uri: string; resource: string; principal: string }>();
  server.server.setRequestHandler('resources/subscribe', async (request, ctx) => {
    const { uri } = request.params;
    if (uri.length > MAX_SUBSCRIBE_URI_CHARS) {
      throw new ProtocolError(RpcCode.InvalidParams, 'Invalid params', {
        details: `the URI has ${uri.length} characters; a subscribable URI has at most ${MAX_SUBSCRIBE_URI_CHARS}`,
      });
    }
    const found = index.resolve(uri);
    if (found === undefined) {
      throw new ResourceNotFoundError(
        uri,
        `Resource not found: no resource of this server is ${uri.slice(0, 200)}`,
      );
    }
    requireScope(ctx, found.resource);
    const caller = callerOf(ctx, parts);
    // The resource must exist and be the caller's: the read answers not found otherwise.
    await readResource(found.resource, found.url, found.variables, caller);
    const key = found.url.href;
    if (subscribed.has(key)) return {};
    if (subscribed.size >= limits.perSession) {
      throw tooMany(
        `this session is subscribed to ${subscribed.size} resources, the most allowed (WORKFLOWLOOKUP_MAX_SUBSCRIPTIONS); unsubscribe from one first`,
        limits.perSession,
      );
    }
    if (limits.perPrincipal.take(caller.principal) !== undefined) {
      throw tooMany(
        `${caller.principal} is subscribed to ${limits.perPrincipal.of(caller.principal)} resources over its sessions, the most allowed (WORKFLOWLOOKUP_MAX_SUBSCRIPTIONS_PER_PRINCIPAL); unsubscribe or close a session first`,
        limits.perPrincipal.perPrincipal,
      );
    }
    subscribed.set(key, { uri, resource: found.resource.name, principal: caller.principal });
    return {};
  });
  server.server.setRequestHandler('resources/unsubscribe', async (request) => {
    const { uri } = request.params;
    const key = uri.length > MAX_SUBSCRIBE_URI_CHARS ? undefined : index.resolve(uri)?.url.href;
    const entry = key === undefined ? undefined : subscribed.get(key);
    if (key !== undefined && entry !== undefined) {
      subscribed.delete(key);
      limits.perPrincipal.release(entry.principal);
    }
    return {};
  });
  const off = parts.onDefinitionsChanged?.(() => {
    if (!server.isConnected()) return;
    for (const { uri, resource } of subscribed.values()) {
      if (DEFINITION_RESOURCES.has(resource)) {
        void server.server.sendResourceUpdated({ uri }).catch(() => undefined);
      }
    }
  });
  const previous = server.server.onclose;
  server.server.onclose = () => {
    off?.();
    for (const { principal } of subscribed.values()) limits.perPrincipal.release(principal);
    subscribed.clear();
    previous?.();
  };
}

/** Builds the SDK server with every tool, resource and prompt registered. */
export function createMcpServer(parts: ServerParts): McpServer {
  const { principal, runner, resources, prompts, workflowIds, version } = parts;
  const server = new McpServer(
    { name: SERVER_NAME, version, description: 'Workflow Orchestration System MCP Server' } as {
      name: string;
      version: string;
    },
    {
      capabilities: {
        // notifyProgress: seed 001's flag (progress notifications are sent for task tools).
        tools: { listChanged: true, notifyProgress: true } as { listChanged: boolean },
        // resources/subscribe is a 2025-era request; 2026-07-28 clients listen through subscriptions/listen.
        resources: { listChanged: true, ...(parts.era !== 'modern' ? { subscribe: true } : {}) },
        // Our prompts never change; the conformance fixtures announce prompt list changes.
        prompts: { listChanged: parts.fixtures !== undefined },
        logging: {},
      },
      instructions: instructionsFor(parts.tools, runner.tools),
    },
  );
  withoutPrototypes(server);
  const index = ResourceIndex.of(resources);
  for (const prompt of prompts) registerPrompt(server, prompt, workflowIds);
  if (parts.era !== 'modern') {
    subscriptions(
      server,
      index,
      parts,
      parts.subscriptionLimits ?? {
        perSession: DEFAULT_LIMITS.subscriptionsPerSession,
        perPrincipal: new Quota(Number.POSITIVE_INFINITY, DEFAULT_LIMITS.subscriptionsPerPrincipal),
      },
    );
  }
  for (const resource of resources) {
    const meta = {
      title: resource.title,
      description: resource.description,
      mimeType: resource.mimeType ?? 'application/json',
      ...(resource.meta ? { _meta: resource.meta } : {}),
    };
    if (!resource.uri.includes('{')) {
      server.registerResource(resource.name, resource.uri, meta, (uri, ctx) => {
        requireScope(ctx, resource);
        return readResource(resource, uri, {}, callerOf(ctx, parts));
      });
      continue;
    }
    const list = resource.list;
    // The SDK passes no request context to complete callbacks: they act for the server's principal
    // (the HTTP transport checks the template's scope before a completion).
    const caller: Caller = { principal };
    const complete = resource.complete
      ? Object.fromEntries(
          Object.entries(resource.complete).map(([name, fn]) => [name, (value: string) => fn(value, caller)]),
        )
      : undefined;
    const template = new ResourceTemplate(index.templateOf(resource) as UriTemplate, {
      // A principal without the resource's scope is not shown its instances either.
      list: list
        ? async (ctx) => ({ resources: mayRead(ctx, resource) ? await list(callerOf(ctx, parts)) : [] })
        : undefined,
      ...(complete ? { complete } : {}),
    });
    server.registerResource(resource.name, template, meta, (uri, variables, ctx) => {
      requireScope(ctx, resource);
      return readResource(
        resource,
        uri,
        flatVariables(variables as Record<string, string | string[]>),
        callerOf(ctx, parts),
      );
    });
  }
  for (const tool of runner.tools) {
    const registered = server.registerTool(
      tool.name,
      {
        title: tool.title,
        description: tool.description,
        inputSchema: publishOnly(tool.inputSchema),
        // Seeds 001/002: every tool publishes its output schema ("complete input/output schemas"), in
        // compact form (structure only) so the default list stays small.
        outputSchema: publishOnly(tool.outputSchema, true),
        // The title once, at the top level (annotations.title is its older place; clients read either).
        annotations: tool.annotations,
        ...(tool.meta ? { _meta: tool.meta } : {}),
      },
      async (args: unknown, ctx: ServerContext) => {
        let outcome: Awaited<ReturnType<ToolRunner['run']>>;
        try {
          outcome = await runner.run(tool.name, args, toolContext(server, ctx, parts));
        } catch (error) {
          if (error instanceof InputRequiredSignal) return error.result;
          throw error;
        }
        if ('error' in outcome) return toToolErrorResult(outcome.error, tool.errorFields?.(outcome.error));
        const structured = outcome.result as Record<string, unknown>;
        return toolResult(tool, structured);
      },
    );
    if (tool.task) registered.execution = { taskSupport: tool.task.support };
  }
  const fixtureTools = new Set(parts.fixtures?.(server) ?? []);
  const driver = parts.tasks;
  if (driver) {
    installTasks(server, {
      driver,
      principalOf: (ctx) => callerOf(ctx, parts).principal,
      detach: parts.detach,
    });
  }
  listOnly(server, parts.tools, fixtureTools);
  return server;
}

/** The MCP Apps extension (spec 2026-01-26) a host declares when it renders ui:// views. */
const APPS_EXTENSION = 'io.modelcontextprotocol/ui';

function withoutAppLinks<T extends { _meta?: Record<string, unknown> }>(tool: T): T {
  if (tool._meta === undefined) return tool;
  const { ui: _ui, 'ui/resourceUri': _legacy, ...rest } = tool._meta;
  const { _meta: _dropped, ...plain } = tool;
  return (Object.keys(rest).length > 0 ? { ...plain, _meta: rest } : plain) as T;
}

/** What the SDK's tools/list answers, as far as the wrapper below reads it. */
type ListedTools = { tools: { name: string; _meta?: Record<string, unknown> }[] };

/** tools/list shows the connection's listed groups (and fixtures); every registered tool stays callable. */
function listOnly(server: McpServer, tools: ToolSwitch, fixtures: ReadonlySet<string>): void {
  const sdkList = requestHandler<ListedTools>(server.server, 'tools/list');
  if (sdkList === undefined) return;
  server.server.setRequestHandler('tools/list', async (request, ctx) => {
    const listed = await sdkList(request.params, ctx);
    const shown = listed.tools.filter((t) => tools.listed(t.name) || fixtures.has(t.name));
    // The MCP Apps links are for hosts that render views: other clients would only pay for the bytes.
    const apps = declaresExtension(server, ctx, APPS_EXTENSION);
    return { ...listed, tools: apps ? shown : shown.map(withoutAppLinks) } as never;
  });
  tools.onChange = () => {
    if (server.isConnected()) void server.sendToolListChanged();
  };
}

/** A tool's input as the JSON Schema tools/list publishes (for workflow_tools). */
export function inputJsonSchema(tool: ToolDefinition): Record<string, unknown> {
  const { $schema: _drop, ...schema } = z.toJSONSchema(tool.inputSchema, { unrepresentable: 'any' });
  return schema;
}
