import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Workflow } from '../model/workflow.js';
import { workflowDiagram } from '../workflows/diagram.js';
import { formatOf, isDefinitionFile, parseDefinition } from '../workflows/parse.js';
import { validateDefinition } from '../workflows/validate-definition.js';
import { diagramSvg } from './svg.js';

const root = join(import.meta.dirname, '..', '..');

async function definitions(): Promise<Workflow[]> {
  const out: Workflow[] = [];
  for (const dir of [join(root, 'workflows'), join(root, 'test', 'fixtures', 'valid')]) {
    for (const f of readdirSync(dir).filter((name) => isDefinitionFile(name))) {
      const parsed = await parseDefinition(readFileSync(join(dir, f), 'utf8'), formatOf(f) ?? 'json');
      const result = parsed.ok ? validateDefinition(parsed.data) : undefined;
      if (result?.ok) out.push(result.workflow);
    }
  }
  return out;
}

describe('diagramSvg', () => {
  it('lays out every bundled workflow and fixture: one g[data-step] per step, classes and geometry only', async () => {
    const all = await definitions();
    expect(all.length).toBeGreaterThan(10);
    for (const w of all) {
      const diagram = workflowDiagram(w);
      const svg = diagramSvg(diagram, { title: w.name });
      const steps = [...svg.matchAll(/<g class="wf-node[^"]*" data-step="([^"]+)"/g)].map((m) => m[1]);
      expect(steps.sort(), w.id).toEqual(diagram.nodes.flatMap((n) => (n.step ? [n.step] : [])).sort());
      expect(svg, w.id).not.toMatch(/\sstyle=|<style|<script|NaN|undefined/);
      expect(svg.match(/<g class="wf-edge /g)?.length, w.id).toBe(diagram.edges.length);
      expect(svg.match(/<g class="wf-cluster"/g)?.length ?? 0, w.id).toBe(diagram.clusters.length);
    }
  });

  it('escapes titles and marks the initial live state', () => {
    const w: Workflow = {
      id: 'hostile',
      name: '<img src=x onerror=alert(1)>',
      description: 'd',
      version: '1.0.0',
      steps: [
        { id: 'one', title: '</text><script>alert(1)</script>', prompt: 'p' },
        { id: 'two', title: 'Two "quoted" & more', prompt: 'p' },
      ],
    };
    const svg = diagramSvg(workflowDiagram(w), {
      title: w.name,
      states: new Map([
        ['one', 'done'],
        ['two', 'current'],
      ]),
    });
    expect(svg).not.toContain('<script');
    expect(svg).not.toContain('<img');
    expect(svg).toContain('&lt;/text&gt;&lt;script&gt;');
    expect(svg).toContain('aria-label="&lt;img src=x onerror=alert(1)&gt;"');
    expect(svg).toContain('Two &quot;quoted&quot; &amp; more');
    expect(svg).toMatch(/class="wf-node wf-prompt is-done" data-step="one"/);
    expect(svg).toMatch(/class="wf-node wf-prompt is-current" data-step="two"/);
  });

  it('draws a fan-out: a rounded node per child, a join node, and their edges (no step marks on them)', () => {
    const w: Workflow = {
      id: 'fan',
      name: 'Fan',
      description: 'd',
      version: '1.0.0',
      steps: [
        {
          id: 'reviews',
          title: 'Reviews',
          prompt: 'p',
          delegate: {
            workflow: 'review',
            children: [{ name: 'security' }, { name: '<b>x</b>' }, { name: 'speed' }],
          },
        },
        { id: 'after', title: 'After', prompt: 'p' },
      ],
    };
    const svg = diagramSvg(workflowDiagram(w), { title: w.name });
    expect(svg.match(/<g class="wf-node wf-child"/g)).toHaveLength(3);
    expect(svg.match(/<g class="wf-node wf-join"/g)).toHaveLength(1);
    expect(svg.match(/<g class="wf-edge wf-edge-fan"/g)).toHaveLength(3);
    expect(svg.match(/<g class="wf-edge wf-edge-join"/g)).toHaveLength(3);
    expect(svg).toContain('&lt;b&gt;x&lt;/b&gt;');
    expect(svg).toContain('join: all');
    expect(svg).not.toMatch(/NaN|undefined/);
    // Left to right as the delegation lists them.
    const xs = [...svg.matchAll(/<g class="wf-node wf-child" transform="translate\(([\d.]+),/g)].map((m) =>
      Number(m[1]),
    );
    expect(xs).toHaveLength(3);
    expect(xs).toEqual([...xs].sort((a, b) => a - b));
    expect(new Set(xs).size).toBe(3);
  });
});
