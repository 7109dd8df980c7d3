// The one door to the MCP SDK's non-public members. Every reach into the SDK's internals is here, each
// with why the SDK has no public API for it, and `sdkShapeProblems()` checks every assumption made here
// against the SDK that is installed (src/protocol/sdk-internals.test.ts runs it, and drives each function
// through real requests): an SDK release that renames, moves or drops one fails `npm test` instead of
// silently changing what the server answers. package.json pins the SDK's exact version for the same
// reason; checked against @modelcontextprotocol/server 2.4.0.
//
// What is reached, and why there is no public way:
// - `Protocol._getRequestHandler(method)` (protected): the handler installed for a method, so that a
//   wrapper can put its own check in front of it (tools/list filtered by tool group, task tools, the
//   conformance fixtures). `setRequestHandler` replaces a handler and returns nothing; there is no getter.
//   Reached as a subclass may, so `tsc` checks its name and signature against the SDK's declarations.
// - `McpServer._registeredTools`, `_registeredPrompts`, `_registeredResources`,
//   `_registeredResourceTemplates` (private): plain objects the SDK looks entries up in with the client's
//   text; only these objects can be made prototype-free. No option or accessor exposes them.
// - `Server._clientCapabilities`, `_clientVersion` (private): what a server knows of its client, set by
//   `initialize` and, on a 2026-07-28 request, from the envelope (only the parts it carries).
//   `getClientCapabilities()` / `getClientVersion()` read them; nothing resets them.
import { type McpServer, type Result, Server, type ServerContext } from '@modelcontextprotocol/server';

/**
 * The SDK's handler for a method, called with the request's params and context: `requestHandler` builds
 * the whole JSON-RPC request the SDK's own dispatch hands its handlers.
 */
export type SdkRequestHandler<R extends Result = Result> = (
  params: Record<string, unknown> | undefined,
  ctx: ServerContext,
) => Promise<R>;

const REGISTRIES = [
  '_registeredTools',
  '_registeredPrompts',
  '_registeredResources',
  '_registeredResourceTemplates',
] as const;

/** The client fields, each with the public getter that reads it. */
const CLIENT_FIELDS = [
  ['_clientCapabilities', 'getClientCapabilities'],
  ['_clientVersion', 'getClientVersion'],
] as const;

/**
 * Reads a server's handlers through `Protocol`'s protected accessor, the way a subclass may. Never
 * instantiated: its method is called with a `Server` as `this`.
 */
abstract class HandlerReader extends Server {
  installed(method: string) {
    return this._getRequestHandler(method);
  }
}
const installed = HandlerReader.prototype.installed;

/**
 * The handler the SDK (or an earlier wrapper) installed for `method` now, or undefined when there is
 * none, so that a wrapper installed with `setRequestHandler` can hand a request on to it.
 */
export function requestHandler<R extends Result = Result>(
  server: Server,
  method: string,
): SdkRequestHandler<R> | undefined {
  const handler = installed.call(server, method);
  if (handler === undefined) return undefined;
  return (params, ctx) =>
    handler(
      { jsonrpc: '2.0', id: ctx.mcpReq.id, method, ...(params === undefined ? {} : { params }) },
      ctx,
    ) as Promise<R>;
}

/**
 * Makes the SDK's tool, prompt and resource registries objects without a prototype: the SDK looks
 * entries up with the client's text, and `constructor` or `__proto__` must not be found there. Call it
 * before registering anything; the SDK adds to these objects and never replaces them.
 */
export function withoutPrototypes(server: McpServer): void {
  const fields = server as unknown as Record<string, object | undefined>;
  for (const name of REGISTRIES) {
    const registry = fields[name];
    if (registry !== undefined) Object.setPrototypeOf(registry, null);
  }
}

/**
 * Forgets what earlier requests told a (pooled) server about its client, so that
 * `getClientCapabilities()` and `getClientVersion()` answer undefined until the next request says: the
 * SDK seeds them from each 2026-07-28 request's envelope but keeps what an envelope omits.
 */
export function forgetClient(server: Server): void {
  const fields = server as unknown as Record<string, unknown>;
  for (const [field] of CLIENT_FIELDS) fields[field] = undefined;
}

/**
 * What this module relies on and the installed SDK no longer has (empty when everything is there),
 * each problem naming the member. Checked on `server`: its registries, the handler accessor, and that
 * each client field is the one its public getter reads (set for a moment, read back through the getter,
 * and restored before returning).
 */
export function sdkShapeProblems(server: McpServer): string[] {
  const problems: string[] = [];
  const fields = server as unknown as Record<string, unknown>;
  for (const name of REGISTRIES) {
    const registry = fields[name];
    if (!Object.hasOwn(server, name)) problems.push(`McpServer.${name} is not a field of the server`);
    else if (typeof registry !== 'object' || registry === null || Array.isArray(registry))
      problems.push(`McpServer.${name} is not an object of entries`);
  }
  const inner = server.server;
  const accessor = (inner as unknown as Record<string, unknown>)._getRequestHandler;
  if (typeof accessor !== 'function') problems.push('Server._getRequestHandler is not a method');
  // Every Server installs an initialize handler in its constructor.
  else if (typeof installed.call(inner, 'initialize') !== 'function')
    problems.push('Server._getRequestHandler("initialize") does not return the installed handler');
  const client = inner as unknown as Record<string, unknown>;
  for (const [field, getter] of CLIENT_FIELDS) {
    if (!Object.hasOwn(inner, field)) {
      problems.push(`Server.${field} is not a field of the server`);
      continue;
    }
    const kept = client[field];
    const probe = { probe: field };
    client[field] = probe;
    const read = inner[getter]();
    client[field] = kept;
    if (read !== probe) problems.push(`Server.${getter}() does not read Server.${field}`);
  }
  return problems;
}
