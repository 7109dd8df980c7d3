// One check run per continuation token. A submission of a step that names a check (`verify`) claims the
// token before the check runs, by a lease on the current step's record; concurrent submissions of the
// same token (retries, a client that sends twice, other replicas) wait for the claimer's answer and
// replay it, so ten submissions run the check once. The lease is what survives a crash: a claimer that
// died (its pid is gone on this host, or its lease ran out on another) is replaced by the next submission.
import { fail } from '../engine/errors.js';
import { findPromptStep } from '../engine/next-step.js';
import type { StepRecord } from '../store/execution-store.js';
import type { CheckRunner } from './checks.js';
import { leaseOwner, ownerAlive } from './command-phase.js';
import type { StepMachine } from './execution-steps.js';
import type { TokenPayload } from './tokens.js';

/** A claim lasts this long and is renewed at a third of it while the check waits or runs. */
const LEASE_MS = 30_000;
const RENEW_MS = LEASE_MS / 3;
/** How often a submission waiting on a claimer in another process looks again (one read each). */
const POLL_MS = 200;

/** What a step record's lease says when a check claim holds it: `<owner>:check:<nonce>:<output hash>`. */
const MARK = ':check:';

/** A check claim taken by this process: run the check, then let the submission's transaction end it. */
export interface HeldClaim {
  /** The check the step names. */
  check: string;
  /** Renews the lease while `work` runs (a queued or long check keeps it). */
  holding<T>(work: () => Promise<T>): Promise<T>;
  /** Ends the claim when the submission failed before its transaction could (the next one may claim). */
  release(): Promise<void>;
  /** The submission's transaction ended the claim: wakes the submissions of this process waiting on it. */
  finished(): void;
}

export type ClaimResult =
  /** No check to run for this submission; its transaction answers (replay, conflict, poll, state). */
  | { kind: 'none' }
  /** Another submission of this token holds the claim: wait for its answer, then look again. */
  | { kind: 'wait' }
  | ({ kind: 'claimed' } & HeldClaim);

/** The check claim a step record holds, if any (a lease written by `take`). */
function parseClaim(row: StepRecord): { owner: string; nonce: string; hash: string } | undefined {
  const lease = row.lease_owner;
  const at = lease?.indexOf(MARK) ?? -1;
  if (lease === null || lease === undefined || at < 0) return undefined;
  const [nonce, hash] = lease.slice(at + MARK.length).split(':');
  if (nonce === undefined || hash === undefined) return undefined;
  return { owner: lease.slice(0, at), nonce, hash };
}

/** Clears a check claim from the step record (the submission's transaction ends it); true if one was held. */
export function endClaim(row: StepRecord): boolean {
  if (parseClaim(row) === undefined) return false;
  row.lease_owner = null;
  row.lease_expires_at = null;
  return true;
}

export class CheckClaims {
  private readonly owner = leaseOwner();
  /** Claims this process holds, by token nonce: a waiter here wakes when the claimer is done. */
  private readonly inflight = new Map<string, Promise<void>>();

  constructor(
    private readonly machine: StepMachine,
    private readonly checks: CheckRunner,
    private readonly clock: () => number,
  ) {}

  /**
   * Claims the token for its step's check, or says why not. Refused (state_conflict) when the same
   * token's check is running for a different output: one token is one submission.
   */
  take(payload: TokenPayload, outputHash: string): Promise<ClaimResult> {
    const { machine } = this;
    return machine.store.transaction(async (tx): Promise<ClaimResult> => {
      const exec = await tx.getExecution(payload.execution_id);
      if (exec === undefined || exec.token_nonce !== payload.nonce || exec.state !== 'running')
        return { kind: 'none' };
      if (typeof exec.metadata.awaiting_approval === 'string') return { kind: 'none' };
      if ((await tx.getSubmission(payload.nonce)) !== undefined) return { kind: 'none' };
      const workflow = await machine.definition(exec, tx);
      const step = findPromptStep(workflow, exec.current_step ?? '');
      const row = await tx.getStep(exec.execution_id, exec.current_seq);
      if (step?.verify === undefined || row === undefined) return { kind: 'none' };
      const check = step.verify.check;
      this.checks.available(check, {
        workflowId: workflow.id,
        stepId: step.id,
        executionId: exec.execution_id,
      });
      const now = this.clock();
      const held = parseClaim(row);
      const live =
        held !== undefined &&
        held.nonce === payload.nonce &&
        row.lease_expires_at !== null &&
        Date.parse(row.lease_expires_at) > now &&
        ownerAlive(held.owner);
      if (live) {
        if (held.hash === outputHash) return { kind: 'wait' };
        fail({
          code: 'state_conflict',
          message: 'State error',
          executionId: exec.execution_id,
          state: exec.state,
          details:
            'this token is being submitted with a different output right now (its check is running); wait for that answer, then use the token in its next call',
        });
      }
      const lease = `${this.owner}${MARK}${payload.nonce}:${outputHash}`;
      row.lease_owner = lease;
      row.lease_expires_at = new Date(now + LEASE_MS).toISOString();
      await tx.updateStep(row);
      return { kind: 'claimed', ...this.held(check, payload, row.seq, lease) };
    });
  }

  /** Waits until the claimer of `nonce` is done (here), or a little (another process holds it). */
  async wait(nonce: string, signal: AbortSignal | undefined): Promise<void> {
    signal?.throwIfAborted();
    const here = this.inflight.get(nonce);
    if (here !== undefined) await here;
    else await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    signal?.throwIfAborted();
  }

  private held(check: string, payload: TokenPayload, seq: number, lease: string): HeldClaim {
    const { store } = this.machine;
    const executionId = payload.execution_id;
    let done!: () => void;
    this.inflight.set(
      payload.nonce,
      new Promise<void>((resolve) => {
        done = resolve;
      }),
    );
    const finish = () => {
      this.inflight.delete(payload.nonce);
      done();
    };
    return {
      check,
      finished: finish,
      holding: async (work) => {
        const renew = setInterval(() => {
          store
            .transaction(async (tx) => {
              const row = await tx.getStep(executionId, seq);
              if (row?.lease_owner !== lease) return;
              row.lease_expires_at = new Date(this.clock() + LEASE_MS).toISOString();
              await tx.updateStep(row);
            })
            .catch(() => undefined);
        }, RENEW_MS);
        renew.unref();
        try {
          return await work();
        } finally {
          clearInterval(renew);
        }
      },
      release: async () => {
        try {
          await store.transaction(async (tx) => {
            const row = await tx.getStep(executionId, seq);
            if (row?.lease_owner !== lease) return;
            row.lease_owner = null;
            row.lease_expires_at = null;
            await tx.updateStep(row);
          });
        } finally {
          finish();
        }
      },
    };
  }
}
