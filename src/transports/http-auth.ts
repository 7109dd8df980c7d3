import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { type AuthInfo, OAuthError, OAuthErrorCode } from '@modelcontextprotocol/server';
import type { HttpSettings } from '../config.js';
import { ConfigError } from '../config.js';
import { LOCAL_PRINCIPAL } from '../executions/execution-model.js';
import { SCOPES, type Scope } from '../protocol/scopes.js';
import { writeAtomically } from '../workflows/runtime-files.js';

/** Turns a bearer token into who is calling and what they may do, or throws an OAuthError. */
export interface Authenticator {
  verify(token: string): Promise<AuthInfo>;
  /**
   * Static tokens only: who the token `verify` named as `extra.credential` acts as now, or undefined
   * once it is removed, so a dashboard session opened with it ends with it.
   */
  current?(credential: string): { principal: string; scopes: string[] } | undefined;
}

const invalid = (message: string) => new OAuthError(OAuthErrorCode.InvalidToken, message);

/**
 * The stdio user (and every caller of a server without authentication) is the principal `local`: no
 * token may name it, or it would read and drive that user's executions. Refused wherever a token
 * names a principal: JWT claims, static tokens (also ones written into the file by hand), `token add`.
 */
export function reservedPrincipal(principal: string): string | undefined {
  return principal === LOCAL_PRINCIPAL
    ? `the principal "${LOCAL_PRINCIPAL}" is reserved for the server's local (stdio) user; no token can act as it`
    : undefined;
}

function scopesOf(payload: Record<string, unknown>): string[] {
  if (typeof payload.scope === 'string') return payload.scope.split(/\s+/).filter(Boolean);
  if (Array.isArray(payload.scp)) return payload.scp.filter((s): s is string => typeof s === 'string');
  return [];
}

/** An OAuth 2.1 resource server's check of bearer JWTs: signature (JWKS), issuer, audience, expiry. */
async function jwtAuthenticator(
  auth: Extract<HttpSettings['auth'], { mode: 'jwt' }>,
  resource: URL,
): Promise<Authenticator> {
  const jose = await import('jose');
  let keys: Parameters<typeof jose.jwtVerify>[1];
  if (auth.jwksFile !== undefined) {
    try {
      keys = jose.createLocalJWKSet(JSON.parse(readFileSync(auth.jwksFile, 'utf8')));
    } catch (error) {
      throw new ConfigError(`cannot read the JWKS file ${auth.jwksFile}: ${(error as Error).message}`);
    }
  } else {
    keys = jose.createRemoteJWKSet(new URL(auth.jwksUrl as string));
  }
  return {
    async verify(token) {
      let payload: Record<string, unknown>;
      try {
        ({ payload } = await jose.jwtVerify(token, keys, { issuer: auth.issuer, audience: auth.audience }));
      } catch (error) {
        const code = (error as { code?: string }).code ?? '';
        const reason =
          code === 'ERR_JWT_EXPIRED'
            ? 'the token has expired'
            : code === 'ERR_JWT_CLAIM_VALIDATION_FAILED'
              ? `the token's ${String((error as { claim?: string }).claim ?? 'claims')} claim does not match this server`
              : code === 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED' || code === 'ERR_JWKS_NO_MATCHING_KEY'
                ? 'the token signature does not verify'
                : 'the token is not a valid JWT';
        throw invalid(reason);
      }
      const principal = payload[auth.principalClaim];
      if (typeof principal !== 'string' || principal === '') {
        throw invalid(`the token has no "${auth.principalClaim}" claim naming the caller`);
      }
      const reserved = reservedPrincipal(principal);
      if (reserved !== undefined) throw invalid(`${reserved} (its "${auth.principalClaim}" claim)`);
      if (typeof payload.exp !== 'number') throw invalid('the token has no expiry ("exp")');
      return {
        token,
        clientId: typeof payload.client_id === 'string' ? payload.client_id : principal,
        scopes: scopesOf(payload),
        expiresAt: payload.exp,
        resource,
        extra: { principal },
      };
    },
  };
}

/** One entry of the tokens file: only the token's hash is kept. */
export interface StaticToken {
  name: string;
  principal: string;
  scopes: Scope[];
  hash: string;
  created_at: string;
}

interface TokensFile {
  tokens: StaticToken[];
}

const hashOf = (token: string) => `sha256:${createHash('sha256').update(token).digest('hex')}`;

/**
 * Names a static token without revealing anything usable about it (a hash of its stored hash and
 * creation time), for sessions that must end when the token is removed or replaced.
 */
const credentialOf = (t: StaticToken) =>
  createHash('sha256').update(`session\n${t.hash}\n${t.created_at}`).digest('base64url').slice(0, 22);

