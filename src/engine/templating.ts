import { type Context, readPath } from './conditions.js';
import { exactJson, MAX_DEPTH, NestingError, previewJson } from './json-text.js';

/**
 * Templates (seed 003): `${{ inputs.x }}`, `${{ steps.<id>.output.<path> }}`, `${{ env.X }}`, and
 * WorkRail's `{{var}}` for context variables in prompt text.
 *
 * Both forms are found in one left-to-right pass over the template and replaced in that pass, so a
 * substituted value is never scanned again: an agent summary reading `{{inputs.apikey}}` stays that
 * text wherever it is pasted. The scan is linear in the template's length (a backtracking regex
 * took minutes on `${{` followed by ten thousand spaces).
 *
 * Two ways to render. `render`/`renderPreview` make data (command `with`/`body`, `final_output`): a
 * string that is exactly one `${{ }}` keeps the referenced value's type; otherwise values are spliced
 * into the text, exactly. `renderPrompt` makes text an agent reads: every substituted string, array
 * or object is marked as data from its source (see promptValue), bounded in size (PROMPT_LIMITS).
 */

const REFERENCE = /^(inputs|steps|env)\.([A-Za-z0-9_-]+)((?:\.[A-Za-z0-9_-]+)*)$/;
const CONTEXT_VAR_AT = /\{\{\s*([A-Za-z_][A-Za-z0-9_.]*)\s*\}\}/y;

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

/** Spliced text a single data render may produce; beyond it the render fails instead of exhausting memory. */
export const MAX_SPLICED_CHARS = 4 * 1024 * 1024;

/**
 * Bounds on what a prompt shows: a million-element context array referenced in a prompt costs the
 * same as its first few thousand characters. `value` caps one substituted value, `total` everything
 * substituted into one step's guidance; past it, references render as `[omitted: <source>]`.
 */
export const PROMPT_LIMITS = { value: 8_000, total: 32_000 } as const;

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

type Token =
  | { kind: 'expr'; expr: string; start: number; end: number }
  | { kind: 'var'; name: string; start: number; end: number };

/**
 * Every `${{ expr }}` (expr: anything without `}`, trimmed) and `{{name}}` (a dotted identifier, not
 * preceded by `$`) in order, without overlaps. Linear: the first `}` after an opening is looked up
 * once and reused by every later opening before it, and `{{name}}` attempts never scan past a `{`.
 */
function scan(text: string): Token[] {
  const out: Token[] = [];
  let from = 0;
  let brace = -1;
  for (;;) {
    const open = text.indexOf('{{', from);
    if (open === -1) return out;
    if (open > 0 && text[open - 1] === '$') {
      if (brace !== -1 && brace < open + 2) brace = -1;
      if (brace === -1) brace = text.indexOf('}', open + 2);
      // No `}` left: nothing after this point can close, in either form.
      if (brace === -1) return out;
      if (text[brace + 1] === '}') {
        out.push({ kind: 'expr', expr: text.slice(open + 2, brace).trim(), start: open - 1, end: brace + 2 });
        from = brace + 2;
      } else from = open + 1;
      continue;
    }
    CONTEXT_VAR_AT.lastIndex = open;
    const m = CONTEXT_VAR_AT.exec(text);
    if (m) {
      out.push({ kind: 'var', name: m[1] as string, start: open, end: CONTEXT_VAR_AT.lastIndex });
      from = CONTEXT_VAR_AT.lastIndex;
    } else from = open + 1;
  }
}

/** The expression of a string that is exactly one `${{ }}` (whitespace around it allowed). */
function wholeExpression(text: string, tokens: readonly Token[]): string | undefined {
  const [only] = tokens;
  if (tokens.length !== 1 || only?.kind !== 'expr') return undefined;
  return text.slice(0, only.start).trim() === '' && text.slice(only.end).trim() === ''
    ? only.expr
    : undefined;
}

function nestedTooDeep(where: string): TemplateError {
  return new TemplateError(`${where} is nested deeper than ${MAX_DEPTH} levels`, where, false);
}

/** Every WorkRail `{{name}}` context reference in a text, in order (with repeats). */
export function contextReferencesIn(text: string): string[] {
  return scan(text).flatMap((t) => (t.kind === 'var' ? [t.name] : []));
}

