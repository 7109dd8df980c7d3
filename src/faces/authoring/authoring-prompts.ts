import { readFile } from 'node:fs/promises';
import { conditionVariables } from '../../engine/conditions.js';
import { fail } from '../../engine/errors.js';
import type { ValidationEngine } from '../../engine/validation-engine.js';
import { checkManifest, type Finding } from '../../workflows/manifest-check.js';
import { isLoopStep, isPromptStep, type Workflow } from '../../workflows/model.js';
import { formatOf } from '../../workflows/parse.js';
import type { WorkflowRegistry } from '../../workflows/registry.js';
import { requireWorkflow } from '../guidance/guidance-tools.js';
import type { PromptDefinition, PromptMessage } from '../prompt.js';
import { GUIDE_URI } from './authoring-resources.js';

function findingLines(findings: readonly Finding[]): string {
  return findings
    .map(
      (f) =>
        `- ${f.path || '(root)'}${f.line !== undefined ? ` (line ${f.line}, column ${f.column ?? 0})` : ''}: ${f.message} [${f.rule}]`,
    )
    .join('\n');
}

/** Context variables a workflow's conditions read (what a caller may need to supply). */
export function contextVariables(workflow: Workflow): string[] {
  const vars = new Set<string>();
  for (const step of workflow.steps) {
    for (const v of conditionVariables(step.runCondition)) vars.add(v);
    if (isLoopStep(step)) {
      const cfg = step.loop;
      if (cfg.type === 'while' || cfg.type === 'until')
        for (const v of conditionVariables(cfg.condition)) vars.add(v);
      if (cfg.type === 'for' && typeof cfg.count === 'string') vars.add(cfg.count);
      if (cfg.type === 'forEach') vars.add(cfg.items);
    } else if (isPromptStep(step) && typeof step.requireConfirmation === 'object') {
      for (const v of conditionVariables(step.requireConfirmation)) vars.add(v);
    }
  }
  return [...vars].sort();
}

/** Seed 003 §4 prompts. */
export function authoringPrompts(
  registry: WorkflowRegistry,
  engine: ValidationEngine,
  guide: () => Promise<string>,
): PromptDefinition[] {
  const guideMessage = async (): Promise<PromptMessage> => ({
    kind: 'resource',
    uri: GUIDE_URI,
    mimeType: 'text/markdown',
    text: await guide(),
  });
  const source = async (id: string) => {
    await registry.ready();
    const entry = registry.get(id);
    if (entry === undefined)
      fail({ code: 'workflow_not_found', message: 'Workflow not found', workflowId: id });
    return { entry, text: await readFile(entry.file, 'utf8'), format: formatOf(entry.file) ?? 'json' };
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
            'Write a new workflowlookup workflow in YAML, following the authoring guide above exactly.',
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
        const report = await checkManifest({ content: text }, engine);
        const problems = report.valid
          ? report.warnings.length > 0
            ? `It is valid, but has these warnings:\n${findingLines(report.warnings)}`
            : 'It is valid; there is nothing to fix.'
          : `It has these violations:\n${findingLines(report.errors)}`;
        return [
          await guideMessage(),
          {
            kind: 'text',
            text: [
              `This workflow manifest (${report.format}) does not pass validation as it should:`,
              `\`\`\`${report.format}\n${text}\n\`\`\``,
              problems,
              'Return the corrected manifest in full, changing only what the violations require. Check it with workflow_validate_manifest before saving it with workflow_save.',
            ].join('\n\n'),
          },
        ];
      },
    },
    {
      name: 'workflow_run_with_inputs',
      title: 'Gather what a workflow needs, then run it',
      description:
        "Lists a workflow's preconditions, clarification questions and context variables, and asks for the missing ones before starting",
      args: [
        { name: 'workflow_id', description: 'Workflow to run', required: true, completeWorkflowId: true },
        {
          name: 'inputs',
          description: 'Known values as a JSON object, e.g. {"taskScope": "large"}',
          required: false,
        },
      ],
      render: async ({ workflow_id, inputs }) => {
        await registry.ready();
        const { workflow } = requireWorkflow(registry, workflow_id ?? '');
        let known: Record<string, unknown> = {};
        if (inputs) {
          try {
            known = JSON.parse(inputs) as Record<string, unknown>;
          } catch {
            fail({
              code: 'invalid_params',
              message: 'Invalid params',
              details: 'inputs must be a JSON object',
            });
          }
        }
        const variables = contextVariables(workflow);
        const missing = variables.filter((v) => !((v.split('.')[0] as string) in known));
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
              variables.length
                ? `Context variables its conditions read: ${variables.join(', ')}. Known: ${JSON.stringify(known)}. Missing: ${missing.join(', ') || 'none'}.`
                : 'Its steps read no context variables.',
              missing.length
                ? 'Ask the user for the missing values (one short question each), confirm the preconditions, then call workflow_start with workflow_name and the complete context.'
                : 'Confirm the preconditions, then call workflow_start with workflow_name and the context.',
            ]
              .filter(Boolean)
              .join('\n\n'),
          },
        ];
      },
    },
  ];
}
