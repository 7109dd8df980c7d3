import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Workflow } from '../model/workflow.js';
import { conditionText, toMermaid, workflowDiagram } from './diagram.js';
import { formatOf, isDefinitionFile, parseDefinition } from './parse.js';
import { validateDefinition } from './validate-definition.js';

const root = join(import.meta.dirname, '..', '..');

async function load(file: string): Promise<Workflow> {
  const parsed = await parseDefinition(readFileSync(file, 'utf8'), formatOf(file) ?? 'json');
  if (!parsed.ok) throw new Error(`cannot parse ${file}`);
  const result = validateDefinition(parsed.data);
  if (!result.ok) throw new Error(`invalid ${file}`);
  return result.workflow;
}

const base = { name: 'Demo', description: 'd', version: '1.0.0' };
const edgesOf = (w: Workflow) =>
  workflowDiagram(w).edges.map((e) => `${e.from} ${e.kind} ${e.to}${e.label ? ` (${e.label})` : ''}`);

describe('workflowDiagram', () => {
  it('draws a straight workflow as a chain ending in done', () => {
    const w: Workflow = {
      ...base,
      id: 'straight',
      steps: [
        { id: 'one', title: 'One', prompt: 'p', agent: 'architect' },
        { id: 'two', title: 'Two', prompt: 'p' },
      ],
    };
    const d = workflowDiagram(w);
    expect(d.nodes).toEqual([
      { id: 'start', kind: 'start', title: 'start' },
      { id: 's:one', kind: 'prompt', title: 'One', step: 'one', detail: 'agent: architect' },
      { id: 's:two', kind: 'prompt', title: 'Two', step: 'two' },
      { id: 'end', kind: 'end', title: 'done' },
    ]);
    expect(edgesOf(w)).toEqual(['start next s:one', 's:one next s:two', 's:two next end']);
  });

  it('puts conditions on edges and a skip edge around each conditional step', () => {
    const w: Workflow = {
      ...base,
      id: 'conditional',
      steps: [
        { id: 'first', title: 'First', prompt: 'p' },
        { id: 'maybe', title: 'Maybe', prompt: 'p', runCondition: { var: 'scope', equals: 'large' } },
        { id: 'last', title: 'Last', prompt: 'p' },
      ],
    };
    expect(edgesOf(w)).toEqual([
      'start next s:first',
      's:first cond s:maybe (if scope == "large")',
      's:maybe next s:last',
      's:first skip s:last (skip)',
      's:last next end',
    ]);
  });

  it('draws inputs, command steps (with polling) and loops as clusters with back and exit edges', () => {
    const w: Workflow = {
      ...base,
      id: 'automation',
      inputs: {
        project: { type: 'string', description: 'p', required: true },
        limit: { type: 'integer', description: 'l' },
      },
      steps: [
        {
          id: 'fetch',
          title: 'Fetch',
          run: 'tasks list-tasks',
          repeat: { until: { var: 'status', equals: 200 }, every: '1s', max_attempts: 3, timeout: '10s' },
        },
        {
          id: 'fix-loop',
          type: 'loop',
          title: 'Fix until green',
          loop: { type: 'until', condition: { var: 'green', equals: true }, maxIterations: 3 },
          body: [
            { id: 'fix', title: 'Fix', prompt: 'p' },
            { id: 'check', title: 'Check', prompt: 'p', runCondition: { var: 'strict' } },
          ],
        },
        { id: 'report', title: 'Report', prompt: 'p' },
      ],
    };
    const d = workflowDiagram(w);
    expect(d.nodes.map((n) => [n.id, n.kind, n.detail, n.parent])).toEqual([
      ['inputs', 'inputs', 'project*, limit', undefined],
      ['s:fetch', 'command', 'run tasks list-tasks, poll until status == 200', undefined],
      ['s:fix-loop', 'loop', 'until green == true (max 3)', undefined],
      ['s:fix', 'prompt', undefined, 'c:fix-loop'],
      ['s:check', 'prompt', undefined, 'c:fix-loop'],
      ['s:report', 'prompt', undefined, undefined],
      ['end', 'end', undefined, undefined],
    ]);
    expect(d.clusters).toEqual([
      { id: 'c:fix-loop', loop: 'fix-loop', title: 'loop fix-loop', children: ['s:fix', 's:check'] },
    ]);
    expect(edgesOf(w)).toEqual([
      'inputs next s:fetch',
      's:fetch next s:fix-loop',
      's:fix-loop next s:fix (iterate)',
      's:fix cond s:check (if strict)',
      's:check back s:fix-loop (next iteration)',
      's:fix back s:fix-loop (skip, next iteration)',
      's:fix-loop exit s:report (exit)',
      's:report next end',
    ]);
  });

  it('draws a loop whose body is another top-level step inside the loop only', () => {
    const w: Workflow = {
      ...base,
      id: 'ref-body',
      steps: [
        {
          id: 'each',
          type: 'loop',
          title: 'Each file',
          loop: { type: 'forEach', items: 'files', itemVar: 'file', maxIterations: 9 },
          body: 'review',
        },
        { id: 'review', title: 'Review', prompt: 'p' },
      ],
    };
    const d = workflowDiagram(w);
    expect(d.nodes.filter((n) => n.step === 'review')).toEqual([
      { id: 's:review', kind: 'prompt', title: 'Review', step: 'review', parent: 'c:each' },
    ]);
    expect(d.nodes.find((n) => n.step === 'each')?.detail).toBe('each file in files (max 9)');
    expect(edgesOf(w)).toContain('s:each exit end (exit)');
  });

  it('draws a delegating step fanning out to its named children, joined back (with the rule), then the next step', () => {
    const w: Workflow = {
      ...base,
      id: 'fan-out',
      steps: [
        { id: 'plan', title: 'Plan', prompt: 'p' },
        {
          id: 'reviews',
          title: 'Reviews',
          prompt: 'p',
          delegate: {
            workflow: 'review-routine',
            join: { atLeast: 2 },
            onChildFailure: 'continue',
            timeout: '30m',
            children: [
              { name: 'security' },
              { name: 'performance', workflow: 'perf-routine' },
              { name: 'docs', runCondition: { var: 'public' } },
            ],
          },
        },
        { id: 'synthesis', title: 'Synthesis', prompt: 'p' },
      ],
    };
    const d = workflowDiagram(w);
    expect(d.nodes.map((n) => [n.id, n.kind, n.title, n.detail])).toEqual([
      ['start', 'start', 'start', undefined],
      ['s:plan', 'prompt', 'Plan', undefined],
      ['s:reviews', 'prompt', 'Reviews', undefined],
      ['d:reviews:0', 'child', 'security', 'review-routine'],
      ['d:reviews:1', 'child', 'performance', 'perf-routine'],
      ['d:reviews:2', 'child', 'docs', 'review-routine'],
      ['j:reviews', 'join', 'join: at least 2', 'into reviews, continue on failure, timeout 30m'],
      ['s:synthesis', 'prompt', 'Synthesis', undefined],
      ['end', 'end', 'done', undefined],
    ]);
    // Children are no steps of the workflow: live pages mark steps only.
    expect(d.nodes.filter((n) => n.kind === 'child' || n.kind === 'join').every((n) => !n.step)).toBe(true);
    expect(edgesOf(w)).toEqual([
      'start next s:plan',
      's:plan next s:reviews',
      's:reviews fan d:reviews:0',
      's:reviews fan d:reviews:1',
      's:reviews fan d:reviews:2 (if public)',
      'd:reviews:0 join j:reviews',
      'd:reviews:1 join j:reviews',
      'd:reviews:2 join j:reviews',
      'j:reviews next s:synthesis',
      's:synthesis next end',
    ]);
    const text = toMermaid(d);
    expect(text).toContain('(["security<br/>review-routine"])');
    expect(text).toContain('[\\"join: at least 2<br/>into reviews, continue on failure, timeout 30m"/]');
    expect(text).toMatch(/^ {2}class n3,n4,n5 child$/m);
    expect(text).toMatch(/^ {2}class n6 join$/m);
  });

  it('draws count and forEach fan-outs as one node (× N, one per item), a skipped delegating step around its join, and one in a loop body inside the loop', () => {
    const many: Workflow = {
      ...base,
      id: 'many',
      steps: [
        {
          id: 'tries',
          title: 'Tries',
          prompt: 'p',
          runCondition: { var: 'go' },
          delegate: { workflow: 'attempt', count: 3, join: 'any' },
        },
        { id: 'after', title: 'After', prompt: 'p' },
      ],
    };
    const d = workflowDiagram(many);
    expect(
      d.nodes.filter((n) => n.kind === 'child' || n.kind === 'join').map((n) => [n.title, n.detail]),
    ).toEqual([
      ['× 3', 'attempt'],
      ['join: any one', 'into tries'],
    ]);
    expect(edgesOf(many)).toEqual([
      'start cond s:tries (if go)',
      's:tries fan d:tries:0',
      'd:tries:0 join j:tries',
      'j:tries next s:after',
      'start skip s:after (skip)',
      's:after next end',
    ]);
    const each: Workflow = {
      ...base,
      id: 'each',
      steps: [
        {
          id: 'files-loop',
          type: 'loop',
          title: 'Rounds',
          loop: { type: 'for', count: 2, maxIterations: 2 },
          body: [
            {
              id: 'edits',
              title: 'Edits',
              prompt: 'p',
              delegate: { workflow: 'edit-file', forEach: 'files', as: 'file', into: 'edited' },
            },
          ],
        },
      ],
    };
    const e = workflowDiagram(each);
    expect(
      e.nodes
        .filter((n) => n.kind === 'child' || n.kind === 'join')
        .map((n) => [n.title, n.detail, n.parent]),
    ).toEqual([
      ['one per item of files', 'edit-file', 'c:files-loop'],
      ['join: all', 'into edited', 'c:files-loop'],
    ]);
    expect(e.clusters[0]?.children).toEqual(['s:edits', 'd:edits:0', 'j:edits']);
    expect(edgesOf(each)).toContain('j:edits back s:files-loop (next iteration)');
  });

  it('has one node per step of every bundled workflow and fixture, and every edge joins known nodes', async () => {
    const dirs = [join(root, 'workflows'), join(root, 'test', 'fixtures', 'valid')];
    let checked = 0;
    for (const dir of dirs) {
      for (const file of readdirSync(dir).filter((f) => isDefinitionFile(f))) {
        const w = await load(join(dir, file));
        const d = workflowDiagram(w);
        const stepIds = w.steps.flatMap((s) =>
          'type' in s && s.type === 'loop' && Array.isArray(s.body)
            ? [s.id, ...s.body.map((b) => b.id)]
            : [s.id],
        );
        expect(
          d.nodes
            .filter((n) => n.step !== undefined)
            .map((n) => n.step)
            .sort(),
        ).toEqual(stepIds.sort());
        const ids = new Set(d.nodes.map((n) => n.id));
        for (const e of d.edges)
          expect(ids.has(e.from) && ids.has(e.to), `${file}: ${e.from}->${e.to}`).toBe(true);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(10);
  });
});

describe('conditionText', () => {
  it('writes every operator and composition', () => {
    expect(conditionText({ var: 'a', equals: 'x' })).toBe('a == "x"');
    expect(conditionText({ var: 'a', not_equals: null })).toBe('a != null');
    expect(conditionText({ var: 'n', gt: 1, lte: 5 })).toBe('n > 1 and n <= 5');
    expect(conditionText({ var: 'flag' })).toBe('flag');
    expect(
      conditionText({ and: [{ var: 'a' }, { or: [{ var: 'b' }, { not: { var: 'c', equals: 1 } }] }] }),
    ).toBe('a and (b or not c == 1)');
  });
});

describe('toMermaid', () => {
  it('writes a flowchart with quoted labels, dotted skip/back edges, a subgraph per loop and classes', async () => {
    const text = toMermaid(
      workflowDiagram(await load(join(root, 'test', 'fixtures', 'valid', 'loops-demo.yaml'))),
    );
    const lines = text.split('\n');
    expect(lines[0]).toBe('flowchart TD');
    expect(text).toContain('n0(("start"))');
    expect(text).toContain('n1["intro<br/>Intro"]');
    expect(text).toMatch(/subgraph c0 \["loop retry-loop"\]/);
    expect(text).toContain('-.->|"next iteration"|');
    expect(text).toContain('-->|"exit, if drafts"|');
    expect(text).toMatch(/^ {2}class n\d+(,n\d+)* loop$/m);
    expect(text.endsWith('\n')).toBe(true);
  });

  it('encodes characters that Mermaid or Markdown would read as syntax or markup', () => {
    const w: Workflow = {
      ...base,
      id: 'hostile',
      steps: [
        {
          id: 'evil',
          title: 'A "quoted" <script>alert(1)</script> | [x] {y} `z` #1;\nnext',
          prompt: 'p',
          runCondition: { var: 'q', equals: '"]; click n1 call x()' },
        },
      ],
    };
    const text = toMermaid(workflowDiagram(w));
    const label = /n1\["(.*)"\]/.exec(text)?.[1] ?? '';
    expect(label.replaceAll('<br/>', ' ')).not.toMatch(/["<>[\]{}|`\n]/);
    expect(label).toContain('#60;script#62;');
    expect(label).toContain('#35;1#59;');
    // Quotes read as quotes (single ones), parentheses as they are: the text stays readable.
    expect(label).toContain("A 'quoted' #60;script#62;alert(1)#60;/script#62;");
    // The condition is one quoted edge label: no way out of the quotes, no directive on its own line.
    expect(text.split('\n').filter((l) => l.includes('click'))).toHaveLength(1);
    expect(text).toContain(`-->|"if q == '#92;'#93;#59; click n1 call x()'"| n1`);
  });
});