/** Every `${{ }}` expression in a value (strings, arrays and objects, recursively). */
export function expressionsIn(value: unknown): string[] {
  const out: string[] = [];
  const visit = (v: unknown, depth: number): void => {
    if (typeof v === 'string') {
      for (const t of scan(v)) if (t.kind === 'expr') out.push(t.expr);
    } else if (v !== null && typeof v === 'object') {
      if (depth >= MAX_DEPTH) throw nestedTooDeep('a template value');
      for (const x of Array.isArray(v) ? v : Object.values(v)) visit(x, depth + 1);
    }
  };
  visit(value, 0);
  return out;
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

/** A value spliced into data text: strings as they are, other values as exact JSON. */
function dataText(value: unknown, reference: string): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  try {
    return exactJson(value) ?? '';
  } catch (error) {
    if (error instanceof NestingError) throw nestedTooDeep(reference);
    throw error;
  }
}

/**
 * Renders data. `keep` decides which unresolvable references stay as written (and are reported in
 * `deferred`) instead of failing; limits on nesting and size always fail.
 */
function renderData(
  value: unknown,
  scope: TemplateScope,
  keep: (error: TemplateError) => boolean,
  deferred: string[],
): unknown {
  let spliced = 0;
  /** `make()`, or the template as written when it fails in a way `keep` accepts. */
  const attempt = <T>(written: string, make: () => T): T | string => {
    try {
      return make();
    } catch (error) {
      if (error instanceof TemplateError && keep(error)) {
        deferred.push(error.reference);
        return written;
      }
      throw error;
    }
  };
  const renderString = (text: string): unknown => {
    const tokens = scan(text);
    const whole = wholeExpression(text, tokens);
    if (whole !== undefined) return attempt(text, () => resolve(whole, scope));
    if (tokens.length === 0) return text;
    const parts: string[] = [];
    let last = 0;
    for (const t of tokens) {
      parts.push(text.slice(last, t.start));
      const written = text.slice(t.start, t.end);
      let piece: string;
      if (t.kind === 'expr') {
        piece = attempt(written, () => dataText(resolve(t.expr, scope), t.expr));
      } else {
        const ctx = scope.context;
        const v = ctx === undefined ? undefined : readPath(ctx, t.name);
        piece = v === undefined ? written : attempt(written, () => dataText(v, t.name));
      }
      spliced += piece.length;
      if (spliced > MAX_SPLICED_CHARS) {
        throw new TemplateError(
          `the rendered text would exceed ${MAX_SPLICED_CHARS} characters`,
          t.kind === 'expr' ? t.expr : t.name,
          false,
        );
      }
      parts.push(piece);
      last = t.end;
    }
    parts.push(text.slice(last));
    return parts.join('');
  };
  const visit = (v: unknown, depth: number): unknown => {
    if (typeof v === 'string') return renderString(v);
    if (v === null || typeof v !== 'object') return v;
    if (depth >= MAX_DEPTH) throw nestedTooDeep('a template value');
    if (Array.isArray(v)) return v.map((x) => visit(x, depth + 1));
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, visit(x, depth + 1)]));
  };
  return visit(value, 0);
}

/** Renders templates in a value; throws TemplateError for the first reference it cannot resolve. */
export function render(value: unknown, scope: TemplateScope): unknown {
  return renderData(value, scope, () => false, []);
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
  const rendered = renderData(value, scope, (e) => e.deferred || options.lenient === true, deferred);
  return { value: rendered, deferred };
}

/** What one step's prompt may still show (shared by its title, prompt and guidance lines). */
export interface PromptBudget {
  /** Characters of substituted text left. */
  remaining: number;
  /** How many data blocks and spans were written. */
  blocks: number;
}

export function promptBudget(): PromptBudget {
  return { remaining: PROMPT_LIMITS.total, blocks: 0 };
}

/** The opening of every data block, after its fence; the guidance explains it to the agent. */
export const DATA_BLOCK_INFO = 'data from';

/** Strings up to this length without line breaks are shown inline, as `[source: \`value\`]`. */
const INLINE_MAX = 120;
const LINE_BREAK = /[\n\r\u2028\u2029]/;

/** The longest run of backticks in `text`. */
function longestBacktickRun(text: string): number {
  let longest = 0;
  let run = 0;
  for (let i = 0; i < text.length; i++) {
    if (text.charCodeAt(i) === 96) {
      run++;
      if (run > longest) longest = run;
    } else run = 0;
  }
  return longest;
}

