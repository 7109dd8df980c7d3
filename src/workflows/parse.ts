import { extname } from 'node:path';
import type { Violation } from './validate-definition.js';

export type DefinitionFormat = 'json' | 'yaml';

export const DEFINITION_EXTENSIONS: Readonly<Record<string, DefinitionFormat>> = {
  '.json': 'json',
  '.yaml': 'yaml',
  '.yml': 'yaml',
};

export function formatOf(file: string): DefinitionFormat | undefined {
  return DEFINITION_EXTENSIONS[extname(file).toLowerCase()];
}

export type SyntaxViolation = Violation & { line?: number; column?: number };

export type ParseResult = { ok: true; data: unknown } | { ok: false; violations: SyntaxViolation[] };

/**
 * Parses definition text. Syntax errors come back as violations with a line and column. The YAML
 * library is loaded on first use so start-up does not pay for it.
 */
export async function parseDefinition(text: string, format: DefinitionFormat): Promise<ParseResult> {
  if (format === 'json') return parseJson(text);
  // `yaml` is CommonJS: bundled, its namespace carries the API on `default`; under tsc/vitest, directly.
  const mod = (await import('yaml')) as typeof import('yaml') & { default?: typeof import('yaml') };
  return parseYaml(text, mod.default ?? mod);
}

function parseJson(text: string): ParseResult {
  try {
    return { ok: true, data: JSON.parse(text) };
  } catch (error) {
    const message = (error as Error).message;
    const offset = jsonErrorOffset(message, text);
    const where = offset !== undefined ? lineColumn(text, offset) : undefined;
    return {
      ok: false,
      violations: [{ path: '', rule: 'syntax', message: `invalid JSON: ${message}`, ...(where ?? {}) }],
    };
  }
}

function parseYaml(text: string, YAML: typeof import('yaml')): ParseResult {
  const doc = YAML.parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    return {
      ok: false,
      violations: doc.errors.slice(0, 10).map((e) => ({
        path: '',
        rule: 'syntax',
        message: `invalid YAML: ${e.message.split('\n')[0]}`,
        ...(e.linePos?.[0] ? { line: e.linePos[0].line, column: e.linePos[0].col } : {}),
      })),
    };
  }
  return { ok: true, data: doc.toJS({ maxAliasCount: 100 }) };
}

/** Where V8's JSON.parse failed: it says "at position N", or quotes a snippet around the bad token. */
function jsonErrorOffset(message: string, text: string): number | undefined {
  const pos = /position (\d+)/.exec(message);
  if (pos?.[1] !== undefined) return Number(pos[1]);
  if (/end of JSON input/.test(message)) return text.length;
  const snippet = /"(?:\.\.\.)?([\s\S]*?)(?:\.\.\.)?" is not valid JSON/.exec(message)?.[1];
  const token = /Unexpected token '([^']+)'/.exec(message)?.[1];
  if (snippet === undefined || snippet === '') return undefined;
  const at = text.indexOf(snippet);
  if (at === -1) return undefined;
  const inSnippet = token !== undefined ? snippet.lastIndexOf(token) : -1;
  return at + Math.max(0, inSnippet);
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
