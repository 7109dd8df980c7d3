import { describe, expect, it } from 'vitest';
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
});
