/**
 * The web dashboard: executions, one execution live, workflows with their diagrams. A plain request
 * handler, so `workflowlookup dashboard` serves it alone on loopback (serveDashboard) and an HTTP
 * transport can mount it under a path behind its own authentication, passing the principal per request.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { localhostAllowedHostnames, validateHostHeader } from '@modelcontextprotocol/server';
import type { App } from '../app.js';
import { DomainFailure } from '../engine/errors.js';
import { nearestNames } from '../engine/nearest.js';
import { EXECUTION_STATES, type ExecutionState, type RequestableState } from '../engine/state-machine.js';
import { LOCAL_PRINCIPAL } from '../executions/execution-model.js';
import type { ExecutionQueries } from '../executions/execution-queries.js';
import { ID_PATTERN } from '../model/workflow.js';
import type { ExecutionCursor } from '../store/execution-store.js';
import { approvalsPages } from './approvals-page.js';
import { type LiveOptions, LiveUpdates, tasksVersion, versionOf } from './live.js';
import {
  ACTIONS,
  type Action,
  AGES,
  type Age,
  type DrawDiagram,
  errorPage,
  executionPage,
  executionsPage,
  type ListFilter,
  type ListView,
  may,
  NOTICES,
  type Notice,
  type PageContext,
  RUN_SCOPE_NEEDED,
  TASK_FILTERS,
  TASK_NOTICES,
  type TaskNotice,
  tasksPage,
  type Viewer,
  workflowPage,
  workflowsPage,
} from './pages.js';
import { Redactor } from './redact.js';

export type { Viewer } from './pages.js';

/**
 * The policy of every page: scripts, styles and images from the dashboard itself only, no inline
 * script or style (user data can never become code), forms post only back to it, and no framing.
 */
export const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
  "base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  // Same-origin keeps links to other sites (in artifacts) from learning dashboard URLs; it also lets
  // browsers send a real Origin on the dashboard's own form posts.
  'referrer-policy': 'same-origin',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

const MAX_FORM_BYTES = 8 * 1024;
const PAGE_SIZE = 50;
const TELEMETRY_SHOWN = 500;
const EXECUTION_ID = /^[A-Za-z0-9_-]{1,64}$/;
const TASK_ID = /^[A-Za-z0-9_-]{1,128}$/;
const TERMINAL_TASKS: ReadonlySet<string> = new Set(['completed', 'failed', 'cancelled']);
/** Nobody yet: the viewer of the sign-in page and of the assets. */
const ANONYMOUS: Viewer = { principal: '', allPrincipals: false, scopes: [] };
const WORKFLOW_ID = new RegExp(ID_PATTERN);
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/;
const ASSETS: Record<string, string> = {
  'dashboard.css': 'text/css; charset=utf-8',
  'dashboard.js': 'text/javascript; charset=utf-8',
  'favicon.svg': 'image/svg+xml',
};

export interface DashboardOptions {
  /** Path prefix when mounted (e.g. '/dashboard'); '' (default) serves at the root. */
  basePath?: string;
  /**
   * Who asks. Default: the local user, who owns the data dir and may look at every principal (the
   * standalone dashboard). A mounting transport returns the authenticated principal with
   * `allPrincipals: false`; undefined answers 401.
   */
  viewer?: (req: IncomingMessage) => Viewer | undefined;
  /** The read side (default: the app's execution service). The `dashboard` command passes a read-only store. */
  queries?: () => Promise<ExecutionQueries>;
  live?: LiveOptions;
  /** Where dashboard.js and dashboard.css are (default: dist/dashboard in the package). */
  assetsDir?: string;
}

export interface Dashboard {
  /** Serves one request (paths under basePath). */
  handle(req: IncomingMessage, res: ServerResponse): void;
  /** Ends live streams and stops polling; call before closing the HTTP server. */
  close(): void;
}

