// The executions page: every execution the viewer may see, filtered, counted and paged.
import { EXECUTION_STATES, type ExecutionState } from '../../engine/state-machine.js';
import type { ExecutionPage } from '../../executions/execution-queries.js';
import type { ExecutionCursor } from '../../store/execution-store.js';
import { html } from '../html.js';
import { as, badge, duration, href, layout, type PageContext, time } from './page-kit.js';

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

type Listed = ExecutionPage['executions'][number];

/**
 * The page's rows as a compact tree: a child whose parent is on the same page is shown under it
 * (indented, in the order they were created), not as a row of its own; every other row keeps its
 * place. A family sits where its most recently changed member would (children change while their
 * parent waits), so the newest work stays at the top. Only the rows of this page are arranged: the
 * keyset paging underneath is unchanged, and a child whose parent is on another page stays a row,
 * naming its parent.
 */
export function executionTree(rows: readonly Listed[]): { e: Listed; depth: number; children: number }[] {
  const position = new Map(rows.map((e, i) => [e.execution_id, i]));
  const under = new Map<string, Listed[]>();
  const roots: Listed[] = [];
  for (const e of rows) {
    const parent = e.parent_id;
    if (parent !== undefined && parent !== e.execution_id && position.has(parent)) {
      under.set(parent, [...(under.get(parent) ?? []), e]);
    } else roots.push(e);
  }
  // The newest position in each family (a family is a root and what is under it, at any depth).
  const newest = new Map<string, number>();
  const rank = (e: Listed, seen: Set<string>): number => {
    if (seen.has(e.execution_id)) return position.get(e.execution_id) ?? 0;
    seen.add(e.execution_id);
    const own = position.get(e.execution_id) ?? 0;
    const best = Math.min(own, ...(under.get(e.execution_id) ?? []).map((c) => rank(c, seen)));
    newest.set(e.execution_id, best);
    return best;
  };
  for (const root of roots) rank(root, new Set());
  const out: { e: Listed; depth: number; children: number }[] = [];
  const visit = (e: Listed, depth: number, seen: Set<string>) => {
    if (seen.has(e.execution_id)) return;
    seen.add(e.execution_id);
    const kids = [...(under.get(e.execution_id) ?? [])].sort(
      (a, b) => a.started_at.localeCompare(b.started_at) || a.execution_id.localeCompare(b.execution_id),
    );
    out.push({ e, depth, children: kids.length });
    for (const kid of kids) visit(kid, depth + 1, seen);
  };
  const seen = new Set<string>();
  for (const root of [...roots].sort(
    (a, b) => (newest.get(a.execution_id) ?? 0) - (newest.get(b.execution_id) ?? 0),
  ))
    visit(root, 0, seen);
  // Parent links never loop; were one to, its rows would still be shown.
  for (const e of rows) visit(e, 0, seen);
  return out;
}

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
  const link = (id: string, principal: string) =>
    href(ctx, `/executions/${encodeURIComponent(id)}`, as(ctx, principal));
  const rows = executionTree(page.executions).map(
    ({
      e,
      depth,
      children,
    }) => html`<tr data-execution="${e.execution_id}"${depth > 0 ? html` class="child-row depth-${Math.min(depth, 3)}" data-parent="${e.parent_id ?? ''}"` : ''}>
<td class="id-cell" data-label="Execution">${depth > 0 ? html`<span class="tree" aria-hidden="true">└ </span>` : ''}<a href="${link(e.execution_id, e.principal)}">${e.execution_id}</a>${
      children > 0
        ? html`<br><span class="muted kids">${children} child${children === 1 ? '' : 'ren'} below</span>`
        : depth === 0 && e.parent_id !== undefined
          ? html`<br><span class="muted kids">child of <a href="${link(e.parent_id, e.principal)}">${e.parent_id}</a></span>`
          : ''
    }</td>
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
