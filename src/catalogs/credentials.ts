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

/**
 * This server's static bearer tokens (`workflowlookup token add`: `wlt_` and 43 base64url characters),
 * to hide wherever they occur in text shown to someone, not only after "Bearer". A run shorter than a
 * whole token is hidden too (a token cut short by a tail still narrows a guess). No anchor before it:
 * each match starts at a `wlt_` and fails within 16 characters, so the scan stays linear.
 */
export const STATIC_TOKEN_SHAPE = /wlt_[A-Za-z0-9_-]{16,}/g;

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

/**
 * The forms a secret may be echoed in: as is, hex (its UTF-8 bytes), base64 (any alignment),
 * URL-encoded, JSON-escaped. The Scrubber also matches each of them in any case and with line breaks
 * between any of its characters, so those variants need no form of their own.
 */
export function secretForms(secret: string): string[] {
  if (secret.length < MIN_SECRET_CHARS) return [];
  const forms = new Set<string>([secret]);
  forms.add(Buffer.from(secret, 'utf8').toString('hex'));
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

const LF = 0x0a;
const CR = 0x0d;

let foldTable: Uint16Array | undefined;

/** A UTF-16 code unit in lower case (where that is one code unit), for matching in any case. */
function fold(unit: number): number {
  if (unit < 0x80) return unit >= 0x41 && unit <= 0x5a ? unit + 32 : unit;
  if (foldTable === undefined) {
    foldTable = new Uint16Array(0x10000);
    for (let c = 0; c < 0x10000; c++) {
      const lower = String.fromCharCode(c).toLowerCase();
      foldTable[c] = lower.length === 1 ? lower.charCodeAt(0) : c;
    }
  }
  return foldTable[unit] as number;
}

/**
 * Finds many strings at once in one pass over a text (Aho-Corasick): in any case, skipping line breaks
 * (CR, LF) in the text, so a secret upper-cased or wrapped at 64 columns is found too. The time is
 * linear in the text (plus the strings' total length to build), whatever the strings, which a loop of
 * `includes` or a regex alternation of every form is not.
 */
class Matcher {
  /** Transitions by folded code unit; node 0 is the root. */
  private readonly edges: Map<number, number>[] = [new Map()];
  private readonly fail: Int32Array;
  /** The longest string that ends at this node (itself or by its failure links); 0: none. */
  private readonly best: Int32Array;
  /** The longest string, in units that are not line breaks. */
  private readonly longest: number;
  /** The root's transitions for ASCII units (0: stay at the root). */
  private readonly root: Int32Array;

  constructor(strings: readonly string[]) {
    const ends: number[] = [0];
    let longest = 0;
    for (const s of strings) {
      let node = 0;
      let length = 0;
      for (let i = 0; i < s.length; i++) {
        const unit = s.charCodeAt(i);
        if (unit === LF || unit === CR) continue;
        const c = fold(unit);
        const edges = this.edges[node] as Map<number, number>;
        let next = edges.get(c);
        if (next === undefined) {
          next = this.edges.length;
          edges.set(c, next);
          this.edges.push(new Map());
          ends.push(0);
        }
        node = next;
        length++;
      }
      if (length >= MIN_SECRET_CHARS) ends[node] = Math.max(ends[node] as number, length);
      longest = Math.max(longest, length);
    }
    this.longest = longest;
    this.root = new Int32Array(0x80);
    for (const [c, child] of this.edges[0] as Map<number, number>) if (c < 0x80) this.root[c] = child;
    this.fail = new Int32Array(this.edges.length);
    this.best = Int32Array.from(ends);
    // Breadth first, so a node's failure link is final before its children's are made from it.
    const queue: number[] = [0];
    for (let q = 0; q < queue.length; q++) {
      const node = queue[q] as number;
      for (const [c, child] of this.edges[node] as Map<number, number>) {
        queue.push(child);
        if (node === 0) continue;
        let f = this.fail[node] as number;
        while (f !== 0 && !(this.edges[f] as Map<number, number>).has(c)) f = this.fail[f] as number;
        const target = (this.edges[f] as Map<number, number>).get(c) ?? 0;
        this.fail[child] = target;
        this.best[child] = Math.max(this.best[child] as number, this.best[target] as number);
      }
    }
  }

  get empty(): boolean {
    return this.longest < MIN_SECRET_CHARS;
  }

  /** The parts of `text` the strings cover, as [start, end) ranges, overlapping ones merged, in order. */
  ranges(text: string): [number, number][] {
    const out: [number, number][] = [];
    const { edges, fail, best, root } = this;
    // Where in `text` each of the last units that are not line breaks was (a power of two: a mask, not %).
    const mask = 2 ** Math.ceil(Math.log2(Math.max(2, this.longest))) - 1;
    const at = new Int32Array(mask + 1);
    let seen = 0;
    let node = 0;
    for (let i = 0; i < text.length; i++) {
      const unit = text.charCodeAt(i);
      if (unit === LF || unit === CR) continue;
      const c = unit < 0x80 ? (unit >= 0x41 && unit <= 0x5a ? unit + 32 : unit) : fold(unit);
      at[seen & mask] = i;
      seen++;
      for (;;) {
        if (node === 0) {
          // Most units are read at the root: an array there, not a map.
          node = c < 0x80 ? (root[c] as number) : ((edges[0] as Map<number, number>).get(c) ?? 0);
          break;
        }
        const next = (edges[node] as Map<number, number>).get(c);
        if (next !== undefined) {
          node = next;
          break;
        }
        node = fail[node] as number;
      }
      const length = best[node] as number;
      if (length === 0) continue;
      let start = at[(seen - length) & mask] as number;
      // Shorter matches ending here lie inside this one; earlier ones it overlaps merge into it.
      while (out.length > 0 && (out[out.length - 1] as [number, number])[1] > start) {
        start = Math.min(start, (out.pop() as [number, number])[0]);
      }
      out.push([start, i + 1]);
    }
    return out;
  }
}

/**
 * Replaces every form of the given secrets with *** (or `marker`), in text and in any JSON value: in any
 * case, and with line breaks (LF, CR-LF) between any of its characters (the whole stretch is replaced).
 */
export class Scrubber {
  private readonly matcher: Matcher;

  constructor(
    secrets: Iterable<string>,
    private readonly marker = REDACTED,
  ) {
    const all = new Set<string>();
    for (const s of secrets) for (const f of secretForms(s)) all.add(f);
    this.matcher = new Matcher([...all]);
  }

  get empty(): boolean {
    return this.matcher.empty;
  }

  text(value: string): string {
    if (this.empty) return value;
    const ranges = this.matcher.ranges(value);
    if (ranges.length === 0) return value;
    const parts: string[] = [];
    let from = 0;
    for (const [start, end] of ranges) {
      parts.push(value.slice(from, start), this.marker);
      from = end;
    }
    parts.push(value.slice(from));
    return parts.join('');
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
