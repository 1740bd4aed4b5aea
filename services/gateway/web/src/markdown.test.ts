import { describe, expect, it } from 'vitest';
import { markdownToHtml } from './markdown';

// markdown-it's half of the renderer, as HTML text (DOMPurify's half needs a DOM: the browser
// test e2e/src/web-ui-markdown.test.ts runs both).

// Every href and src in the HTML.
function urlsOf(html: string): string[] {
  return [...html.matchAll(/\b(?:href|src)="([^"]*)"/g)].map((match) => match[1] ?? '');
}

describe('markdownToHtml', () => {
  it('renders the usual Markdown', () => {
    const html = markdownToHtml('# Plan\n\n- **one**\n- _two_\n\n1. `x`\n\n> quoted');
    expect(html).toContain('<h1>Plan</h1>');
    expect(html).toContain('<li><strong>one</strong></li>');
    expect(html).toContain('<em>two</em>');
    expect(html).toContain('<code>x</code>');
    expect(html).toContain('<blockquote>');
  });

  it('keeps a line break the model wrote, and has no whitespace around the HTML', () => {
    expect(markdownToHtml('first\nsecond')).toBe('<p>first<br>\nsecond</p>');
  });

  it('shows raw HTML as text, whatever it is', () => {
    const hostile = [
      '<script>window.pwned = 1</script>',
      '<img src=x onerror="window.pwned = 1">',
      '<svg onload="window.pwned = 1"><script>window.pwned = 1</script></svg>',
      '<iframe src="/v1/keys"></iframe>',
      '<a href="javascript:alert(1)">x</a>',
      '<style>body { display: none }</style>',
    ];
    for (const source of hostile) {
      const html = markdownToHtml(source);
      expect(html).not.toMatch(/<(script|img|svg|iframe|a|style)\b/);
      expect(html).toContain('&lt;');
    }
    // Inline too, inside a paragraph and a list.
    const inline = markdownToHtml('Hi <b onclick="x()">there</b>\n\n- <img src=x onerror=y>');
    expect(inline).not.toMatch(/<(b|img)\b/);
  });

  it('opens http(s) and mailto links in a new tab without opener or referrer', () => {
    const html = markdownToHtml(
      '[docs](https://example.com/a?b=1) [plain](http://example.org) [mail](mailto:ada@example.com)',
    );
    expect(urlsOf(html)).toEqual([
      'https://example.com/a?b=1',
      'http://example.org',
      'mailto:ada@example.com',
    ]);
    expect(html.match(/target="_blank" rel="noopener noreferrer"/g)).toHaveLength(3);
  });

  it('refuses javascript:, data:, vbscript: and file: links, however they are spelled', () => {
    const refused = [
      '[a](javascript:alert(1))',
      '[a](JaVaScRiPt:alert(1))',
      '[a](javascript&#58;alert(1))',
      '[a](javascript&colon;alert(1))',
      '[a](<javascript:alert(1)>)',
      '[a](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)',
      '[a](data:image/png;base64,iVBORw0KGgo=)',
      '[a](vbscript:msgbox)',
      '[a](file:///etc/passwd)',
      '[a](ftp://example.com/file)',
      '<javascript:alert(1)>',
      '[a][ref]\n\n[ref]: javascript:alert(1)',
    ];
    for (const source of refused) {
      const html = markdownToHtml(source);
      expect(html, source).not.toContain('<a');
      expect(urlsOf(html), source).toEqual([]);
    }
  });

  it("keeps a link's text but not its link when it points into this install or elsewhere unnamed", () => {
    for (const source of [
      '[keys](/v1/keys)',
      '[up](../secret)',
      '[rel](notes.md)',
      '[pr](//evil.example/x)',
    ]) {
      const html = markdownToHtml(source);
      expect(html, source).not.toContain('<a');
      expect(html, source).toMatch(/keys|up|rel|pr/);
    }
  });

  it('links bare https addresses, not file names', () => {
    const html = markdownToHtml('See https://example.com/x and main.py or notes.md');
    expect(urlsOf(html)).toEqual(['https://example.com/x']);
  });

  it('shows images from this install, and a remote image as a link to it', () => {
    const local = markdownToHtml('![chart](/v1/screenshots/abc.png)');
    expect(local).toContain('<img src="/v1/screenshots/abc.png" alt="chart">');

    const remote = markdownToHtml('![tracking pixel](https://tracker.example/p.png?who=ada)');
    expect(remote).not.toContain('<img');
    expect(remote).toContain('href="https://tracker.example/p.png?who=ada"');
    expect(remote).toContain('class="remote-image"');
    expect(remote).toContain('>tracking pixel</a>');
    expect(remote).toContain('rel="noopener noreferrer"');

    // Without alt text, the link is named by its address.
    expect(markdownToHtml('![](https://tracker.example/p.png)')).toContain(
      '>https://tracker.example/p.png</a>',
    );
  });

  it('never makes an image of another host, a data: URL or a script URL', () => {
    // Those markdown-it lets through reach the page percent-encoded ("/%5Cevil…", "/%09/evil…"):
    // paths of this origin, not the host a browser would read in "/\\evil…" or "/<tab>/evil…".
    const images = (html: string) => [...html.matchAll(/<img src="([^"]*)"/g)].map((m) => m[1]);
    for (const source of [
      '![x](//evil.example/p.png)',
      '![x](/\\evil.example/p.png)',
      '![x](</\t/evil.example/p.png>)',
      '![x](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+)',
      '![x](data:image/png;base64,iVBORw0KGgo=)',
      '![x](javascript:alert(1))',
    ]) {
      const html = markdownToHtml(source);
      for (const src of images(html)) expect(src, source).toMatch(/^\/[^/\\\s]/);
      expect(
        urlsOf(html).every((url) => /^(https?:|\/[^/\\\s])/.test(url)),
        source,
      ).toBe(true);
    }
    expect(markdownToHtml('![x](/\\evil.example/p.png)')).toContain('src="/%5Cevil.example/p.png"');
  });

  it('highlights a code block with classes, under a bar with its language and a Copy button', () => {
    const html = markdownToHtml('```python\ndef greet(name):\n    return "hi " + name\n```');
    expect(html).toMatch(/^<div class="code-block"><div class="code-bar">/);
    expect(html).toContain('<span class="code-lang">python</span>');
    expect(html).toContain('<button type="button" class="code-copy">Copy</button>');
    expect(html).toContain('<code class="language-python">');
    expect(html).toContain('<span class="hljs-keyword">def</span>');
    expect(html).toContain('<span class="hljs-string">&quot;hi &quot;</span>');
    expect(html).not.toContain('style=');
  });

  it('highlights each registered language and its usual alias', () => {
    const samples: Record<string, string> = {
      js: 'const x = 1;',
      ts: 'let y: number = 2;',
      sh: 'echo "$HOME"',
      json: '{"a": true}',
      sql: 'SELECT 1 FROM t;',
      yaml: 'key: value',
      html: '<p class="a">x</p>',
      css: 'p { color: red; }',
      py: 'import os',
    };
    for (const [lang, code] of Object.entries(samples)) {
      expect(markdownToHtml(`\`\`\`${lang}\n${code}\n\`\`\``), lang).toContain('class="hljs-');
    }
  });

  it('shows code of an unknown language, or none, escaped and not highlighted', () => {
    for (const source of [
      '```cobol\n<script>alert(1)</script>\n```',
      '```\n<script>alert(1)</script>\n```',
      '    <script>alert(1)</script>',
      '```__proto__\n<script>alert(1)</script>\n```',
      '```"><img src=x onerror=alert(1)>\n<b>\n```',
    ]) {
      const html = markdownToHtml(source);
      expect(html, source).toContain('class="code-copy"');
      expect(html, source).not.toMatch(/<(script|img|b)\b/);
      expect(html, source).not.toContain('hljs-');
    }
  });

  it('wraps a table in a scrolling box and aligns its cells by class, not style', () => {
    const html = markdownToHtml('| a | b | c |\n|:--|:-:|--:|\n| 1 | 2 | 3 |');
    expect(html).toMatch(/^<div class="table-scroll"><table>/);
    expect(html).toMatch(/<\/table><\/div>$/);
    expect(html).toContain('<th class="align-left">a</th>');
    expect(html).toContain('<td class="align-center">2</td>');
    expect(html).toContain('<td class="align-right">3</td>');
    expect(html).not.toContain('style=');
  });

  it('renders a half-streamed reply (an open code fence) without throwing', () => {
    const html = markdownToHtml('Here:\n\n```ts\nconst x =');
    expect(html).toContain('class="code-block"');
    expect(html).toContain('const');
  });
});
