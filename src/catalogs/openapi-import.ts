/**
 * OpenAPI import: reads a Swagger 2.0 / OpenAPI 3.x document, validates and dereferences it with
 * @readme/openapi-parser, and plans a catalog from it (commands, providers of choices, auth, base URL).
 *
 * Nothing here touches the network or the file system: external `$ref`s are reported as violations and
 * never handed to the parser, whose own external and file resolution is switched off as well. The
 * parser is loaded on first use so start-up does not pay for it.
 */
import { fail } from '../engine/errors.js';
import { parseDefinition } from '../workflows/parse.js';
import type { Violation } from '../workflows/validate-definition.js';

export type DocumentKind = 'openapi_2' | 'openapi_3' | 'unknown';

export interface CommandParameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required: boolean;
  schema: Record<string, unknown>;
  description?: string;
}

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'HEAD' | 'OPTIONS';

export interface CatalogCommand {
  /** Kebab-case, unique in the catalog: from operationId, else `${method}-${path segments}`. */
  name: string;
  /** First tag kebab-cased, else first path segment, else 'default'. */
  group: string;
  method: HttpMethod;
  /** As in the document, e.g. /tasks/{taskId}. */
  path: string;
  summary: string;
  /** Path, query and header parameters, path-level ones merged in (the operation's win). */
  parameters: CommandParameter[];
  /** JSON request body schema, dereferenced. */
  body_schema?: Record<string, unknown>;
  body_required: boolean;
  /** Schema of the first 2xx JSON response, dereferenced. */
  response_schema?: Record<string, unknown>;
  idempotent: boolean;
}

export interface ProviderContract {
  /** Command name (not prefixed with the catalog). */
  command: string;
  value_field: string;
  label_field: string;
  required_parameters: string[];
  /** Set when the array is a property of the response object (e.g. 'items' or 'data'). */
  items_path?: string;
}

export interface AuthScheme {
  type: 'bearer' | 'basic' | 'api_key';
  header?: string;
}

export interface LoadedDocument {
  kind: DocumentKind;
  /** The dereferenced document when valid; otherwise whatever was parsed (null if the text did not parse). */
  document: unknown;
  operation_count: number;
  warnings: string[];
  violations: Violation[];
  /** True when there are no violations. */
  valid: boolean;
}

export interface ImportPlan {
  title: string;
  vendor: string | null;
  base_url: string | null;
  commands: CatalogCommand[];
  providers: ProviderContract[];
  auth: AuthScheme | null;
  /** The document's warnings followed by those of planning. */
  warnings: string[];
}

/** Largest document accepted, in UTF-8 bytes. */
export const MAX_DOCUMENT_BYTES = 5 * 1024 * 1024;

/** Methods that may hold an operation in a path item, in the order OpenAPI lists them. */
const OPERATION_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
const IMPORTED_METHODS: ReadonlySet<string> = new Set([
  'get',
  'put',
  'post',
  'delete',
  'options',
  'head',
  'patch',
]);
const IDEMPOTENT_METHODS: ReadonlySet<HttpMethod> = new Set(['GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS']);
const PARSER_TIMEOUT_MS = 20_000;

type Json = Record<string, unknown>;

// ---------------------------------------------------------------------------------------------
// Loading

