// The workflows pages: every source with its files, and one workflow with its diagram.
import { existsSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import type { PageContext } from '../pages/page-kit.js';
import { workflowPage } from '../pages/workflow-page.js';
import { workflowsPage } from '../pages/workflows-page.js';
import { HttpError } from '../responses.js';
import type { ControllerDeps } from './controller-kit.js';

export function workflowsController({ app, send }: ControllerDeps) {
  const { registry } = app.services;
  return {
    async list(ctx: PageContext, res: ServerResponse) {
      await registry.ready();
      const sources = await Promise.all(
        registry.bySource().map(async (s) => ({
          ...s,
          exists: existsSync(registry.checkoutOf(s.source)?.dir ?? s.source.dir),
          entries: s.entries,
        })),
      );
      send(
        res,
        200,
        workflowsPage(ctx, sources, (id) => registry.get(id), app.services.gitSources.status()),
      );
    },

    async show(ctx: PageContext, id: string, res: ServerResponse) {
      await registry.ready();
      const entry = registry.get(id);
      if (entry === undefined) throw new HttpError(404, `No workflow ${id}.`);
      if (entry.status === 'broken') {
        throw new HttpError(404, `Workflow ${id} is broken; the workflows page lists its violations.`);
      }
      send(res, 200, workflowPage(ctx, entry));
    },
  };
}
