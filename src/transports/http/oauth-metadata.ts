/**
 * RFC 9728 protected resource metadata: where a client that got a 401 learns which authorization
 * server issues tokens for this endpoint and which scopes exist. Published only with authentication
 * (without it there is nothing to discover).
 */
import { getOAuthProtectedResourceMetadataUrl } from '@modelcontextprotocol/server';
import type { HttpSettings } from '../../config.js';
import { SCOPE_DESCRIPTIONS, SCOPES } from '../../protocol/scopes.js';

/** Every path under this prefix answers the document (`/.well-known/oauth-protected-resource/mcp`, …). */
export const METADATA_PATH = '/.well-known/oauth-protected-resource';

export const isMetadataPath = (pathname: string): boolean => pathname.startsWith(METADATA_PATH);

/** Where the document of `resource` is published (named in every challenge's `resource_metadata`). */
export const metadataUrlOf = (resource: URL): string => getOAuthProtectedResourceMetadataUrl(resource);

/** The document for the endpoint `resource`, as clients reach it. */
export function protectedResourceMetadata(
  resource: URL,
  auth: HttpSettings['auth'],
): Record<string, unknown> {
  return {
    resource: resource.href,
    // Static tokens are issued by `workflowlookup token add`, not by an authorization server.
    ...(auth.mode === 'jwt' ? { authorization_servers: [auth.issuer] } : {}),
    scopes_supported: [...SCOPES],
    bearer_methods_supported: ['header'],
    resource_name: 'workflowlookup',
    scope_descriptions: SCOPE_DESCRIPTIONS,
  };
}
