import { describe, expect, it } from 'vitest';
import { FormTokens } from './csrf.js';

const DAY = 86_400_000;

describe('dashboard form tokens', () => {
  it('hold for the day they were issued and the next, for their principal only', () => {
    let now = 20_000 * DAY + 5;
    const forms = new FormTokens('a-shared-secret-of-forty-characters-0123', () => now);
    const token = forms.issue('alice');
    expect(forms.valid('alice', token)).toBe(true);
    expect(forms.valid('bob', token)).toBe(false);
    expect(forms.valid('alice', `${token}x`)).toBe(false);
    expect(forms.valid('alice', '')).toBe(false);
    now += DAY;
    expect(forms.valid('alice', token)).toBe(true);
    now += DAY;
    expect(forms.valid('alice', token)).toBe(false);
  });

  it('are accepted by another process only when both derive them from the same token secret', () => {
    const now = () => 20_000 * DAY;
    const token = new FormTokens('s'.repeat(40), now).issue('alice');
    expect(new FormTokens('s'.repeat(40), now).valid('alice', token)).toBe(true);
    expect(new FormTokens('t'.repeat(40), now).valid('alice', token)).toBe(false);
    const own = new FormTokens(undefined, now).issue('alice');
    expect(new FormTokens(undefined, now).valid('alice', own)).toBe(false);
  });
});
