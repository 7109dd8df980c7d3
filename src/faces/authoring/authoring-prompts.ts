import type { InputChecker } from '../../catalogs/input-check.js';
import { conditionVariables } from '../../engine/conditions.js';
import { fail } from '../../engine/errors.js';
import {
  confirmationRule,
  isLoopStep,
  isPromptStep,
  loopCondition,
  type Workflow,
} from '../../model/workflow.js';
import { type CheckPolicy, checkDefinition } from '../../workflows/check.js';
import { detectFormat, type Finding } from '../../workflows/manifest-check.js';
import { formatOf } from '../../workflows/parse.js';
import type { WorkflowRegistry } from '../../workflows/registry.js';
import type { PromptDefinition, PromptMessage } from '../prompt.js';
import { GUIDE_URI, SCHEMA_URI } from './authoring-resources.js';

function findingLines(findings: readonly Finding[]): string {
  return findings
    .map(
      (f) =>
        `- ${f.path || '(root)'}${f.line !== undefined ? ` (line ${f.line}, column ${f.column ?? 0})` : ''}: ${f.message} [${f.rule}]`,
    )
    .join('\n');
}

/** A prompt argument holding a JSON object (absent: empty). */
function jsonObject(text: string | undefined, name: string): Record<string, unknown> {
  if (text === undefined || text === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    value = undefined;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    fail({ code: 'invalid_params', message: 'Invalid params', details: `${name} must be a JSON object` });
  }
  return value as Record<string, unknown>;
}

/** Context variables a workflow's conditions read (what a caller may need to supply). */
export function contextVariables(workflow: Workflow): string[] {
  const vars = new Set<string>();
  for (const step of workflow.steps) {
    for (const v of conditionVariables(step.runCondition)) vars.add(v);
    if (isLoopStep(step)) {
      const cfg = step.loop;
      if (cfg.type === 'while' || cfg.type === 'until')
        for (const v of conditionVariables(loopCondition(cfg))) vars.add(v);
      if (cfg.type === 'for' && typeof cfg.count === 'string') vars.add(cfg.count);
      if (cfg.type === 'forEach') vars.add(cfg.items);
    } else if (isPromptStep(step)) {
      const rule = confirmationRule(step);
      if (typeof rule === 'object') for (const v of conditionVariables(rule)) vars.add(v);
    }
  }
  return [...vars].sort();
}

const QUICK_REFERENCE = /<!-- quick-reference -->\n([\s\S]*?)<!-- \/quick-reference -->/;

/**
 * The guide's quick-reference section, and where the rest is: a prompt carries a couple of kilobytes,
 * not the whole guide (the agent reads the resource when it needs a detail).
 */
export function quickReference(guide: string): string {
  const section = QUICK_REFERENCE.exec(guide)?.[1]?.trim() ?? '';
  return [
    `Follow the workflowlookup authoring guide: read the resource ${GUIDE_URI} for every field, limit and a complete example (the JSON Schema is ${SCHEMA_URI}).`,
    section,
  ]
    .filter(Boolean)
    .join('\n\n');
}

export interface AuthoringPromptDeps {
  registry: WorkflowRegistry;
  /** The authoring guide's text, read when a prompt first needs it. */
  guide: () => Promise<string>;
  /** The app's one check policy, as workflow_validate_manifest applies it. */
  checkPolicy: () => Promise<CheckPolicy>;
  /** The server's inputs check (the one workflow_start applies). */
  inputs: InputChecker;
}

