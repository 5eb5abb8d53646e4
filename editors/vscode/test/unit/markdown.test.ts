import { test } from 'node:test';
import assert from 'node:assert/strict';

import { renderMarkdown } from '../../src/webview/markdown';

test('raw HTML from the model is text, never markup', () => {
  const html = renderMarkdown('hi <img src=x onerror="alert(1)"> <script>alert(2)</script>\n\n<div onclick="x()">block</div>');
  assert.ok(!/<img|<script|<div/i.test(html), html);
  assert.match(html, /&lt;img src=x onerror=&quot;alert\(1\)&quot;&gt;/);
  assert.match(html, /&lt;script&gt;/);
});

test('links: web pages and relative paths are links; javascript:, data:, file: and command links are not', () => {
  assert.match(renderMarkdown('[a](https://example.org/x)'), /<a href="https:\/\/example\.org\/x">a<\/a>/);
  assert.match(renderMarkdown('[b](src/main.rs)'), /<a href="src\/main\.rs">b<\/a>/);
  for (const bad of ['javascript:alert(1)', 'JaVaScRiPt:alert(1)', 'data:text/html,<b>x</b>', 'file:///etc/passwd', 'command:workbench.action.terminal.new', 'vscode:extension/x']) {
    const html = renderMarkdown(`[c](${bad})`);
    assert.ok(!/<a /.test(html), `${bad}: ${html}`);
  }
  // An image from the web is not a link the model can make load either (and the page's CSP allows no remote image).
  assert.ok(!/<img[^>]+src="javascript:/.test(renderMarkdown('![x](javascript:alert(1))')));
});

test('code blocks: a known language is highlighted (spans with hljs classes), an unknown one escaped as text', () => {
  const js = renderMarkdown('```js\nconst a = "<b>";\n```');
  assert.match(js, /<pre><code class="language-js"><span class="hljs-keyword">const<\/span>/);
  assert.match(js, /&lt;b&gt;/);
  const other = renderMarkdown('```cobol\n<b>x</b>\n```');
  assert.match(other, /<pre><code class="language-cobol">&lt;b&gt;x&lt;\/b&gt;/);
});

test('bold and inline code render as markdown', () => {
  assert.equal(renderMarkdown('a **bold** `x`').trim(), '<p>a <strong>bold</strong> <code>x</code></p>');
});
