/**
 * Loading an OpenAPI document: reads Swagger 2.0 / OpenAPI 3.x text (JSON or YAML), validates and
 * dereferences it with @readme/openapi-parser, and reports problems as violations with JSON pointers.
 *
 * Nothing here touches the network or the file system: external `$ref`s are reported as violations and
 * never handed to the parser, whose own external and file resolution is switched off as well. The
 * parser is loaded on first use so start-up does not pay for it.
 */
import type { Violation } from '../model/violation.js';
import { parseDefinition } from '../workflows/parse.js';

export type DocumentKind = 'openapi_2' | 'openapi_3' | 'unknown';

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

/** Largest document accepted, in UTF-8 bytes. */
export const MAX_DOCUMENT_BYTES = 5 * 1024 * 1024;

/** Methods that may hold an operation in a path item, in the order OpenAPI lists them. */
export const OPERATION_METHODS = [
  'get',
  'put',
  'post',
  'delete',
  'options',
  'head',
  'patch',
  'trace',
] as const;
const PARSER_TIMEOUT_MS = 20_000;

type Json = Record<string, unknown>;

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

export function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
