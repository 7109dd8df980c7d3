// One execution: its facts, progress, diagram, steps, artifacts, context and telemetry, and its actions.
import { type ExecutionState, TRANSITIONS } from '../../engine/state-machine.js';
import type {
  ExecutionDetail,
  ExecutionProgress,
  StepHistoryEntry,
} from '../../executions/execution-presenters.js';
import type { DelegationSummary, FamilyView } from '../../executions/family-queries.js';
import { isCommandStep } from '../../model/workflow.js';
import type { ArtifactRecord, TelemetryRecord } from '../../store/execution-store.js';
import { joinText, workflowDiagram } from '../../workflows/diagram.js';
import { html, type SafeHtml, trusted } from '../html.js';
import { renderMarkdown } from '../markdown.js';
import { may } from '../viewer.js';
import {
  allSteps,
  as,
  badge,
  cellValue,
  clipped,
  details,
  duration,
  href,
  json,
  layout,
  type PageContext,
  RUN_SCOPE_NEEDED,
  record,
  time,
} from './page-kit.js';

export const ACTIONS = {
  pause: {
    to: 'paused',
    label: 'Pause',
    question:
      'Pause this execution? The agent cannot advance it, nor set it running, until a person resumes it.',
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

export function allowedActions(state: ExecutionState): Action[] {
  return (Object.keys(ACTIONS) as Action[]).filter((a) =>
    (TRANSITIONS[state] as readonly string[]).includes(ACTIONS[a].to),
  );
}

export interface DetailView {
  detail: ExecutionDetail;
  progress: ExecutionProgress;
  history: StepHistoryEntry[];
  artifacts: ArtifactRecord[];
  telemetry: TelemetryRecord[];
  /** Its parent (a child execution) and its children (a delegating one). */
  family: FamilyView;
  /** The execution's version (see live.ts), for live updates. */
  version: string;
  /** Its signed record: where to download it, and whether it verifies against the published keys. */
  record: RecordStatus;
  confirm?: Action | undefined;
  notice?: Notice | undefined;
  csrf: string;
}

export interface RecordStatus {
  href: string;
  /** What verifying the record said, in words: its events and key, or the first failure. */
  verdict: { ok: boolean; text: string };
}

function recordSection(view: DetailView): SafeHtml {
  const { href, verdict } = view.record;
  return html`<p><a href="${href}" download>Download the signed record</a> <span class="muted">(a Sigstore bundle; check it anywhere with <code>workflowlookup verify</code>)</span></p>
<p class="${verdict.ok ? 'verifies' : 'fails'}">${verdict.ok ? 'Verifies: ' : 'Does not verify: '}${verdict.text}</p>`;
}

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
  const delegated = view.family.delegations.find((d) => d.open !== null)?.seq;
  const rows = history.map((entry) => {
    const command = commandIds.has(entry.step_name);
    const failures = eventsOf(entry, telemetry, 'step_failed');
    const calls = eventsOf(entry, telemetry, 'http_request');
    const current = entry.seq === detail.current_seq && entry.status === 'running';
    // The step of a paused execution waits with it: it is not being worked on; a delegating step's
    // work is its children's.
    const status =
      current && detail.state === 'paused'
        ? 'paused'
        : current && delegated === entry.seq
          ? 'delegated'
          : entry.status;
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

/** A summary line: the first 200 characters of an agent's text, redacted. */
function summaryLine(ctx: PageContext, text: string): string {
  const shown = ctx.redact.text(text).replace(/\s+/g, ' ').trim();
  return shown.length > 200 ? `${shown.slice(0, 199)}…` : shown;
}

/** One delegating step handed out: its join (rule, progress, deadline), the results, the children. */
function delegationBlock(ctx: PageContext, d: DelegationSummary, principal: string): SafeHtml {
  const status =
    d.open !== null
      ? html`<span class="state state-delegated">waiting for children</span>`
      : d.results !== null
        ? html`<span class="state state-completed">joined</span>`
        : html`<span class="state">closed</span>`;
  const open = d.open;
  const join = html`<p class="join">Join: <strong>${joinText(d.join)}</strong>${
    open !== null
      ? html` · <span class="join-progress">${open.progress}</span>${
          open.deadline !== null
            ? html` · times out ${time(ctx, open.deadline, true)}${open.timeouts > 0 ? html` <span class="bad">(timed out ${open.timeouts}×)</span>` : ''}`
            : ''
        }${open.on_child_failure === 'continue' ? ' · goes on without children that fail' : ''}`
      : ''
  } · results in <code>context.${d.into}</code></p>`;
  const results =
    d.results === null
      ? ''
      : html`<ul class="results">${d.results.map(
          (r) =>
            html`<li data-result="${r.name}"><strong>${r.name}</strong> ${badge(r.state)}${r.summary !== undefined ? html`<span class="muted summary-line">${summaryLine(ctx, r.summary)}</span>` : ''}</li>`,
        )}</ul>`;
  const rows = d.children.map((c) => {
    const live = c.current_step !== null && c.state !== 'completed';
    return html`<tr data-child="${c.execution_id}">
<td data-label="Name"><strong>${c.name}</strong>${c.model_tier !== undefined ? html` <span class="muted">${c.model_tier}</span>` : ''}</td>
<td class="id-cell" data-label="Execution"><a href="${href(ctx, `/executions/${encodeURIComponent(c.execution_id)}`, as(ctx, principal))}">${c.execution_id}</a></td>
<td data-label="Workflow"><a href="${href(ctx, `/workflows/${encodeURIComponent(c.workflow_id)}`)}">${c.workflow_id}</a></td>
<td data-label="State">${badge(c.state)}</td>
<td data-label="Progress" class="child-progress">${live ? html`step ${c.current_seq}: <strong>${c.current_step}</strong> · ` : ''}${c.done} of ${c.total} steps done</td>
<td data-label="Last change">${time(ctx, c.updated_at)}</td>
</tr>`;
  });
  return html`<article class="delegation" data-step="${d.step}" data-seq="${d.seq}">
<h3>${d.step} <span class="muted">${d.title} · #${d.seq}</span> ${status}</h3>
${join}${results}
<div class="table-wrap"><table class="list children cards"><thead><tr><th>Name</th><th>Execution</th><th>Workflow</th><th>State</th><th>Progress</th><th>Last change</th></tr></thead><tbody>${rows}</tbody></table></div>
</article>`;
}

function childrenSection(ctx: PageContext, view: DetailView): SafeHtml {
  const { family, detail } = view;
  if (family.delegations.length === 0) return html``;
  return html`<h2>Children</h2>${
    family.more ? html`<p class="muted">The most recently changed children are shown.</p>` : ''
  }${family.delegations.map((d) => delegationBlock(ctx, d, detail.principal))}`;
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
${
  // Who paused it: a person's pause holds until a person resumes it (the agent is told to wait).
  detail.paused_by !== null
    ? html`<dt>Paused by</dt><dd id="paused-by">${detail.paused_by.by} ${detail.paused_by.via === 'dashboard' ? 'from the dashboard' : '(the agent, with workflow_set_state)'}, ${time(ctx, detail.paused_by.at, false)}</dd>`
    : ''
}
${
  // A child execution: who created it, and its name there (its results go to the parent under it).
  view.family.parent !== null
    ? html`<dt>Parent</dt><dd id="parent"><a href="${href(ctx, `/executions/${encodeURIComponent(view.family.parent.execution_id)}`, as(ctx, detail.principal))}">${view.family.parent.execution_id}</a> <span class="muted">step ${view.family.parent.step} #${view.family.parent.seq}</span></dd>
<dt>Name</dt><dd id="child-name"><strong>${view.family.parent.name}</strong> <span class="muted">(its results go to the parent under this name)</span></dd>`
    : ''
}
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
${
  // The step's output against its rules, not a verdict on the work: "last check: run-tests passed"
  // read as "the tests passed" when the agent had reported a failing test.
  lv
    ? html`<span class="last-validation ${lv.valid ? 'ok' : 'bad'}">last output: step ${lv.step} ${lv.valid ? 'met its rules' : `refused (${lv.issues.join('; ')})`}</span>`
    : ''
}</div>`;
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
<section id="children" class="children" data-region${view.family.delegations.length === 0 ? html` hidden` : ''}>${childrenSection(ctx, view)}</section>
<section id="timeline" data-region><h2>Steps</h2>${timeline(ctx, view)}</section>
<section id="artifacts" data-region><h2>Artifacts</h2>${artifactsSection(ctx, view.artifacts)}</section>
<section id="record" data-region><h2>Record</h2>${recordSection(view)}</section>
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
