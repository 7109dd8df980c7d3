import { describe, expect, it } from 'vitest';
import { MAX_COMPARED } from '../engine/nearest.js';
import { closest, didYouMean } from './suggest.js';

describe('did you mean', () => {
  const tools = ['workflow_start', 'workflow_next_step', 'workflow_list', 'workflow_get', 'workflow_next'];
  it('finds close spellings and other forms of the same words', () => {
    expect(closest('workflow_strat', tools)).toEqual(['workflow_start']);
    expect(closest('workflow.next_step', tools)[0]).toBe('workflow_next_step');
    expect(closest('workflowId', ['workflow_id', 'inputs', 'content'])).toEqual(['workflow_id']);
    expect(closest('completely_unrelated', tools)).toEqual([]);
  });
  it('words a hint, or nothing when nothing is close', () => {
    expect(didYouMean('workflow_lst', tools)).toBe(' (did you mean "workflow_list"?)');
    expect(didYouMean('zzz', tools)).toBe('');
  });
  it('gives no hint for names far longer than any known one, without reading them', () => {
    // A string whose characters cannot be read: any look at them would throw.
    const unreadable = new Proxy(new String('x'.repeat(2_000_000)), {
      get(target, key) {
        if (key === 'length') return target.length;
        throw new Error(`read ${String(key)}`);
      },
    }) as unknown as string;
    expect(closest(unreadable, tools)).toEqual([]);
    expect(closest(`workflow_list${'x'.repeat(MAX_COMPARED)}`, tools)).toEqual([]);
    expect(closest('___', tools)).toEqual([]);
    // Near the bound, a long name still finds its match.
    expect(closest('workfolw_next_step', tools)).toEqual(['workflow_next_step']);
  });
});
