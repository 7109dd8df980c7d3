// The dashboard's pages: data in, escaped HTML out. No I/O here (see dashboard.ts for the routes).
import { EXECUTION_STATES, type ExecutionState, TRANSITIONS } from '../engine/state-machine.js';
import type {
  ExecutionDetail,
  ExecutionPage,
  ExecutionProgress,
  StepHistoryEntry,
} from '../executions/execution-queries.js';
import type { Violation } from '../model/violation.js';
import { ID_PATTERN, isCommandStep, isLoopStep, type Step, type Workflow } from '../model/workflow.js';
import type {
  ArtifactRecord,
  ExecutionCursor,
  TaskRecord,
  TaskStatus,
  TelemetryRecord,
} from '../store/execution-store.js';
import { conditionText, toMermaid, type WorkflowDiagram, workflowDiagram } from '../workflows/diagram.js';
import type { RegistryEntry } from '../workflows/registry.js';
import type { WorkflowSource } from '../workflows/sources.js';
import { html, type SafeHtml, trusted } from './html.js';
import { renderMarkdown } from './markdown.js';
import type { Redactor } from './redact.js';

/** Who looks: executions are scoped to `principal`; the owner of the store may look at every principal. */
export interface Viewer {
  principal: string;
  allPrincipals: boolean;
  /** What the viewer may do (`run`: actions); undefined: everything (no authentication). */
  scopes?: readonly string[] | undefined;
  /** Signed in with a session cookie: the header offers to sign out. */
  session?: boolean | undefined;
  /** When the viewer's session ends (ms since the epoch): live streams end then. */
  expiresAt?: number | undefined;
}

/** Whether the viewer holds a scope (every scope without authentication). */
export const may = (viewer: Viewer, scope: string) =>
  viewer.scopes === undefined || viewer.scopes.includes(scope);

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

export const AGES = {
  '1h': { label: 'changed in the last hour', since: 3_600_000 },
  '24h': { label: 'changed in the last 24 hours', since: 86_400_000 },
  '7d': { label: 'changed in the last 7 days', since: 7 * 86_400_000 },
  '30d': { label: 'changed in the last 30 days', since: 30 * 86_400_000 },
  'idle-1d': { label: 'unchanged for a day or more', before: 86_400_000 },
  'idle-7d': { label: 'unchanged for 7 days or more', before: 7 * 86_400_000 },
  'idle-30d': { label: 'unchanged for 30 days or more', before: 30 * 86_400_000 },
} as const;
export type Age = keyof typeof AGES;

export const ACTIONS = {
  pause: {
    to: 'paused',
    label: 'Pause',
    question: 'Pause this execution? The agent cannot advance it until it is resumed.',
  },
  resume: {
    to: 'running',
    label: 'Resume',
    question: 'Resume this execution? The agent can advance it again.',
  },
  abandon: {
    to: 'abandoned',
    label: 'Abandon',
    question: 'Abandon this execution? This cannot be undone: an abandoned execution never runs again.',
  },
} as const;
export type Action = keyof typeof ACTIONS;

/** Fixed notices after an action (never text from the request). */
export const NOTICES = {
  paused: 'The execution is paused.',
  running: 'The execution is running again.',
  abandoned: 'The execution was abandoned.',
  conflict: 'That change is not possible from the current state; the page shows the state now.',
} as const;
export type Notice = keyof typeof NOTICES;

export const RUN_SCOPE_NEEDED =
  'Pausing, resuming, abandoning and cancelling need the run scope, which your token does not grant.';

export function allowedActions(state: ExecutionState): Action[] {
  return (Object.keys(ACTIONS) as Action[]).filter((a) =>
    (TRANSITIONS[state] as readonly string[]).includes(ACTIONS[a].to),
  );
}

