import { extname } from 'node:path';
import type { Violation } from '../model/violation.js';
import { jsonLocator, type Locator, yamlLocator } from './locate.js';

export type DefinitionFormat = 'json' | 'yaml';

export const DEFINITION_EXTENSIONS: Readonly<Record<string, DefinitionFormat>> = {
  '.json': 'json',
  '.yaml': 'yaml',
  '.yml': 'yaml',
};

export function formatOf(file: string): DefinitionFormat | undefined {
  return DEFINITION_EXTENSIONS[extname(file).toLowerCase()];
}

const TEST_FILE = /\.test\.(?:json|ya?ml)$/i;

/** `<id>.test.yaml`, `.test.yml` or `.test.json`: a workflow's tests, never a workflow itself. */
export function isTestFile(file: string): boolean {
  return TEST_FILE.test(file);
}

/** A file a source serves as a workflow definition: JSON or YAML, and not a test file. */
export function isDefinitionFile(file: string): boolean {
  return formatOf(file) !== undefined && !isTestFile(file);
}

export type ParseResult =
  | { ok: true; data: unknown; locate: Locator }
  | { ok: false; violations: Violation[] };

export interface ParseOptions {
  /**
   * Deepest nesting of collections a YAML document may have. YAML is composed recursively, so a
   * deeper document is refused before it is composed (a stack overflow there can abort the process).
   */
  maxDepth?: number;
  /** How far YAML aliases may expand (the `yaml` library's alias-bomb guard). */
  maxAliasCount?: number;
}

/** Nesting deeper than this is refused by default (workflow definitions use a lower limit). */
export const DEFAULT_MAX_DEPTH = 256;
/** The longest parser message repeated in a violation; the rest may quote the file. */
const MAX_MESSAGE = 160;

type Yaml = typeof import('yaml');

/** `yaml` is CommonJS: bundled, its namespace carries the API on `default`; under tsc/vitest, directly. */
export async function loadYaml(): Promise<Yaml> {
  const mod = (await import('yaml')) as Yaml & { default?: Yaml };
  return mod.default ?? mod;
}

/**
 * Parses definition text. Syntax errors come back as violations with a line and column, worded
 * without quoting the file (an unparseable file may be anything, even a secret). The YAML library is
 * loaded on first use so start-up does not pay for it. Every step is linear in the size of the text.
 */
export async function parseDefinition(
  text: string,
  format: DefinitionFormat,
  options: ParseOptions = {},
): Promise<ParseResult> {
  if (format === 'json') return parseJson(text);
  return parseYaml(text, await loadYaml(), options);
}

function parseJson(text: string): ParseResult {
  try {
    return { ok: true, data: JSON.parse(text), locate: jsonLocator(text) };
  } catch (error) {
    const message = (error as Error).message;
    const offset = jsonErrorOffset(message, text);
    const where = offset !== undefined ? lineColumn(text, offset) : undefined;
    return {
      ok: false,
      violations: [{ path: '', rule: 'syntax', message: `invalid JSON: ${jsonReason(message)}`, ...where }],
    };
  }
}

/** V8's reason without the snippet of the text it quotes and without its own position. */
function jsonReason(message: string): string {
  const token = /^Unexpected token '([\s\S])'/.exec(message);
  if (token) return `unexpected ${JSON.stringify(token[1])}`;
  if (/is not valid JSON/.test(message)) return 'unexpected input';
  return message
    .replace(/\s*\(line \d+ column \d+\)/, '')
    .replace(/ in JSON at position \d+/, '')
    .replace(/ at position \d+/, '')
    .slice(0, MAX_MESSAGE);
}