function readTokens(file: string): TokensFile {
  if (!existsSync(file)) return { tokens: [] };
  const parsed = JSON.parse(readFileSync(file, 'utf8')) as TokensFile;
  if (!Array.isArray(parsed.tokens))
    throw new ConfigError(`${file} is not a tokens file ({"tokens": [...]})`);
  return parsed;
}

/**
 * Hashed static tokens mapped to principals (`WORKFLOWLOOKUP_AUTH=tokens`), for simple team setups. The
 * file is re-read when it changes, so `workflowlookup token add` takes effect without a restart.
 */
function tokensAuthenticator(file: string, resource: URL): Authenticator {
  let loaded:
    | { mtimeMs: number; byHash: Map<string, StaticToken>; byCredential: Map<string, StaticToken> }
    | undefined;
  const load = () => {
    const mtimeMs = existsSync(file) ? statSync(file).mtimeMs : 0;
    if (loaded?.mtimeMs !== mtimeMs) {
      const tokens = readTokens(file).tokens;
      loaded = {
        mtimeMs,
        byHash: new Map(tokens.map((t) => [t.hash, t])),
        byCredential: new Map(tokens.map((t) => [credentialOf(t), t])),
      };
    }
    return loaded;
  };
  const current = () => load().byHash;
  load(); // a broken file is a configuration error at start
  return {
    current(credential) {
      const entry = load().byCredential.get(credential);
      // A session opened before the entry was edited to the reserved principal ends, as if removed.
      if (entry === undefined || reservedPrincipal(entry.principal) !== undefined) return undefined;
      return { principal: entry.principal, scopes: [...entry.scopes] };
    },
    async verify(token) {
      const hash = hashOf(token);
      const entry = current().get(hash);
      // The map lookup is by hash; compare once more in constant time before trusting it.
      if (!entry || !timingSafeEqual(Buffer.from(entry.hash), Buffer.from(hash)))
        throw invalid('unknown token');
      const reserved = reservedPrincipal(entry.principal);
      if (reserved !== undefined)
        throw invalid(`${reserved} (token ${entry.name}); give it another principal`);
      return {
        token,
        clientId: entry.name,
        scopes: [...entry.scopes],
        // Static tokens do not expire; the SDK wants an expiry, so each check is good for an hour.
        expiresAt: Math.floor(Date.now() / 1000) + 3600,
        resource,
        extra: { principal: entry.principal, credential: credentialOf(entry) },
      };
    },
  };
}

export async function createAuthenticator(
  settings: HttpSettings,
  resource: URL,
): Promise<Authenticator | undefined> {
  if (settings.auth.mode === 'jwt') return jwtAuthenticator(settings.auth, resource);
  if (settings.auth.mode === 'tokens') return tokensAuthenticator(settings.auth.file, resource);
  return undefined;
}

// -------------------------------------------------------------------------------------------------
// `workflowlookup token add|list|remove`

export function parseScopes(text: string | undefined): Scope[] {
  const names = (text ?? 'read,run')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = names.filter((n) => !(SCOPES as readonly string[]).includes(n));
  if (unknown.length > 0) {
    throw new ConfigError(`unknown scope(s) ${unknown.join(', ')}; choose from ${SCOPES.join(', ')}`);
  }
  return [...new Set(names)] as Scope[];
}

/** Adds a token and returns it: the only time it is ever shown (the file keeps its hash). */
export async function addToken(
  file: string,
  name: string,
  scopes: Scope[],
  principal: string = name,
): Promise<string> {
  if (!/^[A-Za-z0-9_.@-]{1,64}$/.test(name) || !/^[A-Za-z0-9_.@-]{1,128}$/.test(principal)) {
    throw new ConfigError('token names and principals are 1-64 letters, digits and . _ @ -');
  }
  const reserved = reservedPrincipal(principal);
  if (reserved !== undefined) {
    throw new ConfigError(
      `${reserved}${principal === name ? `; name the principal with --principal (e.g. --principal ${name}-http)` : ''}`,
    );
  }
  const data = readTokens(file);
  if (data.tokens.some((t) => t.name === name))
    throw new ConfigError(`a token named ${name} exists; remove it first`);
  const token = `wlt_${randomBytes(32).toString('base64url')}`;
  data.tokens.push({ name, principal, scopes, hash: hashOf(token), created_at: new Date().toISOString() });
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  await writeAtomically(file, `${JSON.stringify(data, null, 2)}\n`);
  chmodSync(file, 0o600);
  return token;
}

export function listTokens(file: string): Omit<StaticToken, 'hash'>[] {
  return readTokens(file).tokens.map(({ hash: _hash, ...t }) => t);
}

export async function removeToken(file: string, name: string): Promise<boolean> {
  const data = readTokens(file);
  const kept = data.tokens.filter((t) => t.name !== name);
  if (kept.length === data.tokens.length) return false;
  await writeAtomically(file, `${JSON.stringify({ tokens: kept }, null, 2)}\n`);
  chmodSync(file, 0o600);
  return true;
}
