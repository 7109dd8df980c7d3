/**
 * Who a request comes from: its bearer token checked by the configured authenticator (JWT or static
 * tokens, `../http-auth.ts`), a 401 challenge naming the RFC 9728 metadata otherwise, and a budget of
 * failed tokens per client address so a flood of bad ones cannot make the server verify without end.
 * Without authentication every caller is the local user.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  type AuthInfo,
  bearerAuthChallengeResponse,
  OAuthError,
  OAuthErrorCode,
} from '@modelcontextprotocol/server';
import type { HttpSettings } from '../../config.js';
import { LOCAL_PRINCIPAL } from '../../executions/execution-model.js';
import { principalOf } from '../../protocol/principal.js';
import { type Authenticator, createAuthenticator } from '../http-auth.js';
import { RateLimiter } from '../rate-limit.js';
import { json, rpcError, sendWeb } from './answers.js';
import { type Clock, systemClock } from './clock.js';
import type { MountCaller, VerifiedToken } from './mounts.js';
import { metadataUrlOf } from './oauth-metadata.js';

/** A request once authenticated: the SDK's handlers read the caller from `auth`. */
export type AuthedRequest = IncomingMessage & { auth?: AuthInfo };

/** Tokens that verified lately, remembered (as hashes) so a flood of bad ones from a shared address spares them. */
const GOOD_TOKENS = 10_000;
const GOOD_TOKEN_MS = 10 * 60_000;
/** How often tokens no longer "lately" are forgotten. */
const SWEEP_MS = 60_000;

export class HttpAuthentication {
  // Failed bearer tokens, per client address (the caller is unknown until a token verifies).
  private readonly failures: RateLimiter;
  /** Hash of a token → until when it counts as having verified lately; oldest first. */
  private readonly goodTokens = new Map<string, number>();
  private readonly stopSweep: () => void;
  private resource: URL;
  private metadata: string;

  private constructor(
    private readonly settings: HttpSettings,
    private authenticator: Authenticator | undefined,
    publicUrl: URL,
    private readonly clock: Clock,
  ) {
    this.failures = new RateLimiter(settings.authFailureLimit);
    this.resource = publicUrl;
    this.metadata = metadataUrlOf(publicUrl);
    this.stopSweep = clock.every(SWEEP_MS, () => {
      for (const [hash, until] of this.goodTokens) if (until < clock.now()) this.goodTokens.delete(hash);
    });
  }

  /** Builds the configured authenticator for the endpoint `publicUrl` (a JWKS file is read now). */
  static async create(
    settings: HttpSettings,
    publicUrl: URL,
    clock: Clock = systemClock,
  ): Promise<HttpAuthentication> {
    return new HttpAuthentication(settings, await createAuthenticator(settings, publicUrl), publicUrl, clock);
  }

  /** Whether callers must authenticate (WORKFLOWLOOKUP_AUTH is set). */
  get required(): boolean {
    return this.authenticator !== undefined;
  }

  /** The endpoint as clients reach it: the resource tokens name. */
  get publicUrl(): URL {
    return this.resource;
  }

  /** Where the endpoint's RFC 9728 metadata is published. */
  get metadataUrl(): string {
    return this.metadata;
  }

  /** The endpoint moved (an ephemeral port known only once bound): tokens must name the new address. */
  async rebind(publicUrl: URL): Promise<void> {
    this.resource = publicUrl;
    this.metadata = metadataUrlOf(publicUrl);
    this.authenticator = await createAuthenticator(this.settings, publicUrl);
  }

  /**
   * The principal a request's bearer token names, or undefined once it was answered (401, or 429 for
   * an address that sent too many bad tokens lately). Past that budget, only tokens that verified in
   * the last minutes are still checked, so clients behind the same proxy as an attacker keep working.
   */
  async authenticate(req: AuthedRequest, res: ServerResponse): Promise<string | undefined> {
    const authenticator = this.authenticator;
    if (authenticator === undefined) return LOCAL_PRINCIPAL;
    const header = req.headers.authorization;
    const address = req.socket.remoteAddress ?? '';
    const match = /^Bearer ([^\s]+)$/i.exec(header ?? '');
    const token = match?.[1];
    const hash = token === undefined ? undefined : createHash('sha256').update(token).digest('base64url');
    const wait = header === undefined ? 0 : this.failures.peek(address, this.clock.now());
    if (wait > 0 && !(hash !== undefined && (this.goodTokens.get(hash) ?? 0) > this.clock.now())) {
      json(
        res,
        429,
        rpcError(-32000, `Too many failed authentication attempts; retry in ${wait} s`, {
          details: `this address sent more bad bearer tokens than WORKFLOWLOOKUP_AUTH_FAILURE_LIMIT allows (${this.settings.authFailureLimit} a minute)`,
        }),
        { 'retry-after': String(wait) },
      );
      return undefined;
    }
    try {
      if (token === undefined) {
        throw new OAuthError(
          OAuthErrorCode.InvalidToken,
          header ? 'the Authorization header must be "Bearer <token>"' : 'no bearer token',
        );
      }
      const auth = { ...(await authenticator.verify(token)), resourceMetadataUrl: this.metadata };
      req.auth = auth;
      if (hash !== undefined) this.remember(hash);
      return principalOf(auth);
    } catch (error) {
      // Asking without a token is how clients discover the authorization server: not a failure.
      if (header !== undefined) this.failures.take(address, this.clock.now());
      const challenge =
        error instanceof OAuthError ? error : new OAuthError(OAuthErrorCode.InvalidToken, 'invalid token');
      await sendWeb(res, bearerAuthChallengeResponse(challenge, { resourceMetadataUrl: this.metadata }));
      return undefined;
    }
  }

  /** Checks a token as `authenticate` does, for a mount (a sign-in form); throws an OAuthError. */
  async verify(token: string): Promise<VerifiedToken> {
    if (this.authenticator === undefined)
      throw new OAuthError(OAuthErrorCode.InvalidToken, 'no authentication');
    const auth = await this.authenticator.verify(token);
    const credential = auth.extra?.credential;
    return {
      principal: principalOf(auth),
      scopes: auth.scopes,
      // Static tokens do not expire (their AuthInfo carries a nominal hour); JWTs do.
      expiresAt: this.settings.auth.mode === 'jwt' ? auth.expiresAt : undefined,
      credential: typeof credential === 'string' ? credential : undefined,
    };
  }

  /** Who a static token's credential acts as now; undefined once the token is removed. */
  current(credential: string): MountCaller | undefined {
    return this.authenticator?.current?.(credential);
  }

  /** Stops forgetting old good tokens (the server is closing). */
  stop(): void {
    this.stopSweep();
  }

  private remember(hash: string): void {
    // Most recent last, so the first entry is the one to drop when the memory is full.
    this.goodTokens.delete(hash);
    this.goodTokens.set(hash, this.clock.now() + GOOD_TOKEN_MS);
    if (this.goodTokens.size > GOOD_TOKENS)
      this.goodTokens.delete(this.goodTokens.keys().next().value as string);
  }
}
