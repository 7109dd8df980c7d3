// The runs page (MCP tasks) and cancelling a task from it.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tasksVersion } from '../live.js';
import type { PageContext } from '../pages/page-kit.js';
import { TASK_FILTERS, TASK_NOTICES, type TaskNotice, tasksPage } from '../pages/tasks-page.js';
import { lookingAt, one, parseTaskCursor } from '../params.js';
import { HttpError } from '../responses.js';
import type { ControllerDeps } from './controller-kit.js';

const PAGE_SIZE = 50;
const TERMINAL_TASKS: ReadonlySet<string> = new Set(['completed', 'failed', 'cancelled']);

export function tasksController({ app, queries, live, forms, send, redirect, path }: ControllerDeps) {
  return {
    async list(ctx: PageContext, params: URLSearchParams, res: ServerResponse) {
      const status = one(params, 'status');
      if (status !== undefined && !Object.hasOwn(TASK_FILTERS, status))
        throw new HttpError(400, `Unknown status; choose from ${Object.keys(TASK_FILTERS).join(', ')}.`);
      const before = parseTaskCursor(one(params, 'before'));
      const principal = lookingAt(ctx.viewer, one(params, 'principal'));
      const caller = { principal };
      const q = await queries();
      const [rows, version] = await Promise.all([
        q.tasks(
          { statuses: status === undefined ? undefined : TASK_FILTERS[status], before, limit: PAGE_SIZE + 1 },
          caller,
        ),
        tasksVersion(q, caller),
      ]);
      const now = new Date().toISOString();
      const shown = rows.slice(0, PAGE_SIZE);
      const last = shown.at(-1);
      const confirmId = one(params, 'confirm');
      const notice = one(params, 'notice');
      send(
        res,
        200,
        tasksPage(ctx, {
          // A finished task past its retention is gone for tasks/get too: not shown.
          tasks: shown.filter(
            (t) => !(t.expires_at !== null && t.expires_at <= now && TERMINAL_TASKS.has(t.status)),
          ),
          filter: { status, principal },
          older: rows.length > PAGE_SIZE && last ? `${last.created_at},${last.task_id}` : undefined,
          paged: before !== undefined,
          version,
          confirm:
            confirmId === undefined
              ? undefined
              : shown.find((t) => t.task_id === confirmId && !TERMINAL_TASKS.has(t.status)),
          notice:
            notice !== undefined && Object.hasOwn(TASK_NOTICES, notice) ? (notice as TaskNotice) : undefined,
          csrf: forms.issue(ctx.viewer.principal),
        }),
      );
    },

    async cancel(ctx: PageContext, id: string, req: IncomingMessage, res: ServerResponse) {
      const form = await forms.actionForm(ctx.viewer, req);
      const reason = (form.get('reason') ?? '').trim().slice(0, 2000);
      const principal = lookingAt(ctx.viewer, form.get('principal') ?? undefined);
      // The same path as the workflow_cancel tool (and tasks/cancel): the task, its work and its execution.
      const outcome = await app.runner.run(
        'workflow_cancel',
        { operation_id: id, confirm: true, reason: reason || 'cancelled from the dashboard' },
        { caller: { principal } },
      );
      if ('error' in outcome) {
        const code = (outcome.error.data as { error_code?: unknown } | undefined)?.error_code;
        if (code === 'TASK_NOT_FOUND' || code === 'EXECUTION_NOT_FOUND')
          throw new HttpError(404, `No task ${id} here.`);
        throw new Error(`workflow_cancel: ${outcome.error.message}`);
      }
      live.poke();
      const status = (outcome.result as { status?: unknown }).status;
      redirect(
        res,
        path('/tasks', {
          ...(principal !== ctx.viewer.principal ? { principal } : {}),
          notice: status === 'cancelled' ? 'cancelled' : 'finished',
        }),
      );
    },
  };
}
