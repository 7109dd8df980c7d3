import { describe, expect, it } from 'vitest';
import { SCOPE_DESCRIPTIONS, SCOPES } from '../../protocol/scopes.js';
import { isMetadataPath, metadataUrlOf, protectedResourceMetadata } from './oauth-metadata.js';

const resource = new URL('https://mcp.example.com/mcp');

describe('OAuth protected resource metadata (RFC 9728)', () => {
  it('with JWTs, names the issuer as the authorization server', () => {
    const document = protectedResourceMetadata(resource, {
      mode: 'jwt',
      issuer: 'https://auth.example.com',
      audience: 'workflowlookup',
      jwksUrl: 'https://auth.example.com/jwks',
      jwksFile: undefined,
      principalClaim: 'sub',
    });
    // The exact document, keys in order: clients and proxies may cache it byte for byte.
    expect(JSON.stringify(document)).toBe(
      JSON.stringify({
        resource: 'https://mcp.example.com/mcp',
        authorization_servers: ['https://auth.example.com'],
        scopes_supported: [...SCOPES],
        bearer_methods_supported: ['header'],
        resource_name: 'workflowlookup',
        scope_descriptions: SCOPE_DESCRIPTIONS,
      }),
    );
  });

  it('with static tokens, names no authorization server', () => {
    const document = protectedResourceMetadata(resource, { mode: 'tokens', file: '/tmp/tokens.json' });
    expect(document).not.toHaveProperty('authorization_servers');
    expect(document).toMatchObject({
      resource: 'https://mcp.example.com/mcp',
      scopes_supported: ['read', 'run', 'author', 'admin', 'approve'],
      bearer_methods_supported: ['header'],
    });
    expect(Object.keys(document.scope_descriptions as object)).toEqual([...SCOPES]);
  });

  it('is published under /.well-known/oauth-protected-resource, with the endpoint path after it', () => {
    expect(metadataUrlOf(resource)).toBe('https://mcp.example.com/.well-known/oauth-protected-resource/mcp');
    expect(isMetadataPath('/.well-known/oauth-protected-resource/mcp')).toBe(true);
    expect(isMetadataPath('/.well-known/oauth-protected-resource')).toBe(true);
    expect(isMetadataPath('/.well-known/openid-configuration')).toBe(false);
    expect(isMetadataPath('/mcp')).toBe(false);
  });
});
