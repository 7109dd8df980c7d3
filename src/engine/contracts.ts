/**
 * WorkRail's artifact contracts (`outputContract.contractRef`): the typed artifact a step's output must
 * carry, checked as WorkRail checks it (the first artifact of the contract's kind must match the
 * contract's strict shape; `required: false` lets the output leave it out). The shapes follow the
 * schemas WorkRail publishes (src/v2/durable-core/schemas/artifacts); the code and words are ours.
 * Pure: zod checks only, no I/O.
 */
import * as z from 'zod';

const text = (max?: number) => (max === undefined ? z.string().min(1) : z.string().min(1).max(max));
const list = (max: number, item = 200) => z.array(text(item)).max(max);
const level = z.enum(['high', 'medium', 'low']);

export const LOOP_CONTROL_CONTRACT = 'wr.contracts.loop_control';

interface ContractDefinition {
  kind: string;
  schema: z.ZodType;
  /** The fields in one line, as the step's output requirements and `fill` show them. */
  fields: string;
  /** A small artifact that passes the check. */
  example: Record<string, unknown>;
}

/** Contract ref → its artifact. Loop control is decided by the loop machinery (engine/workrail.ts). */
const CONTRACTS: Readonly<Record<string, ContractDefinition>> = {
  [LOOP_CONTROL_CONTRACT]: {
    kind: 'wr.loop_control',
    schema: z.strictObject({
      kind: z.literal('wr.loop_control'),
      loopId: z
        .string()
        .min(1)
        .max(64)
        .regex(/^[a-z0-9_-]+$/)
        .optional(),
      decision: z.enum(['continue', 'stop']),
      metadata: z
        .strictObject({
          reason: z.string().max(1024).optional(),
          issuesFound: z.number().int().nonnegative().optional(),
          iterationIndex: z.number().int().nonnegative().optional(),
          confidence: z.number().int().min(0).max(100).optional(),
        })
        .optional(),
    }),
    fields: 'decision: "continue" | "stop" (loopId is optional: the loop is matched for you)',
    example: { kind: 'wr.loop_control', decision: 'stop' },
  },
  'wr.contracts.coding_handoff': {
    kind: 'wr.coding_handoff',
    schema: z.strictObject({
      kind: z.literal('wr.coding_handoff'),
      version: z.literal(1),
      branchName: text().optional(),
      keyDecisions: list(8),
      knownLimitations: list(6),
      testsAdded: list(10),
      filesChanged: list(20, 300),
      correctedAssumptions: z
        .array(z.strictObject({ assumed: text(200), actual: text(200) }))
        .max(6)
        .optional(),
    }),
    fields:
      'version: 1; keyDecisions: string[] (≤8); knownLimitations: string[] (≤6); testsAdded: string[] (≤10); filesChanged: string[] (≤20); optional branchName: string, correctedAssumptions: {assumed, actual}[] (≤6). Strings ≤200 characters (file paths ≤300)',
    example: {
      kind: 'wr.coding_handoff',
      version: 1,
      keyDecisions: ['Kept the public API unchanged'],
      knownLimitations: [],
      testsAdded: ['test/refresh.test.ts'],
      filesChanged: ['src/auth/refresh.ts'],
    },
  },
  'wr.contracts.review_verdict': {
    kind: 'wr.review_verdict',
    schema: z.strictObject({
      kind: z.literal('wr.review_verdict'),
      verdict: z.enum(['clean', 'minor', 'blocking']),
      confidence: level,
      findings: z.array(
        z.looseObject({
          severity: z.enum(['critical', 'major', 'minor', 'nit']),
          summary: text(),
          findingCategory: z
            .enum(['correctness', 'security', 'architecture', 'ux', 'performance', 'testing', 'style'])
            .optional(),
        }),
      ),
      summary: text(),
    }),
    fields:
      'verdict: "clean" | "minor" | "blocking"; confidence: "high" | "medium" | "low"; findings: {severity: "critical" | "major" | "minor" | "nit", summary, findingCategory?: "correctness" | "security" | "architecture" | "ux" | "performance" | "testing" | "style", file?, startLine?, remediation?}[] (empty when clean); summary: string',
    example: {
      kind: 'wr.review_verdict',
      verdict: 'clean',
      confidence: 'high',
      findings: [],
      summary: 'No issues',
    },
  },
  'wr.contracts.gate_verdict': {
    kind: 'wr.gate_verdict',
    schema: z.strictObject({
      kind: z.literal('wr.gate_verdict'),
      version: z.literal(1),
      verdict: z.enum(['approved', 'rejected', 'uncertain']),
      confidence: level,
      rationale: z.string().min(20),
    }),
    fields:
      'version: 1; verdict: "approved" | "rejected" | "uncertain"; confidence: "high" | "medium" | "low"; rationale: string (≥20 characters)',
    example: {
      kind: 'wr.gate_verdict',
      version: 1,
      verdict: 'approved',
      confidence: 'high',
      rationale: 'Every stated criterion is met, with evidence.',
    },
  },
  'wr.contracts.shaping_handoff': {
    kind: 'wr.shaping_handoff',
    schema: z.strictObject({
      kind: z.literal('wr.shaping_handoff'),
      version: z.literal(1),
      pitchPath: text(),
      selectedShape: text(200),
      appetite: text(100),
      keyConstraints: list(8),
      rabbitHoles: list(6),
      outOfScope: list(6),
      validationChecklist: list(10),
    }),
    fields:
      'version: 1; pitchPath: string; selectedShape: string (≤200); appetite: string (≤100); keyConstraints: string[] (≤8); rabbitHoles: string[] (≤6); outOfScope: string[] (≤6); validationChecklist: string[] (≤10). List items ≤200 characters',
    example: {
      kind: 'wr.shaping_handoff',
      version: 1,
      pitchPath: 'docs/pitch.md',
      selectedShape: 'Inline editor',
      appetite: 'Small batch (1-2 days)',
      keyConstraints: [],
      rabbitHoles: [],
      outOfScope: [],
      validationChecklist: [],
    },
  },
  'wr.contracts.discovery_handoff': {
    kind: 'wr.discovery_handoff',
    schema: z.strictObject({
      kind: z.literal('wr.discovery_handoff'),
      version: z.literal(1),
      selectedDirection: text(),
      designDocPath: z.string(),
      confidenceBand: level,
      keyInvariants: list(12),
      rejectedDirections: z
        .array(z.strictObject({ direction: text(200), reason: text(300) }))
        .max(5)
        .optional(),
      implementationConstraints: list(8).optional(),
      keyCodebaseLocations: z
        .array(z.strictObject({ path: text(300), relevance: text(150) }))
        .max(10)
        .optional(),
      selectionTier: z
        .enum(['strong_recommendation', 'provisional_recommendation', 'insufficient_signal'])
        .optional(),
    }),
    fields:
      'version: 1; selectedDirection: string; designDocPath: string; confidenceBand: "high" | "medium" | "low"; keyInvariants: string[] (≤12); optional rejectedDirections: {direction, reason}[] (≤5), implementationConstraints: string[] (≤8), keyCodebaseLocations: {path, relevance}[] (≤10), selectionTier: "strong_recommendation" | "provisional_recommendation" | "insufficient_signal"',
    example: {
      kind: 'wr.discovery_handoff',
      version: 1,
      selectedDirection: 'Extend the existing cache',
      designDocPath: 'docs/design.md',
      confidenceBand: 'medium',
      keyInvariants: [],
    },
  },
  'wr.contracts.differentiation_handoff': {
    kind: 'wr.differentiation_handoff',
    schema: z.strictObject({
      kind: z.literal('wr.differentiation_handoff'),
      version: z.literal(1),
      schemaVersion: z.literal('1.0.0'),
      generatedAt: z.iso.datetime(),
      evidenceFreshness: z.object({
        oldestCapturedAt: z.iso.datetime(),
        newestCapturedAt: z.iso.datetime(),
      }),
      validationChecklist: list(10),
      shapingHandoff: z.object({
        rawIdea: text(),
        problem: text(),
        baseline: text(),
        appetiteHint: z.enum(['small_batch', 'big_batch']),
        noGosHints: z.array(z.string()),
        constraints: z.object({
          teamSize: z.number().int().positive(),
          technicalCapabilities: z.array(z.string()).min(1),
          exclusions: z.array(z.string()).optional(),
        }),
        evidenceTopK: z.array(z.guid()).max(10),
        defensibilityClaim: z.object({
          power: z.enum([
            'Counter-Positioning',
            'Switching Costs',
            'Network Economies',
            'Scale Economies',
            'Cornered Resource',
            'Process Power',
            'Branding',
            'None_Imitable',
          ]),
          cannibalization: z.string(),
        }),
      }),
    }),
    fields:
      'version: 1; schemaVersion: "1.0.0"; generatedAt: ISO date-time; evidenceFreshness: {oldestCapturedAt, newestCapturedAt} (ISO date-times); validationChecklist: string[] (≤10); shapingHandoff: {rawIdea, problem, baseline: string; appetiteHint: "small_batch" | "big_batch"; noGosHints: string[]; constraints: {teamSize: positive integer, technicalCapabilities: string[] (≥1), exclusions?: string[]}; evidenceTopK: UUID[] (≤10); defensibilityClaim: {power: one of the seven powers ("Counter-Positioning", "Switching Costs", "Network Economies", "Scale Economies", "Cornered Resource", "Process Power", "Branding") or "None_Imitable", cannibalization: string}}',
    example: {
      kind: 'wr.differentiation_handoff',
      version: 1,
      schemaVersion: '1.0.0',
      generatedAt: '2026-01-15T10:00:00Z',
      evidenceFreshness: {
        oldestCapturedAt: '2026-01-01T00:00:00Z',
        newestCapturedAt: '2026-01-14T00:00:00Z',
      },
      validationChecklist: [],
      shapingHandoff: {
        rawIdea: 'Offline-first notes',
        problem: 'Field staff lose edits without a connection',
        baseline: 'Paper notes typed in later',
        appetiteHint: 'small_batch',
        noGosHints: [],
        constraints: { teamSize: 2, technicalCapabilities: ['TypeScript'] },
        evidenceTopK: [],
        defensibilityClaim: { power: 'Switching Costs', cannibalization: 'none' },
      },
    },
  },
};