/** Reads and validates an OpenAPI document from text (JSON or YAML). Never throws for bad input: returns violations. */
export async function parseOpenApi(text: string): Promise<LoadedDocument> {
  const loaded = (
    kind: DocumentKind,
    document: unknown,
    violations: Violation[],
    warnings: string[] = [],
  ): LoadedDocument => ({
    kind,
    document,
    operation_count: countOperations(document),
    warnings,
    violations,
    valid: violations.length === 0,
  });

  // UTF-8 takes at least one byte per UTF-16 unit, so a long string is over without measuring it.
  const bytes = text.length > MAX_DOCUMENT_BYTES ? text.length : Buffer.byteLength(text, 'utf8');
  if (bytes > MAX_DOCUMENT_BYTES) {
    return loaded('unknown', null, [
      {
        path: '',
        rule: 'maxSize',
        message: `the document is larger than ${MAX_DOCUMENT_BYTES} bytes`,
        expected: `at most ${MAX_DOCUMENT_BYTES} bytes`,
        actual: text.length > MAX_DOCUMENT_BYTES ? `more than ${MAX_DOCUMENT_BYTES} bytes` : `${bytes} bytes`,
      },
    ]);
  }

  const source = text.replace(/^\uFEFF/, '');
  let parsed = await parseDefinition(source, /^\s*[{[]/.test(source) ? 'json' : 'yaml');
  if (!parsed.ok && /^\s*[{[]/.test(source)) {
    // YAML flow style also starts with a brace; keep the JSON errors if it is not that either.
    const asYaml = await parseDefinition(source, 'yaml');
    if (asYaml.ok) parsed = asYaml;
  }
  if (!parsed.ok) return loaded('unknown', null, parsed.violations);
  const data = parsed.data;

  const kind = kindOf(data);
  if (kind === 'unknown' || !isRecord(data)) {
    return loaded('unknown', data, [
      {
        path: '',
        rule: 'openapi',
        message: 'not an OpenAPI document: expected a top-level `openapi: 3.x` or `swagger: "2.0"` field',
        expected: 'OpenAPI 2.0 or 3.x',
        actual: describeVersion(data),
      },
    ]);
  }

  const warnings: string[] = [];
  const violations: Violation[] = [];

  // $refs the parser must not see: external ones (never fetched) and local ones that lead nowhere. Each is
  // replaced by an empty object in the parser's copy so the rest of the document still gets validated.
  const badRefs = checkRefs(data);
  violations.push(...badRefs.map((b) => b.violation));
  const forParser = structuredClone(data);
  for (const bad of badRefs) replaceAt(forParser, bad.at, {});

  let parser: typeof import('@readme/openapi-parser');
  try {
    parser = await import('@readme/openapi-parser');
  } catch (error) {
    violations.push({
      path: '',
      rule: 'openapi',
      message: `OpenAPI parser unavailable: ${errorMessage(error)}`,
    });
    return loaded(kind, data, violations, warnings);
  }
  const circular = new Set<string>();
  const options = {
    resolve: { external: false, file: false },
    dereference: { circular: 'ignore' as const, onCircular: (path: string) => circular.add(path) },
    timeoutMs: PARSER_TIMEOUT_MS,
    validate: { errors: { colorize: false } },
  };

  type ApiArg = Parameters<typeof parser.validate>[0];
  try {
    // `validate` dereferences its argument in place; error code frames point into that object.
    const result = await parser.validate(forParser as ApiArg, options);
    warnings.push(...result.warnings.map((w) => w.message));
    if (!result.valid) {
      const suppressed = badRefs.map((b) => toPointer(b.at));
      for (const error of result.errors) {
        const violation = parserViolation(error.message, forParser);
        if (suppressed.some((p) => violation.path === p || violation.path.startsWith(`${p}/`))) continue;
        violations.push(violation);
      }
      if (result.additionalErrors > 0) {
        violations.push({
          path: '',
          rule: 'openapi',
          message: `${result.additionalErrors} more validation errors not shown`,
        });
      }
    }
  } catch (error) {
    violations.push({ path: '', rule: 'openapi', message: errorMessage(error) });
  }
  if (violations.length > 0) return loaded(kind, data, violations, warnings);

  let document: unknown;
  try {
    document = await parser.dereference(structuredClone(data) as ApiArg, options);
  } catch (error) {
    return loaded(kind, data, [{ path: '', rule: 'openapi', message: errorMessage(error) }], warnings);
  }
  for (const ref of circular) {
    // The parser reports the place as `<cwd>#/pointer`; only the pointer means anything here.
    const at = ref.includes('#') ? ref.slice(ref.indexOf('#') + 1) : ref;
    warnings.push(`circular $ref at ${at || '/'} is left as a $ref in the imported schemas`);
  }
  const result = loaded(kind, document, [], warnings);
  if (result.operation_count === 0) warnings.push('the document has no operations');
  return result;
}

function kindOf(data: unknown): DocumentKind {
  if (!isRecord(data)) return 'unknown';
  if (typeof data.openapi === 'string' && /^3\.\d+(\.\d+)?/.test(data.openapi)) return 'openapi_3';
  if (data.swagger === '2.0' || data.swagger === 2) return 'openapi_2';
  return 'unknown';
}

function describeVersion(data: unknown): string {
  if (!isRecord(data)) return data === null ? 'null' : Array.isArray(data) ? 'an array' : typeof data;
  if ('openapi' in data) return `openapi: ${JSON.stringify(data.openapi)}`;
  if ('swagger' in data) return `swagger: ${JSON.stringify(data.swagger)}`;
  return 'neither `openapi` nor `swagger`';
}

function countOperations(document: unknown): number {
  if (!isRecord(document) || !isRecord(document.paths)) return 0;
  let count = 0;
  for (const item of Object.values(document.paths)) {
    if (!isRecord(item)) continue;
    for (const method of OPERATION_METHODS) if (isRecord(item[method])) count++;
  }
  return count;
}

interface BadRef {
  at: string[];
  violation: Violation;
}

/** Every `$ref` that is external, or local but leads nowhere. */
function checkRefs(root: Json): BadRef[] {
  const bad: BadRef[] = [];
  const visit = (node: unknown, at: string[]): void => {
    if (Array.isArray(node)) {
      for (const [i, child] of node.entries()) visit(child, [...at, String(i)]);
      return;
    }
    if (!isRecord(node)) return;
    const ref = node.$ref;
    if (typeof ref === 'string') {
      if (!ref.startsWith('#')) {
        bad.push({
          at,
          violation: {
            path: toPointer(at),
            rule: 'externalRef',
            message: `external $ref ${JSON.stringify(ref)} is not supported (documents are never fetched): inline it`,
            expected: 'a local reference starting with #',
            actual: ref,
          },
        });
        return;
      }
      if (resolveLocal(root, ref) === undefined) {
        bad.push({
          at,
          violation: {
            path: toPointer(at),
            rule: 'openapi',
            message: `$ref ${JSON.stringify(ref)} points to nothing in the document`,
            actual: ref,
          },
        });
        return;
      }
    }
    for (const [key, child] of Object.entries(node)) visit(child, [...at, key]);
  };
  visit(root, []);
  return bad;
}

/**
 * Resolves a local `#/...` reference, following `$ref`s met on the way. Returns null (found) for anchors
 * and other forms left to the parser, undefined when the target is missing.
 */
function resolveLocal(root: Json, ref: string, depth = 0): unknown {
  let fragment: string;
  try {
    fragment = decodeURIComponent(ref.slice(1));
  } catch {
    fragment = ref.slice(1);
  }
  if (fragment === '') return root;
  if (!fragment.startsWith('/')) return null;
  let node: unknown = root;
  for (const raw of fragment.slice(1).split('/')) {
    const token = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    for (let hops = 0; isRecord(node) && typeof node.$ref === 'string' && !(token in node); hops++) {
      if (hops > 20 || depth > 20 || !node.$ref.startsWith('#')) return null;
      node = resolveLocal(root, node.$ref, depth + 1);
    }
    if (Array.isArray(node)) node = /^\d+$/.test(token) ? node[Number(token)] : undefined;
    else if (isRecord(node) && Object.hasOwn(node, token)) node = node[token];
    else return undefined;
    if (node === undefined) return undefined;
  }
  return node;
}

function replaceAt(root: unknown, at: readonly string[], value: unknown): void {
  if (at.length === 0) return;
  let node = root;
  for (const key of at.slice(0, -1)) {
    if (!isRecord(node) && !Array.isArray(node)) return;
    node = (node as Record<string, unknown>)[key];
  }
  const last = at[at.length - 1] as string;
  if (isRecord(node) || Array.isArray(node)) (node as Record<string, unknown>)[last] = value;
}

function toPointer(at: readonly string[]): string {
  return at.map((p) => `/${p.replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');
}

/**
 * Turns one of the parser's error messages into a violation. Schema errors carry a code frame of the
 * document as `JSON.stringify(doc, null, 2)`; the marked line gives the JSON pointer. Specification
 * errors name their place as `/paths/{path}/{method}...` in backticks.
 */
function parserViolation(message: string, validated: unknown): Violation {
  // better-ajv-errors starts with a category in capitals (REQUIRED, ENUM, TYPE...) that adds nothing.
  const first = (message.split('\n')[0] ?? message).replace(/^[A-Z]{2,}(?: [A-Z]{2,})* (?=[a-z])/, '');
  const hint = /^\s*\|\s*\^+\s*(.+)$/m.exec(message)?.[1]?.trim();
  const text = hint ? `${first.trim()} (${hint})` : first.trim();
  return {
    path: framePointer(message, validated) ?? namedPointer(message) ?? '',
    rule: 'openapi',
    message: text,
  };
}

function framePointer(message: string, validated: unknown): string | undefined {
  const marked = /^>\s*(\d+) \| (.*)$/m.exec(message);
  if (!marked?.[1]) return undefined;
  const line = Number(marked[1]);
  const lines = JSON.stringify(validated, null, 2)?.split('\n') ?? [];
  // The frame must show the line we think it does; otherwise say nothing rather than point wrongly.
  if (lines[line - 1]?.trimEnd() !== (marked[2] ?? '').trimEnd()) return undefined;
  return linePointers(validated)[line - 1];
}

/** The JSON pointer of each line of `JSON.stringify(value, null, 2)`. */
export function linePointers(value: unknown): string[] {
  const out: string[] = [''];
  const visit = (node: unknown, ptr: string): void => {
    if (node === null || typeof node !== 'object') return;
    const entries: [string, unknown][] = Array.isArray(node)
      ? node.map((child, i) => [String(i), child])
      : Object.entries(node).filter(
          ([, v]) => v !== undefined && typeof v !== 'function' && typeof v !== 'symbol',
        );
    if (entries.length === 0) return;
    for (const [key, child] of entries) {
      const childPtr = `${ptr}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`;
      out.push(childPtr);
      visit(child, childPtr);
    }
    out.push(ptr);
  };
  visit(value, '');
  return out;
}

function namedPointer(message: string): string | undefined {
  for (const [, id] of message.matchAll(/`(\/[^`\s]+)`/g)) {
    if (!id) continue;
    const op = /^\/paths(\/.*?)\/(get|put|post|delete|options|head|patch|trace)(\/.*)?$/.exec(id);
    if (op?.[1]) return `/paths/${op[1].replaceAll('~', '~0').replaceAll('/', '~1')}/${op[2]}${op[3] ?? ''}`;
    if (/^\/(components|definitions|securityDefinitions|paths)\//.test(id)) return id;
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Planning

/** Turns a valid document into commands and providers. Throws `catalog_invalid` for an invalid one. */
export function planImport(
  doc: LoadedDocument,
  options: { title: string; vendor?: string; base_url?: string },
): ImportPlan {
  if (doc.kind === 'unknown' || doc.violations.length > 0 || !isRecord(doc.document)) {
    fail({
      code: 'catalog_invalid',
      message: 'the OpenAPI document is not valid; nothing can be imported from it',
      violations:
        doc.violations.length > 0
          ? doc.violations
          : [{ path: '', rule: 'openapi', message: 'not an OpenAPI document' }],
    });
  }
  const document = doc.document;
  const warnings = [...doc.warnings];
  const commands = planCommands(document, doc.kind, warnings);
  const providers = commands.flatMap((c) => providerFor(c) ?? []);
  return {
    title: options.title,
    vendor: options.vendor ?? null,
    base_url: options.base_url ?? baseUrlOf(document, doc.kind, warnings),
    commands,
    providers,
    auth: authOf(document, doc.kind, warnings),
    warnings,
  };
}

function planCommands(document: Json, kind: DocumentKind, warnings: string[]): CatalogCommand[] {
  const commands: CatalogCommand[] = [];
  const taken = new Set<string>();
  const paths = isRecord(document.paths) ? document.paths : {};
  for (const [path, item] of Object.entries(paths)) {
    if (!isRecord(item)) continue;
    const shared = Array.isArray(item.parameters) ? item.parameters : [];
    for (const [key, operation] of Object.entries(item)) {
      const lower = key.toLowerCase();
      if (!(OPERATION_METHODS as readonly string[]).includes(lower) || !isRecord(operation)) continue;
      const where = `${lower.toUpperCase()} ${path}`;
      if (!IMPORTED_METHODS.has(lower)) {
        warnings.push(`${where}: ${lower.toUpperCase()} operations are not imported`);
        continue;
      }
      const method = lower.toUpperCase() as HttpMethod;
      const wanted = commandName(operation, method, path);
      let name = wanted;
      for (let n = 2; taken.has(name); n++) name = `${wanted}-${n}`;
      if (name !== wanted)
        warnings.push(`${where}: command name "${wanted}" is already used; named "${name}"`);
      taken.add(name);

      const raw = mergeParameters(shared, Array.isArray(operation.parameters) ? operation.parameters : []);
      const body = requestBody(operation, raw, kind, where, warnings);
      const response = responseSchema(operation, kind);
      commands.push({
        name,
        group: groupOf(operation, path),
        method,
        path,
        summary: summaryOf(operation, method, path),
        parameters: commandParameters(raw, kind, where, warnings),
        ...(body.schema ? { body_schema: body.schema } : {}),
        body_required: body.required,
        ...(response ? { response_schema: response } : {}),
        idempotent: IDEMPOTENT_METHODS.has(method),
      });
    }
  }
  return commands;
}

function commandName(operation: Json, method: HttpMethod, path: string): string {
  const fromId = typeof operation.operationId === 'string' ? kebab(operation.operationId, true) : '';
  if (fromId) return fromId;
  const segments = path
    .split('/')
    .filter(Boolean)
    .map((s) => kebab(s.replace(/[{}]/g, ''), true));
  return [method.toLowerCase(), ...segments].filter(Boolean).join('-');
}

function groupOf(operation: Json, path: string): string {
  const tags = Array.isArray(operation.tags) ? operation.tags : [];
  const tag = typeof tags[0] === 'string' ? kebab(tags[0], true) : '';
  if (tag) return tag;
  const segment = path.split('/').find(Boolean);
  return (segment && kebab(segment.replace(/[{}]/g, ''), true)) || 'default';
}

function summaryOf(operation: Json, method: HttpMethod, path: string): string {
  if (typeof operation.summary === 'string' && operation.summary.trim()) return operation.summary.trim();
  if (typeof operation.description === 'string') {
    const line = operation.description
      .split('\n')
      .map((l) => l.trim())
      .find(Boolean);
    if (line) return line;
  }
  return `${method} ${path}`;
}

/** Path-level parameters overridden by the operation's ones with the same name and location. */
function mergeParameters(shared: unknown[], own: unknown[]): Json[] {
  const key = (p: Json) => `${String(p.in)}\u0000${String(p.name)}`;
  const ownKeys = new Set(own.filter(isRecord).map(key));
  return [...shared.filter(isRecord).filter((p) => !ownKeys.has(key(p))), ...own.filter(isRecord)];
}

/** Parameter Object fields of Swagger 2.0 that describe the value itself. */
const V2_SCHEMA_FIELDS = [
  'type',
  'format',
  'items',
  'enum',
  'default',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'minLength',
  'maxLength',
  'pattern',
  'minItems',
  'maxItems',
  'uniqueItems',
  'multipleOf',
];

function commandParameters(
  raw: Json[],
  kind: DocumentKind,
  where: string,
  warnings: string[],
): CommandParameter[] {
  const out: CommandParameter[] = [];
  for (const p of raw) {
    if (typeof p.name !== 'string') continue;
    const location = p.in;
    if (location === 'body') continue;
    if (location !== 'path' && location !== 'query' && location !== 'header') {
      warnings.push(`${where}: ${String(location)} parameter "${p.name}" is skipped (not supported)`);
      continue;
    }
    let schema: unknown;
    if (kind === 'openapi_2') {
      schema = Object.fromEntries(V2_SCHEMA_FIELDS.filter((f) => f in p).map((f) => [f, p[f]]));
    } else if (isRecord(p.schema)) {
      schema = p.schema;
    } else if (isRecord(p.content)) {
      // A parameter may describe its value with `content` (one media type) instead of `schema`.
      schema = Object.values(p.content).filter(isRecord)[0]?.schema;
    }
    out.push({
      name: p.name,
      in: location,
      required: location === 'path' || p.required === true,
      schema: isRecord(schema) ? clone(schema) : {},
      ...(typeof p.description === 'string' && p.description ? { description: p.description } : {}),
    });
  }
  return out;
}

function requestBody(
  operation: Json,
  params: Json[],
  kind: DocumentKind,
  where: string,
  warnings: string[],
): { schema?: Json; required: boolean } {
  if (kind === 'openapi_2') {
    const body = params.find((p) => p.in === 'body');
    const form = params.filter((p) => p.in === 'formData');
    if (form.length > 0) warnings.push(`${where}: form parameters are not imported (only JSON bodies are)`);
    if (!body) return { required: form.some((p) => p.required === true) };
    return {
      ...(isRecord(body.schema) ? { schema: clone(body.schema) } : {}),
      required: body.required === true,
    };
  }
  const body = operation.requestBody;
  if (!isRecord(body)) return { required: false };
  const required = body.required === true;
  const media = jsonMedia(body.content);
  if (!media) {
    const types = isRecord(body.content) ? Object.keys(body.content).join(', ') : 'none';
    warnings.push(`${where}: the request body is not JSON (${types}) and is not imported`);
    return { required };
  }
  return { ...(isRecord(media.schema) ? { schema: clone(media.schema) } : {}), required };
}

function responseSchema(operation: Json, kind: DocumentKind): Json | undefined {
  if (!isRecord(operation.responses)) return undefined;
  const codes = Object.keys(operation.responses)
    .filter((c) => /^2(\d\d|XX)$/i.test(c))
    .sort();
  for (const code of codes) {
    const response = operation.responses[code];
    if (!isRecord(response)) continue;
    const schema = kind === 'openapi_2' ? response.schema : jsonMedia(response.content)?.schema;
    if (isRecord(schema)) return clone(schema);
  }
  return undefined;
}

/** The JSON media type entry of a `content` map: application/json first, then any +json, then a wildcard. */
function jsonMedia(content: unknown): Json | undefined {
  if (!isRecord(content)) return undefined;
  const types = Object.keys(content);
  const pick =
    types.find((t) => /^application\/json\s*(;|$)/i.test(t)) ??
    types.find((t) => /^application\/[\w.+-]*\+json\s*(;|$)/i.test(t)) ??
    types.find((t) => /^(\*\/\*|application\/\*)\s*(;|$)/.test(t));
  const media = pick === undefined ? undefined : content[pick];
  return isRecord(media) ? media : undefined;
}

/** A GET without a body whose response is a list of objects, directly or as the one list property. */
function providerFor(command: CatalogCommand): ProviderContract | undefined {
  if (command.method !== 'GET' || command.body_schema || !command.response_schema) return undefined;
  const response = command.response_schema;
  let items = arrayItems(response);
  let itemsPath: string | undefined;
  if (!items) {
    const lists = Object.entries(propertiesOf(response)).flatMap(([key, schema]) => {
      const found = arrayItems(schema);
      return found ? [[key, found] as const] : [];
    });
    if (lists.length !== 1 || !lists[0]) return undefined;
    [itemsPath, items] = lists[0];
  }
  const fields = Object.keys(propertiesOf(items));
  const value = ['id', 'key', 'name', 'slug'].find((f) => fields.includes(f)) ?? fields[0];
  if (value === undefined) return undefined;
  const label = ['name', 'title', 'label', 'display_name'].find((f) => fields.includes(f)) ?? value;
  return {
    command: command.name,
    value_field: value,
    label_field: label,
    required_parameters: command.parameters.filter((p) => p.required).map((p) => p.name),
    ...(itemsPath !== undefined ? { items_path: itemsPath } : {}),
  };
}

/** The item schema of an array-of-objects schema. */
function arrayItems(schema: unknown): Json | undefined {
  if (!isRecord(schema) || !hasType(schema, 'array') || !isRecord(schema.items)) return undefined;
  const items = schema.items;
  return hasType(items, 'object') || Object.keys(propertiesOf(items)).length > 0 ? items : undefined;
}

function hasType(schema: Json, type: string): boolean {
  return schema.type === type || (Array.isArray(schema.type) && schema.type.includes(type));
}

/** Properties of an object schema, including those of its `allOf` parts. */
function propertiesOf(schema: unknown, depth = 0): Json {
  if (!isRecord(schema) || depth > 10) return {};
  const merged: Json = {};
  if (Array.isArray(schema.allOf))
    for (const part of schema.allOf) Object.assign(merged, propertiesOf(part, depth + 1));
  if (isRecord(schema.properties)) Object.assign(merged, schema.properties);
  return merged;
}

function baseUrlOf(document: Json, kind: DocumentKind, warnings: string[]): string | null {
  if (kind === 'openapi_2') {
    if (typeof document.host !== 'string' || !document.host) {
      warnings.push('the document has no host: pass base_url');
      return null;
    }
    const schemes = Array.isArray(document.schemes)
      ? document.schemes.filter((s) => typeof s === 'string')
      : [];
    const scheme = schemes.includes('https') ? 'https' : (schemes[0] ?? 'https');
    const basePath = typeof document.basePath === 'string' ? document.basePath : '';
    return `${scheme}://${document.host}${basePath}`.replace(/\/+$/, '');
  }
  const server = Array.isArray(document.servers) ? document.servers[0] : undefined;
  if (!isRecord(server) || typeof server.url !== 'string') {
    warnings.push('the document lists no servers: pass base_url');
    return null;
  }
  const variables = isRecord(server.variables) ? server.variables : {};
  const url = server.url.replace(/\{([^}]+)\}/g, (whole, name: string) => {
    const variable = variables[name];
    return isRecord(variable) && variable.default !== undefined ? String(variable.default) : whole;
  });
  if (!/^https?:\/\//i.test(url)) {
    warnings.push(`the first server URL ${JSON.stringify(server.url)} is not absolute: pass base_url`);
    return null;
  }
  return url.replace(/\/+$/, '');
}

function authOf(document: Json, kind: DocumentKind, warnings: string[]): AuthScheme | null {
  const components = isRecord(document.components) ? document.components : {};
  const defined = kind === 'openapi_2' ? document.securityDefinitions : components.securitySchemes;
  const schemes = isRecord(defined) ? defined : {};
  if (Object.keys(schemes).length === 0) return null;

  // Schemes the document asks for, top level first, then any other defined one.
  const wanted: string[] = [];
  const addRequirements = (security: unknown) => {
    if (!Array.isArray(security)) return;
    for (const requirement of security) {
      if (isRecord(requirement)) for (const name of Object.keys(requirement)) wanted.push(name);
    }
  };
  addRequirements(document.security);
  if (isRecord(document.paths)) {
    for (const item of Object.values(document.paths)) {
      if (!isRecord(item)) continue;
      for (const method of OPERATION_METHODS)
        if (isRecord(item[method])) addRequirements(item[method].security);
    }
  }
  const order = [...new Set([...wanted, ...Object.keys(schemes)])].filter((name) => isRecord(schemes[name]));

  let chosen: AuthScheme | null = null;
  let chosenName = '';
  for (const name of order) {
    const scheme = authScheme(schemes[name] as Json, kind);
    if (!scheme.auth) {
      if (wanted.includes(name)) warnings.push(`security scheme "${name}": ${scheme.problem}`);
      continue;
    }
    if (chosen === null) {
      chosen = scheme.auth;
      chosenName = name;
      if (scheme.problem) warnings.push(`security scheme "${name}": ${scheme.problem}`);
    } else if (wanted.includes(name) && JSON.stringify(scheme.auth) !== JSON.stringify(chosen)) {
      warnings.push(`security scheme "${name}" is not imported: only one scheme is ("${chosenName}")`);
    }
  }
  if (chosen === null && wanted.length === 0) {
    warnings.push('no supported security scheme (bearer, basic, or apiKey in a header) is defined');
  }
  return chosen;
}

function authScheme(scheme: Json, kind: DocumentKind): { auth?: AuthScheme; problem?: string } {
  const type = String(scheme.type);
  if (type === 'apiKey') {
    if (scheme.in === 'header' && typeof scheme.name === 'string') {
      return { auth: { type: 'api_key', header: scheme.name } };
    }
    return { problem: `an API key in the ${String(scheme.in)} is not supported (only in a header)` };
  }
  if (kind === 'openapi_2' && type === 'basic') return { auth: { type: 'basic' } };
  if (type === 'http') {
    const name = String(scheme.scheme).toLowerCase();
    if (name === 'bearer') return { auth: { type: 'bearer' } };
    if (name === 'basic') return { auth: { type: 'basic' } };
    return { problem: `HTTP authentication scheme "${String(scheme.scheme)}" is not supported` };
  }
  if (type === 'oauth2' || type === 'openIdConnect') {
    return {
      auth: { type: 'bearer' },
      problem: `${type} is imported as a bearer token; the token must be obtained outside the catalog`,
    };
  }
  return { problem: `security type "${type}" is not supported` };
}

// ---------------------------------------------------------------------------------------------
// Names

/** Catalog id from a title: kebab-case, ^[a-z0-9-]+$, 2-64 chars. */
export function catalogIdFromTitle(title: string): string {
  let id = kebab(title, false);
  if (id.length > 64) id = id.slice(0, 64).replace(/-+$/, '');
  if (id.length >= 2) return id;
  return id ? `catalog-${id}` : 'catalog';
}

/**
 * Lower-case words joined by single hyphens; accents are dropped and anything else that is not a letter
 * or digit separates words. With `splitCamel`, `listTasks` and `getHTTPStatus` become `list-tasks` and
 * `get-http-status`.
 */
export function kebab(text: string, splitCamel: boolean): string {
  let s = text.normalize('NFKD').replace(/[\u0300-\u036f]/g, '');
  if (splitCamel) s = s.replace(/([a-z0-9])([A-Z])/g, '$1-$2').replace(/([A-Z]+)([A-Z][a-z])/g, '$1-$2');
  return s
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
}

// ---------------------------------------------------------------------------------------------

function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function clone(schema: Json): Json {
  return structuredClone(schema);
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
