/**
 * HTML built by a tagged template that escapes every interpolated value unless it is already
 * SafeHtml. Everything the dashboard shows (outputs, artifacts, titles, ids) is data written by agents
 * or API responses, so escaping is the default and markup has to be asked for.
 */
export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] as string);
}

function render(value: unknown): string {
  if (value instanceof SafeHtml) return value.value;
  if (value === undefined || value === null || value === false) return '';
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

/** `html\`<td>${text}</td>\``: strings are escaped, SafeHtml and arrays of it are kept. */
export function html(strings: TemplateStringsArray, ...values: unknown[]): SafeHtml {
  let out = strings[0] ?? '';
  values.forEach((value, i) => {
    out += render(value) + (strings[i + 1] ?? '');
  });
  return new SafeHtml(out);
}

/** Markup the dashboard produced itself (the diagram SVG, rendered Markdown). Never for data. */
export function trusted(markup: string): SafeHtml {
  return new SafeHtml(markup);
}
