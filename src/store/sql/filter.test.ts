import { describe, expect, it } from 'vitest';
import { SqlFilter } from './filter.js';

describe('SqlFilter', () => {
  it('binds ? placeholders in order for SQLite and lists several values with IN', () => {
    const f = new SqlFilter('positional')
      .equals('p', 'principal', 'alice')
      .equals('w', 'workflow_name', undefined)
      .oneOf('s', 'state', ['idle', 'paused', 'idle']);
    expect(f.where).toBe('WHERE principal = ? AND state IN (?,?)');
    expect(f.values).toEqual(['alice', 'idle', 'paused']);
    expect(f.key).toBe('pS');
  });

  it('numbers placeholders for PostgreSQL and passes several values as one array', () => {
    const f = new SqlFilter('numbered').oneOf('s', 'state', ['failed']).equals('p', 'principal', 'bob');
    f.add('o', `updated_at < ${f.param('2026-01-01')}::timestamptz`);
    expect(f.where).toBe('WHERE state = $1 AND principal = $2 AND updated_at < $3::timestamptz');
    expect(f.key).toBe('spo');
    const many = new SqlFilter('numbered').oneOf('s', 'state', ['idle', 'paused']);
    expect(many.where).toBe('WHERE state = ANY($1::text[])');
    expect(many.values).toEqual([['idle', 'paused']]);
  });

  it('adds nothing for absent filters', () => {
    const f = new SqlFilter('numbered').equals('p', 'principal', undefined).oneOf('s', 'state', []);
    expect(f.where).toBe('');
    expect(f.key).toBe('');
  });
});
