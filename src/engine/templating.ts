import { type Context, readPath } from './conditions.js';

/**
 * Templates (seed 003): `${{ inputs.x }}`, `${{ steps.<id>.output.<path> }}`, `${{ env.X }}`, and
 * WorkRail's `{{var}}` for context variables in prompt text. A string that is exactly one `${{ }}`
 * expression renders to the referenced value with its type; otherwise values are spliced into the text.
 */
const EXPRESSION = /\$\{\{\s*([^}]*?)\s*\}\}/g;
const WHOLE = /^\s*\$\{\{\s*([^}]*?)\s*\}\}\s*$/;
const CONTEXT_VAR = /(?<!\$)\{\{\s*([A-Za-z_][A-Za-z0-9_.]*)\s*\}\}/g;
const REFERENCE = /^(inputs|steps|env)\.([A-Za-z0-9_-]+)((?:\.[A-Za-z0-9_-]+)*)$/;

export type Reference =
  | { kind: 'inputs'; name: string; path: string[]; text: string }
  | { kind: 'steps'; step: string; path: string[]; text: string }
  | { kind: 'env'; name: string; text: string };

export interface TemplateScope {
  inputs: Record<string, unknown>;
  /** Outputs of finished steps by id (absent: not run yet). */
  steps: Record<string, unknown>;
  /** Environment variables a template may read (already filtered by the allow-list). */
  env: Record<string, string>;
  /** Context for `{{var}}`. */
  context?: Context;
}

/** Raised for a reference that cannot be rendered; `deferred` when it names a step that has not run yet. */
export class TemplateError extends Error {
  constructor(
    message: string,
    readonly reference: string,
    readonly deferred: boolean,
  ) {
    super(message);
    this.name = 'TemplateError';
  }
}

export function parseReference(text: string): Reference | undefined {
  const m = REFERENCE.exec(text);
  if (!m) return undefined;
  const [, kind, head, rest] = m as unknown as [string, 'inputs' | 'steps' | 'env', string, string];
  const path = rest ? rest.slice(1).split('.') : [];
  if (kind === 'env') return path.length === 0 ? { kind, name: head, text } : undefined;
  if (kind === 'inputs') return { kind, name: head, path, text };
  // steps.<id>.output[.path]
  if (path[0] !== 'output') return undefined;
  return { kind, step: head, path: path.slice(1), text };
}

/** Every `${{ }}` expression in a value (strings, arrays and objects, recursively). */
export function expressionsIn(value: unknown): string[] {
  if (typeof value === 'string') return [...value.matchAll(EXPRESSION)].map((m) => m[1] ?? '');
  if (Array.isArray(value)) return value.flatMap(expressionsIn);
  if (value !== null && typeof value === 'object') return Object.values(value).flatMap(expressionsIn);
  return [];
}

function resolve(expr: string, scope: TemplateScope): unknown {
  const ref = parseReference(expr);
  if (!ref) {
    throw new TemplateError(
      `"\${{ ${expr} }}" is not a reference; use inputs.<name>, steps.<id>.output.<path> or env.<NAME>`,
      expr,
      false,
    );
  }
  if (ref.kind === 'env') {
    if (!Object.hasOwn(scope.env, ref.name)) {
      throw new TemplateError(
        `environment variable ${ref.name} is not allowed in templates (or not set)`,
        expr,
        false,
      );
    }
    return scope.env[ref.name];
  }
  if (ref.kind === 'inputs') {
    if (!Object.hasOwn(scope.inputs, ref.name))
      throw new TemplateError(`input "${ref.name}" has no value`, expr, false);
    return ref.path.length === 0
      ? scope.inputs[ref.name]
      : readPath(scope.inputs[ref.name] as Context, ref.path.join('.'));
  }
  if (!Object.hasOwn(scope.steps, ref.step)) {
    throw new TemplateError(`step "${ref.step}" has not produced an output yet`, expr, true);
  }
  const output = scope.steps[ref.step];
  return ref.path.length === 0 ? output : readPath((output ?? {}) as Context, ref.path.join('.'));
}

function text(value: unknown): string {
  if (value === undefined || value === null) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** WorkRail's `{{var}}`: context variables spliced into text; unknown ones stay as written. */
function contextVars(out: string, scope: TemplateScope): string {
  const ctx = scope.context;
  if (ctx === undefined) return out;
  return out.replace(CONTEXT_VAR, (match, name: string) => {
    const v = readPath(ctx, name);
    return v === undefined ? match : text(v);
  });
}

/** Renders templates in a value; throws TemplateError for the first reference it cannot resolve. */
export function render(value: unknown, scope: TemplateScope): unknown {
  if (typeof value === 'string') {
    const whole = WHOLE.exec(value);
    if (whole) return resolve(whole[1] ?? '', scope);
    return contextVars(
      value.replace(EXPRESSION, (_, expr: string) => text(resolve(expr, scope))),
      scope,
    );
  }
  if (Array.isArray(value)) return value.map((v) => render(v, scope));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, render(v, scope)]));
  }
  return value;
}

/**
 * Like render, but leaves references to steps that have not run as they are and reports them. With
 * `lenient`, every reference that cannot be resolved is left as written instead of throwing.
 */
export function renderPreview(
  value: unknown,
  scope: TemplateScope,
  options: { lenient?: boolean } = {},
): { value: unknown; deferred: string[] } {
  const deferred: string[] = [];
  const keep = (error: unknown) =>
    error instanceof TemplateError && (error.deferred || options.lenient === true);
  const visit = (v: unknown): unknown => {
    if (typeof v === 'string') {
      const whole = WHOLE.exec(v);
      if (whole) {
        try {
          return resolve(whole[1] ?? '', scope);
        } catch (error) {
          if (keep(error)) {
            deferred.push((error as TemplateError).reference);
            return v;
          }
          throw error;
        }
      }
      const spliced = v.replace(EXPRESSION, (match, expr: string) => {
        try {
          return text(resolve(expr, scope));
        } catch (error) {
          if (keep(error)) {
            deferred.push((error as TemplateError).reference);
            return match;
          }
          throw error;
        }
      });
      return contextVars(spliced, scope);
    }
    if (Array.isArray(v)) return v.map(visit);
    if (v !== null && typeof v === 'object')
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, visit(x)]));
    return v;
  };
  return { value: visit(value), deferred };
}
