// Shapes and pure helpers of durable executions, shared by the service, its tools and resources.
import { fail } from '../../engine/errors.js';
import type { Guidance } from '../../engine/guidance.js';
import type { LoopPosition } from '../../engine/next-step.js';
import { isLoopStep, type PromptStep, type Workflow } from '../../workflows/model.js';

export const MAX_ARTIFACT_BYTES = 1024 * 1024;
export const MAX_STEP_ARTIFACT_BYTES = 8 * 1024 * 1024;
export const DEFAULT_AGENT = 'default';

export type ArtifactInput =
  | string
  | {
      type: 'file' | 'data' | 'report' | 'finding';
      name: string;
      content: string;
      content_type?: string | undefined;
      metadata?: Record<string, unknown> | undefined;
    };

export interface StepOutput {
  summary: string;
  artifacts?: ArtifactInput[] | undefined;
  findings?: string[] | undefined;
  next_step_recommendation?: string | undefined;
  context?: Record<string, unknown> | undefined;
}

/** The step an execution is on, as handed to the agent. */
export interface StepView {
  step_name: string;
  agent_name: string;
  agent_content: string;
  progress: string;
  step: PromptStep;
  guidance: Guidance;
  loop?: LoopPosition;
  notices?: string[];
}

/** One command step the server ran while advancing an execution. */
export interface CommandRun {
  step_id: string;
  command: string;
  status: number;
  output: unknown;
  attempts: number;
  polls: number;
  duration_ms: number;
}

/** The agent-visible part of a step output, kept in the context as `steps.<id>.output`. */
export function outputForTemplates(output: StepOutput): Record<string, unknown> {
  return {
    summary: output.summary,
    ...(output.findings ? { findings: output.findings } : {}),
    ...(output.next_step_recommendation ? { next_step_recommendation: output.next_step_recommendation } : {}),
  };
}

export const nowIso = () => new Date().toISOString();

export function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : 1));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** Number of prompt steps a definition has (loop bodies counted once): the denominator of progress. */
export function plannedSteps(workflow: Workflow): number {
  const bodyRefs = new Set(
    workflow.steps.flatMap((s) => (isLoopStep(s) && typeof s.body === 'string' ? [s.body] : [])),
  );
  return workflow.steps.reduce((n, s) => {
    if (bodyRefs.has(s.id)) return n;
    return n + (isLoopStep(s) ? (Array.isArray(s.body) ? s.body.length : 1) : 1);
  }, 0);
}

/** Refuses oversized artifacts before anything is written. */
export function checkArtifacts(artifacts: readonly ArtifactInput[]): void {
  let total = 0;
  for (const a of artifacts) {
    if (typeof a === 'string') continue;
    const size = Buffer.byteLength(a.content);
    total += size;
    if (size > MAX_ARTIFACT_BYTES) {
      fail({
        code: 'invalid_params',
        message: 'Invalid params',
        details: `artifact '${a.name}' is ${size} bytes; the limit is ${MAX_ARTIFACT_BYTES} bytes per artifact`,
      });
    }
  }
  if (total > MAX_STEP_ARTIFACT_BYTES) {
    fail({
      code: 'invalid_params',
      message: 'Invalid params',
      details: `artifacts total ${total} bytes; the limit is ${MAX_STEP_ARTIFACT_BYTES} bytes per step`,
    });
  }
}