/** A request the dashboard refuses: the status and a message shown on the error page. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function one(params: URLSearchParams, name: string): string | undefined {
  const value = params.get(name);
  return value === null || value === '' ? undefined : value;
}

function parseCursor(value: string | undefined): ExecutionCursor | undefined {
  if (value === undefined) return undefined;
  const comma = value.indexOf(',');
  const updated_at = value.slice(0, comma);
  const execution_id = value.slice(comma + 1);
  if (comma === -1 || !ISO.test(updated_at) || !EXECUTION_ID.test(execution_id)) {
    throw new HttpError(400, 'That page position is not valid.');
  }
  return { updated_at, execution_id };
}

function parseTaskCursor(value: string | undefined): { created_at: string; task_id: string } | undefined {
  if (value === undefined) return undefined;
  const comma = value.indexOf(',');
  const created_at = value.slice(0, comma);
  const task_id = value.slice(comma + 1);
  if (comma === -1 || !ISO.test(created_at) || !TASK_ID.test(task_id)) {
    throw new HttpError(400, 'That page position is not valid.');
  }
  return { created_at, task_id };
}

function parseStates(value: string | undefined): ExecutionState[] {
  if (value === undefined) return [];
  const states = value.split(',');
  if (!states.every((s) => (EXECUTION_STATES as readonly string[]).includes(s))) {
    throw new HttpError(400, `Unknown state; choose from ${EXECUTION_STATES.join(', ')}.`);
  }
  return [...new Set(states)] as ExecutionState[];
}

export async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded')
    throw new HttpError(415, 'Send the form as a browser does.');
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > MAX_FORM_BYTES) throw new HttpError(413, 'That form is too large.');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_FORM_BYTES) throw new HttpError(413, 'That form is too large.');
    chunks.push(chunk as Buffer);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

/** Same-origin requests only: browsers say where a request comes from (Sec-Fetch-Site, Origin). */
export function refuseCrossSite(req: IncomingMessage): void {
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin')
    throw new HttpError(403, 'Cross-site requests are refused.');
  const origin = req.headers.origin;
  // 'null' is what browsers send when a referrer policy hides the origin; Sec-Fetch-Site still tells.
  if (origin !== undefined && !(origin === 'null' && site === 'same-origin')) {
    let host: string | undefined;
    try {
      host = new URL(origin).host;
    } catch {
      host = undefined;
    }
    if (host === undefined || host !== req.headers.host)
      throw new HttpError(403, 'Cross-site requests are refused.');
  }
}

/** Sends a page with the dashboard's security headers, never cached. */
export function sendHtml(
  res: ServerResponse,
  status: number,
  body: string,
  headers: Record<string, string | string[]> = {},
): void {
  const bytes = Buffer.from(body, 'utf8');
  res.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'content-length': String(bytes.length),
    'cache-control': 'no-store',
    ...SECURITY_HEADERS,
    ...headers,
  });
  res.end(res.req.method === 'HEAD' ? undefined : bytes);
}

