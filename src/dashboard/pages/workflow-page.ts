// One workflow: its diagram (SVG and Mermaid), inputs and steps.
import { isCommandStep, isLoopStep, type Step } from '../../model/workflow.js';
import { conditionText, toMermaid, workflowDiagram } from '../../workflows/diagram.js';
import type { RegistryEntry } from '../../workflows/registry.js';
import { html, trusted } from '../html.js';
import { allSteps, href, layout, type PageContext } from './page-kit.js';

function stepKind(step: Step): string {
  return isLoopStep(step)
    ? `loop (${step.loop.type})`
    : isCommandStep(step)
      ? `command: ${step.run}`
      : 'prompt';
}

export function workflowPage(ctx: PageContext, entry: RegistryEntry & { status: 'valid' }): string {
  const w = entry.workflow;
  const diagram = workflowDiagram(w);
  const rows = [...allSteps(w)].map(
    (s) =>
      html`<tr data-step="${s.id}"><td><code>${s.id}</code></td><td>${s.title}</td><td>${stepKind(s)}</td><td>${s.runCondition ? conditionText(s.runCondition) : ''}</td><td>${!isLoopStep(s) && !isCommandStep(s) ? (s.agent ?? '') : ''}</td></tr>`,
  );
  const inputs = Object.entries(w.inputs ?? {});
  const body = html`<h1>${w.name} <span class="muted id">${w.id} ${w.version}</span></h1>
<p>${w.description}</p>
<p class="muted">From ${entry.source}: <code>${entry.file}</code>${entry.provenance ? html` (<code>${entry.provenance.repository}</code> at ${entry.provenance.ref}, commit <code>${entry.provenance.commit}</code>)` : ''}</p>
<p><a class="button" id="executions-of" href="${href(ctx, '/', { workflow: w.id })}">Executions of this workflow →</a></p>
<div class="overview">
<section class="diagram"><h2>Diagram</h2>${trusted(ctx.draw(diagram, { title: w.name }))}</section>
<div>
<section><h2>Mermaid</h2><p class="muted">The same diagram as text (also <code>workflow_get {"view": "diagram"}</code>); paste it into Markdown in a <code>mermaid</code> block.</p>
<button type="button" class="copy" data-copy="mermaid">Copy</button><pre id="mermaid">${toMermaid(diagram)}</pre></section>
${inputs.length > 0 ? html`<section><h2>Inputs</h2><div class="table-wrap"><table class="list"><thead><tr><th>Name</th><th>Type</th><th>Required</th><th>Description</th></tr></thead><tbody>${inputs.map(([name, spec]) => html`<tr><td><code>${name}</code></td><td>${spec.type}</td><td>${spec.required ? 'yes' : 'no'}</td><td>${spec.description}</td></tr>`)}</tbody></table></div></section>` : ''}
<section><h2>Steps</h2><div class="table-wrap"><table class="list"><thead><tr><th>Id</th><th>Title</th><th>Kind</th><th>Runs when</th><th>Persona</th></tr></thead><tbody>${rows}</tbody></table></div></section>
</div>
</div>`;
  return layout(ctx, { title: w.name, nav: 'workflows', body });
}
