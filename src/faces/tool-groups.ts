import * as z from 'zod';
import { fail } from '../engine/errors.js';
import { annotate, defineTool, type ToolDefinition } from './tool.js';

/** What the tool needs from the connection: its groups, and the tools to describe. */
export interface ToolCatalog {
  /** Definitions (name, description, JSON Schema of the input) of tools, by name. */
  describe(names: readonly string[]): { name: string; description: string; inputSchema: unknown }[];
}

/**
 * `workflow_tools`: the tool groups and what is in them; `enable` lists more groups in this session's
 * tools/list (the client is told the list changed) and returns their definitions at once, so a client
 * without list_changed (or a stateless one) can call them right away.
 */
export function toolGroupsTool(catalog: ToolCatalog): ToolDefinition {
  return defineTool({
    name: 'workflow_tools',
    instructions: {
      rank: 80,
      text: (listed) =>
        listed('workflow_tools') ? 'workflow_tools lists the other tool groups and their tools.' : undefined,
    },
    scope: 'read',
    core: true,
    title: 'Tool groups',
    description:
      'Lists the tool groups; enable lists more groups in tools/list and returns their definitions. Every tool is callable, listed or not.',
    inputSchema: z.strictObject({
      enable: z
        .array(z.string().min(1).max(32))
        .max(10)
        .optional()
        .describe('Groups to list, e.g. ["automation"]'),
    }),
    outputSchema: z.object({
      groups: z
        .array(
          z.object({
            group: z.string().describe('Group name'),
            listed: z.boolean().describe('Whether tools/list shows it now'),
            tools: z.array(z.string()).describe('Its tools'),
          }),
        )
        .describe('Every group'),
      enabled: z.array(z.string()).optional().describe('Groups this call listed'),
      tools: z
        .array(z.looseObject({}))
        .optional()
        .describe('Definitions of the tools of the groups asked for: name, description, inputSchema'),
    }),
    // enable lists more tools in this session's tools/list (listing them again changes nothing).
    annotations: annotate({ changes: 'reversibly', repeatable: true, external: false }),
    handler: async ({ enable }, ctx) => {
      const groups = ctx.tools;
      if (groups === undefined) {
        fail({
          code: 'invalid_params',
          message: 'Invalid params',
          details: 'tool groups are not available here',
        });
      }
      if (enable === undefined) return { groups: groups.describe() };
      const { enabled, unknown } = groups.enable(enable);
      if (unknown.length > 0) {
        fail({
          code: 'invalid_params',
          message: 'Invalid params',
          details: `unknown tool group(s) ${unknown.join(', ')}; choose from ${groups
            .describe()
            .map((g) => g.group)
            .join(', ')}`,
        });
      }
      const names = new Set(groups.describe().flatMap((g) => (enable.includes(g.group) ? g.tools : [])));
      return { groups: groups.describe(), enabled, tools: catalog.describe([...names]) };
    },
  });
}
