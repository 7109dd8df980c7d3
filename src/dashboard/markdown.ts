import { escapeHtml, type SafeHtml, trusted } from './html.js';

/**
 * A small Markdown renderer for artifacts (reports, designs, findings): headings, paragraphs, lists,
 * block quotes, fenced code, tables, rules, and inline code, emphasis, strike-through and links.
 * Safe by construction: the text is escaped before any markup is added, raw HTML stays text, links
 * are http(s) or mailto only, and every pattern is free of nested quantifiers (linear time on any input).
 */
export function renderMarkdown(text: string): SafeHtml {
  const lines = text.replace(/\r\n?/g, '\n').replaceAll(MARK, '').split('\n');
  return trusted(blocks(lines, 0));
}

const FENCE = /^\s{0,3}(`{3,}|~{3,})\s*([\w+-]*)/;
const HEADING = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const RULE = /^\s{0,3}([-*_])(?:\s*\1){2,}\s*$/;
const QUOTE = /^\s{0,3}>\s?/;
const BULLET = /^\s{0,3}[-*+]\s+/;
const ORDERED = /^\s{0,3}\d{1,9}[.)]\s+/;
const TABLE_RULE = /^\s*\|?\s*:?-{1,}:?\s*(?:\|\s*:?-{1,}:?\s*)*\|?\s*$/;
const MAX_DEPTH = 4;

const startsBlock = (line: string) =>
  FENCE.test(line) ||
  HEADING.test(line) ||
  RULE.test(line) ||
  QUOTE.test(line) ||
  BULLET.test(line) ||
  ORDERED.test(line);

function blocks(lines: string[], depth: number): string {
  const out: string[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i] as string;
    if (line.trim() === '') {
      i++;
      continue;
    }
    const fence = FENCE.exec(line);
    if (fence) {
      const marker = fence[1] as string;
      const body: string[] = [];
      i++;
      while (i < lines.length && !(lines[i] as string).trimStart().startsWith(marker))
        body.push(lines[i++] as string);
      i++;
      const lang = fence[2] ? ` class="language-${escapeHtml(fence[2])}"` : '';
      out.push(`<pre><code${lang}>${escapeHtml(body.join('\n'))}</code></pre>`);
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading) {
      const level = (heading[1] as string).length;
      out.push(`<h${level}>${inline(heading[2] as string)}</h${level}>`);
      i++;
      continue;
    }
    if (RULE.test(line)) {
      out.push('<hr>');
      i++;
      continue;
    }
    if (QUOTE.test(line)) {
      const quoted: string[] = [];
      while (i < lines.length && QUOTE.test(lines[i] as string))
        quoted.push((lines[i++] as string).replace(QUOTE, ''));
      out.push(
        depth < MAX_DEPTH
          ? `<blockquote>${blocks(quoted, depth + 1)}</blockquote>`
          : `<blockquote><p>${inline(quoted.join(' '))}</p></blockquote>`,
      );
      continue;
    }
    const list = BULLET.test(line) ? BULLET : ORDERED.test(line) ? ORDERED : undefined;
    if (list) {
      const items: string[] = [];
      while (i < lines.length) {
        const current = lines[i] as string;
        if (list.test(current)) items.push(current.replace(list, ''));
        else if (current.trim() !== '' && /^\s+/.test(current) && items.length > 0) {
          items[items.length - 1] += ` ${current.trim()}`;
        } else break;
        i++;
      }
      const tag = list === BULLET ? 'ul' : 'ol';
      out.push(`<${tag}>${items.map((item) => `<li>${inline(item)}</li>`).join('')}</${tag}>`);
      continue;
    }
    if (line.includes('|') && TABLE_RULE.test(lines[i + 1] ?? '')) {
      const header = cells(line);
      i += 2;
      const rows: string[][] = [];
      while (i < lines.length && (lines[i] as string).includes('|') && (lines[i] as string).trim() !== '') {
        rows.push(cells(lines[i++] as string));
      }
      const head = header.map((c) => `<th>${inline(c)}</th>`).join('');
      const body = rows
        .map((r) => `<tr>${header.map((_, j) => `<td>${inline(r[j] ?? '')}</td>`).join('')}</tr>`)
        .join('');
      out.push(`<table><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>`);
      continue;
    }
    const paragraph: string[] = [];
    while (
      i < lines.length &&
      (lines[i] as string).trim() !== '' &&
      (paragraph.length === 0 || !startsBlock(lines[i] as string))
    ) {
      paragraph.push((lines[i++] as string).trim());
    }
    out.push(`<p>${inline(paragraph.join('\n')).replace(/\n/g, '<br>')}</p>`);
  }
  return out.join('\n');
}

function cells(row: string): string[] {
  const trimmed = row.trim().replace(/^\|/, '').replace(/\|$/, '');
  return trimmed.split('|').map((c) => c.trim());
}

const SAFE_URL = /^(?:https?:\/\/|mailto:)/i;
/** Marks where a link found before emphasis goes back (a private-use character, removed from the input). */
const MARK = '\uE000';
const LINK_PLACEHOLDER = /\uE000(\d+)\uE000/g;

/** Inline markup on one block's text: code spans first (kept verbatim), then links, then emphasis. */
function inline(text: string): string {
  return text
    .split(/(`[^`\n]+`)/)
    .map((part, i) => {
      if (i % 2 === 1) return `<code>${escapeHtml(part.slice(1, -1))}</code>`;
      const links: string[] = [];
      const escaped = escapeHtml(part).replace(
        /\[([^\]\n]{1,500})\]\(([^()\s]{1,2000})\)/g,
        (whole, label, url) => {
          // The URL is already escaped (& is &amp;, " is &quot;), so it cannot leave the attribute.
          if (!SAFE_URL.test(url)) return whole;
          links.push(`<a href="${url}" rel="noopener noreferrer nofollow">${emphasis(label)}</a>`);
          return `${MARK}${links.length - 1}${MARK}`;
        },
      );
      return emphasis(escaped).replace(LINK_PLACEHOLDER, (_, n) => links[Number(n)] ?? '');
    })
    .join('');
}

function emphasis(escaped: string): string {
  return escaped
    .replace(/\*\*([^*\n]+)\*\*/g, '<strong>$1</strong>')
    .replace(/__([^_\n]+)__/g, '<strong>$1</strong>')
    .replace(/~~([^~\n]+)~~/g, '<del>$1</del>')
    .replace(/(^|[^*\w])\*([^*\s][^*\n]*)\*(?![*\w])/g, '$1<em>$2</em>')
    .replace(/(^|[^_\w])_([^_\s][^_\n]*)_(?![_\w])/g, '$1<em>$2</em>');
}
