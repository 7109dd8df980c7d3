import { describe, expect, it } from 'vitest';
import { checkContract, contractShape, HANDOFF_CONTRACTS, LOOP_CONTROL_CONTRACT } from './contracts.js';

describe('WorkRail artifact contracts', () => {
  it('knows the six handoff contracts WorkRail publishes', () => {
    expect([...HANDOFF_CONTRACTS].sort()).toEqual([
      'wr.contracts.coding_handoff',
      'wr.contracts.differentiation_handoff',
      'wr.contracts.discovery_handoff',
      'wr.contracts.gate_verdict',
      'wr.contracts.review_verdict',
      'wr.contracts.shaping_handoff',
    ]);
  });

  it.each([...HANDOFF_CONTRACTS, LOOP_CONTROL_CONTRACT])(
    '%s: its example passes, its shape is a JSON Schema',
    (ref) => {
      const shape = contractShape(ref);
      expect(shape?.kind).toBe(shape?.example.kind);
      expect(shape?.jsonSchema).toMatchObject({ type: 'object', additionalProperties: false });
      expect(checkContract(ref, [shape?.example as Record<string, unknown>])).toMatchObject({ issues: [] });
    },
  );

  it('refuses a missing artifact unless optional, and names the wrong kind sent', () => {
    const ref = 'wr.contracts.coding_handoff';
    expect(checkContract(ref, []).issues).toEqual([
      'the output carries no "wr.coding_handoff" artifact (wr.contracts.coding_handoff)',
    ]);
    expect(checkContract(ref, [], false).issues).toEqual([]);
    expect(checkContract(ref, [{ kind: 'wr.review_verdict' }]).issues[0]).toContain(
      'kind "wr.review_verdict"',
    );
    expect(checkContract(ref, []).suggestions[0]).toContain('keyDecisions: string[]');
  });

  it('checks the strict shape: wrong values, unknown fields, limits', () => {
    const ref = 'wr.contracts.gate_verdict';
    const issues = checkContract(ref, [
      {
        kind: 'wr.gate_verdict',
        version: 2,
        verdict: 'ok',
        confidence: 'high',
        rationale: 'short',
        extra: 1,
      },
    ]).issues;
    expect(issues.join('\n')).toMatch(/version/);
    expect(issues.join('\n')).toMatch(/verdict/);
    expect(issues.join('\n')).toMatch(/rationale/);
    expect(issues.join('\n')).toMatch(/extra/);
  });

  it('is undefined for an unknown ref', () => {
    expect(contractShape('wr.contracts.nope')).toBeUndefined();
  });
});