export function createDashboard(app: App, options: DashboardOptions = {}): Dashboard {
  const base = options.basePath ?? '';
  if (base !== '' && !/^(\/[A-Za-z0-9._-]+)+$/.test(base))
    throw new Error(`invalid dashboard base path: ${base}`);
  const { registry } = app.services;
  const queries = options.queries ?? (async () => (await app.services.executions()).queries);
  const viewerOf = options.viewer ?? (() => ({ principal: LOCAL_PRINCIPAL, allPrincipals: true }));
  const assetsDir = options.assetsDir ?? join(app.config.packageRoot, 'dist', 'dashboard');
  const redact = Redactor.forEnvironment(app.config.dataDir, app.config.env, app.config.tokenSecret);
  const live = new LiveUpdates(queries, (t) => redact.text(t), {
    log: app.log,
    maxStreams: app.config.limits.streams,
    maxStreamsPerPrincipal: app.config.limits.streamsPerPrincipal,
    ...options.live,
  });
  // Form tokens: bound to the principal and to the day they were issued (valid for that day and the
  // next). Derived from the configured token secret, so replicas sharing it accept each other's forms;
  // without one, a key of this process.
  const csrfKey = app.config.tokenSecret
    ? createHmac('sha256', app.config.tokenSecret).update('workflowlookup dashboard forms').digest()
    : randomBytes(32);
  const day = (offset = 0) => String(Math.floor(Date.now() / 86_400_000) - offset);
  const csrfFor = (principal: string, issued = day()) =>
    `${issued}.${createHmac('sha256', csrfKey).update(`${principal}\n${issued}`).digest('base64url')}`;
  const csrfValid = (principal: string, token: string) => {
    const issued = token.split('.')[0] ?? '';
    if (issued !== day() && issued !== day(1)) return false;
    const given = Buffer.from(token);
    const expected = Buffer.from(csrfFor(principal, issued));
    return given.length === expected.length && timingSafeEqual(given, expected);
  };
  const assets = new Map<string, Promise<Buffer>>();
  let following = false;
  // The Approvals page lives in its own module (approvals-page.ts); it is hooked in here.
  const approvals = approvalsPages({
    app,
    csrfFor: (principal) => csrfFor(principal),
    csrfValid,
    send: (res, status, body) => send(res, status, body),
    redirect: (res, location) => redirect(res, location),
    changed: () => live.poke(),
    refuseCrossSite,
    readForm,
    httpError: (status, message) => new HttpError(status, message),
  });

  const follow = async () => {
    if (following) return;
    following = true;
    live.follow(await queries());
    if (options.queries !== undefined) {
      // Actions go through the app's service (a writable store): look at once after them.
      app.services
        .executions()
        .then((service) => live.follow(service.queries))
        .catch(() => undefined);
    }
  };

  const send = (res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}) =>
    sendHtml(res, status, redact.text(body), headers);
  const redirect = (res: ServerResponse, location: string) => {
    res.writeHead(303, { location, 'cache-control': 'no-store', ...SECURITY_HEADERS }).end();
  };
  const path = (p: string, params: Record<string, string | undefined> = {}) => {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) if (v !== undefined) q.set(k, v);
    const text = q.toString();
    return `${base}${p}${text ? `?${text}` : ''}`;
  };

  /** The principal a request looks at: its own, or (for the store's owner) the one it asks for. */
  const lookingAt = (viewer: Viewer, asked: string | undefined): string => {
    if (asked === undefined || !viewer.allPrincipals) return viewer.principal;
    if (asked.length > 256) throw new HttpError(400, 'That principal is not valid.');
    return asked;
  };

  async function executionsList(ctx: PageContext, params: URLSearchParams, res: ServerResponse) {
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
    const filter: ListFilter = {
      workflow,
      states: parseStates(one(params, 'state')),
      age: age as Age | undefined,
      principal: lookingAt(ctx.viewer, one(params, 'principal')),
      limit,
    };
    const window = filter.age === undefined ? undefined : AGES[filter.age];
    const now = Date.now();
    const listFilter = {
      workflow_id: filter.workflow,
      states: filter.states.length > 0 ? filter.states : undefined,
      updated_since: window && 'since' in window ? new Date(now - window.since).toISOString() : undefined,
      updated_before: window && 'before' in window ? new Date(now - window.before).toISOString() : undefined,
    };
    const q = await queries();
    const caller = { principal: filter.principal };
    await registry.ready();
    const known = registry.list().workflows;
    const others =
      ctx.viewer.allPrincipals && filter.principal !== ctx.viewer.principal
        ? { principal: filter.principal }
        : {};
    const search = await find(one(params, 'q'), known, q, caller, filter, others, res);
    if (search === 'answered') return;
    const [page, counts, newest, principals] = await Promise.all([
      q.page({ ...listFilter, limit, older_than, newer_than }, caller),
      q.counts(listFilter, caller),
      q.page({ limit: 1 }, caller),
      ctx.viewer.allPrincipals ? q.principals() : Promise.resolve(undefined),
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

  async function executionDetail(ctx: PageContext, id: string, params: URLSearchParams, res: ServerResponse) {
    const caller = { principal: lookingAt(ctx.viewer, one(params, 'principal')) };
    const confirm = one(params, 'confirm');
    const notice = one(params, 'notice');
    const q = await queries();
    try {
      // One snapshot of the store, the ownership checked once (ExecutionQueries.executionPage).
      const { head, detail, progress, history, artifacts, telemetry } = await q.executionPage(id, caller, {
        telemetry: TELEMETRY_SHOWN,
      });
      send(
        res,
        200,
        executionPage(ctx, {
          detail,
          progress,
          history,
          artifacts,
          telemetry,
          version: versionOf(head),
          confirm: confirm !== undefined && Object.hasOwn(ACTIONS, confirm) ? (confirm as Action) : undefined,
          notice: notice !== undefined && Object.hasOwn(NOTICES, notice) ? (notice as Notice) : undefined,
          csrf: csrfFor(ctx.viewer.principal),
        }),
      );
    } catch (error) {
      if (error instanceof DomainFailure && error.error.code === 'execution_not_found') {
        throw new HttpError(404, `No execution ${id} here.`);
      }
      throw error;
    }
  }

  /** A POST from one of the dashboard's own forms, by a viewer who may act: its fields. */
  async function actionForm(ctx: PageContext, req: IncomingMessage): Promise<URLSearchParams> {
    refuseCrossSite(req);
    if (!may(ctx.viewer, 'run')) throw new HttpError(403, RUN_SCOPE_NEEDED);
    const form = await readForm(req);
    if (!csrfValid(ctx.viewer.principal, form.get('csrf') ?? '')) {
      throw new HttpError(403, 'This form has expired; reload the page and try again.');
    }
    return form;
  }

  async function changeState(ctx: PageContext, id: string, req: IncomingMessage, res: ServerResponse) {
    const form = await actionForm(ctx, req);
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
      await service.setState(id, to as RequestableState, reason || 'from the dashboard', { principal });
      live.poke();
      redirect(res, back(to as Notice));
    } catch (error) {
      if (error instanceof DomainFailure && error.error.code === 'state_conflict')
        return redirect(res, back('conflict'));
      if (error instanceof DomainFailure && error.error.code === 'execution_not_found') {
        throw new HttpError(404, `No execution ${id} here.`);
      }
      throw error;
    }
  }

  async function tasksList(ctx: PageContext, params: URLSearchParams, res: ServerResponse) {
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
        csrf: csrfFor(ctx.viewer.principal),
      }),
    );
  }

  async function cancelTask(ctx: PageContext, id: string, req: IncomingMessage, res: ServerResponse) {
    const form = await actionForm(ctx, req);
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
  }

  async function workflows(ctx: PageContext, res: ServerResponse) {
    await registry.ready();
    const sources = await Promise.all(
      registry.bySource().map(async (s) => ({
        ...s,
        exists: existsSync(s.source.dir),
        entries: s.entries,
      })),
    );
    send(
      res,
      200,
      workflowsPage(ctx, sources, (id) => registry.get(id)),
    );
  }

  async function workflow(ctx: PageContext, id: string, res: ServerResponse) {
    await registry.ready();
    const entry = registry.get(id);
    if (entry === undefined) throw new HttpError(404, `No workflow ${id}.`);
    if (entry.status === 'broken') {
      throw new HttpError(404, `Workflow ${id} is broken; the workflows page lists its violations.`);
    }
    send(res, 200, workflowPage(ctx, entry));
  }

  async function asset(name: string, res: ServerResponse) {
    const type = ASSETS[name];
    if (type === undefined) throw new HttpError(404, 'Not found.');
    let loading = assets.get(name);
    if (loading === undefined) {
      loading = readFile(join(assetsDir, name));
      assets.set(name, loading);
      loading.catch(() => assets.delete(name));
    }
    const bytes = await loading.catch(() => {
      throw new HttpError(404, `${name} is missing; run the build (npm run build).`);
    });
    res.writeHead(200, {
      'content-type': type,
      'content-length': String(bytes.length),
      'cache-control': 'no-cache',
      ...SECURITY_HEADERS,
    });
    res.end(res.req.method === 'HEAD' ? undefined : bytes);
  }

  async function route(req: IncomingMessage, res: ServerResponse, ctx: PageContext): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://dashboard.invalid');
    if (!url.pathname.startsWith(base)) throw new HttpError(404, 'Not found.');
    const rest = url.pathname.slice(base.length);
    if (rest === '') return redirect(res, `${base}/`);
    const parts = rest
      .split('/')
      .slice(1)
      .map((p) => {
        try {
          return decodeURIComponent(p);
        } catch {
          throw new HttpError(400, 'That address is not valid.');
        }
      });
    const method = req.method ?? 'GET';
    const read = method === 'GET' || method === 'HEAD';
    const params = url.searchParams;
    const [first, second, third] = parts;
    if (parts.length === 1 && first === '' && read) return executionsList(ctx, params, res);
    const until = ctx.viewer.expiresAt;
    if (first === 'events' && parts.length === 1 && method === 'GET') {
      await follow();
      const since = one(params, 'since') ?? '';
      live.attach(req, res, {
        principal: lookingAt(ctx.viewer, one(params, 'principal')),
        since: ISO.test(since) ? since : '',
        until,
      });
      return;
    }
    if (first === 'tasks') {
      if (parts.length === 1 && read) return tasksList(ctx, params, res);
      if (parts.length === 2 && second === 'events' && method === 'GET') {
        await follow();
        live.attach(req, res, {
          principal: lookingAt(ctx.viewer, one(params, 'principal')),
          since: '',
          tasks: (one(params, 'v') ?? '').slice(0, 64),
          until,
        });
        return;
      }
      if (parts.length === 3 && third === 'cancel' && second !== undefined) {
        if (!TASK_ID.test(second)) throw new HttpError(404, 'No such task.');
        if (method !== 'POST') throw new HttpError(405, 'Use the form on the runs page.');
        return cancelTask(ctx, second, req, res);
      }
    }
    if (first === 'executions' && second !== undefined) {
      if (!EXECUTION_ID.test(second)) throw new HttpError(404, 'No such execution.');
      if (parts.length === 2 && read) return executionDetail(ctx, second, params, res);
      if (parts.length === 3 && third === 'state') {
        if (method !== 'POST') throw new HttpError(405, 'Use the form on the execution page.');
        return changeState(ctx, second, req, res);
      }
      if (parts.length === 3 && third === 'events' && method === 'GET') {
        await follow();
        const since = one(params, 'since') ?? '';
        live.attach(req, res, {
          principal: lookingAt(ctx.viewer, one(params, 'principal')),
          execution: second,
          since: ISO.test(since) ? since : '',
          until,
        });
        return;
      }
    }
    if (first === 'approvals' && (await approvals.route(ctx, parts.slice(1), req, res, params))) return;
    if (first === 'workflows' && parts.length === 1 && read) return workflows(ctx, res);
    if (first === 'workflows' && parts.length === 2 && second !== undefined && read) {
      if (!WORKFLOW_ID.test(second)) throw new HttpError(404, 'No such workflow.');
      return workflow(ctx, second, res);
    }
    if (first === 'assets' && parts.length === 2 && second !== undefined && read) return asset(second, res);
    if (!read && method !== 'POST') throw new HttpError(405, 'Method not allowed.');
    throw new HttpError(404, 'Not found.');
  }

  const isAsset = (url: string | undefined) => {
    const pathname = (url ?? '').split('?')[0] ?? '';
    return pathname.startsWith(`${base}/assets/`) && !pathname.slice(base.length + 8).includes('/');
  };

  // The diagram renderer (with dagre) loads on first use, so `serve` never parses it.
  let drawing: Promise<DrawDiagram> | undefined;
  const draw = () => {
    drawing ??= import('./svg.js').then((m) => m.diagramSvg);
    return drawing;
  };
  const undrawn: DrawDiagram = () => '';

  return {
    handle(req, res) {
      // The stylesheet, script and icon hold no data: the sign-in page needs them before anyone is known.
      const viewer = isAsset(req.url) ? ANONYMOUS : viewerOf(req);
      const ctx: PageContext = { base, viewer: viewer ?? ANONYMOUS, redact, draw: undrawn, now: Date.now() };
      if (viewer === undefined) {
        send(res, 401, errorPage(ctx, 401, 'Sign in to see the dashboard.'));
        return;
      }
      draw()
        .then((drawn) => route(req, res, { ...ctx, draw: drawn }))
        .catch((error: unknown) => {
          const status = error instanceof HttpError ? error.status : 500;
          if (status === 500)
            app.log(`dashboard: ${req.method} ${req.url}: ${(error as Error)?.stack ?? String(error)}`);
          if (res.headersSent) {
            res.destroy();
            return;
          }
          // A request body left unread would stall the connection: answer and close it.
          send(
            res,
            status,
            errorPage(
              ctx,
              status,
              status === 500
                ? 'Something went wrong; the server log has the details.'
                : (error as Error).message,
            ),
            status === 405 ? { allow: 'GET, HEAD, POST', connection: 'close' } : { connection: 'close' },
          );
        });
    },
    close() {
      live.close();
    },
  };
}

