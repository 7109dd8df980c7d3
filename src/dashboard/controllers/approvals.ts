// The dashboard's Approvals page: the step outputs waiting for a person, and the form that decides one.
// The agent's report is Markdown, rendered safely as everywhere else on the dashboard (markdown.ts).
// Deciding needs the `approve` scope (people hold it, agents' credentials should not), a same-site POST
// and the page's form token; a principal sees and decides only what it may (its own executions, or the
// steps that name it as an approver). The standalone dashboard's local user owns the store and may
// decide any, as the CLI may.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { DomainFailure } from '../../engine/errors.js';
import { outputDigest } from '../../executions/approvers.js';
import type { Decider } from '../../executions/execution-service.js';
import type { ApprovalRecord } from '../../store/execution-store.js';
import { html, type SafeHtml } from '../html.js';
import { renderMarkdown } from '../markdown.js';
import { href, layout, type PageContext, relative } from '../pages/page-kit.js';
import { APPROVAL_ID, EXECUTION_ID } from '../params.js';
import { HttpError, readForm, refuseCrossSite } from '../responses.js';
import { may } from '../viewer.js';
import type { ControllerDeps } from './controller-kit.js';

export const APPROVE_SCOPE_NEEDED =
  'Approving and rejecting need the approve scope, which your token does not grant.';

const NOTICES = {
  approved: 'Approved: the agent moves on at its next poll.',
  rejected: 'Rejected: the step went back to the agent with your reason.',
  conflict: 'Nothing to decide any more: someone decided first, or it timed out.',
  stale:
    'Not decided: the output you were shown no longer waits (the agent sent another since). Read the one below, then decide on it.',
} as const;
type Notice = keyof typeof NOTICES;

function summaryOf(output: unknown): string {
  const summary = (output as { summary?: unknown } | null)?.summary;
  return typeof summary === 'string' ? summary : '';
}

function pendingCard(
  ctx: PageContext,
  a: ApprovalRecord,
  csrf: string | undefined,
  deciders: readonly string[],
): SafeHtml {
  const now = ctx.now ?? Date.now();
  // The local user (the operator) decides any; a principal only what it decides (approvers.ts).
  const decides = ctx.viewer.allPrincipals || deciders.includes(ctx.viewer.principal);
  const execution = href(ctx, `/executions/${encodeURIComponent(a.execution_id)}`, {
    ...(ctx.viewer.allPrincipals && a.principal !== ctx.viewer.principal ? { principal: a.principal } : {}),
  });
  const form = !decides
    ? html`<p class="muted">Waits for ${deciders.join(', ')} to decide.</p>`
    : csrf
      ? html`<form method="post" action="${href(ctx, `/approvals/${encodeURIComponent(a.execution_id)}/decide`)}" class="decide">
<input type="hidden" name="csrf" value="${csrf}">
<input type="hidden" name="approval" value="${a.approval_id}">
<input type="hidden" name="output" value="${outputDigest(a.output)}">
<label>Reason <input type="text" name="reason" maxlength="2000" placeholder="why (shown to the agent on a rejection)"></label>
<button type="submit" name="decision" value="approve">Approve</button>
<button type="submit" name="decision" value="reject">Reject</button>
</form>`
      : html`<p class="muted">${APPROVE_SCOPE_NEEDED}</p>`;
  return html`<section class="approval" data-approval="${a.approval_id}">
<h2>${a.prompt}</h2>
<p><a href="${execution}">${a.execution_id}</a> · ${a.workflow_name} / step <code>${a.step_name}</code> · owner ${a.principal} · asked ${relative(a.requested_at, now)}${a.expires_at ? html` · rejected by timeout ${relative(a.expires_at, now)}` : ''}</p>
<p>What the agent reports:</p>
<div class="summary markdown">${renderMarkdown(ctx.redact.text(summaryOf(a.output).slice(0, 20_000)))}</div>
${form}
</section>`;
}

function historyTable(ctx: PageContext, rows: readonly ApprovalRecord[]): SafeHtml {
  if (rows.length === 0) return html`<p class="muted">No approvals were asked in this execution.</p>`;
  return html`<div class="table-wrap"><table><thead><tr><th>Step</th><th>Asked</th><th>Status</th><th>Decided by</th><th>Via</th><th>When</th><th>Why</th></tr></thead><tbody>${rows.map(
    (a) =>
      html`<tr><td><code>${a.step_name}</code></td><td>${a.requested_at}</td><td>${a.status}</td><td>${a.decided_by ?? ''}</td><td>${a.decided_via ?? ''}</td><td>${a.decided_at ?? ''}</td><td>${ctx.redact.text(a.reason ?? '')}</td></tr>`,
  )}</tbody></table></div>`;
}

