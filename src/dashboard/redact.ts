import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { escapeHtml } from './html.js';

/** Keys whose string values are credentials wherever they appear (context, outputs, telemetry). */
const SECRET_KEY =
  /token|secret|passw(or)?d|api[-_]?key|authorization|credential|private[-_]?key|cookie|session/i;

/** Environment variables whose values are credentials (catalog credentials, the token secret, ...). */
const SECRET_ENV = /TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|CREDENTIAL|PRIVATE_KEY/;

/**
 * Continuation tokens (base64url JSON payload "." 43-character HMAC) and JWTs: hidden wherever they
 * occur in text, so a token an agent pasted into an output is not shown either.
 */
// Anchored at the start of a run of base64url characters, so no run is scanned twice (linear time).
const TOKEN_SHAPE =
  /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{10,}(?:\.eyJ[A-Za-z0-9_-]{10,})?\.[A-Za-z0-9_-]{20,}/g;

export const HIDDEN = '[hidden]';

/**
 * Keeps secrets out of everything the dashboard renders: the token secret and credential values known
 * to this process are replaced wherever they occur, token-shaped strings too, and JSON values under
 * credential-like keys.
 */
export class Redactor {
  private readonly secrets: string[];

  constructor(secrets: Iterable<string>) {
    // As written, and as they appear in rendered HTML and JSON (escaped); longest first, so a secret
    // containing another is replaced whole.
    const forms = [...secrets]
      .filter((s) => s.length >= 8)
      .flatMap((s) => {
        const inJson = JSON.stringify(s).slice(1, -1);
        return [s, escapeHtml(s), inJson, escapeHtml(inJson)];
      });
    this.secrets = [...new Set(forms)].sort((a, b) => b.length - a.length);
  }

  /** The secrets of a data dir and an environment: the token secret and credential-like variables. */
  static forEnvironment(dataDir: string, env: NodeJS.ProcessEnv, tokenSecret?: string): Redactor {
    const secrets: string[] = [];
    if (tokenSecret !== undefined) secrets.push(tokenSecret);
    const file = join(dataDir, 'token-secret');
    if (existsSync(file)) {
      try {
        secrets.push(readFileSync(file, 'utf8').trim());
      } catch {
        // unreadable: then it cannot be rendered either
      }
    }
    for (const [name, value] of Object.entries(env)) {
      if (value !== undefined && SECRET_ENV.test(name)) secrets.push(value);
    }
    return new Redactor(secrets);
  }

  text(value: string): string {
    let out = value.replace(TOKEN_SHAPE, HIDDEN);
    for (const secret of this.secrets) if (out.includes(secret)) out = out.split(secret).join(HIDDEN);
    return out;
  }

  /** A JSON value with credential-like keys hidden and every string passed through `text`. */
  json(value: unknown, depth = 0): unknown {
    if (typeof value === 'string') return this.text(value);
    if (value === null || typeof value !== 'object' || depth > 64) return value;
    if (Array.isArray(value)) return value.map((v) => this.json(v, depth + 1));
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>).map(([k, v]) => [
        k,
        typeof v === 'string' && SECRET_KEY.test(k) ? HIDDEN : this.json(v, depth + 1),
      ]),
    );
  }
}
