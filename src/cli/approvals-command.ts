// `workflowlookup approvals | approve | reject`: the server host's operator decides the approvals
// executions wait on. Whoever runs these can read the store (the data dir or the database URL), so
// may decide any approval; the record names them as `cli:<OS user>`.
import { userInfo } from 'node:os';
import { createApp } from '../app.js';
import { type ConfigOptions, loadConfig } from '../config.js';
import { DomainFailure } from '../engine/errors.js';
import type { ApprovalRecord } from '../store/execution-store.js';

function operatorName(): string {
  try {
    return `cli:${userInfo().username}`;
  } catch {
    return 'cli:operator';
  }
}

function line(a: ApprovalRecord): string {
  const expires = a.expires_at ? `  expires ${a.expires_at}` : '';
  return `${a.execution_id}  ${a.workflow_name}/${a.step_name}  owner ${a.principal}  requested ${a.requested_at}${expires}\n    ${a.prompt}\n    agent: ${String((a.output as { summary?: unknown } | null)?.summary ?? '').slice(0, 300)}`;
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

/** Approves or rejects what an execution waits on; exit 1 (with why) when nothing can be decided. */
export async function decideCommand(
  decision: 'approve' | 'reject',
  rest: string[],
  options: ConfigOptions,
  reason: string | undefined,
): Promise<number> {
  const [executionId, ...extra] = rest;
  if (executionId === undefined || extra.length > 0) {
    throw new Error(`${decision} needs exactly one execution id (see \`workflowlookup approvals\`)`);
  }
  const app = createApp(loadConfig(options), { watch: false });
  try {
    const service = await app.services.executions();
    const decided = await service.decide(
      executionId,
      decision,
      { principal: null, name: operatorName(), via: 'cli', operator: true },
      reason?.trim() ? reason.trim().slice(0, 2000) : undefined,
    );
    const { approval } = decided;
    const verdict =
      approval.decided_via === 'timeout'
        ? `had timed out (${approval.reason}); it counts as rejected`
        : `${approval.status} by ${approval.decided_by}`;
    process.stdout.write(`${executionId}: "${approval.prompt}" ${verdict}\n`);
    return approval.decided_via === 'timeout' ? 1 : 0;
  } catch (error) {
    if (error instanceof DomainFailure) {
      const e = error.error;
      const details = 'details' in e ? e.details : e.message;
      process.stderr.write(`workflowlookup: ${decision} ${executionId}: ${details}\n`);
      return 1;
    }
    throw error;
  } finally {
    await app.close();
  }
}
