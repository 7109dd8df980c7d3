// What every page shares: the page context, small parts (links, times, values) and the layout.
import { isLoopStep, type Step, type Workflow } from '../../model/workflow.js';
import type { WorkflowDiagram } from '../../workflows/diagram.js';
import { html, type SafeHtml } from '../html.js';
import type { Redactor } from '../redact.js';
import type { Viewer } from '../viewer.js';

/** Draws a diagram as SVG markup (svg.ts, loaded with dagre when a page first needs it). */
export type DrawDiagram = (
  diagram: WorkflowDiagram,
  options: { title: string; states?: ReadonlyMap<string, string> },
) => string;

export interface PageContext {
  /** Path prefix the dashboard is mounted under ('' standalone, '/dashboard' under `serve --http`). */
  base: string;
  viewer: Viewer;
  redact: Redactor;
  draw: DrawDiagram;
  /**
   * The time the page is built (ms since the epoch; default the clock): relative times and running
   * durations count from it.
   */
  now?: number | undefined;
}

/** Largest artifact or output shown in full; longer ones are cut (the resources have them whole). */
const MAX_SHOWN_CHARS = 256 * 1024;

export const RUN_SCOPE_NEEDED =
  'Pausing, resuming, abandoning and cancelling need the run scope, which your token does not grant.';

export function href(
  ctx: PageContext,
  path: string,
  params: Record<string, string | undefined> = {},
): string {
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') query.set(k, v);
  const q = query.toString();
  return `${ctx.base}${path}${q ? `?${q}` : ''}`;
}

/** `?principal=` on links, only for a viewer who may look at other principals. */
export function as(ctx: PageContext, principal: string): Record<string, string | undefined> {
  return ctx.viewer.allPrincipals && principal !== ctx.viewer.principal ? { principal } : {};
}

function absolute(iso: string): string {
  return iso
    .replace('T', ' ')
    .replace(/\.\d+Z$/, ' UTC')
    .replace(/Z$/, ' UTC');
}

/** How long ago (or from now) a time is, in words: `just now`, `5 min ago`, `in 2 h`. */
export function relative(iso: string, now: number): string {
  const ms = now - Date.parse(iso);
  if (!Number.isFinite(ms)) return '';
  const ahead = ms < 0;
  const span = Math.abs(ms);
  if (span < 10_000) return 'just now';
  const words =
    span < 60_000
      ? `${Math.floor(span / 1000)} s`
      : span < 3_600_000
        ? `${Math.floor(span / 60_000)} min`
        : span < 48 * 3_600_000
          ? `${Math.floor(span / 3_600_000)} h`
          : `${Math.floor(span / 86_400_000)} d`;
  return ahead ? `in ${words}` : `${words} ago`;
}

/** A time: relative in words, the exact time on hover (`long`: both written out). */
export function time(ctx: PageContext, iso: string | null | undefined, long = false): SafeHtml {
  if (!iso) return html`<span class="muted">—</span>`;
  const ago = relative(iso, ctx.now ?? Date.now());
  return long
    ? html`<time datetime="${iso}">${absolute(iso)}</time> <span class="muted ago">(${ago})</span>`
    : html`<time datetime="${iso}" title="${absolute(iso)}">${ago}</time>`;
}

export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '—';
  if (ms < 1000) return `${ms} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${Math.round(s - m * 60)} s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h ${m - h * 60} min`;
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}

export const badge = (state: string) => html`<span class="state state-${state}">${state}</span>`;

export function json(ctx: PageContext, value: unknown): SafeHtml {
  const text = JSON.stringify(ctx.redact.json(value), null, 2) ?? 'null';
  return html`<pre class="json">${clipped(text)}</pre>`;
}

/** Keys shown in one details table; a larger object is shown as JSON. */
const MAX_TABLE_KEYS = 200;

/** One value in a cell: text as text, other scalars as code, objects and arrays as compact JSON. */
export function cellValue(value: unknown): SafeHtml {
  if (typeof value === 'string') return html`<span class="pre">${clipped(value)}</span>`;
  if (value === null || typeof value !== 'object') return html`<code>${String(value)}</code>`;
  return html`<code class="json-inline">${clipped(JSON.stringify(value) ?? '')}</code>`;
}

/**
 * An object as a table of its keys and values, which reads better than JSON (a person scans the
 * names); anything else, or an object too large for a table, as JSON.
 */
export function details(ctx: PageContext, value: unknown): SafeHtml {
  const shown = ctx.redact.json(value);
  if (shown === null || typeof shown !== 'object' || Array.isArray(shown)) return json(ctx, value);
  const entries = Object.entries(shown as Record<string, unknown>);
  if (entries.length === 0) return html`<p class="muted">(empty)</p>`;
  if (entries.length > MAX_TABLE_KEYS) return json(ctx, value);
  return html`<div class="table-wrap"><table class="kv"><tbody>${entries.map(
    ([key, v]) => html`<tr><th scope="row"><code>${key}</code></th><td>${cellValue(v)}</td></tr>`,
  )}</tbody></table></div>`;
}

export function clipped(text: string): string {
  return text.length > MAX_SHOWN_CHARS
    ? `${text.slice(0, MAX_SHOWN_CHARS)}\n… (${text.length - MAX_SHOWN_CHARS} more characters not shown)`
    : text;
}

export function layout(
  ctx: PageContext,
  page: {
    title: string;
    nav: 'executions' | 'runs' | 'approvals' | 'workflows' | 'none';
    body: SafeHtml;
    live?: { url: string; version: string };
    /** A page of the sign-in (no navigation, no one to name). */
    anonymous?: boolean;
    /** Where a meta refresh goes (the same-site hop of a link followed from another site). */
    refresh?: string;
  },
): string {
  const nav = (name: string, path: string, label: string) =>
    html`<a href="${href(ctx, path)}"${page.nav === name ? html` aria-current="page"` : ''}>${label}</a>`;
  const signOut = ctx.viewer.session
    ? html`<form class="sign-out" method="post" action="${href(ctx, '/logout')}"><button type="submit">Sign out</button></form>`
    : '';
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
${page.refresh !== undefined ? html`<meta http-equiv="refresh" content="0; url=${page.refresh}">` : ''}
<title>${page.title} · workflowlookup</title>
<link rel="stylesheet" href="${href(ctx, '/assets/dashboard.css')}">
<link rel="icon" href="${href(ctx, '/assets/favicon.svg')}" type="image/svg+xml">
<script type="module" src="${href(ctx, '/assets/dashboard.js')}"></script>
</head>
<body${page.live ? html` data-live="${page.live.url}" data-version="${page.live.version}"` : ''}>
<header class="top">
<a class="brand" href="${href(ctx, '/')}">workflowlookup</a>
${
  page.anonymous
    ? ''
    : html`<nav>${nav('executions', '/', 'Executions')}${nav('runs', '/tasks', 'Runs')}${nav('approvals', '/approvals', 'Approvals')}${nav('workflows', '/workflows', 'Workflows')}</nav>
<span class="who">${ctx.viewer.principal}</span>${signOut}`
}
<span id="live-status" class="live-status"></span>
</header>
<main id="main">
${page.body}
</main>
</body>
</html>
`.value;
}

export const record = (value: unknown): Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};

export function* allSteps(workflow: Workflow): Generator<Step> {
  for (const step of workflow.steps) {
    yield step;
    if (isLoopStep(step) && Array.isArray(step.body)) yield* step.body;
  }
}
