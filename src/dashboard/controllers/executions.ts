// The executions pages: the list (with its search box) and one execution, and the state changes
// (pause, resume, abandon) its action forms post.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { DomainFailure } from '../../engine/errors.js';
import { nearestNames } from '../../engine/nearest.js';
import type { RequestableState } from '../../engine/state-machine.js';
import type { ExecutionQueries } from '../../executions/execution-queries.js';
import { versionOf } from '../live.js';
import {
  ACTIONS,
  type Action,
  executionPage,
  NOTICES,
  type Notice,
  type RecordStatus,
} from '../pages/execution-page.js';
import { AGES, type Age, executionsPage, type ListFilter, type ListView } from '../pages/executions-page.js';
import type { PageContext } from '../pages/page-kit.js';
import { lookingAt, one, parseCursor, parseStates, WORKFLOW_ID } from '../params.js';
import { HttpError } from '../responses.js';
import type { ControllerDeps } from './controller-kit.js';

const PAGE_SIZE = 50;
const TELEMETRY_SHOWN = 500;

const notFound = (error: unknown, id: string): never => {
  if (error instanceof DomainFailure && error.error.code === 'execution_not_found') {
    throw new HttpError(404, `No execution ${id} here.`);
  }
  throw error;
};

export function executionsController({ app, queries, live, forms, send, redirect, path }: ControllerDeps) {
  const { registry } = app.services;

  /** Whether the execution's stored record holds (its chain checked, nothing signed), in words. */
  async function recordVerdict(id: string, caller: { principal: string }): Promise<RecordStatus['verdict']> {
    try {
      return await app.services.records.status(id, caller);
    } catch (error) {
      return { ok: false, text: `the record cannot be checked here: ${(error as Error).message}` };
    }
  }

  /**
   * The search box: an execution id the viewer may see opens it; a workflow id or name (or part of one)
   * that picks one workflow lists its executions; otherwise the page says what matched, or what is near.
   */
  async function find(
    query: string | undefined,
    known: readonly { id: string; name: string }[],
    q: ExecutionQueries,
    caller: { principal: string },
    filter: ListFilter,
    principal: { principal?: string },
    res: ServerResponse,
  ): Promise<ListView['search'] | 'answered'> {
    const text = query?.trim() ?? '';
    if (text === '') return undefined;
    if (text.length > 200) throw new HttpError(400, 'Search for at most 200 characters.');
    const execution = await q.status(text, caller).catch((error: unknown) => {
      if (error instanceof DomainFailure && error.error.code === 'execution_not_found') return undefined;
      throw error;
    });
    if (execution !== undefined) {
      redirect(res, path(`/executions/${encodeURIComponent(execution.execution_id)}`, principal));
      return 'answered';
    }
    const lower = text.toLowerCase();
    const matches = known.filter((w) => w.id.includes(lower) || w.name.toLowerCase().includes(lower));
    if (matches.length === 1 && matches[0] !== undefined) {
      redirect(
        res,
        path('/', {
          workflow: matches[0].id,
          state: filter.states.length > 0 ? filter.states.join(',') : undefined,
          age: filter.age,
          ...principal,
        }),
      );
      return 'answered';
    }
    return {
      query: text,
      workflows: matches.slice(0, 20).map((w) => w.id),
      nearest:
        matches.length > 0
          ? []
          : nearestNames(
              text,
              known.map((w) => w.id),
            ),
    };
  }

  return {
    async list(ctx: PageContext, params: URLSearchParams, res: ServerResponse) {
      const workflow = one(params, 'workflow');
      if (workflow !== undefined && !WORKFLOW_ID.test(workflow))
        throw new HttpError(400, 'That workflow id is not valid.');
      const age = one(params, 'age');
      if (age !== undefined && !Object.hasOwn(AGES, age)) throw new HttpError(400, 'Unknown age filter.');
      const limitText = one(params, 'limit');
      const limit = limitText === undefined ? PAGE_SIZE : Number(limitText);
      if (!Number.isInteger(limit) || limit < 10 || limit > 200)
        throw new HttpError(400, 'limit must be 10-200.');
      const older_than = parseCursor(one(params, 'older'));
      const newer_than = parseCursor(one(params, 'newer'));
      const q = await queries();
      const principals = ctx.viewer.allPrincipals ? await q.principals() : undefined;
      const asked = one(params, 'principal');
      // The local user of a team server's data dir may own nothing: show a principal that owns some.
      const shown =
        asked === undefined && principals !== undefined && !principals.includes(ctx.viewer.principal)
          ? principals[0]
          : asked;
      const filter: ListFilter = {
        workflow,
        states: parseStates(one(params, 'state')),
        age: age as Age | undefined,
        principal: lookingAt(ctx.viewer, shown),
        limit,
      };
      const window = filter.age === undefined ? undefined : AGES[filter.age];
      const now = Date.now();
      const listFilter = {
        workflow_id: filter.workflow,
        states: filter.states.length > 0 ? filter.states : undefined,
        updated_since: window && 'since' in window ? new Date(now - window.since).toISOString() : undefined,
        updated_before:
          window && 'before' in window ? new Date(now - window.before).toISOString() : undefined,
      };
      const caller = { principal: filter.principal };
      await registry.ready();
      const known = registry.list().workflows;
      const others =
        ctx.viewer.allPrincipals && filter.principal !== ctx.viewer.principal
          ? { principal: filter.principal }
          : {};
      const search = await find(one(params, 'q'), known, q, caller, filter, others, res);
      if (search === 'answered') return;
      const [page, counts, newest] = await Promise.all([
        q.page({ ...listFilter, limit, older_than, newer_than }, caller),
        q.counts(listFilter, caller),
        q.page({ limit: 1 }, caller),
      ]);
      send(
        res,
        200,
        executionsPage(ctx, {
          filter,
          page,
          counts,
          search,
          workflows: known.map((w) => w.id),
          ...(principals !== undefined ? { principals } : {}),
          since: newest.executions[0]?.updated_at ?? '',
          position: { older_than, newer_than },
        }),
      );
    },

    /** One execution: everything from one read of the store, its ownership checked once. */
    async detail(ctx: PageContext, id: string, params: URLSearchParams, res: ServerResponse) {
      const caller = { principal: lookingAt(ctx.viewer, one(params, 'principal')) };
      const confirm = one(params, 'confirm');
      const notice = one(params, 'notice');
      const q = await queries();
      // The read model of this page (ExecutionQueries.executionPage): one snapshot of the store.
      const page = await q
        .executionPage(id, caller, { telemetry: TELEMETRY_SHOWN })
        .catch((error: unknown) => notFound(error, id));
      const { head, detail, progress, history, artifacts, telemetry, family } = page;
      const others = caller.principal !== ctx.viewer.principal ? { principal: caller.principal } : {};
      send(
        res,
        200,
        executionPage(ctx, {
          detail,
          progress,
          history,
          artifacts,
          telemetry,
          family,
          version: versionOf(head),
          record: {
            href: path(`/executions/${encodeURIComponent(id)}/record`, others),
            verdict: await recordVerdict(id, caller),
          },
          confirm: confirm !== undefined && Object.hasOwn(ACTIONS, confirm) ? (confirm as Action) : undefined,
          notice: notice !== undefined && Object.hasOwn(NOTICES, notice) ? (notice as Notice) : undefined,
          csrf: forms.issue(ctx.viewer.principal),
        }),
      );
    },

    /** The execution's signed record, as a file to keep (the same bundle `workflowlookup record` writes). */
    async record(ctx: PageContext, id: string, params: URLSearchParams, res: ServerResponse) {
      const caller = { principal: lookingAt(ctx.viewer, one(params, 'principal')) };
      const bundle = await app.services.records
        .signed(id, caller)
        .catch((error: unknown) => notFound(error, id));
      const body = `${JSON.stringify(bundle, null, 2)}\n`;
      res.writeHead(200, {
        'content-type': 'application/json; charset=utf-8',
        'content-disposition': `attachment; filename="record-${id}.sigstore.json"`,
        'cache-control': 'no-store',
        'x-content-type-options': 'nosniff',
      });
      res.end(body);
    },

    /** Pause, resume or abandon, through the service (the same rules as the tools), then back to the page. */
    async changeState(ctx: PageContext, id: string, req: IncomingMessage, res: ServerResponse) {
      const form = await forms.actionForm(ctx.viewer, req);
      const to = form.get('state');
      if (!Object.values(ACTIONS).some((a) => a.to === to)) throw new HttpError(400, 'Unknown action.');
      const reason = (form.get('reason') ?? '').trim().slice(0, 2000);
      const principal = lookingAt(ctx.viewer, form.get('principal') ?? undefined);
      const back = (notice: Notice) =>
        path(`/executions/${encodeURIComponent(id)}`, {
          ...(principal !== ctx.viewer.principal ? { principal } : {}),
          notice,
        });
      try {
        const service = await app.services.executions();
        // A person's change: a pause made here holds until a person lifts it (the agent waits for it).
        await service.setState(
          id,
          to as RequestableState,
          reason || undefined,
          { principal },
          { via: 'dashboard', by: ctx.viewer.principal },
        );
        live.poke();
        redirect(res, back(to as Notice));
      } catch (error) {
        if (error instanceof DomainFailure && error.error.code === 'state_conflict')
          return redirect(res, back('conflict'));
        notFound(error, id);
      }
    },
  };
}
