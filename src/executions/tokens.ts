import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as z from 'zod';

export const DEFAULT_TOKEN_TTL_MS = 24 * 60 * 60 * 1000;
export const SECRET_FILE = 'token-secret';

/**
 * Seed 004's payload (execution_id, step_name, issued_at, nonce) plus what binds it to one attempt of
 * one step, and to the principal that owns the execution (`sub`; absent in tokens of the local user).
 */
export const TokenPayloadSchema = z.strictObject({
  execution_id: z.string(),
  sub: z.string().optional(),
  step_name: z.string(),
  seq: z.number().int().min(1),
  attempt: z.number().int().min(0),
  issued_at: z.string(),
  expires_at: z.string(),
  nonce: z.string().regex(/^[0-9a-f]{32}$/),
});
export type TokenPayload = z.infer<typeof TokenPayloadSchema>;

/** base64url (no padding) payload, a dot, and a 43-character base64url HMAC-SHA256. */
const CANONICAL = /^([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{43})$/;

function isCanonicalBase64Url(text: string): boolean {
  return Buffer.from(text, 'base64url').toString('base64url') === text;
}

export type TokenCheck =
  | { ok: true; payload: TokenPayload }
  | { ok: false; reason: 'malformed' | 'signature' }
  | { ok: false; reason: 'expired'; payload: TokenPayload };

/**
 * Continuation tokens: `base64url(payload JSON) "." base64url(HMAC-SHA256(payload))`. The signature
 * makes forged or edited tokens detectable; the nonce ties a token to one attempt of one step.
 */
export class TokenService {
  constructor(
    private readonly secret: Buffer,
    readonly ttlMs: number = DEFAULT_TOKEN_TTL_MS,
  ) {}

  static newNonce(): string {
    return randomBytes(16).toString('hex');
  }

  sign(payload: TokenPayload): string {
    const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
    return `${body}.${this.mac(body)}`;
  }

  verify(token: string, nowMs: number = Date.now()): TokenCheck {
    // Only the canonical encoding is accepted: one way to write a token, so padding, other alphabets or
    // stray characters can never make a second string that verifies.
    const match = CANONICAL.exec(token);
    if (!match) return { ok: false, reason: 'malformed' };
    const [, body = '', signature = ''] = match;
    if (!isCanonicalBase64Url(body)) return { ok: false, reason: 'malformed' };
    const given = Buffer.from(signature, 'base64url');
    if (given.toString('base64url') !== signature) return { ok: false, reason: 'signature' };
    const expected = Buffer.from(this.mac(body), 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected))
      return { ok: false, reason: 'signature' };
    let payload: TokenPayload;
    try {
      payload = TokenPayloadSchema.parse(JSON.parse(Buffer.from(body, 'base64url').toString('utf8')));
    } catch {
      return { ok: false, reason: 'malformed' };
    }
    if (Date.parse(payload.expires_at) <= nowMs) return { ok: false, reason: 'expired', payload };
    return { ok: true, payload };
  }

  private mac(body: string): string {
    return createHmac('sha256', this.secret).update(body).digest('base64url');
  }
}

/**
 * The signing secret: `WORKFLOWLOOKUP_TOKEN_SECRET` when set (at least 32 characters), else a random
 * secret generated on first run and kept in the data dir with mode 0600. The file appears complete
 * or not at all (written aside, then hard-linked into place), so two processes starting together
 * end up with the same secret.
 */
export function loadTokenSecret(dataDir: string, envSecret: string | undefined): Buffer {
  if (envSecret !== undefined && envSecret !== '') return Buffer.from(envSecret, 'utf8');
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = join(dataDir, SECRET_FILE);
  const aside = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  writeFileSync(aside, randomBytes(32).toString('hex'), { mode: 0o600 });
  try {
    linkSync(aside, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    unlinkSync(aside);
  }
  chmodSync(file, 0o600);
  const secret = readFileSync(file, 'utf8').trim();
  if (secret.length < 32)
    throw new Error(`${file} is damaged (too short); delete it to generate a new secret`);
  return Buffer.from(secret, 'utf8');
}

/** The secret a store's tokens are signed with, and where it comes from (never the secret in a message). */
export interface SigningSecret {
  secret: Buffer;
  /** `WORKFLOWLOOKUP_TOKEN_SECRET`, or the path of the data dir's secret file. */
  source: string;
}

/**
 * The secret the servers of a store sign with, without creating one: `WORKFLOWLOOKUP_TOKEN_SECRET`
 * when set, else the secret file of the SQLite data dir `dataDir` if it exists (a PostgreSQL store has
 * no data dir: pass undefined).
 */
export function existingTokenSecret(
  dataDir: string | undefined,
  envSecret: string | undefined,
): SigningSecret | undefined {
  if (envSecret !== undefined && envSecret !== '')
    return { secret: Buffer.from(envSecret, 'utf8'), source: 'WORKFLOWLOOKUP_TOKEN_SECRET' };
  if (dataDir === undefined) return undefined;
  const file = join(dataDir, SECRET_FILE);
  let text: string;
  try {
    text = readFileSync(file, 'utf8').trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  return text.length >= 32 ? { secret: Buffer.from(text, 'utf8'), source: file } : undefined;
}

/**
 * A fingerprint of a signing secret: two stores whose fingerprints match accept each other's tokens.
 * An HMAC under the secret, so it tells nothing about the secret itself.
 */
export function secretFingerprint(secret: Buffer): string {
  return createHmac('sha256', secret).update('workflowlookup token secret fingerprint').digest('base64url');
}
