// The live streams (Server-Sent Events) the pages open: the executions list, one execution, the runs page.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { PageContext } from '../pages/page-kit.js';
import { ISO, lookingAt, one } from '../params.js';
import type { ControllerDeps } from './controller-kit.js';

export function eventsController({ app, queries, live }: ControllerDeps) {
  let following = false;
  /** Starts listening to the store's commits when the first stream opens. */
  const follow = async () => {
    if (following) return;
    following = true;
    const read = await queries();
    live.follow(read);
    // Actions go through the app's service (a writable store): when the pages read elsewhere (the
    // standalone dashboard's read-only reader), look at once after them too.
    app.services
      .executions()
      .then((service) => {
        if (service.queries !== read) live.follow(service.queries);
      })
      .catch(() => undefined);
  };
  const since = (params: URLSearchParams) => {
    const value = one(params, 'since') ?? '';
    return ISO.test(value) ? value : '';
  };

  return {
    /** The executions list's stream. */
    async executions(ctx: PageContext, params: URLSearchParams, req: IncomingMessage, res: ServerResponse) {
      await follow();
      live.attach(req, res, {
        principal: lookingAt(ctx.viewer, one(params, 'principal')),
        since: since(params),
        until: ctx.viewer.expiresAt,
      });
    },

    /** One execution's stream. */
    async execution(
      ctx: PageContext,
      id: string,
      params: URLSearchParams,
      req: IncomingMessage,
      res: ServerResponse,
    ) {
      await follow();
      live.attach(req, res, {
        principal: lookingAt(ctx.viewer, one(params, 'principal')),
        execution: id,
        since: since(params),
        until: ctx.viewer.expiresAt,
      });
    },

    /** The runs page's stream: `v` is the tasks version the page shows. */
    async tasks(ctx: PageContext, params: URLSearchParams, req: IncomingMessage, res: ServerResponse) {
      await follow();
      live.attach(req, res, {
        principal: lookingAt(ctx.viewer, one(params, 'principal')),
        since: '',
        tasks: (one(params, 'v') ?? '').slice(0, 64),
        until: ctx.viewer.expiresAt,
      });
    },
  };
}
