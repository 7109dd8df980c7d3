/**
 * Catalog credentials: read from the environment only when a call is made, bound to the origin they
 * were configured for, and scrubbed from everything an API sends back (in any of the encodings an API
 * is likely to echo them in) before the answer is stored, templated into a prompt or returned.
 */

/** Credentials come from environment variables named here; their values are never echoed. */
export type CatalogAuth =
  | { type: 'bearer'; token_env: string }
  | { type: 'basic'; username_env: string; password_env: string }
  | { type: 'api_key'; header: string; value_env: string };

const envPrefix = (catalogId: string) =>
  `WORKFLOWLOOKUP_CATALOG_${catalogId.toUpperCase().replaceAll('-', '_')}`;

/** Environment variable names a catalog's credentials are read from, by convention. */
export function defaultAuthEnv(
  catalogId: string,
  type: CatalogAuth['type'],
  header = 'X-API-Key',
): CatalogAuth {
  const prefix = envPrefix(catalogId);
  if (type === 'bearer') return { type, token_env: `${prefix}_TOKEN` };
  if (type === 'basic')
    return { type, username_env: `${prefix}_USERNAME`, password_env: `${prefix}_PASSWORD` };
  return { type, header, value_env: `${prefix}_API_KEY` };
}

/** The operator's own binding of a catalog's credential to an origin, set outside MCP. */
export function originSetting(catalogId: string): string {
  return `${envPrefix(catalogId)}_ORIGIN`;
}

/** The variables a credential is read from. */
export function authEnvNames(auth: CatalogAuth | null): string[] {
  if (auth === null) return [];
  if (auth.type === 'bearer') return [auth.token_env];
  if (auth.type === 'basic') return [auth.username_env, auth.password_env];
  return [auth.value_env];
}

/** `scheme://host:port` of a URL, with the default port written out, or undefined when it does not parse. */
export function originOf(url: string): string | undefined {
  try {
    const parsed = new URL(url);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return undefined;
    const port = parsed.port || (parsed.protocol === 'https:' ? '443' : '80');
    return `${parsed.protocol}//${parsed.hostname}:${port}`;
  } catch {
    return undefined;
  }
}

/** A credential that is not set (`missing`) or not bound to the origin it would be sent to (`unbound`). */
export class CredentialProblem extends Error {
  constructor(
    message: string,
    readonly kind: 'missing' | 'unbound',
  ) {
    super(message);
    this.name = 'CredentialProblem';
  }
}

/** The headers a catalog call carries, and every value that must never come back out. */
export function credentialHeaders(
  catalogId: string,
  auth: CatalogAuth | null,
  env: NodeJS.ProcessEnv,
): { headers: Record<string, string>; secrets: string[] } {
  if (auth === null) return { headers: {}, secrets: [] };
  const need = (name: string) => {
    const value = env[name];
    if (value === undefined || value === '') {
      throw new CredentialProblem(
        `catalog "${catalogId}" needs the environment variable ${name} (${auth.type} credential), which is not set`,
        'missing',
      );
    }
    return value;
  };
  if (auth.type === 'bearer') {
    const token = need(auth.token_env);
    return { headers: { authorization: `Bearer ${token}` }, secrets: [token] };
  }
  if (auth.type === 'basic') {
    const user = need(auth.username_env);
    const pass = need(auth.password_env);
    const encoded = Buffer.from(`${user}:${pass}`).toString('base64');
    return { headers: { authorization: `Basic ${encoded}` }, secrets: [pass, `${user}:${pass}`, encoded] };
  }
  const value = need(auth.value_env);
  return { headers: { [auth.header.toLowerCase()]: value }, secrets: [value] };
}

/** Credential values set for catalogs: those the catalogs name, and any variable of the convention. */
export function configuredSecrets(auths: readonly (CatalogAuth | null)[], env: NodeJS.ProcessEnv): string[] {
  const out = new Set<string>();
  for (const auth of auths) {
    if (auth === null) continue;
    if (auth.type === 'basic') {
      const user = env[auth.username_env];
      const pass = env[auth.password_env];
      if (pass) out.add(pass);
      if (user && pass) out.add(`${user}:${pass}`);
    } else {
      const value = env[auth.type === 'bearer' ? auth.token_env : auth.value_env];
      if (value) out.add(value);
    }
  }
  for (const [name, value] of Object.entries(env)) {
    if (value && /^WORKFLOWLOOKUP_CATALOG_[A-Z0-9_]+_(TOKEN|PASSWORD|API_KEY)$/.test(name)) out.add(value);
  }
  return [...out];
}

