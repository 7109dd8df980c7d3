import { describe, expect, it } from 'vitest';
import {
  expressionsIn,
  parseReference,
  render,
  renderPreview,
  TemplateError,
  type TemplateScope,
} from './templating.js';

const scope: TemplateScope = {
  inputs: { count: 3, name: 'alpha', tags: ['a', 'b'] },
  steps: { fetch: { items: [{ id: 1 }], total: 1 } },
  env: { RELEASE: 'r42' },
  context: { taskScope: 'large', ticket: { id: 'T-1' } },
};

describe('templates', () => {
  it('keeps the type of a value that is exactly one expression', () => {
    expect(render('${{ inputs.count }}', scope)).toBe(3);
    expect(render(' ${{inputs.tags}} ', scope)).toEqual(['a', 'b']);
    expect(render('${{ steps.fetch.output.items }}', scope)).toEqual([{ id: 1 }]);
    expect(render({ n: '${{ steps.fetch.output.total }}', nested: ['${{ env.RELEASE }}'] }, scope)).toEqual({
      n: 1,
      nested: ['r42'],
    });
  });

  it('splices values into text, JSON for structured ones, and fills {{var}} from the context', () => {
    expect(render('Build ${{ env.RELEASE }} of ${{ inputs.name }} (${{ inputs.count }})', scope)).toBe(
      'Build r42 of alpha (3)',
    );
    expect(render('tags: ${{ inputs.tags }}', scope)).toBe('tags: ["a","b"]');
    expect(render('Scope {{taskScope}}, ticket {{ticket.id}}, unknown {{nope}}', scope)).toBe(
      'Scope large, ticket T-1, unknown {{nope}}',
    );
    expect(renderPreview('for {{ taskScope }}', scope).value).toBe('for large');
  });

  it('rejects what it cannot resolve, and defers steps that have not run in previews', () => {
    expect(() => render('${{ inputs.missing }}', scope)).toThrow(TemplateError);
    expect(() => render('${{ env.HOME }}', scope)).toThrow(/not allowed/);
    expect(() => render('${{ process.env.HOME }}', scope)).toThrow(/not a reference/);
    expect(() => render('${{ steps.later.output }}', scope)).toThrow(/has not produced an output/);
    expect(renderPreview('a ${{ steps.later.output.x }} b', scope)).toEqual({
      value: 'a ${{ steps.later.output.x }} b',
      deferred: ['steps.later.output.x'],
    });
  });

  it('parses references and finds every expression', () => {
    expect(parseReference('steps.fetch-it.output.items.0')).toEqual({
      kind: 'steps',
      step: 'fetch-it',
      path: ['items', '0'],
      text: 'steps.fetch-it.output.items.0',
    });
    expect(parseReference('steps.fetch.items')).toBeUndefined();
    expect(parseReference('env.A.B')).toBeUndefined();
    expect(expressionsIn({ a: ['${{ inputs.x }}', 'x ${{ env.Y }}'], b: 1 })).toEqual(['inputs.x', 'env.Y']);
  });
});