// ---------------------------------------------------------------------------------------------
// Small parts

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
function as(ctx: PageContext, principal: string): Record<string, string | undefined> {
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
function time(ctx: PageContext, iso: string | null | undefined, long = false): SafeHtml {
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

const badge = (state: string) => html`<span class="state state-${state}">${state}</span>`;

function json(ctx: PageContext, value: unknown): SafeHtml {
  const text = JSON.stringify(ctx.redact.json(value), null, 2) ?? 'null';
  return html`<pre class="json">${clipped(text)}</pre>`;
}

/** Keys shown in one details table; a larger object is shown as JSON. */
const MAX_TABLE_KEYS = 200;

/** One value in a cell: text as text, other scalars as code, objects and arrays as compact JSON. */
function cellValue(value: unknown): SafeHtml {
  if (typeof value === 'string') return html`<span class="pre">${clipped(value)}</span>`;
  if (value === null || typeof value !== 'object') return html`<code>${String(value)}</code>`;
  return html`<code class="json-inline">${clipped(JSON.stringify(value) ?? '')}</code>`;
}

/**
 * An object as a table of its keys and values, which reads better than JSON (a person scans the
 * names); anything else, or an object too large for a table, as JSON.
 */
function details(ctx: PageContext, value: unknown): SafeHtml {
  const shown = ctx.redact.json(value);
  if (shown === null || typeof shown !== 'object' || Array.isArray(shown)) return json(ctx, value);
  const entries = Object.entries(shown as Record<string, unknown>);
  if (entries.length === 0) return html`<p class="muted">(empty)</p>`;
  if (entries.length > MAX_TABLE_KEYS) return json(ctx, value);
  return html`<div class="table-wrap"><table class="kv"><tbody>${entries.map(
    ([key, v]) => html`<tr><th scope="row"><code>${key}</code></th><td>${cellValue(v)}</td></tr>`,
  )}</tbody></table></div>`;
}

function clipped(text: string): string {
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

// ---------------------------------------------------------------------------------------------
// Executions

export interface ListFilter {
  workflow?: string | undefined;
  states: ExecutionState[];
  age?: Age | undefined;
  principal: string;
  limit: number;
}

export interface ListView {
  filter: ListFilter;
  page: ExecutionPage;
  counts: Record<ExecutionState, number>;
  workflows: readonly string[];
  /** Every principal with executions, for a viewer who may look at all of them. */
  principals?: readonly string[];
  /** The newest change the store had when the page was built (where live updates start). */
  since: string;
  /** The page shown: the first (no cursor), or after/before a cursor. */
  position: { older_than?: ExecutionCursor | undefined; newer_than?: ExecutionCursor | undefined };
  /** A search that found no single execution or workflow: what was asked, and what comes close. */
  search?: { query: string; workflows: readonly string[]; nearest: readonly string[] } | undefined;
}

export const cursorParam = (c: ExecutionCursor) => `${c.updated_at},${c.execution_id}`;

export function executionsPage(ctx: PageContext, view: ListView): string {
  const { filter, page, counts } = view;
  const manyPrincipals = (view.principals?.length ?? 0) > 1 || filter.principal !== ctx.viewer.principal;
  const filterParams = (
    over: Partial<
      Record<'workflow' | 'state' | 'age' | 'principal' | 'older' | 'newer', string | undefined>
    > = {},
  ) => ({
    workflow: filter.workflow,
    state: filter.states.join(','),
    age: filter.age,
    ...(ctx.viewer.allPrincipals && filter.principal !== ctx.viewer.principal
      ? { principal: filter.principal }
      : {}),
    ...(filter.limit !== 50 ? { limit: String(filter.limit) } : {}),
    ...over,
  });
  const shownStates: readonly ExecutionState[] = filter.states.length > 0 ? filter.states : EXECUTION_STATES;
  const total = shownStates.reduce((n, s) => n + counts[s], 0);
  const chips = EXECUTION_STATES.map((state: ExecutionState) => {
    const active = filter.states.length === 1 && filter.states[0] === state;
    return html`<a class="chip state-${state}${active ? ' active' : ''}" href="${href(ctx, '/', filterParams({ state: active ? undefined : state }))}" data-count="${state}">${state} <b>${counts[state]}</b></a>`;
  });
  const option = (value: string, label: string, selected: boolean) =>
    html`<option value="${value}"${selected ? html` selected` : ''}>${label}</option>`;
  const search = html`<form class="search" method="get" action="${href(ctx, '/')}" role="search">
<label>Find <input type="search" name="q" value="${view.search?.query ?? ''}" placeholder="execution id or workflow" maxlength="200" autocomplete="off" spellcheck="false"></label>
<button type="submit">Find</button>
</form>`;
  const searched = view.search;
  const searchNotice =
    searched === undefined
      ? ''
      : searched.workflows.length > 0
        ? html`<p class="notice" role="status">Several workflows match “${searched.query}”: ${searched.workflows.map((w, i) => html`${i > 0 ? ', ' : ''}<a href="${href(ctx, '/', { workflow: w })}">${w}</a>`)}.</p>`
        : html`<p class="notice notice-conflict" role="status">No execution or workflow matches “${searched.query}”.${searched.nearest.length > 0 ? html` Did you mean ${searched.nearest.map((w, i) => html`${i > 0 ? ' or ' : ''}<a href="${href(ctx, '/', { workflow: w })}">${w}</a>`)}?` : ''}</p>`;
  const form = html`<form class="filters" method="get" action="${href(ctx, '/')}">
<label>Workflow <select name="workflow">${option('', 'any', filter.workflow === undefined)}${view.workflows.map((w) => option(w, w, w === filter.workflow))}</select></label>
<label>State <select name="state">${option('', 'any', filter.states.length === 0)}${EXECUTION_STATES.map((s) => option(s, s, filter.states.length === 1 && filter.states[0] === s))}${option('idle,running,paused', 'unfinished', filter.states.join(',') === 'idle,running,paused')}</select></label>
<label>Age <select name="age">${option('', 'any', filter.age === undefined)}${(Object.keys(AGES) as Age[]).map((a) => option(a, AGES[a].label, a === filter.age))}</select></label>
${
  view.principals !== undefined && manyPrincipals
    ? html`<label>Principal <select name="principal">${[...new Set([ctx.viewer.principal, ...view.principals])].map((p) => option(p, p, p === filter.principal))}</select></label>`
    : ''
}
<button type="submit">Filter</button>
</form>`;
  const now = ctx.now ?? Date.now();
  const rows = page.executions.map(
    (e) => html`<tr data-execution="${e.execution_id}">
<td class="id-cell" data-label="Execution"><a href="${href(ctx, `/executions/${encodeURIComponent(e.execution_id)}`, as(ctx, e.principal))}">${e.execution_id}</a></td>
<td data-label="Workflow"><a href="${href(ctx, `/workflows/${encodeURIComponent(e.workflow_id)}`)}">${e.workflow_id}</a></td>
<td data-label="State">${badge(e.state)}</td>
<td class="wide" data-label="Current step">${e.current_step ?? html`<span class="muted">—</span>`}</td>
<td class="wide" data-label="Step #">${e.current_seq}</td>
<td class="wide" data-label="Started">${time(ctx, e.started_at)}</td>
<td class="duration" data-label="Duration">${
      e.duration_ms !== null
        ? duration(e.duration_ms)
        : html`<span class="muted" title="not finished yet">${duration(Math.max(0, now - Date.parse(e.started_at)))} so far</span>`
    }</td>
<td data-label="Last change">${time(ctx, e.updated_at)}</td>
${manyPrincipals ? html`<td data-label="Principal">${e.principal}</td>` : ''}
</tr>`,
  );
  // Arrows only where there is another page to go to.
  const pager = html`<nav class="pager">
${page.newer ? html`<a rel="prev" href="${href(ctx, '/', filterParams({ newer: cursorParam(page.newer) }))}">← Newer</a>` : html`<span></span>`}
<span>${page.newer || page.older ? `${page.executions.length} shown of ${total}` : `${total} execution${total === 1 ? '' : 's'}`}</span>
${page.older ? html`<a rel="next" href="${href(ctx, '/', filterParams({ older: cursorParam(page.older) }))}">Older →</a>` : html`<span></span>`}
</nav>`;
  const liveParams: Record<string, string | undefined> = { since: view.since, ...as(ctx, filter.principal) };
  const body = html`<h1>Executions</h1>
${search}
${searchNotice}
<section id="counts" class="chips" data-region>${chips}</section>
${form}
<section id="list" data-region>
${
  page.executions.length === 0
    ? html`<p class="empty">No executions match. Agents start them with <code>workflow_start</code>.</p>`
    : html`<div class="table-wrap"><table class="list executions cards"><thead><tr><th>Execution</th><th>Workflow</th><th>State</th><th class="wide">Current step</th><th class="wide">Step #</th><th class="wide">Started</th><th>Duration</th><th>Last change</th>${manyPrincipals ? html`<th>Principal</th>` : ''}</tr></thead><tbody>${rows}</tbody></table></div>`
}
${pager}
</section>`;
  return layout(ctx, {
    title: 'Executions',
    nav: 'executions',
    body,
    live: { url: href(ctx, '/events', liveParams), version: view.since },
  });
}

export interface DetailView {
  detail: ExecutionDetail;
  progress: ExecutionProgress;
  history: StepHistoryEntry[];
  artifacts: ArtifactRecord[];
  telemetry: TelemetryRecord[];
  /** The execution's version (see live.ts), for live updates. */
  version: string;
  confirm?: Action | undefined;
  notice?: Notice | undefined;
  csrf: string;
}

const record = (value: unknown): Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};

/** Telemetry events of one step record: by the seq they carry, else by step name and time. */
function eventsOf(entry: StepHistoryEntry, events: TelemetryRecord[], type: string): TelemetryRecord[] {
  return events.filter((e) => {
    if (e.event_type !== type || e.step_name !== entry.step_name) return false;
    const seq = record(e.metadata).seq;
    if (typeof seq === 'number') return seq === entry.seq;
    return (
      entry.started_at !== null &&
      e.created_at >= entry.started_at &&
      (entry.completed_at === null || e.created_at <= entry.completed_at)
    );
  });
}

function validationCell(entry: StepHistoryEntry, failures: TelemetryRecord[], command: boolean): SafeHtml {
  const failed = failures.filter((f) => record(f.metadata).reason === 'validation');
  if (command) {
    const out = record(entry.output);
    const status = typeof out.status === 'number' ? out.status : undefined;
    if (entry.status === 'completed') return html`<span class="ok">HTTP ${status ?? '?'}</span>`;
    const error = record(out.error);
    if (typeof error.message === 'string') return html`<span class="bad">${error.message}</span>`;
    return html`<span class="muted">—</span>`;
  }
  const issues = failed.at(-1) ? record(failed.at(-1)?.metadata).issues : undefined;
  const last = Array.isArray(issues) ? issues.map(String) : [];
  if (entry.status === 'completed') {
    return failed.length === 0
      ? html`<span class="ok">passed</span>`
      : html`<span class="ok">passed</span> <span class="muted">after ${failed.length} failed</span>`;
  }
  if (failed.length === 0) return html`<span class="muted">not checked yet</span>`;
  return html`<span class="bad">failed ×${failed.length}</span><ul class="issues">${last.map((i) => html`<li>${i}</li>`)}</ul>`;
}

function httpCalls(calls: TelemetryRecord[]): SafeHtml {
  if (calls.length === 0) return html``;
  const rows = calls.map((c) => {
    const m = record(c.metadata);
    const status = typeof m.status === 'number' ? m.status : null;
    return html`<tr><td>${String(m.method ?? '')}</td><td class="url">${String(m.url ?? '')}</td><td class="${status !== null && status < 400 ? 'ok' : 'bad'}">${status ?? String(m.error ?? 'no response')}</td><td>${duration(typeof m.duration_ms === 'number' ? m.duration_ms : null)}</td><td>${String(m.attempt ?? '')}</td><td>${String(m.poll ?? '')}</td></tr>`;
  });
  return html`<h4>HTTP requests</h4><table class="http"><thead><tr><th>Method</th><th>URL</th><th>Status</th><th>Duration</th><th>Attempt</th><th>Poll</th></tr></thead><tbody>${rows}</tbody></table>`;
}

function stepOutput(ctx: PageContext, entry: StepHistoryEntry, command: boolean): SafeHtml {
  if (entry.output === null || entry.output === undefined) return html`<p class="muted">No output yet.</p>`;
  if (command) return details(ctx, entry.output);
  const out = record(entry.output);
  const parts: SafeHtml[] = [];
  if (typeof out.summary === 'string') {
    parts.push(
      html`<div class="summary markdown">${renderMarkdown(clipped(ctx.redact.text(out.summary)))}</div>`,
    );
  }
  if (Array.isArray(out.findings) && out.findings.length > 0) {
    parts.push(html`<h4>Findings</h4><ul>${out.findings.map((f) => html`<li>${String(f)}</li>`)}</ul>`);
  }
  if (typeof out.next_step_recommendation === 'string') {
    parts.push(
      html`<h4>Recommendation for the next step</h4><p class="pre">${out.next_step_recommendation}</p>`,
    );
  }
  if (out.context !== undefined) parts.push(html`<h4>Context reported</h4>${details(ctx, out.context)}`);
  const refs = Array.isArray(out.artifacts) ? out.artifacts.filter((a) => typeof a === 'string') : [];
  if (refs.length > 0)
    parts.push(html`<h4>Artifact references</h4><ul>${refs.map((r) => html`<li>${String(r)}</li>`)}</ul>`);
  return html`${parts}`;
}

function timeline(ctx: PageContext, view: DetailView): SafeHtml {
  const { history, telemetry, detail } = view;
  if (history.length === 0) return html`<p class="empty">No step handed out yet.</p>`;
  const commandIds = new Set([...allSteps(detail.workflow)].filter((s) => isCommandStep(s)).map((s) => s.id));
  const titles = new Map([...allSteps(detail.workflow)].map((s) => [s.id, s.title]));
  const rows = history.map((entry) => {
    const command = commandIds.has(entry.step_name);
    const failures = eventsOf(entry, telemetry, 'step_failed');
    const calls = eventsOf(entry, telemetry, 'http_request');
    const current = entry.seq === detail.current_seq && entry.status === 'running';
    // The step of a paused execution waits with it: it is not being worked on.
    const status = current && detail.state === 'paused' ? 'paused' : entry.status;
    return html`<tr class="step-row${current ? ' current' : ''}" id="seq-${entry.seq}" data-step="${entry.step_name}">
<td>${entry.seq}</td>
<td><strong>${entry.step_name}</strong><br><span class="muted">${titles.get(entry.step_name) ?? ''}</span>${entry.iteration !== null ? html` <span class="muted">(iteration ${entry.iteration})</span>` : ''}</td>
<td>${command ? html`<span class="muted">server</span>` : entry.agent_name}</td>
<td>${badge(status)}</td>
<td>${validationCell(entry, failures, command)}</td>
<td>${entry.attempts}</td>
<td>${time(ctx, entry.started_at)}</td>
<td>${duration(entry.duration_ms)}</td>
</tr>
<tr class="step-detail"><td></td><td colspan="7"><details${current ? html` open` : ''}><summary>Output${command ? ' and HTTP requests' : ''}</summary>${stepOutput(ctx, entry, command)}${httpCalls(calls)}</details></td></tr>`;
  });
  return html`<div class="table-wrap"><table class="timeline"><thead><tr><th>#</th><th>Step</th><th>Persona</th><th>Status</th><th>Validation</th><th>Attempts</th><th>Started</th><th>Duration</th></tr></thead><tbody>${rows}</tbody></table></div>`;
}

function* allSteps(workflow: Workflow): Generator<Step> {
  for (const step of workflow.steps) {
    yield step;
    if (isLoopStep(step) && Array.isArray(step.body)) yield* step.body;
  }
}

function artifactContent(ctx: PageContext, a: ArtifactRecord): SafeHtml {
  const text = ctx.redact.text(a.content);
  const type = a.content_type.toLowerCase();
  if (type.includes('json') || a.name.toLowerCase().endsWith('.json')) {
    try {
      return json(ctx, JSON.parse(a.content));
    } catch {
      // not JSON after all: shown as text
    }
  }
  if (type.includes('markdown') || /\.(md|markdown)$/i.test(a.name)) {
    return html`<div class="markdown">${renderMarkdown(clipped(text))}</div>`;
  }
  return html`<pre>${clipped(text)}</pre>`;
}

function artifactsSection(ctx: PageContext, artifacts: ArtifactRecord[]): SafeHtml {
  if (artifacts.length === 0) return html`<p class="empty">No artifacts.</p>`;
  return html`${artifacts.map(
    (a) => html`<article class="artifact" id="artifact-${a.id}">
<h3>${a.name} <span class="muted">${a.artifact_type} · ${a.content_type} · ${a.size_bytes} bytes · step ${a.step_name} · ${time(ctx, a.created_at)}</span></h3>
${artifactContent(ctx, a)}
${a.metadata !== null ? html`<details><summary>Metadata</summary>${details(ctx, a.metadata)}</details>` : ''}
</article>`,
  )}`;
}

function telemetrySection(ctx: PageContext, events: TelemetryRecord[]): SafeHtml {
  if (events.length === 0) return html`<p class="empty">No events.</p>`;
  const rows = [...events]
    .reverse()
    .map(
      (e) =>
        html`<tr><td data-label="Time">${time(ctx, e.created_at)}</td><td data-label="Event">${e.event_type}</td><td data-label="Step">${e.step_name ?? ''}</td><td data-label="Details">${e.metadata === null ? '' : pairs(ctx, e.metadata)}</td></tr>`,
    );
  return html`<div class="table-wrap"><table class="telemetry cards"><thead><tr><th>Time</th><th>Event</th><th>Step</th><th>Details</th></tr></thead><tbody>${rows}</tbody></table></div>`;
}

/** An event's details as `name value` pairs on a line each (JSON when it is not an object). */
function pairs(ctx: PageContext, value: unknown): SafeHtml {
  const shown = ctx.redact.json(value);
  if (shown === null || typeof shown !== 'object' || Array.isArray(shown))
    return html`<code>${JSON.stringify(shown)}</code>`;
  return html`<dl class="pairs">${Object.entries(shown as Record<string, unknown>).map(
    ([k, v]) => html`<div><dt>${k}</dt><dd>${cellValue(v)}</dd></div>`,
  )}</dl>`;
}

function actionsSection(ctx: PageContext, view: DetailView): SafeHtml {
  const { detail } = view;
  const actions = allowedActions(detail.state);
  const self = `/executions/${encodeURIComponent(detail.execution_id)}`;
  if (actions.length === 0) return html`<p class="muted">No actions: the execution is ${detail.state}.</p>`;
  if (!may(ctx.viewer, 'run')) return html`<p class="muted">${RUN_SCOPE_NEEDED}</p>`;
  const confirm = view.confirm !== undefined && actions.includes(view.confirm) ? view.confirm : undefined;
  const buttons = actions.map(
    (a) =>
      html`<a class="button action-${a}" href="${href(ctx, self, { ...as(ctx, detail.principal), confirm: a })}#actions">${ACTIONS[a].label}…</a>`,
  );
  const panel =
    confirm === undefined
      ? ''
      : html`<form class="confirm${confirm === 'abandon' ? ' confirm-danger' : ''}" method="post" action="${href(ctx, `${self}/state`)}">
<p>${ACTIONS[confirm].question}</p>
<input type="hidden" name="csrf" value="${view.csrf}">
<input type="hidden" name="state" value="${ACTIONS[confirm].to}">
${ctx.viewer.allPrincipals ? html`<input type="hidden" name="principal" value="${detail.principal}">` : ''}
<label>Reason (optional) <input type="text" name="reason" maxlength="2000" autocomplete="off"></label>
<button type="submit" class="${confirm === 'abandon' ? 'danger' : 'primary'}" data-confirm="${confirm}">${ACTIONS[confirm].label}</button>
<a class="button" href="${href(ctx, self, as(ctx, detail.principal))}">Cancel</a>
</form>`;
  return html`<div class="buttons">${buttons}</div>${panel}`;
}

export function executionPage(ctx: PageContext, view: DetailView): string {
  const { detail, progress } = view;
  const expired = detail.token_expires_at !== null && Date.parse(detail.token_expires_at) <= Date.now();
  const currentTitle = progress.steps.find((s) => s.id === detail.current_step)?.title;
  const facts = html`<dl class="facts">
<dt>Workflow</dt><dd><a href="${href(ctx, `/workflows/${encodeURIComponent(detail.workflow_id)}`)}">${detail.workflow.name}</a> <span class="muted">${detail.workflow_id} ${detail.workflow.version}</span></dd>
<dt>State</dt><dd id="state">${badge(detail.state)}${
    // The reason of the state it is in: a pause's reason is history once it runs or ends.
    detail.reasons[detail.state] !== undefined
      ? html` <span class="muted">(${detail.reasons[detail.state]})</span>`
      : ''
  }</dd>
<dt>Current step</dt><dd id="current-step">${detail.current_step === null ? html`<span class="muted">none</span>` : html`<strong>${detail.current_step}</strong> ${currentTitle ?? ''} <span class="muted">#${detail.current_seq}${detail.attempt > 0 ? `, attempt ${detail.attempt + 1}` : ''}</span>`}</dd>
<dt>Token expires</dt><dd>${detail.token_expires_at === null ? html`<span class="muted">no live token</span>` : html`${time(ctx, detail.token_expires_at, true)}${expired ? html` <span class="bad">expired: workflow_resume hands out a fresh one</span>` : ''}`}</dd>
${detail.waiting ? html`<dt>Waiting on</dt><dd class="bad">${detail.waiting.step_id} (${detail.waiting.command}): ${detail.waiting.message}</dd>` : ''}
<dt>Principal</dt><dd>${detail.principal}</dd>
<dt>Started</dt><dd>${time(ctx, detail.started_at, true)}</dd>
<dt>Last change</dt><dd>${time(ctx, detail.updated_at, true)}</dd>
<dt>Finished</dt><dd>${time(ctx, detail.completed_at, true)} ${detail.duration_ms !== null ? html`<span class="muted">after ${duration(detail.duration_ms)}</span>` : ''}</dd>
</dl>`;
  const pct = progress.total === 0 ? 0 : Math.round((progress.done / progress.total) * 100);
  const lv = progress.last_validation;
  const progressPart = html`<div class="progress"><progress max="${progress.total}" value="${progress.done}">${pct}%</progress>
<span>${progress.done} of ${progress.total} steps done${progress.steps.some((s) => s.status === 'skipped') ? `, ${progress.steps.filter((s) => s.status === 'skipped').length} skipped` : ''}</span>
${lv ? html`<span class="last-validation ${lv.valid ? 'ok' : 'bad'}">last check: ${lv.step} ${lv.valid ? 'passed' : `failed (${lv.issues.join('; ')})`}</span>` : ''}</div>`;
  const states = new Map(
    progress.steps.filter((s) => s.status !== 'pending').map((s) => [s.id, s.status] as [string, string]),
  );
  const svg = trusted(ctx.draw(workflowDiagram(detail.workflow), { title: detail.workflow.name, states }));
  const notice =
    view.notice !== undefined
      ? html`<p class="notice notice-${view.notice}" role="status">${NOTICES[view.notice]}</p>`
      : '';
  const liveUrl = href(ctx, `/executions/${encodeURIComponent(detail.execution_id)}/events`, {
    since: detail.updated_at,
    ...as(ctx, detail.principal),
  });
  const body = html`<h1>${detail.workflow.name} <span class="muted id">${detail.execution_id}</span></h1>
${notice}
<div class="overview"><div>
<section id="summary" data-region>${facts}${progressPart}</section>
<section id="actions" data-region><h2>Actions</h2>${actionsSection(ctx, view)}</section>
</div>
<section id="diagram" class="diagram" data-region><h2>Diagram</h2>${svg}</section>
</div>
<section id="timeline" data-region><h2>Steps</h2>${timeline(ctx, view)}</section>
<section id="artifacts" data-region><h2>Artifacts</h2>${artifactsSection(ctx, view.artifacts)}</section>
<section id="context" data-region><h2>Context</h2><details><summary>Variables the conditions read</summary>${details(ctx, detail.context)}</details>
${'final_output' in detail ? html`<h3>Final output</h3>${details(ctx, detail.final_output)}` : ''}</section>
<section id="telemetry" data-region><h2>Telemetry</h2>${telemetrySection(ctx, view.telemetry)}</section>`;
  return layout(ctx, {
    title: `${detail.execution_id} (${detail.workflow_id})`,
    nav: 'executions',
    body,
    live: { url: liveUrl, version: view.version },
  });
}

// ---------------------------------------------------------------------------------------------
// Workflows

function violationList(violations: readonly Violation[]): SafeHtml {
  return html`<ul class="violations">${violations.map(
    (v) =>
      html`<li><code>${v.path || '(root)'}</code>${v.line !== undefined ? html` <span class="where">line ${v.line}, column ${v.column ?? 0}</span>` : ''}: ${v.message} <span class="muted">[${v.rule}]</span></li>`,
  )}</ul>`;
}

export function workflowsPage(
  ctx: PageContext,
  sources: { source: WorkflowSource; exists: boolean; entries: RegistryEntry[] }[],
  effective: (id: string) => RegistryEntry | undefined,
): string {
  const sections = [...sources].reverse().map(({ source, exists, entries }) => {
    const valid = entries.filter((e) => e.status === 'valid');
    const broken = entries.filter((e) => e.status === 'broken');
    const rows = valid.map((e) => {
      const w = e.workflow;
      const shadowed = effective(w.id)?.file !== e.file;
      return html`<tr${shadowed ? html` class="shadowed"` : ''}><td><a href="${href(ctx, `/workflows/${encodeURIComponent(w.id)}`)}">${w.id}</a>${shadowed ? html` <span class="muted">(overridden)</span>` : ''}</td><td>${w.name}</td><td>${w.version}</td><td>${w.category ?? 'general'}</td><td>${w.steps.length}</td></tr>`;
    });
    return html`<section class="source" data-source="${source.kind}">
<h2>${source.kind} <span class="muted path">${source.dir}${exists ? '' : ' (missing)'}</span></h2>
${valid.length === 0 && broken.length === 0 ? html`<p class="empty">No workflow files.</p>` : ''}
${valid.length > 0 ? html`<div class="table-wrap"><table class="list"><thead><tr><th>Id</th><th>Name</th><th>Version</th><th>Category</th><th>Steps</th></tr></thead><tbody>${rows}</tbody></table></div>` : ''}
${broken.map((b) => html`<div class="broken"><h3>Broken: <code>${b.file}</code>${b.id ? html` <span class="muted">(${b.id})</span>` : ''}</h3>${violationList(b.violations)}</div>`)}
</section>`;
  });
  return layout(ctx, {
    title: 'Workflows',
    nav: 'workflows',
    body: html`<h1>Workflows</h1><p class="muted">Sources from highest precedence to lowest: a workflow in a higher source overrides one with the same id below it.</p>${sections}`,
  });
}

function stepKind(step: Step): string {
  return isLoopStep(step)
    ? `loop (${step.loop.type})`
    : isCommandStep(step)
      ? `command: ${step.run}`
      : 'prompt';
}

export function workflowPage(ctx: PageContext, entry: RegistryEntry & { status: 'valid' }): string {
  const w = entry.workflow;
  const diagram = workflowDiagram(w);
  const rows = [...allSteps(w)].map(
    (s) =>
      html`<tr data-step="${s.id}"><td><code>${s.id}</code></td><td>${s.title}</td><td>${stepKind(s)}</td><td>${s.runCondition ? conditionText(s.runCondition) : ''}</td><td>${!isLoopStep(s) && !isCommandStep(s) ? (s.agent ?? '') : ''}</td></tr>`,
  );
  const inputs = Object.entries(w.inputs ?? {});
  const body = html`<h1>${w.name} <span class="muted id">${w.id} ${w.version}</span></h1>
<p>${w.description}</p>
<p class="muted">From ${entry.source}: <code>${entry.file}</code></p>
<p><a class="button" id="executions-of" href="${href(ctx, '/', { workflow: w.id })}">Executions of this workflow →</a></p>
<div class="overview">
<section class="diagram"><h2>Diagram</h2>${trusted(ctx.draw(diagram, { title: w.name }))}</section>
<div>
<section><h2>Mermaid</h2><p class="muted">The same diagram as text (also <code>workflow_get {"view": "diagram"}</code>); paste it into Markdown in a <code>mermaid</code> block.</p>
<button type="button" class="copy" data-copy="mermaid">Copy</button><pre id="mermaid">${toMermaid(diagram)}</pre></section>
${inputs.length > 0 ? html`<section><h2>Inputs</h2><div class="table-wrap"><table class="list"><thead><tr><th>Name</th><th>Type</th><th>Required</th><th>Description</th></tr></thead><tbody>${inputs.map(([name, spec]) => html`<tr><td><code>${name}</code></td><td>${spec.type}</td><td>${spec.required ? 'yes' : 'no'}</td><td>${spec.description}</td></tr>`)}</tbody></table></div></section>` : ''}
<section><h2>Steps</h2><div class="table-wrap"><table class="list"><thead><tr><th>Id</th><th>Title</th><th>Kind</th><th>Runs when</th><th>Persona</th></tr></thead><tbody>${rows}</tbody></table></div></section>
</div>
</div>`;
  return layout(ctx, { title: w.name, nav: 'workflows', body });
}

export function errorPage(ctx: PageContext, status: number, message: string): string {
  const back =
    status === 401
      ? html`<a href="${href(ctx, '/login')}">Sign in</a>`
      : html`<a href="${href(ctx, '/')}">Back to the executions</a>`;
  return layout(ctx, {
    title: String(status),
    nav: 'none',
    body: html`<h1>${status}</h1><p>${message}</p><p>${back}</p>`,
    anonymous: ctx.viewer.principal === '',
  });
}

// ---------------------------------------------------------------------------------------------
// Tasks and runs

/** The status filters of the runs page. */
export const TASK_FILTERS: Record<string, readonly TaskStatus[]> = {
  unfinished: ['working', 'input_required'],
  working: ['working'],
  input_required: ['input_required'],
  completed: ['completed'],
  failed: ['failed'],
  cancelled: ['cancelled'],
};

/** Fixed notices after a cancel (never text from the request). */
export const TASK_NOTICES = {
  cancelled: 'The task was cancelled: its work stops, and the execution it ran is abandoned.',
  finished: 'That task had already finished; nothing changed.',
} as const;
export type TaskNotice = keyof typeof TASK_NOTICES;

const TERMINAL_TASK: ReadonlySet<TaskStatus> = new Set(['completed', 'failed', 'cancelled']);

/** Seed 003's run states in the words of task statuses. */
const RUN_STATE_WORDS: Record<string, string> = { canceled: 'cancelled', succeeded: 'completed' };

export interface TasksView {
  tasks: TaskRecord[];
  filter: { status?: string | undefined; principal: string };
  /** The cursor of the next (older) page, when there is one. */
  older?: string | undefined;
  /** Whether this is a later page (a link back to the newest is shown). */
  paged: boolean;
  /** The tasks version the page shows (live.ts tasksVersion). */
  version: string;
  /** The task whose cancellation is being confirmed. */
  confirm?: TaskRecord | undefined;
  notice?: TaskNotice | undefined;
  csrf: string;
}

const EXECUTION_LINK_ID = /^[A-Za-z0-9_-]{1,64}$/;
const WORKFLOW_LINK_ID = new RegExp(ID_PATTERN);

/** The executions a task ran or worked on: its run, and for a repair the failed run it started from. */
function executionsOf(t: TaskRecord): { id: string; label: string }[] {
  const found = new Map<string, string>();
  const add = (value: unknown, label: string) => {
    if (typeof value === 'string' && EXECUTION_LINK_ID.test(value) && !found.has(value))
      found.set(value, label);
  };
  const structured = record(record(t.result).structuredContent);
  add(t.run_id, 'run');
  add(record(t.snapshot).run_id, 'run');
  add(structured.run_id, 'run');
  add(record(structured.run).run_id, 'run');
  add(record(structured.repaired_from).run_id, 'repaired');
  return [...found].map(([id, label]) => ({ id, label }));
}

/** Why a task failed, in its own words: a JSON-RPC error, or the tool's error result. */
function failureOf(t: TaskRecord): string | undefined {
  const error = record(t.error);
  if (typeof error.message === 'string') return error.message;
  const result = record(t.result);
  if (result.isError !== true) return undefined;
  const e = record(record(result.structuredContent).error);
  const details = record(e.data).details;
  if (typeof e.message === 'string')
    return typeof details === 'string' ? `${e.message}: ${details}` : e.message;
  return undefined;
}

export function tasksPage(ctx: PageContext, view: TasksView): string {
  const { filter } = view;
  const others = as(ctx, filter.principal);
  const option = (value: string, label: string) =>
    html`<option value="${value}"${(filter.status ?? '') === value ? html` selected` : ''}>${label}</option>`;
  const form = html`<form class="filters" method="get" action="${href(ctx, '/tasks')}">
<label>Status <select name="status">${option('', 'any')}${Object.keys(TASK_FILTERS).map((f) => option(f, f.replace('_', ' ')))}</select></label>
${ctx.viewer.allPrincipals && filter.principal !== ctx.viewer.principal ? html`<input type="hidden" name="principal" value="${filter.principal}">` : ''}
<button type="submit">Filter</button>
</form>`;
  const canRun = may(ctx.viewer, 'run');
  const rows = view.tasks.map((t) => {
    const snapshot = record(t.snapshot);
    const step = typeof snapshot.step_id === 'string' ? snapshot.step_id : undefined;
    const phase = typeof snapshot.phase === 'string' ? snapshot.phase : undefined;
    // Seed 003's run states beside the task's own: shown only when they say something the task's
    // status does not, in the task's spelling (a cancelled task's run is not also "canceled").
    const said =
      typeof snapshot.state === 'string' ? (RUN_STATE_WORDS[snapshot.state] ?? snapshot.state) : undefined;
    const runState = said !== undefined && said !== t.status ? said : undefined;
    const failure = failureOf(t);
    const links = executionsOf(t).map(
      (e) =>
        html`<a href="${href(ctx, `/executions/${encodeURIComponent(e.id)}`, others)}">${e.id}</a>${e.label === 'repaired' ? html` <span class="muted">(repaired)</span>` : ''}<br>`,
    );
    const open = !TERMINAL_TASK.has(t.status);
    // Waiting on its agent step, the run's summary is an instruction to the agent; people get what it waits for.
    const summary =
      t.status === 'input_required'
        ? `waiting for the agent${typeof snapshot.step_name === 'string' ? ` on step “${snapshot.step_name}”` : ''}`
        : typeof snapshot.summary === 'string'
          ? snapshot.summary
          : (t.status_message ?? '');
    return html`<tr id="task-${t.task_id}" data-task="${t.task_id}" data-status="${t.status}">
<td data-label="Task"><code title="${t.task_id}">${t.task_id.slice(0, 8)}</code><br><span class="muted">${t.tool}</span></td>
<td data-label="Workflow">${t.workflow_id !== null && WORKFLOW_LINK_ID.test(t.workflow_id) ? html`<a href="${href(ctx, `/workflows/${encodeURIComponent(t.workflow_id)}`)}">${t.workflow_id}</a>` : html`<span class="muted">—</span>`}</td>
<td data-label="Status">${badge(t.status)}${runState !== undefined ? html`<br><span class="muted">run ${runState}</span>` : ''}</td>
<td data-label="Progress" class="task-summary">${step !== undefined ? html`<code>${step}</code>${phase !== undefined ? html` <span class="muted">(${phase})</span>` : ''}<br>` : phase !== undefined ? html`<span class="muted">${phase}</span><br>` : ''}${summary}${failure !== undefined ? html`<br><span class="bad">${failure}</span>` : ''}</td>
<td data-label="Execution">${links.length > 0 ? links : html`<span class="muted">—</span>`}</td>
<td data-label="Updated">${time(ctx, t.last_updated_at)}<br><span class="muted">created ${time(ctx, t.created_at)}</span></td>
<td>${open && canRun ? html`<a class="button action-cancel" href="${href(ctx, '/tasks', { ...others, status: filter.status, confirm: t.task_id })}#confirm">Cancel…</a>` : ''}</td>
</tr>`;
  });
  const confirm = view.confirm;
  const panel =
    confirm === undefined
      ? ''
      : html`<form id="confirm" class="confirm confirm-danger" method="post" action="${href(ctx, `/tasks/${encodeURIComponent(confirm.task_id)}/cancel`)}">
<p>Cancel task ${confirm.task_id} (${confirm.tool}${confirm.run_id !== null ? `, run ${confirm.run_id}` : ''})? Its work stops and the execution it runs is abandoned; this cannot be undone.</p>
<input type="hidden" name="csrf" value="${view.csrf}">
${ctx.viewer.allPrincipals ? html`<input type="hidden" name="principal" value="${confirm.principal}">` : ''}
<label>Reason (optional) <input type="text" name="reason" maxlength="2000" autocomplete="off"></label>
<button type="submit" class="danger" data-confirm="cancel">Cancel the task</button>
<a class="button" href="${href(ctx, '/tasks', { ...others, status: filter.status })}">Keep it</a>
</form>`;
  const notice =
    view.notice !== undefined
      ? html`<p class="notice notice-${view.notice}" role="status">${TASK_NOTICES[view.notice]}</p>`
      : '';
  const pager = html`<nav class="pager">
${view.paged ? html`<a href="${href(ctx, '/tasks', { ...others, status: filter.status })}">← Newest</a>` : html`<span></span>`}
<span>${view.tasks.length} ${view.paged || view.older !== undefined ? 'shown' : `task${view.tasks.length === 1 ? '' : 's'}`}</span>
${view.older !== undefined ? html`<a rel="next" href="${href(ctx, '/tasks', { ...others, status: filter.status, before: view.older })}">Older →</a>` : html`<span></span>`}
</nav>`;
  const body = html`<h1>Tasks and runs</h1>
<p class="muted">Long work runs as MCP tasks: <code>workflow_run</code>, <code>workflow_execute</code> and the orchestrations. A run is an execution the server drives; its link opens the execution.</p>
${notice}
${form}
<section id="tasks" data-region>
${panel}
${
  view.tasks.length === 0
    ? html`<p class="empty">No tasks${filter.status !== undefined ? ` ${filter.status.replace('_', ' ')}` : ''}. Agents start runs with <code>workflow_run</code> as a task.</p>`
    : html`<div class="table-wrap"><table class="list tasks cards"><thead><tr><th>Task</th><th>Workflow</th><th>Status</th><th>Progress</th><th>Execution</th><th>Updated</th><th></th></tr></thead><tbody>${rows}</tbody></table></div>`
}
${pager}
</section>`;
  return layout(ctx, {
    title: 'Tasks and runs',
    nav: 'runs',
    body,
    live: { url: href(ctx, '/tasks/events', { v: view.version, ...others }), version: view.version },
  });
}

// ---------------------------------------------------------------------------------------------
// Sign-in (the dashboard under `serve --http` with authentication)

export const SESSION_HOURS = 12;

export function loginPage(
  ctx: PageContext,
  view: { next: string; message?: string | undefined; signedOut?: boolean },
): string {
  const body = html`<section class="sign-in">
<h1>Sign in</h1>
${view.signedOut ? html`<p class="notice" role="status">You are signed out.</p>` : ''}
${view.message !== undefined ? html`<p class="notice notice-conflict" role="alert">${view.message}</p>` : ''}
<form class="sign-in-form" method="post" action="${href(ctx, '/login')}">
<input type="hidden" name="next" value="${view.next}">
<label>Token <input type="password" name="token" autocomplete="off" spellcheck="false" required autofocus maxlength="7000"></label>
<button type="submit">Sign in</button>
</form>
<p class="muted">Paste a static token (<code>workflowlookup token add NAME</code>) or a JWT from your identity provider. It is checked exactly as the MCP endpoint checks it and is not kept: a signed cookie remembers who you are and your scopes for ${SESSION_HOURS} hours (less if the JWT expires sooner). You see your own executions and runs only. Pages need the <code>read</code> scope; pausing, resuming, abandoning and cancelling need <code>run</code>.</p>
</section>`;
  return layout(ctx, { title: 'Sign in', nav: 'none', body, anonymous: true });
}

/** The page that asks a signed-in viewer to confirm signing out (GET /logout). */
export function signOutPage(ctx: PageContext): string {
  const body = html`<section class="sign-in"><h1>Sign out</h1><p>End your dashboard session (${ctx.viewer.principal}) in this browser?</p>
<form method="post" action="${href(ctx, '/logout')}"><button type="submit">Sign out</button></form></section>`;
  return layout(ctx, { title: 'Sign out', nav: 'none', body, anonymous: true });
}

/**
 * A link followed from another site carries no SameSite=Strict cookie: this page moves on to the same
 * address from the dashboard itself (a meta refresh, no script), and that request carries it.
 */
export function continuePage(ctx: PageContext, to: string): string {
  return layout(ctx, {
    title: 'Continue',
    nav: 'none',
    body: html`<p><a href="${to}">Continue to the dashboard</a></p>`,
    anonymous: true,
    refresh: to,
  });
}