/**
 * A substituted value as text an agent reads, marked as data from its source so that it cannot pass
 * for instructions. Numbers and booleans stay inline (they cannot carry any). A short one-line string
 * becomes an inline code span, an array, an object or any other string a fenced block; either way
 * the delimiter is a run of backticks longer than any in the value, so the value cannot close it:
 *
 *     Review the tasks of [inputs.project: `p1`]
 *
 *     ```data from steps.fetch.output.items
 *     [{"id":1}]
 *     ```
 *
 * Values are cut to PROMPT_LIMITS.value characters, and nothing is shown once the step's budget is
 * spent; the work done is bounded the same way (a long array is not serialized past the cut).
 */
export function promptValue(value: unknown, label: string, budget: PromptBudget): string {
  // The label sits on the fence line: nothing in it may end the line or the fence.
  const source = label.replace(/[^A-Za-z0-9_.-]/g, '?');
  if (value === undefined || value === null || value === '') return '';
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') {
    const text = String(value);
    if (text.length > budget.remaining) return omitted(source, budget);
    budget.remaining -= text.length;
    return text;
  }
  if (typeof value === 'string' && value.length <= INLINE_MAX && !LINE_BREAK.test(value)) {
    const ticks = '`'.repeat(longestBacktickRun(value) + 1);
    // A code span that starts or ends with a backtick needs a space inside its delimiters.
    const pad = value.startsWith('`') || value.endsWith('`') ? ' ' : '';
    const span = `[${source}: ${ticks}${pad}${value}${pad}${ticks}]`;
    if (span.length > budget.remaining) return omitted(source, budget);
    budget.remaining -= span.length;
    budget.blocks++;
    return span;
  }
  const overhead = 2 * 8 + DATA_BLOCK_INFO.length + source.length + 64;
  const limit = Math.min(PROMPT_LIMITS.value, budget.remaining - overhead);
  if (limit < 64) return omitted(source, budget);
  let content: string;
  let complete: boolean;
  if (typeof value === 'string') {
    content = value.slice(0, limit);
    complete = content.length === value.length;
  } else ({ text: content, complete } = previewJson(value, limit));
  const fence = '`'.repeat(Math.max(3, longestBacktickRun(content) + 1));
  const note = complete ? '' : `[truncated: only the first ${content.length} characters are shown]\n`;
  const block = `\n${fence}${DATA_BLOCK_INFO} ${source}\n${content}\n${fence}\n${note}`;
  budget.remaining -= block.length;
  budget.blocks++;
  return block;
}

const isEnvReference = (expr: string): boolean => /^\s*env\./.test(expr);

function trustedText(value: string, budget: PromptBudget): string {
  const text = value.slice(0, Math.min(PROMPT_LIMITS.value, budget.remaining));
  budget.remaining -= text.length;
  return text;
}

function omitted(source: string, budget: PromptBudget): string {
  const text = `[omitted: ${source}]`;
  budget.remaining = Math.max(0, budget.remaining - text.length);
  return text;
}

/**
 * Renders templates in text an agent reads (titles, prompts, guidance lines). A reference that
 * cannot be resolved stays as written; every resolved value is shown as data (see promptValue), never
 * as more prompt text.
 */
export function renderPrompt(text: string, scope: TemplateScope, budget: PromptBudget): string {
  const tokens = scan(text);
  if (tokens.length === 0) return text;
  const parts: string[] = [];
  let last = 0;
  for (const t of tokens) {
    parts.push(text.slice(last, t.start));
    last = t.end;
    if (t.kind === 'expr') {
      let value: unknown;
      try {
        value = resolve(t.expr, scope);
      } catch (error) {
        if (!(error instanceof TemplateError)) throw error;
        parts.push(text.slice(t.start, t.end));
        continue;
      }
      // The operator's allowed environment is configuration, not data an agent or API supplied.
      parts.push(
        isEnvReference(t.expr) && typeof value === 'string'
          ? trustedText(value, budget)
          : promptValue(value, t.expr, budget),
      );
    } else {
      const v = scope.context === undefined ? undefined : readPath(scope.context, t.name);
      parts.push(v === undefined ? text.slice(t.start, t.end) : promptValue(v, `context.${t.name}`, budget));
    }
  }
  parts.push(text.slice(last));
  return parts.join('');
}
