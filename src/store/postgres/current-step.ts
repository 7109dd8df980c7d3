import type { StepRecord, StoreWriter, SubmissionRecord } from '../execution-store.js';
import type { SqlSession } from '../sql/operations.js';
import { type Row, SUBMISSIONS, toStep, toSubmission } from '../sql/tables.js';

const SUBMISSION_COLUMNS = SUBMISSIONS.columns.map(([name]) => `t.${name} AS t_${name}`).join(', ');

/**
 * The current step of a locked execution (locked too) and the used-token record of its live token,
 * in one statement. It runs after the execution's lock is held, so its snapshot sees everything the
 * previous holder committed.
 */
const CURRENT = `SELECT s.*, ${SUBMISSION_COLUMNS}
  FROM (SELECT 1) AS one
  LEFT JOIN LATERAL (SELECT * FROM workflow_steps WHERE execution_id = $1 AND seq = $2 FOR NO KEY UPDATE) AS s ON true
  LEFT JOIN token_submissions AS t ON t.nonce = $3`;

/**
 * A transaction's operations with one round trip saved on the step path: after an execution is read
 * (and locked), the first read of its current step or of its live token's submission fetches both,
 * and the other is answered from what came back. workflow_next_step reads exactly those two.
 *
 * Sound because both stay as read until the transaction writes them: the step is locked, and a token
 * is recorded (or a recorded answer replaced) only by a transaction that holds the execution, as this
 * one does; any write to either table here drops what was fetched.
 */
export function withCurrentStep(ops: StoreWriter, query: SqlSession['query']): StoreWriter {
  let held: { execution_id: string; seq: number; nonce: string | null } | undefined;
  let fetched: { step: StepRecord | undefined; submission: SubmissionRecord | undefined } | undefined;
  const fetch = async () => {
    if (fetched === undefined && held !== undefined) {
      const [row] = await query({ text: CURRENT, values: [held.execution_id, held.seq, held.nonce] }, [
        'workflow_steps',
        'token_submissions',
      ]);
      const submission: Row = {};
      for (const [name] of SUBMISSIONS.columns) submission[name] = row?.[`t_${name}`];
      fetched = {
        step: row?.seq === null || row?.seq === undefined ? undefined : toStep(row),
        submission:
          submission.nonce === null || submission.nonce === undefined ? undefined : toSubmission(submission),
      };
    }
    return fetched;
  };
  const isCurrentStep = (id: string, seq: number) => held?.execution_id === id && held.seq === seq;
  const dropping =
    <A extends unknown[]>(write: (...args: A) => Promise<void>) =>
    (...args: A) => {
      fetched = undefined;
      return write(...args);
    };
  return {
    ...ops,
    getExecution: async (id) => {
      const exec = await ops.getExecution(id);
      held = exec && { execution_id: id, seq: exec.current_seq, nonce: exec.token_nonce };
      fetched = undefined;
      return exec;
    },
    getStep: async (id, seq) => {
      if (!isCurrentStep(id, seq)) return ops.getStep(id, seq);
      return (await fetch())?.step;
    },
    getSubmission: async (nonce) => {
      if (held === undefined || held.nonce !== nonce) return ops.getSubmission(nonce);
      return (await fetch())?.submission;
    },
    insertStep: dropping(ops.insertStep),
    updateStep: dropping(ops.updateStep),
    recordSubmission: dropping(ops.recordSubmission),
    updateSubmission: dropping(ops.updateSubmission),
  };
}
