// The runs page: MCP tasks (runs, orchestrations), their progress and executions, and cancelling one.
import { ID_PATTERN } from '../../model/workflow.js';
import type { TaskRecord, TaskStatus } from '../../store/execution-store.js';
import { html } from '../html.js';
import { may } from '../viewer.js';
import { as, badge, href, layout, type PageContext, record, time } from './page-kit.js';

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