/** The handoff contracts (every contract but loop control, which steers loops rather than handing off). */
export const HANDOFF_CONTRACTS: readonly string[] = Object.keys(CONTRACTS).filter(
  (ref) => ref !== LOOP_CONTROL_CONTRACT,
);

export function knownContract(ref: string): boolean {
  return Object.hasOwn(CONTRACTS, ref);
}

/** What an agent needs to produce a contract's artifact. */
export interface ContractShape {
  /** The contract ref a step names, e.g. wr.contracts.coding_handoff. */
  ref: string;
  /** The artifact's `kind`, e.g. wr.coding_handoff. */
  kind: string;
  /** Its fields in one line (besides kind). */
  fields: string;
  /** A small artifact that passes the check. */
  example: Record<string, unknown>;
  /** JSON Schema of the artifact (draft 2020-12), for clients that check before sending. */
  jsonSchema: Record<string, unknown>;
}

const shapes = new Map<string, ContractShape>();

/** A contract's artifact shape; undefined for a ref this server does not know. */
export function contractShape(ref: string): ContractShape | undefined {
  const def = Object.hasOwn(CONTRACTS, ref) ? CONTRACTS[ref] : undefined;
  if (def === undefined) return undefined;
  let shape = shapes.get(ref);
  if (shape === undefined) {
    const { $schema: _drop, ...jsonSchema } = z.toJSONSchema(def.schema, { io: 'input' });
    shape = { ref, kind: def.kind, fields: def.fields, example: def.example, jsonSchema };
    shapes.set(ref, shape);
  }
  return shape;
}

