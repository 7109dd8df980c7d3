import { describe, expect, it } from 'vitest';
import type { ExecutionPage } from '../../executions/execution-queries.js';
import { executionTree } from './executions-page.js';

type Row = ExecutionPage['executions'][number];

/** A listed execution: `id`, its parent, and when it started (rows come most recently changed first). */
const row = (id: string, parent?: string, started = '2026-12-07T10:00:00.000Z'): Row => ({
  execution_id: id,
  workflow_id: 'w',
  state: 'running',
  current_step: 'a',
  started_at: started,
  updated_at: '2026-12-07T11:00:00.000Z',
  principal: 'local',
  current_seq: 1,
  completed_at: null,
  duration_ms: null,
  ...(parent !== undefined ? { parent_id: parent } : {}),
});
const at = (minute: number) => `2026-12-07T10:${String(minute).padStart(2, '0')}:00.000Z`;
const shape = (rows: Row[]) =>
  executionTree(rows).map(
    ({ e, depth, children }) => `${'  '.repeat(depth)}${e.execution_id}${children ? ` (${children})` : ''}`,
  );

describe('executionTree (the executions list as a compact tree)', () => {
  it('puts children under their parent on the same page, in the order they were created, where the family changed last', () => {
    // The children changed after their parent (which waits on them): they come first in the listing.
    const rows = [
      row('c2', 'p', at(2)),
      row('solo'),
      row('c1', 'p', at(1)),
      row('p', undefined, at(0)),
      row('old'),
    ];
    expect(shape(rows)).toEqual(['p (2)', '  c1', '  c2', 'solo', 'old']);
  });

  it('nests grandchildren, and keeps a child whose parent is on another page as a row of its own', () => {
    const rows = [row('g1', 'c1', at(3)), row('c1', 'p', at(1)), row('p'), row('orphan', 'elsewhere')];
    expect(shape(rows)).toEqual(['p (1)', '  c1 (1)', '    g1', 'orphan']);
  });

  it('shows every row once, even were parent links to loop', () => {
    const rows = [row('a', 'b'), row('b', 'a'), row('c')];
    expect(
      shape(rows)
        .map((s) => s.trim().split(' ')[0])
        .sort(),
    ).toEqual(['a', 'b', 'c']);
  });
});