/** The Approvals routes (`/approvals`, `/approvals/<execution>/decide`); the dashboard hooks them in. */
export function approvalsController({ app, live, forms, send, redirect }: ControllerDeps) {
  /** The principal whose view counts: null for the standalone dashboard's local user (all of them). */
  const asPrincipal = (ctx: PageContext) => (ctx.viewer.allPrincipals ? null : ctx.viewer.principal);

  async function list(ctx: PageContext, params: URLSearchParams, res: ServerResponse) {
    const service = await app.services.executions();
    const executionId = params.get('execution') ?? undefined;
    const notice = params.get('notice') ?? undefined;
    const shown =
      notice !== undefined && Object.hasOwn(NOTICES, notice)
        ? html`<p class="notice" role="status">${NOTICES[notice as Notice]}</p>`
        : '';
    if (executionId !== undefined) {
      if (!EXECUTION_ID.test(executionId)) throw new HttpError(400, 'That execution id is not valid.');
      const rows = await service.approvalsOf(executionId, asPrincipal(ctx));
      if (rows === undefined) throw new HttpError(404, `No execution ${executionId} here.`);
      const body = html`<h1>Approvals of ${executionId}</h1>${shown}${historyTable(ctx, rows)}
<p><a href="${href(ctx, '/approvals')}">All pending approvals</a></p>`;
      send(res, 200, layout(ctx, { title: 'Approvals', nav: 'approvals', body }));
      return;
    }
    const pending = await service.pendingApprovals(asPrincipal(ctx));
    const csrf = may(ctx.viewer, 'approve') ? forms.issue(ctx.viewer.principal) : undefined;
    const body = html`<h1>Approvals</h1>${shown}
<p class="muted">Step outputs that wait for a person. The agent cannot decide them; it polls until someone here (or <code>workflowlookup approve</code> on the server host) does.</p>
${pending.length === 0 ? html`<p>No approvals pending.</p>` : pending.map((a) => pendingCard(ctx, a, csrf, service.decidersOf(a)))}`;
    send(res, 200, layout(ctx, { title: 'Approvals', nav: 'approvals', body }));
  }

  async function decide(ctx: PageContext, executionId: string, req: IncomingMessage, res: ServerResponse) {
    refuseCrossSite(req);
    if (!may(ctx.viewer, 'approve')) throw new HttpError(403, APPROVE_SCOPE_NEEDED);
    const form = await readForm(req);
    if (!forms.valid(ctx.viewer.principal, form.get('csrf') ?? '')) {
      throw new HttpError(403, 'This form has expired; reload the page and try again.');
    }
    const decision = form.get('decision');
    if (decision !== 'approve' && decision !== 'reject') throw new HttpError(400, 'Approve or reject.');
    // The decision is on what the page showed: that approval and that output, nothing else.
    const approvalId = form.get('approval') ?? '';
    const digest = form.get('output') ?? '';
    if (!APPROVAL_ID.test(approvalId) || !/^[0-9a-f]{64}$/.test(digest)) {
      throw new HttpError(
        400,
        'This form does not say which output it decides; reload the page and try again.',
      );
    }
    const reason = (form.get('reason') ?? '').trim().slice(0, 2000);
    const decider: Decider = ctx.viewer.allPrincipals
      ? {
          principal: ctx.viewer.principal,
          name: `dashboard:${ctx.viewer.principal}`,
          via: 'dashboard',
          operator: true,
        }
      : { principal: ctx.viewer.principal, name: ctx.viewer.principal, via: 'dashboard' };
    const back = (notice: Notice) => `${href(ctx, '/approvals')}?notice=${notice}`;
    try {
      const service = await app.services.executions();
      const decided = await service.decide(executionId, decision, decider, reason || undefined, {
        approval_id: approvalId,
        output_sha256: digest,
      });
      live.poke();
      redirect(
        res,
        back(
          decided.approval.decided_via === 'timeout'
            ? 'conflict'
            : decision === 'approve'
              ? 'approved'
              : 'rejected',
        ),
      );
    } catch (error) {
      if (error instanceof DomainFailure && error.error.code === 'execution_not_found') {
        throw new HttpError(404, `No execution ${executionId} here.`);
      }
      if (error instanceof DomainFailure && error.error.code === 'state_conflict') {
        redirect(res, back(error.error.stale?.approval_id ? 'stale' : 'conflict'));
        return;
      }
      throw error;
    }
  }

  return {
    /** Serves `parts` (the path after /approvals); false when it is none of these routes. */
    async route(
      ctx: PageContext,
      parts: readonly (string | undefined)[],
      req: IncomingMessage,
      res: ServerResponse,
      params: URLSearchParams,
    ): Promise<boolean> {
      const method = req.method ?? 'GET';
      if (parts.length === 0 && (method === 'GET' || method === 'HEAD')) {
        await list(ctx, params, res);
        return true;
      }
      const [executionId, action] = parts;
      if (parts.length === 2 && action === 'decide' && executionId !== undefined) {
        if (!EXECUTION_ID.test(executionId)) throw new HttpError(404, 'No such execution.');
        if (method !== 'POST') throw new HttpError(405, 'Use the form on the approvals page.');
        await decide(ctx, executionId, req, res);
        return true;
      }
      return false;
    },
  };
}
