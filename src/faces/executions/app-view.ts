// The MCP App view of an execution (MCP Apps, spec 2026-01-26): a ui:// resource that hosts with the
// extension render inline when workflow_start, workflow_next_step or workflow_resume answer. Hosts
// without it ignore `_meta.ui`; every tool keeps answering with the same content and structured result.
import { RESOURCE_MIME_TYPE, RESOURCE_URI_META_KEY } from '@modelcontextprotocol/ext-apps/server';
import { fail } from '../../engine/errors.js';
import type { ResourceDefinition } from '../resource.js';

export const VIEW_URI = 'ui://workflowlookup/execution-progress.html';

/** The `_meta` that links a tool's result to the view (the legacy flat key too, for older hosts). */
export const VIEW_TOOL_META = { ui: { resourceUri: VIEW_URI }, [RESOURCE_URI_META_KEY]: VIEW_URI };

/**
 * The view's HTML (built into dist/views by scripts/build.mjs: one file, script and style inline, no
 * network). It declares no CSP domains, so hosts apply their most restrictive default.
 */
export function appViewResource(loadHtml: () => Promise<string>): ResourceDefinition {
  let html: Promise<string> | undefined;
  return {
    name: 'execution_progress_view',
    uri: VIEW_URI,
    title: 'Execution progress view',
    description:
      'MCP App view (HTML) of an execution: steps done and to go, the current step, the last validation',
    mimeType: RESOURCE_MIME_TYPE,
    meta: { ui: { prefersBorder: true } },
    read: async () => {
      html ??= loadHtml();
      return html.catch((error: unknown) => {
        html = undefined;
        fail({
          code: 'storage_error',
          message: 'Storage error',
          details: `the execution view is missing (${(error as Error).message}); run the build`,
        });
      });
    },
  };
}