function parseYaml(text: string, YAML: Yaml, options: ParseOptions): ParseResult {
  const maxDepth = options.maxDepth ?? DEFAULT_MAX_DEPTH;
  const lineCounter = new YAML.LineCounter();
  const syntax = (message: string, offset?: number): ParseResult => ({
    ok: false,
    violations: [
      {
        path: '',
        rule: 'syntax',
        message: `invalid YAML: ${message.slice(0, MAX_MESSAGE)}`,
        ...(offset !== undefined ? at(lineCounter, offset) : {}),
      },
    ],
  });
  const tokens = [...new YAML.Parser(lineCounter.addNewLine).parse(text)];
  const deep = tooDeep(tokens, maxDepth);
  if (deep !== undefined) {
    return {
      ok: false,
      violations: [
        {
          path: '',
          rule: 'maxDepth',
          message: `objects and arrays are nested more than ${maxDepth} levels deep`,
          expected: `<= ${maxDepth}`,
          ...at(lineCounter, deep),
        },
      ],
    };
  }
  // Duplicate keys are found below in one pass; the library's own check compares every pair of keys.
  const composer = new YAML.Composer({ uniqueKeys: false, prettyErrors: false });
  const docs = [...composer.compose(tokens, true, text.length)];
  const doc = docs[0];
  if (doc === undefined) return syntax('empty document');
  if (docs.length > 1) return syntax('one workflow per file: the text holds several YAML documents');
  if (doc.errors.length > 0) {
    return {
      ok: false,
      violations: doc.errors.slice(0, 10).map((e) => ({
        path: '',
        rule: 'syntax',
        message: `invalid YAML: ${e.message
          .split('\n')[0]
          ?.replace(/ at line \d+, column \d+:?$/, '')
          .slice(0, MAX_MESSAGE)}`,
        ...at(lineCounter, e.pos[0]),
      })),
    };
  }
  const duplicate = duplicateKey(doc.contents, YAML);
  if (duplicate !== undefined) return syntax(`map keys must be unique: ${duplicate.key}`, duplicate.offset);
  try {
    return {
      ok: true,
      data: doc.toJS({ maxAliasCount: options.maxAliasCount ?? 100 }),
      locate: yamlLocator(doc, lineCounter, YAML, text),
    };
  } catch (error) {
    if (error instanceof ReferenceError) {
      let offset: number | undefined;
      YAML.visit(doc, {
        Alias(_, node) {
          offset = node.range?.[0];
          return YAML.visit.BREAK;
        },
      });
      return {
        ok: false,
        violations: [
          {
            path: '',
            rule: 'yamlAliases',
            message: 'YAML aliases expand too far (more than the alias limit allows); write the values out',
            ...(offset !== undefined ? at(lineCounter, offset) : {}),
          },
        ],
      };
    }
    return syntax((error as Error).message);
  }
}

function at(lineCounter: { linePos(offset: number): { line: number; col: number } }, offset: number) {
  const pos = lineCounter.linePos(offset);
  return { line: pos.line, column: pos.col };
}

/** The offset of the first collection nested deeper than `max`, walking the parser's tokens without recursion. */
function tooDeep(tokens: readonly import('yaml').CST.Token[], max: number): number | undefined {
  const stack: [import('yaml').CST.Token, number][] = tokens.map((t) => [t, 0]);
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const [token, depth] = next;
    if (token.type === 'document') {
      if (token.value) stack.push([token.value, depth]);
    } else if (token.type === 'block-map' || token.type === 'block-seq' || token.type === 'flow-collection') {
      if (depth + 1 > max) return token.offset;
      for (const item of token.items) {
        if (item.key) stack.push([item.key, depth + 1]);
        if (item.value) stack.push([item.value, depth + 1]);
      }
    }
  }
  return undefined;
}

/** The first key that appears twice in one mapping, in one pass over the document. */
function duplicateKey(root: unknown, YAML: Yaml): { key: string; offset: number } | undefined {
  const stack: unknown[] = [root];
  for (let node = stack.pop(); node !== undefined || stack.length > 0; node = stack.pop()) {
    if (YAML.isMap(node)) {
      const seen = new Set<string>();
      for (const pair of node.items) {
        const key = pair.key;
        if (YAML.isScalar(key)) {
          const id = `${typeof key.value}:${String(key.value)}`;
          if (seen.has(id)) {
            const shown = String(key.value);
            return {
              key: JSON.stringify(shown.length > 40 ? `${shown.slice(0, 40)}…` : shown),
              offset: key.range?.[0] ?? 0,
            };
          }
          seen.add(id);
        } else stack.push(key);
        stack.push(pair.value);
      }
    } else if (YAML.isSeq(node)) {
      for (const item of node.items) stack.push(item);
    }
  }
  return undefined;
}

/**
 * Where V8's JSON.parse failed: it says "at position N", or quotes the text around the bad token,
 * with "..." outside the quotes on the sides it cut (V8 keeps 10 characters of context).
 */
function jsonErrorOffset(message: string, text: string): number | undefined {
  const pos = /position (\d+)/.exec(message);
  if (pos?.[1] !== undefined) return Number(pos[1]);
  if (/end of JSON input/.test(message)) return text.length;
  const m = /^Unexpected token '([\s\S])', (\.\.\.)?"([\s\S]*)"(\.\.\.)? is not valid JSON$/.exec(message);
  if (!m) return undefined;
  const [, token, before, snippet = '', after] = m;
  const at = text.indexOf(snippet);
  if (at === -1 || token === undefined) return undefined;
  const CONTEXT = 10;
  if (before) return at + CONTEXT;
  if (after) return at + Math.max(0, snippet.length - CONTEXT);
  return at + Math.max(0, snippet.indexOf(token));
}

function lineColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let last = -1;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      last = i;
    }
  }
  return { line, column: offset - last };
}
