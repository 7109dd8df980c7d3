import { beforeAll, describe, expect, it } from 'vitest';
import { inRequestScope, requestScope, setRequestScopes } from './context.js';
import { createLogger, humanLine, logLevelFrom } from './log.js';

function capture(human = false) {
  const lines: string[] = [];
  const log = createLogger({ level: 'debug', human, stream: { write: (l: string) => lines.push(l) } });
  return { log, lines };
}

beforeAll(() => setRequestScopes(true));

describe('the logger', () => {
  it('writes one JSON line per event with its level, and the correlation id inside a request', () => {
    const { log, lines } = capture();
    log.info('outside');
    let id = '';
    inRequestScope(() => {
      id = requestScope()?.correlationId ?? '';
      log.warn({ error_code: 'X' }, 'inside');
    });
    const [outside, inside] = lines.map((l) => JSON.parse(l));
    expect(outside).toMatchObject({ level: 'info', msg: 'outside', name: 'workflowlookup' });
    expect(outside).not.toHaveProperty('correlation_id');
    expect(id).toMatch(/^wl-[0-9a-f]{12}$/);
    expect(inside).toMatchObject({ level: 'warn', msg: 'inside', error_code: 'X', correlation_id: id });
    expect(typeof inside.time).toBe('string');
  });

  it('prints human lines for a terminal: time, level, message, fields, correlation id, stack', () => {
    const { log, lines } = capture(true);
    inRequestScope(() => log.error({ err: new Error('boom'), tool: 'workflow_get' }, 'it failed'));
    expect(lines[0]).toMatch(
      /^\d\d:\d\d:\d\d\.\d{3} ERROR it failed tool=workflow_get \[wl-[0-9a-f]{12}\]\nError: boom\n/,
    );
    expect(humanLine('not json')).toBe('not json');
  });

  it('takes its level from WORKFLOWLOOKUP_LOG_LEVEL, and says what is wrong with a bad one', () => {
    expect(logLevelFrom({})).toEqual({ level: 'info' });
    expect(logLevelFrom({ WORKFLOWLOOKUP_LOG_LEVEL: ' DEBUG ' })).toEqual({ level: 'debug' });
    expect(logLevelFrom({ WORKFLOWLOOKUP_LOG_LEVEL: 'verbose' })).toEqual({
      level: 'info',
      problem: expect.stringMatching(/WORKFLOWLOOKUP_LOG_LEVEL=verbose is not a level \(fatal, error/),
    });
    const { log, lines } = capture();
    const quiet = createLogger({ level: 'warn', stream: { write: (l: string) => lines.push(l) } });
    quiet.info('dropped');
    log.debug('kept');
    expect(lines.map((l) => JSON.parse(l).msg)).toEqual(['kept']);
  });
});
