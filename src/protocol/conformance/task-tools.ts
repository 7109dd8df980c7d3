// The fixtures of the tasks extension (SEP-2663), served as our own task tools.
import * as z from 'zod';
import { DomainFailure, fail } from '../../engine/errors.js';
import { annotate, defineTool, type ToolDefinition } from '../../faces/tool.js';
import { answerText, elicitation } from './asking.js';
import { sleep } from './kit.js';

const taskCancelled = (message: string): never => {
  throw new DomainFailure({ code: 'task_cancelled', message });
};

/**
 * The fixtures of the tasks extension (SEP-2663), as our own task tools so that our task machinery
 * (tasks/get, tasks/update, tasks/cancel, input requests) is what the scenarios exercise.
 */
export function conformanceTaskTools(): ToolDefinition[] {
  const FIXTURE = annotate({ changes: 'nothing', repeatable: true, external: false });
  const Message = z.object({ message: z.string() });
  return [
    defineTool({
      name: 'slow_compute',
      title: 'Slow compute (conformance fixture)',
      description: 'Sleeps `seconds` seconds, then answers; as a task when the client declared tasks.',
      inputSchema: z.strictObject({
        seconds: z.number().min(0).max(60).default(1),
        label: z.string().max(200).optional(),
      }),
      outputSchema: Message,
      annotations: FIXTURE,
      task: { support: 'optional' },
      handler: async ({ seconds, label }, ctx) => {
        const signal = ctx.task?.signal ?? ctx.caller.signal;
        await sleep(seconds * 1000, signal).catch(() => taskCancelled('slow_compute was cancelled'));
        return { message: `Computed ${label ?? 'a result'} in ${seconds} second(s)` };
      },
    }),
    defineTool({
      name: 'failing_job',
      title: 'Failing job (conformance fixture)',
      description: 'Runs only as a task and ends with a tool error after about a second.',
      inputSchema: z.strictObject({}),
      outputSchema: Message,
      annotations: FIXTURE,
      task: { support: 'required' },
      handler: async (_input, ctx) => {
        await sleep(1000, ctx.task?.signal).catch(() => taskCancelled('failing_job was cancelled'));
        return fail({
          code: 'invalid_params',
          message: 'Invalid params',
          details: 'failing_job always fails',
        });
      },
    }),
    defineTool({
      name: 'protocol_error_job',
      title: 'Protocol error job (conformance fixture)',
      description: 'Runs as a task and fails inside the server (a protocol-level error, not a tool error).',
      inputSchema: z.strictObject({}),
      outputSchema: Message,
      annotations: FIXTURE,
      task: { support: 'optional' },
      handler: async () => {
        throw new Error('protocol_error_job failed inside the server, as it always does');
      },
    }),
    defineTool({
      name: 'confirm_delete',
      title: 'Confirm delete (conformance fixture)',
      description: 'A task that asks the user to confirm (elicitation), then completes.',
      inputSchema: z.strictObject({ filename: z.string().max(200).optional() }),
      outputSchema: Message,
      annotations: FIXTURE,
      task: { support: 'optional' },
      handler: async ({ filename }, ctx) => {
        const answer = ctx.task
          ? await ctx.task.ask('confirm', {
              method: 'elicitation/create',
              params: elicitation(`Delete ${filename ?? 'the file'}?`, { confirm: { type: 'boolean' } }, [
                'confirm',
              ]),
            })
          : { action: 'accept', content: { confirm: true } };
        return { message: `confirm_delete: action=${String(answer.action)}` };
      },
    }),
    defineTool({
      name: 'multi_input',
      title: 'Multiple inputs (conformance fixture)',
      description: 'A task that asks two questions at once, then completes.',
      inputSchema: z.strictObject({}),
      outputSchema: Message,
      annotations: FIXTURE,
      task: { support: 'optional' },
      handler: async (_input, ctx) => {
        const task = ctx.task;
        if (task === undefined) return { message: 'multi_input: nothing to ask without a task' };
        const question = (message: string) => ({
          method: 'elicitation/create' as const,
          params: elicitation(message, { value: { type: 'string' } }, ['value']),
        });
        const [first, second] = await Promise.all([
          task.ask('first', question('First value?')),
          task.ask('second', question('Second value?')),
        ]);
        return { message: `multi_input: ${answerText(first, 'value')}, ${answerText(second, 'value')}` };
      },
    }),
    defineTool({
      name: 'test_tool_with_task',
      title: 'MRTR, then a task (conformance fixture)',
      description:
        'Asks for a name in an input_required round, then runs as a task whose result names it (2026-07-28).',
      inputSchema: z.strictObject({ user_name: z.string().max(200).optional() }),
      outputSchema: Message,
      annotations: FIXTURE,
      task: {
        support: 'required',
        admit: (_input, { inputResponses, requireInput }) => {
          const name = answerText(inputResponses?.user_name, 'name');
          if (name === undefined) {
            requireInput?.({
              user_name: {
                method: 'elicitation/create',
                params: elicitation('What is your name?', { name: { type: 'string' } }, ['name']),
              },
            });
          }
          return { summary: 'greeting', arguments: { user_name: name ?? 'stranger' } };
        },
      },
      handler: ({ user_name }) => ({ message: `Hello from the task, ${user_name ?? 'stranger'}!` }),
    }),
  ];
}