/** How to report a contract's artifact: the step guidance and a refused output both say this. */
export function contractInstruction(ref: string, required = true): string {
  const shape = contractShape(ref);
  if (shape === undefined) return `Artifact for contract ${ref}.`;
  return `Artifact ${shape.kind}${required ? '' : ' (optional)'}: ${shape.fields}. Put it in output.artifacts (or a json code block of the summary), e.g. ${JSON.stringify(shape.example)}.`;
}

export interface ContractCheck {
  issues: string[];
  suggestions: string[];
  /** The artifact that passed (absent when none was reported and none is required). */
  artifact?: Record<string, unknown>;
}

/**
 * Checks the reported artifacts against a step's contract, as WorkRail does: the first artifact of the
 * contract's kind must match its strict shape; none at all is refused unless `required` is false.
 */
export function checkContract(
  ref: string,
  artifacts: readonly Record<string, unknown>[],
  required = true,
): ContractCheck {
  const def = Object.hasOwn(CONTRACTS, ref) ? CONTRACTS[ref] : undefined;
  if (def === undefined) return { issues: [], suggestions: [] };
  const found = artifacts.find((a) => a.kind === def.kind);
  const hint = contractInstruction(ref, required);
  if (found === undefined) {
    if (!required) return { issues: [], suggestions: [] };
    const kinds = [...new Set(artifacts.map((a) => a.kind))];
    return {
      issues: [
        kinds.length > 0
          ? `the output carries artifacts of kind ${kinds.map((k) => `"${String(k)}"`).join(', ')}, but this step needs kind "${def.kind}" (${ref})`
          : `the output carries no "${def.kind}" artifact (${ref})`,
      ],
      suggestions: [hint],
    };
  }
  const parsed = def.schema.safeParse(found);
  if (parsed.success)
    return { issues: [], suggestions: [], artifact: parsed.data as Record<string, unknown> };
  return {
    issues: parsed.error.issues.map(
      (issue) => `${def.kind}${issue.path.length > 0 ? `.${issue.path.join('.')}` : ''}: ${issue.message}`,
    ),
    suggestions: [hint],
  };
}