export interface RunningDashboard {
  url: string;
  port: number;
  close(): Promise<void>;
}

/**
 * Serves a dashboard alone on loopback. Requests whose Host is not a loopback name are refused (421), so
 * a web page elsewhere cannot reach it through DNS rebinding.
 */
export function serveDashboard(dashboard: Dashboard, port: number): Promise<RunningDashboard> {
  const allowed = localhostAllowedHostnames();
  const server = createServer((req, res) => {
    if (!validateHostHeader(req.headers.host, allowed).ok) {
      res.writeHead(421, { 'content-type': 'text/plain; charset=utf-8', connection: 'close' });
      res.end('Misdirected request: the dashboard answers to localhost only.\n');
      return;
    }
    dashboard.handle(req, res);
  });
  server.requestTimeout = 30_000;
  server.headersTimeout = 10_000;
  return new Promise((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => {
      reject(
        error.code === 'EADDRINUSE'
          ? new Error(`port ${port} is in use; choose another with --port (0 picks a free one)`)
          : error,
      );
    });
    server.listen(port, '127.0.0.1', () => {
      const { port: actual } = server.address() as AddressInfo;
      let closing: Promise<void> | undefined;
      resolve({
        url: `http://127.0.0.1:${actual}/`,
        port: actual,
        close: () => {
          // Live streams never end by themselves, so they are ended first; then idle keep-alive sockets.
          closing ??= new Promise<void>((done) => {
            dashboard.close();
            server.close(() => done());
            server.closeAllConnections();
          });
          return closing;
        },
      });
    });
  });
}
