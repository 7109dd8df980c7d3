import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Scrubber, STATIC_TOKEN_SHAPE } from '../catalogs/credentials.js';
import { terminalSafe } from '../engine/terminal-text.js';
import { escapeHtml } from './html.js';

/** Keys whose string and number values are credentials wherever they appear (context, outputs, telemetry). */
const SECRET_KEY =
  /token|secret|passw(or)?d|api[-_]?key|authorization|credential|private[-_]?key|cookie|session/i;
/** Credential-like keys that name a count, a size or a time (`max_tokens`, `session_ttl`): numbers stay. */
const MEASURE_KEY = /max|min|count|limit|total|num|used|size|length|ttl|expir|_at$|ms$|seconds/i;

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
 * to this process are replaced wherever they occur, in every form the scrubber that guards catalog
 * answers and storage knows (as is, base64 at any alignment, URL-encoded, JSON-escaped) and as they
 * appear in HTML; token-shaped strings too (`wlt_` bearer tokens of this server included), and string
 * and number values under credential-like keys.
 */
export class Redactor {
  private readonly scrubber: Scrubber;

  constructor(secrets: Iterable<string>) {
    const known = [...secrets].filter((s) => s.length >= 8);
    const inJson = (s: string) => JSON.stringify(s).slice(1, -1);
    this.scrubber = new Scrubber(
      known.flatMap((s) => [s, escapeHtml(s), escapeHtml(inJson(s))]),
      HIDDEN,
    );
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

  /**
   * Text fit to render: terminal controls and bidirectional overrides removed first (check and command
   * output may carry them, and a secret split by one is whole again for the scrubber), then tokens
   * (continuation tokens, JWTs, this server's `wlt_` bearer tokens) and known secrets hidden.
   */
  text(value: string): string {
    return this.scrubber.text(
      terminalSafe(value).replace(TOKEN_SHAPE, HIDDEN).replace(STATIC_TOKEN_SHAPE, HIDDEN),
    );
  }

  /**
   * A JSON value with the values of credential-like keys hidden (strings, and numbers unless the key
   * names a measure), every string and key passed through `text`, and numbers equal to a secret hidden.
   */
  json(value: unknown, depth = 0): unknown {
    if (typeof value === 'string') return this.text(value);
    if (typeof value === 'number' || typeof value === 'bigint') return this.scrubber.value(value);
    if (value === null || typeof value !== 'object' || depth > 64) return value;
    if (Array.isArray(value)) return value.map((v) => this.json(v, depth + 1));
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>).map(([k, v]) => [
        this.text(k),
        SECRET_KEY.test(k) &&
        (typeof v === 'string' || ((typeof v === 'number' || typeof v === 'bigint') && !MEASURE_KEY.test(k)))
          ? HIDDEN
          : this.json(v, depth + 1),
      ]),
    );
  }
}
