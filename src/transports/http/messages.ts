/**
 * What a POST carries, read and checked once before either era sees it: the media type, the body limit,
 * JSON, the checks stdio makes on a message (the same JSON-RPC errors, here with HTTP 400) and the scope
 * the call needs. Then which era it belongs to.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  bearerAuthChallengeResponse,
  classifyInboundRequest,
  isJsonContentType,
  OAuthError,
  OAuthErrorCode,
} from '@modelcontextprotocol/server';
import type { App } from '../../app.js';
import { ResourceIndex } from '../../protocol/resource-match.js';
import { inspect } from '../../protocol/rules.js';
import type { ScopeTables } from '../../protocol/scopes.js';
import { protocolFacts } from '../connect.js';
import { header, json, rpcError, sendWeb } from './answers.js';

/** What the scope check looks calls up in: the app's tools, aliases and resources, worked out once. */
export function scopeTablesOf(app: App): ScopeTables {
  const facts = protocolFacts(app);
  const index = ResourceIndex.of(app.resources);
  return {
    tools: facts.tools,
    aliases: facts.aliases,
    resourceOf: (uri) => index.resolve(uri)?.resource.name,
    templateNamed: (template) => index.templateNamed(template)?.name,
  };
}

/** The body of a POST, or undefined past `max` bytes (the rest is not read). */
export async function readBody(req: IncomingMessage, max: number): Promise<string | undefined> {
  if (Number(req.headers['content-length'] ?? 0) > max) return undefined;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > max) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export interface MessageLimits {
  maxBody: number;
  scopeTables: ScopeTables;
  /** Named in a 403's challenge, so the client finds where to get a token with the scope. */
  resourceMetadataUrl: () => string;
}

/**
 * The parsed message of a POST, checked: `{ body }` to serve, or undefined once it was answered (415,
 * 413, 400, 202 for a message nothing answers, 403 for a missing scope). `scopes` undefined: the server
 * has no authentication and every call may go ahead.
 */
export async function readMessage(
  req: IncomingMessage,
  res: ServerResponse,
  scopes: readonly string[] | undefined,
  limits: MessageLimits,
): Promise<{ body: unknown } | undefined> {
  if (!isJsonContentType(req.headers['content-type'] ?? null)) {
    json(res, 415, rpcError(-32000, 'Unsupported Media Type: Content-Type must be application/json'));
    return undefined;
  }
  const text = await readBody(req, limits.maxBody);
  if (text === undefined) {
    json(
      res,
      413,
      rpcError(-32600, 'Invalid Request', { details: `the body exceeds ${limits.maxBody} bytes` }),
    );
    return undefined;
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    json(res, 400, rpcError(-32700, 'Parse error', { details: (error as Error).message.slice(0, 200) }));
    return undefined;
  }
  // Made once, here; the rules behind do not classify the message again.
  const verdict = inspect(body, scopes, limits.scopeTables);
  if (verdict.kind === 'reply') {
    json(res, 400, { jsonrpc: '2.0', id: verdict.id, error: verdict.error });
    return undefined;
  }
  if (verdict.kind === 'drop') {
    json(res, 202, {});
    return undefined;
  }
  if (verdict.kind === 'forbidden') {
    const { needed } = verdict;
    await sendWeb(
      res,
      bearerAuthChallengeResponse(
        new OAuthError(OAuthErrorCode.InsufficientScope, `this call needs the "${needed}" scope`),
        { requiredScopes: [needed], resourceMetadataUrl: limits.resourceMetadataUrl() },
      ),
    );
    return undefined;
  }
  return { body };
}

/**
 * Which era a POST (its body parsed already) belongs to, by the SDK's own classifier, read from the
 * node request: building a web Request to ask `isLegacyRequest` cost a copy of every request's
 * headers and body. A rejected request goes to the modern handler, which answers why.
 */
export function eraOf(req: IncomingMessage, body: unknown): 'legacy' | 'modern' {
  const protocolVersionHeader = header(req, 'mcp-protocol-version');
  const mcpMethodHeader = header(req, 'mcp-method');
  const mcpNameHeader = header(req, 'mcp-name');
  const outcome = classifyInboundRequest({
    httpMethod: 'POST',
    body,
    ...(protocolVersionHeader !== undefined ? { protocolVersionHeader } : {}),
    ...(mcpMethodHeader !== undefined ? { mcpMethodHeader } : {}),
    ...(mcpNameHeader !== undefined ? { mcpNameHeader } : {}),
  });
  return outcome.kind === 'legacy' ? 'legacy' : 'modern';
}