/** Seed 003 §4 prompts. */
export function authoringPrompts(deps: AuthoringPromptDeps): PromptDefinition[] {
  const { registry, guide, checkPolicy, inputs } = deps;
  const guideMessage = async (): Promise<PromptMessage> => ({
    kind: 'text',
    text: quickReference(await guide()),
  });
  const source = async (id: string) => {
    await registry.ready();
    const entry = registry.get(id);
    if (entry === undefined) return registry.missing(id);
    const text = (await registry.readSource(entry)).toString('utf8');
    return { entry, text, format: formatOf(entry.file) ?? 'json' };
  };

  return [
    {
      name: 'workflow_author',
      title: 'Author a new workflow',
      description: 'Drafts a new workflow manifest (YAML) for a goal, validates it and saves it',
      args: [
        { name: 'goal', description: 'What the workflow should help accomplish', required: true },
        { name: 'target_system', description: 'System, repository or stack it targets', required: false },
        { name: 'constraints', description: 'Rules the workflow must respect', required: false },
      ],
      render: async ({ goal, target_system, constraints }) => [
        await guideMessage(),
        {
          kind: 'text',
          text: [
            'Write a new workflowlookup workflow in YAML, following the authoring guide exactly.',
            `Goal: ${goal ?? ''}`,
            target_system ? `Target system: ${target_system}` : '',
            constraints ? `Constraints: ${constraints}` : '',
            'Choose a short kebab-case id, 4-8 focused steps with concrete prompts, validationCriteria an agent summary can satisfy, and runConditions only for variables you document in clarificationPrompts or metaGuidance.',
            'Then call workflow_validate_manifest with the YAML as content; fix every error (and warnings that point at real mistakes) and validate again until it is valid.',
            'Finally call workflow_save with the content and report the saved path and version.',
          ]
            .filter(Boolean)
            .join('\n\n'),
        },
      ],
    },
    {
      name: 'workflow_extend',
      title: 'Extend a workflow',
      description:
        'Changes an existing workflow while keeping its step order, then saves it with optimistic concurrency',
      args: [
        { name: 'workflow_id', description: 'Workflow to change', required: true, completeWorkflowId: true },
        { name: 'changes', description: 'What to change or add', required: true },
      ],
      render: async ({ workflow_id, changes }) => {
        const { entry, text, format } = await source(workflow_id ?? '');
        const saveHint =
          entry.source === 'runtime'
            ? `save it with workflow_save {content, overwrite: true, expected_version: "${entry.status === 'valid' ? entry.hash : ''}"}`
            : `it comes from the read-only ${entry.source} source, so workflow_save writes your version to the runtime dir, where it overrides the original`;
        return [
          await guideMessage(),
          {
            kind: 'text',
            text: [
              `Here is workflow "${workflow_id}" (${format}, ${entry.file}):`,
              `\`\`\`${format}\n${text}\n\`\`\``,
              `Apply these changes: ${changes ?? ''}`,
              'Keep the existing steps, their ids and their order unless the changes say otherwise; keep the same format and comments.',
              `Validate with workflow_validate_manifest, fix what it reports, then ${saveHint}.`,
            ].join('\n\n'),
          },
        ];
      },
    },
    {
      name: 'workflow_fix_validation',
      title: 'Fix a workflow that does not validate',
      description:
        'Shows a manifest with its violations (from the server, with lines) and asks for a corrected version',
      args: [
        {
          name: 'workflow_id',
          description: 'A workflow the server has loaded (broken or not)',
          required: false,
          completeWorkflowId: true,
        },
        { name: 'content', description: 'Or the manifest text itself', required: false },
      ],
      render: async ({ workflow_id, content }) => {
        if ((workflow_id === undefined) === (content === undefined)) {
          fail({
            code: 'invalid_params',
            message: 'Invalid params',
            details: 'give exactly one of workflow_id or content',
          });
        }
        const text = content ?? (await source(workflow_id as string)).text;
        // The same check as workflow_validate_manifest, with the same policy.
        const report = await checkDefinition(
          { text, format: detectFormat(text) },
          'authoring',
          await checkPolicy(),
        );
        const manifest = `\`\`\`${report.format}\n${text}\n\`\`\``;
        // Say what the check found first: only a manifest that fails it is called one that fails it.
        const body = !report.valid
          ? [
              `This workflow manifest (${report.format}) does not pass validation:`,
              manifest,
              `It has these violations:\n${findingLines(report.errors)}`,
              'Return the corrected manifest in full, changing only what the violations require. Check it with workflow_validate_manifest before saving it with workflow_save.',
            ]
          : report.warnings.length > 0
            ? [
                `This workflow manifest (${report.format}) passes validation, with warnings:`,
                manifest,
                `Warnings (legal, but probably not meant):\n${findingLines(report.warnings)}`,
                'If a warning points at a mistake, return the corrected manifest in full, changing only what it requires, and check it with workflow_validate_manifest before saving it with workflow_save. Otherwise nothing needs fixing.',
              ]
            : [
                `This workflow manifest (${report.format}) passes validation: there is nothing to fix.`,
                manifest,
              ];
        return [await guideMessage(), { kind: 'text', text: body.join('\n\n') }];
      },
    },
    {
      name: 'workflow_run_with_inputs',
      title: 'Gather what a workflow needs, then run it',
      description:
        "Lists a workflow's preconditions, clarification questions, declared inputs (with the values known so far) and the context variables its conditions read, and says how to start it",
      args: [
        { name: 'workflow_id', description: 'Workflow to run', required: true, completeWorkflowId: true },
        {
          name: 'inputs',
          description:
            'Known input values as a JSON object, e.g. {"project": "p1"} (keys that are not declared inputs are taken as context)',
          required: false,
        },
        {
          name: 'context',
          description: 'Known context values as a JSON object, e.g. {"taskScope": "large"}',
          required: false,
        },
      ],
      render: async ({ workflow_id, inputs: inputsArg, context: contextArg }) => {
        await registry.ready();
        const { workflow } = registry.require(workflow_id ?? '');
        const declared = workflow.inputs ?? {};
        const given: Record<string, unknown> = {};
        const extra: [string, unknown][] = [];
        for (const [name, value] of Object.entries(jsonObject(inputsArg, 'inputs'))) {
          if (Object.hasOwn(declared, name)) given[name] = value;
          else extra.push([name, value]);
        }
        // Defined, never assigned: a client's `__proto__` key stays a key.
        const context: Record<string, unknown> = {
          ...jsonObject(contextArg, 'context'),
          ...Object.fromEntries(extra),
        };
        // The same check workflow_start applies; providers are not called here (workflow_resolve_inputs does).
        const check = await inputs.check(workflow, given, { providers: false });
        const inputLines = check.inputs.map((r) => {
          const spec = declared[r.name];
          const required = spec?.required === true && spec.default === undefined;
          const what = `${r.name} (${spec?.type ?? 'value'}${required ? ', required' : ''}): ${(spec?.description ?? '').replace(/\.?$/, '.')}`;
          const choices = spec?.provider ? ` Choices come from ${spec.provider.command}.` : '';
          const state =
            r.status === 'provided'
              ? `Given: ${JSON.stringify(r.value)}.`
              : r.status === 'default'
                ? `Default: ${JSON.stringify(r.value)}.`
                : r.status === 'unset'
                  ? 'Optional, not given.'
                  : r.status === 'missing'
                    ? 'Missing.'
                    : `${r.status === 'invalid' ? 'Invalid' : r.status}${r.message ? `: ${r.message}` : ''}.`;
          return `- ${what}${choices} ${state}`;
        });
        const open = check.inputs.filter((r) => r.status === 'missing' || r.status === 'invalid');
        const variables = contextVariables(workflow).filter((v) => !v.startsWith('inputs.'));
        const missing = variables.filter((v) => !((v.split('.')[0] as string) in context));
        const values = Object.fromEntries(
          check.inputs.filter((r) => r.status === 'provided').map((r) => [r.name, r.value]),
        );
        const start = `workflow_start ${JSON.stringify({
          workflow_id: workflow.id,
          ...(Object.keys(declared).length > 0 ? { inputs: values } : {}),
          ...(Object.keys(context).length > 0 || variables.length > 0 ? { context } : {}),
        })}`;
        const toDo = [
          open.length > 0
            ? `ask the user for ${open.map((r) => r.name).join(', ')} (workflow_resolve_inputs {"workflow_id": "${workflow.id}", "inputs": {...}} lists a provider's choices and checks the values)`
            : '',
          missing.length > 0
            ? `ask for the context values ${missing.join(', ')} (one short question each)`
            : '',
          'confirm the preconditions',
        ].filter(Boolean);
        return [
          {
            kind: 'text',
            text: [
              `Prepare to run workflow "${workflow.id}" (${workflow.name}): ${workflow.description}`,
              workflow.preconditions?.length
                ? `Preconditions to confirm:\n${workflow.preconditions.map((p) => `- ${p}`).join('\n')}`
                : '',
              workflow.clarificationPrompts?.length
                ? `Questions to ask the user:\n${workflow.clarificationPrompts.map((p) => `- ${p}`).join('\n')}`
                : '',
              inputLines.length > 0
                ? `Inputs it declares:\n${inputLines.join('\n')}`
                : 'It declares no inputs.',
              variables.length > 0
                ? `Context variables its conditions read: ${variables.join(', ')}. Known: ${JSON.stringify(context)}. Missing: ${missing.join(', ') || 'none'}.`
                : 'Its conditions read no context variables.',
              `${toDo.length > 0 ? `To do: ${toDo.join('; ')}. Then start it` : 'Start it'}: ${start}${open.length > 0 || missing.length > 0 ? ', with the missing values added' : ''}.`,
            ]
              .filter(Boolean)
              .join('\n\n'),
          },
        ];
      },
    },
  ];
}
