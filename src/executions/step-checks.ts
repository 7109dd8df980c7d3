// Server-run checks at submission: the check a step names runs once per token (claimed first, see
// check-claims.ts) before the submission's transaction, and its verdict joins the step's validation.
import { findPromptStep } from '../engine/next-step.js';
import type { ValidationResult } from '../engine/validation-engine.js';
import { CheckClaims, type HeldClaim } from './check-claims.js';
import type { CheckResult } from './checks.js';
import type { ServiceParts } from './execution-deps.js';
import type { Caller } from './execution-model.js';
import type { TokenPayload } from './tokens.js';

export class StepChecks {
  /** One check run per token; none without checks. */
  private readonly claims: CheckClaims | undefined;

  constructor(private readonly parts: ServiceParts) {
    const { checks } = parts.deps;
    this.claims = checks && new CheckClaims(parts.machine, checks, () => parts.now());
  }

  private get deps() {
    return this.parts.deps;
  }

  private get machine() {
    return this.parts.machine;
  }

  /**
   * The check the current step names, run before the submission's transaction (a check may take
   * minutes; no row stays locked meanwhile). The token is claimed first, so a check runs once per token:
   * concurrent submissions of it wait for the claimer's answer and replay it. Nothing runs for a token
   * already used, no longer current, or polling an approval: the transaction answers those.
   */
  async run(
    payload: TokenPayload,
    outputHash: string,
    caller: Caller,
  ): Promise<{ verified?: CheckResult; claim?: HeldClaim }> {
    const { store, checks } = this.deps;
    // Without checks no step can name one (start refuses such workflows; advance refuses the rest):
    // the ordinary step pays nothing for this feature.
    if (checks === undefined || this.claims === undefined) return {};
    // One read first: most steps name no check and need no claim (a transaction).
    const exec = await store.getExecution(payload.execution_id);
    if (exec === undefined || exec.token_nonce !== payload.nonce || exec.state !== 'running') return {};
    if (typeof exec.metadata.awaiting_approval === 'string') return {};
    const workflow = await this.machine.definition(exec);
    if (findPromptStep(workflow, exec.current_step ?? '')?.verify === undefined) return {};
    for (;;) {
      const claim = await this.claims.take(payload, outputHash);
      if (claim.kind === 'none') return {};
      // A check (or another request's check) takes a while: later requests need not wait for it.
      caller.onNetworkWait?.();
      if (claim.kind === 'wait') {
        await this.claims.wait(payload.nonce, caller.signal);
        continue;
      }
      try {
        caller.onProgress?.(`running check ${claim.check}`);
        const roots = await caller.roots?.().catch(() => undefined);
        const verified = await claim.holding(() =>
          checks.run(claim.check, { roots, signal: caller.signal, principal: caller.principal }),
        );
        return { verified, claim };
      } catch (error) {
        await claim.release();
        throw error;
      }
    }
  }
}

/** A check's verdict added to the step's validation: a failure is one more issue, with the output tail. */
export function withCheck(validation: ValidationResult, result: CheckResult): ValidationResult {
  if (result.passed) return validation;
  // Never started (no working directory, a command not found, a service not reached): nothing the
  // work changes, unlike an exit code or an HTTP status.
  const notRun = result.error !== undefined && result.exit_code === null && !result.timed_out;
  const how = result.error
    ? `${notRun ? 'could not run: ' : ''}${result.error}`
    : result.timed_out
      ? `timed out after ${result.duration_ms} ms and was stopped`
      : `exited with ${result.exit_code ?? `signal ${result.signal ?? 'unknown'}`}`;
  return {
    valid: false,
    issues: [...validation.issues, `CHECK_FAILED: check "${result.check}" ${how}`],
    suggestions: [
      ...validation.suggestions,
      notRun
        ? `The check "${result.check}" could not run, and no change to the work fixes that: tell the user what the issue says (the server's configuration), then send the step again once it is fixed.`
        : `Fix what the check's output (check.tail) shows, then send the step again: the server runs "${result.check}" again.`,
    ],
  };
}
