// Issue #22.3: a tool's facts (scope, core flag, its sentence in the server instructions) live on its
// definition. What they say must be what the tables and the instructions function said before.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type App, createApp } from '../src/app.js';
import { loadConfig, PROFILES } from '../src/config.js';
import { instructionsFor } from '../src/protocol/mcp-server.js';
import { ToolSwitch } from '../src/protocol/tool-switch.js';
import { silentLogger } from '../src/telemetry/log.js';
import { type Sandbox, sandbox } from './helpers/server.js';
import { validationWorkerUrl } from './helpers/validation-worker.js';

/** The server instructions as src/protocol/mcp-server.ts wrote them before, with every name in it. */
function wordingBefore(tools: ToolSwitch): string {
  const has = (...names: string[]) => names.every((n) => tools.listed(n));
  const parts = ['workflowlookup keeps you on the rails of a multi-step workflow.'];
  if (has('workflow_start', 'workflow_next_step')) {
    parts.push(
      `Choose one${has('workflow_list') ? ' with workflow_list' : ''}, begin it with workflow_start {workflow_id}, do what agent_content says and report it with the workflow_next_step call in the answer's next, filling in what its fill names (output.summary, the context variables later steps read).${has('workflow_resume') ? ' After a context reset, workflow_resume {execution_id} hands back the current step.' : ''}`,
    );
  }
  if (has('workflow_next')) {
    parts.push(
      `Stateless guidance: workflow_next {workflowId, completedSteps, context} returns one step and, in next, the workflow_next call to send when it is done (fill names the context variables to add)${has('workflow_validate') ? ', and check a step output with workflow_validate' : ''}.`,
    );
  }
  if (has('workflow_validate_manifest', 'workflow_save')) {
    parts.push(
      'To author a workflow, check it with workflow_validate_manifest {content}, then workflow_save {content}; the format is the resource workflowlookup://authoring/spec.',
    );
  }
  if (has('workflow_resolve_inputs')) {
    parts.push('workflow_resolve_inputs checks the inputs a workflow declares before a run.');
  }
  if (has('catalog_import_openapi')) {
    parts.push('catalog_import_openapi turns an OpenAPI document into commands for command steps.');
  }
  if (has('workflow_run')) parts.push('workflow_run runs a workflow as an MCP task the server drives.');
  parts.push(
    "Answers of the execution, authoring and automation tools list in next the calls to make, ready to send (fill names what only you can supply); a failure's error.data.next is the call that fixes it.",
  );
  if (has('workflow_tools')) parts.push('workflow_tools lists the other tool groups and their tools.');
  return parts.join(' ');
}

/** The scopes as src/protocol/scopes.ts listed them before (a tool missing there needed admin). */
const SCOPES_BEFORE = new Map<string, string>([
  ['workflow_list', 'read'],
  ['workflow_get', 'read'],
  ['workflow_next', 'read'],
  ['workflow_validate', 'read'],
  ['workflow_validate_manifest', 'read'],
  // Runs a definition's tests in a scratch store of its own: nothing is saved, no execution is kept.
  ['workflow_test', 'read'],
  ['workflow_preview_inputs', 'read'],
  ['workflow_resolve_inputs', 'read'],
  ['workflow_preview_rendered', 'read'],
  ['workflow_step_plan', 'read'],
  ['command_list', 'read'],
  ['provider_list', 'read'],
  ['workflow_tools', 'read'],
  ['workflow_start', 'run'],
  ['workflow_next_step', 'run'],
  ['workflow_set_state', 'run'],
  ['workflow_resume', 'run'],
  ['workflow_executions', 'run'],
  ['workflow_run', 'run'],
  ['workflow_execute', 'run'],
  ['workflow_cancel', 'run'],
  ['workflow_author_and_run', 'author'],
  ['workflow_repair_and_rerun', 'author'],
  ['workflow_save', 'author'],
  ['workflow_rename', 'author'],
  ['workflow_delete', 'author'],
  ['catalog_validate_openapi', 'admin'],
  ['catalog_preview_import', 'admin'],
  ['catalog_import_openapi', 'admin'],
  ['catalog_set_enabled', 'admin'],
  ['catalog_remove', 'admin'],
  ['workflow_purge_history', 'admin'],
]);

const CORE_BEFORE = [
  'workflow_list',
  'workflow_get',
  'workflow_next',
  'workflow_validate',
  'workflow_start',
  'workflow_next_step',
  'workflow_resume',
  'workflow_tools',
];

let sb: Sandbox;
let app: App;

beforeAll(async () => {
  sb = sandbox();
  app = createApp(loadConfig({ env: sb.env, cwd: sb.project }), {
    watch: false,
    log: silentLogger,
    validationWorker: await validationWorkerUrl(),
  });
});
afterAll(async () => {
  await app?.close();
  sb?.cleanup();
});

describe("a tool's facts on its definition", () => {
  it('the instructions say what they said before, for every combination of groups', () => {
    const groups = new Map(
      app
        .toolSwitch()
        .describe()
        .map((g) => [g.group, g.tools]),
    );
    for (let mask = 0; mask < 1 << PROFILES.length; mask++) {
      const listed = ['core', ...PROFILES.filter((_, i) => mask & (1 << i))];
      const tools = new ToolSwitch(groups, listed);
      expect(instructionsFor(tools, app.runner.tools), listed.join(',')).toBe(wordingBefore(tools));
    }
    // And with nothing listed at all.
    const none = new ToolSwitch(groups, []);
    expect(instructionsFor(none, app.runner.tools)).toBe(wordingBefore(none));
  });

  it('each tool needs the scope the table gave it, and the core is the same eight tools', () => {
    for (const tool of app.runner.tools) {
      expect(tool.scope, tool.name).toBe(SCOPES_BEFORE.get(tool.name) ?? 'admin');
    }
    expect(
      app.runner.tools
        .filter((t) => t.core)
        .map((t) => t.name)
        .sort(),
    ).toEqual([...CORE_BEFORE].sort());
    expect(
      app
        .toolSwitch()
        .describe()
        .find((g) => g.group === 'core')
        ?.tools.sort(),
    ).toEqual([...CORE_BEFORE].sort());
  });

  it('a tool switch reset lists the groups it was built with again, telling no one', () => {
    const groups = new Map(
      app
        .toolSwitch()
        .describe()
        .map((g) => [g.group, g.tools]),
    );
    const tools = new ToolSwitch(groups, ['core']);
    let told = 0;
    tools.onChange = () => {
      told++;
    };
    tools.enable(['authoring']);
    expect(tools.listed('workflow_save')).toBe(true);
    tools.reset();
    expect(tools.listed('workflow_save')).toBe(false);
    expect(tools.listed('workflow_start')).toBe(true);
    expect(told).toBe(1);
  });
});