/** Shorter than this, a value is too likely to occur by chance to be replaced everywhere. */
const MIN_SECRET_CHARS = 4;

/**
 * The base64 characters that encode `bytes` wherever they sit in a longer encoded text: one run per
 * alignment (the secret starting at byte offset 0, 1 or 2 of a 3-byte group), leaving out the edge
 * characters that also depend on the neighbouring bytes.
 */
function base64Runs(bytes: Buffer): string[] {
  const runs: string[] = [];
  for (let offset = 0; offset < 3; offset++) {
    const padded = Buffer.concat([Buffer.alloc(offset), bytes, Buffer.alloc(2)]);
    const start = Math.ceil((8 * offset) / 6);
    const end = Math.floor((8 * (offset + bytes.length)) / 6);
    const std = padded.toString('base64').slice(start, end);
    runs.push(std, std.replaceAll('+', '-').replaceAll('/', '_'));
  }
  return runs;
}

const unicodeEscape = (c: string, upper: boolean) => {
  const hex = c.charCodeAt(0).toString(16).padStart(4, '0');
  return `\\u${upper ? hex.toUpperCase() : hex}`;
};

/** The forms a secret may be echoed in: as is, base64 (any alignment), URL-encoded, JSON-escaped. */
export function secretForms(secret: string): string[] {
  if (secret.length < MIN_SECRET_CHARS) return [];
  const forms = new Set<string>([secret]);
  const url = encodeURIComponent(secret);
  forms.add(url);
  forms.add(url.replace(/%[0-9A-F]{2}/g, (h) => h.toLowerCase()));
  forms.add(url.replaceAll('%20', '+'));
  // JSON encoders differ in what they escape beyond quotes and backslashes: `/`, non-ASCII, and the
  // characters that matter in HTML (`<>&'`, `+` for .NET); each combination is its own form.
  const json = JSON.stringify(secret).slice(1, -1);
  for (const slash of [json, json.replaceAll('/', '\\/')]) {
    forms.add(slash);
    for (const upper of [false, true]) {
      forms.add(slash.replace(/[^\x20-\x7e]/g, (c) => unicodeEscape(c, upper)));
      forms.add(slash.replace(/[^\x20-\x7e]|[<>&'+]/g, (c) => unicodeEscape(c, upper)));
    }
  }
  for (const run of base64Runs(Buffer.from(secret, 'utf8'))) forms.add(run);
  return [...forms].filter((f) => f.length >= MIN_SECRET_CHARS).sort((a, b) => b.length - a.length);
}

export const REDACTED = '***';

/** Replaces every form of the given secrets with *** (or `marker`), in text and in any JSON value. */
export class Scrubber {
  private readonly forms: string[];

  constructor(
    secrets: Iterable<string>,
    private readonly marker = REDACTED,
  ) {
    const all = new Set<string>();
    for (const s of secrets) for (const f of secretForms(s)) all.add(f);
    this.forms = [...all].sort((a, b) => b.length - a.length);
  }

  get empty(): boolean {
    return this.forms.length === 0;
  }

  text(value: string): string {
    let out = value;
    for (const form of this.forms) if (out.includes(form)) out = out.split(form).join(this.marker);
    return out;
  }

  /** A copy of a JSON value with secrets replaced in every string, key and number. */
  value(value: unknown): unknown {
    if (this.empty) return value;
    if (typeof value === 'string') return this.text(value);
    if (typeof value === 'number' || typeof value === 'bigint') {
      const text = String(value);
      return this.text(text) === text ? value : this.marker;
    }
    if (Array.isArray(value)) return value.map((v) => this.value(v));
    if (value !== null && typeof value === 'object') {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [this.text(k), this.value(v)]));
    }
    return value;
  }
}
