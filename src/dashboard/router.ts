// The dashboard's routes: a path and method to a controller, or a refusal (HttpError) saying why not.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Assets } from './assets.js';
import type { approvalsController } from './controllers/approvals.js';
import type { eventsController } from './controllers/events.js';
import type { executionsController } from './controllers/executions.js';
import type { tasksController } from './controllers/tasks.js';
import type { workflowsController } from './controllers/workflows.js';
import type { PageContext } from './pages/page-kit.js';
import { EXECUTION_ID, TASK_ID, WORKFLOW_ID } from './params.js';
import { HttpError } from './responses.js';

export interface Controllers {
  executions: ReturnType<typeof executionsController>;
  tasks: ReturnType<typeof tasksController>;
  workflows: ReturnType<typeof workflowsController>;
  events: ReturnType<typeof eventsController>;
  approvals: ReturnType<typeof approvalsController>;
  assets: Assets;
  redirect: (res: ServerResponse, location: string) => void;
}

/** Splits a request path under `base` into its decoded parts ('/executions/x' → ['executions', 'x']). */
function partsOf(pathname: string, base: string): string[] | 'base' {
  if (!pathname.startsWith(base)) throw new HttpError(404, 'Not found.');
  const rest = pathname.slice(base.length);
  if (rest === '') return 'base';
  return rest
    .split('/')
    .slice(1)
    .map((p) => {
      try {
        return decodeURIComponent(p);
      } catch {
        throw new HttpError(400, 'That address is not valid.');
      }
    });
}

export function createRouter(base: string, c: Controllers) {
  return async function route(req: IncomingMessage, res: ServerResponse, ctx: PageContext): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://dashboard.invalid');
    const parts = partsOf(url.pathname, base);
    if (parts === 'base') return c.redirect(res, `${base}/`);
    const method = req.method ?? 'GET';
    const read = method === 'GET' || method === 'HEAD';
    const params = url.searchParams;
    const [first, second, third] = parts;
    if (parts.length === 1 && first === '' && read) return c.executions.list(ctx, params, res);
    if (first === 'events' && parts.length === 1 && method === 'GET')
      return c.events.executions(ctx, params, req, res);
    if (first === 'tasks') {
      if (parts.length === 1 && read) return c.tasks.list(ctx, params, res);
      if (parts.length === 2 && second === 'events' && method === 'GET')
        return c.events.tasks(ctx, params, req, res);
      if (parts.length === 3 && third === 'cancel' && second !== undefined) {
        if (!TASK_ID.test(second)) throw new HttpError(404, 'No such task.');
        if (method !== 'POST') throw new HttpError(405, 'Use the form on the runs page.');
        return c.tasks.cancel(ctx, second, req, res);
      }
    }
    if (first === 'executions' && second !== undefined) {
      if (!EXECUTION_ID.test(second)) throw new HttpError(404, 'No such execution.');
      if (parts.length === 2 && read) return c.executions.detail(ctx, second, params, res);
      if (parts.length === 3 && third === 'state') {
        if (method !== 'POST') throw new HttpError(405, 'Use the form on the execution page.');
        return c.executions.changeState(ctx, second, req, res);
      }
      if (parts.length === 3 && third === 'events' && method === 'GET')
        return c.events.execution(ctx, second, params, req, res);
      if (parts.length === 3 && third === 'record' && read)
        return c.executions.record(ctx, second, params, res);
    }
    if (first === 'approvals' && (await c.approvals.route(ctx, parts.slice(1), req, res, params))) return;
    if (first === 'workflows' && parts.length === 1 && read) return c.workflows.list(ctx, res);
    if (first === 'workflows' && parts.length === 2 && second !== undefined && read) {
      if (!WORKFLOW_ID.test(second)) throw new HttpError(404, 'No such workflow.');
      return c.workflows.show(ctx, second, res);
    }
    if (first === 'assets' && parts.length === 2 && second !== undefined && read)
      return c.assets.serve(second, res);
    if (!read && method !== 'POST') throw new HttpError(405, 'Method not allowed.');
    throw new HttpError(404, 'Not found.');
  };
}
