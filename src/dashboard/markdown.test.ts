import { describe, expect, it } from 'vitest';
import { html } from './html.js';
import { renderMarkdown } from './markdown.js';

const md = (text: string) => renderMarkdown(text).value;

describe('renderMarkdown', () => {
  it('renders the common blocks', () => {
    expect(md('# Title\n\nSome *text* and **bold** and `a < b`.')).toBe(
      '<h1>Title</h1>\n<p>Some <em>text</em> and <strong>bold</strong> and <code>a &lt; b</code>.</p>',
    );
    expect(md('- one\n- two\n  continued\n\n1. first\n2. second')).toBe(
      '<ul><li>one</li><li>two continued</li></ul>\n<ol><li>first</li><li>second</li></ol>',
    );
    expect(md('```ts\nconst a = "<b>";\n```')).toBe(
      '<pre><code class="language-ts">const a = &quot;&lt;b&gt;&quot;;</code></pre>',
    );
    expect(md('> quoted\n> more\n\n---')).toBe('<blockquote><p>quoted<br>more</p></blockquote>\n<hr>');
    expect(md('| a | b |\n|---|:-:|\n| 1 | **2** |')).toBe(
      '<table><thead><tr><th>a</th><th>b</th></tr></thead><tbody><tr><td>1</td><td><strong>2</strong></td></tr></tbody></table>',
    );
    expect(md('[docs](https://example.com/a?b=1&c=2) ~~old~~')).toBe(
      '<p><a href="https://example.com/a?b=1&amp;c=2" rel="noopener noreferrer nofollow">docs</a> <del>old</del></p>',
    );
  });

  it('keeps raw HTML as text and links only to http(s) and mailto', () => {
    const out = md(
      '<script>alert(1)</script>\n\n<img src=x onerror=alert(1)>\n\n[x](javascript:alert(1)) [y](https://a.test/"onmouseover="x)\n\n`</code><script>`',
    );
    expect(out).not.toMatch(/<script|<img|href="javascript|onmouseover="/);
    expect(out).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(out).toContain('[x](javascript:alert(1))');
    expect(out).toContain('href="https://a.test/&quot;onmouseover=&quot;x"');
    expect(out).toContain('<code>&lt;/code&gt;&lt;script&gt;</code>');
  });

  // Quadratic or worse on these sizes runs past the test's timeout, which is the bound; no wall-clock
  // assertion (a loaded machine made a 5 s one fail).
  it('renders hostile input in linear time', () => {
    md(`${'*a'.repeat(50_000)}\n${'['.repeat(50_000)}\n${'_ '.repeat(50_000)}\n${'> '.repeat(10_000)}x`);
    md('`'.repeat(100_000));
  });
});

describe('html', () => {
  it('escapes interpolated values and keeps nested html', () => {
    const name = '"><script>';
    expect(html`<a title="${name}">${[html`<b>${name}</b>`, 1, null, false]}</a>`.value).toBe(
      '<a title="&quot;&gt;&lt;script&gt;"><b>&quot;&gt;&lt;script&gt;</b>1</a>',
    );
  });
});
