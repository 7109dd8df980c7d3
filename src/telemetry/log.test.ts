import { beforeAll, describe, expect, it } from 'vitest';
import { inRequestScope, requestScope, setRequestScopes } from './context.js';
import { createLogger, humanLine, logLevelFrom, messageNaming } from './log.js';

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

  it('a message names the ids it concerns after its lead, once, each cut to 200 characters', () => {
    expect(messageNaming('Workflow not found', ['nightly-release'], 'Workflow not found')).toBe(
      'Workflow not found: nightly-release',
    );
    expect(messageNaming('Step not found', ['wf', 'step-9', 3])).toBe('Step not found: wf, step-9');
    // Named already (as a whole word): not again; a longer name that contains it does not count.
    expect(messageNaming('Execution exec_1 is completed', ['exec_1'])).toBe('Execution exec_1 is completed');
    expect(messageNaming('Nope; did you mean "a-b"?', ['a'], 'Nope')).toBe('Nope: a; did you mean "a-b"?');
    const huge = 'y'.repeat(10_000);
    expect(messageNaming('Gone', [huge])).toBe(`Gone: ${'y'.repeat(200)}…`);
    expect(messageNaming('Gone', [])).toBe('Gone');
  });
});
