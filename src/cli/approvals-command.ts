// `workflowlookup approvals | approve | reject`: the server host's operator decides the approvals
// executions wait on. Whoever runs these can read the store (the data dir or the database URL), so
// may decide any approval; the record names them as `cli:<OS user>`. A decision names the approval
// (as `approvals` lists it), so it lands on the output that was read.
import { userInfo } from 'node:os';
import { createApp } from '../app.js';
import { ConfigError, type ConfigOptions, loadConfig } from '../config.js';
import { DomainFailure } from '../engine/errors.js';
import type { ApprovalRecord } from '../store/execution-store.js';

function operatorName(): string {
  try {
    return `cli:${userInfo().username}`;
  } catch {
    return 'cli:operator';
  }
}

function summaryOf(a: ApprovalRecord): string {
  return String((a.output as { summary?: unknown } | null)?.summary ?? '');
}

function line(a: ApprovalRecord): string {
  const expires = a.expires_at ? `  expires ${a.expires_at}` : '';
  return `${a.approval_id}  ${a.execution_id}  ${a.workflow_name}/${a.step_name}  owner ${a.principal}  requested ${a.requested_at}${expires}\n    ${a.prompt}\n    agent: ${summaryOf(a).slice(0, 300)}`;
}

/** Lists the approvals waiting for a decision, oldest first. */
export async function approvalsCommand(options: ConfigOptions, json: boolean): Promise<number> {
  const app = createApp(loadConfig(options), { watch: false });
  try {
    const pending = await (await app.services.executions()).pendingApprovals(null);
    if (json) process.stdout.write(`${JSON.stringify({ pending }, null, 2)}\n`);
    else if (pending.length === 0) process.stdout.write('No approvals pending.\n');
    else process.stdout.write(`${pending.map(line).join('\n')}\n${pending.length} pending\n`);
    return 0;
  } finally {
    await app.close();
  }
}

/**
 * Approves or rejects one approval, named by its id as `approvals` lists it: the decision lands on the
 * output that was listed, never on one the agent sent after (that one has another id). An execution id
 * is answered with the approval it waits on, to be named. Exit 1 (with why) when nothing can be decided.
 */
export async function decideCommand(
  decision: 'approve' | 'reject',
  rest: string[],
  options: ConfigOptions,
  reason: string | undefined,
): Promise<number> {
  const [id, ...extra] = rest;
  if (id === undefined || extra.length > 0) {
    throw new ConfigError(
      `${decision} needs exactly one approval id, as \`workflowlookup approvals\` lists it (appr_…)`,
    );
  }
  const app = createApp(loadConfig(options), { watch: false });
  try {
    const service = await app.services.executions();
    let approval: ApprovalRecord | undefined;
    if (id.startsWith('appr_')) {
      approval = await service.approvalById(id);
      if (approval === undefined) {
        process.stderr.write(`workflowlookup: ${decision} ${id}: no such approval\n`);
        return 1;
      }
    } else {
      const waiting = (await service.approvalsOf(id, null))?.filter((a) => a.status === 'pending');
      const [pending] = waiting ?? [];
      if (pending === undefined) {
        process.stderr.write(
          `workflowlookup: ${decision} ${id}: ${waiting === undefined ? 'Execution not found' : `execution ${id} has no approval pending`}\n`,
        );
        return 1;
      }
      // Which output would be decided is the person's to see first: they name the approval they read.
      throw new ConfigError(
        `${decision} ${id}: name the approval you read, not the execution. ${id} waits on ${pending.approval_id} ("${pending.prompt}"; agent: ${JSON.stringify(summaryOf(pending).slice(0, 200))}): workflowlookup ${decision} ${pending.approval_id}`,
      );
    }
    const decided = await service.decide(
      approval.execution_id,
      decision,
      { principal: null, name: operatorName(), via: 'cli', operator: true },
      reason?.trim() ? reason.trim().slice(0, 2000) : undefined,
      { approval_id: approval.approval_id },
    );
    const { approval: view } = decided;
    const verdict =
      view.decided_via === 'timeout'
        ? `had timed out (${view.reason}); it counts as rejected`
        : `${view.status} by ${view.decided_by}`;
    process.stdout.write(`${approval.execution_id} ${approval.approval_id}: "${view.prompt}" ${verdict}\n`);
    return view.decided_via === 'timeout' ? 1 : 0;
  } catch (error) {
    if (error instanceof DomainFailure) {
      const e = error.error;
      const details = 'details' in e ? e.details : e.message;
      process.stderr.write(`workflowlookup: ${decision} ${id}: ${details}\n`);
      return 1;
    }
    throw error;
  } finally {
    await app.close();
  }
}
