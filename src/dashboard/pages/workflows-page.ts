// The workflows page: every source, highest precedence first, with its valid and broken files.
import { plannedSteps } from '../../executions/execution-model.js';
import type { Violation } from '../../model/violation.js';
import type { GitSourceStatus } from '../../workflows/git/git-sources.js';
import type { RegistryEntry } from '../../workflows/registry.js';
import type { WorkflowSource } from '../../workflows/sources.js';
import { html, type SafeHtml } from '../html.js';
import { href, layout, type PageContext } from './page-kit.js';

function violationList(violations: readonly Violation[]): SafeHtml {
  return html`<ul class="violations">${violations.map(
    (v) =>
      html`<li><code>${v.path || '(root)'}</code>${v.line !== undefined ? html` <span class="where">line ${v.line}, column ${v.column ?? 0}</span>` : ''}: ${v.message} <span class="muted">[${v.rule}]</span></li>`,
  )}</ul>`;
}

export function workflowsPage(
  ctx: PageContext,
  sources: { source: WorkflowSource; exists: boolean; entries: RegistryEntry[] }[],
  effective: (id: string) => RegistryEntry | undefined,
  /** The git sources' state, by source id: commit served, last sync, last error, refused commit. */
  git: readonly GitSourceStatus[] = [],
): string {
  const sections = [...sources].reverse().map(({ source, exists, entries }) => {
    const valid = entries.filter((e) => e.status === 'valid');
    const broken = entries.filter((e) => e.status === 'broken');
    const rows = valid.map((e) => {
      const w = e.workflow;
      const shadowed = effective(w.id)?.file !== e.file;
      return html`<tr${shadowed ? html` class="shadowed"` : ''}><td><a href="${href(ctx, `/workflows/${encodeURIComponent(w.id)}`)}">${w.id}</a>${shadowed ? html` <span class="muted">(overridden)</span>` : ''}</td><td>${w.name}</td><td>${w.version}</td><td>${w.category ?? 'general'}</td><td>${plannedSteps(w)}</td></tr>`;
    });
    const status = source.git === undefined ? undefined : git.find((g) => g.id === source.git?.id);
    return html`<section class="source" data-source="${source.kind}">
<h2>${source.kind} <span class="muted path">${status ? `${status.repository}#${status.ref}${status.subdir ? `:${status.subdir}` : ''}` : `${source.dir}${exists ? '' : ' (missing)'}`}</span></h2>
${status ? gitState(status) : ''}
${valid.length === 0 && broken.length === 0 ? html`<p class="empty">No workflow files.</p>` : ''}
${valid.length > 0 ? html`<div class="table-wrap"><table class="list"><thead><tr><th>Id</th><th>Name</th><th>Version</th><th>Category</th><th>Steps</th></tr></thead><tbody>${rows}</tbody></table></div>` : ''}
${broken.map((b) => html`<div class="broken"><h3>Broken: <code>${b.file}</code>${b.id ? html` <span class="muted">(${b.id})</span>` : ''}</h3>${violationList(b.violations)}</div>`)}
</section>`;
  });
  return layout(ctx, {
    title: 'Workflows',
    nav: 'workflows',
    body: html`<h1>Workflows</h1><p class="muted">Sources from highest precedence to lowest: a workflow in a higher source overrides one with the same id below it.</p>${sections}`,
  });
}

/** What a git source serves and how its last sync went; a refused commit with its broken files. */
function gitState(s: GitSourceStatus): SafeHtml {
  return html`<div class="git-source"><p>Commit <code>${s.commit ?? 'none yet'}</code>${s.fetchedAt ? html` <span class="muted">fetched ${s.fetchedAt}</span>` : ''}; last sync ${s.lastSync ?? 'never'}${s.lastError ? html`; <strong>last error:</strong> ${s.lastError}` : ''}</p>
${s.broken ? html`<div class="broken"><h3>Refused commit <code>${s.broken.commit}</code> <span class="muted">(${s.broken.at}; the commit above is still served)</span></h3>${s.broken.files.map((f) => html`<p><code>${f.file}</code></p>${violationList(f.violations)}`)}</div>` : ''}</div>`;
}
