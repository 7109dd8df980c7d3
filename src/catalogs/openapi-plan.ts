/**
 * Planning an import: turns a loaded, valid OpenAPI document into a catalog's commands, the providers
 * of input choices among them, its authentication scheme and its base URL.
 */
import { fail } from '../engine/errors.js';
import { type DocumentKind, isRecord, type LoadedDocument, OPERATION_METHODS } from './openapi-load.js';
import { kebab } from './openapi-names.js';

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

type Json = Record<string, unknown>;

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

function clone(schema: Json): Json {
  return structuredClone(schema);
}
