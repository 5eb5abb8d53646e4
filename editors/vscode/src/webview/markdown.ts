// The model's text as HTML: markdown-it with raw HTML off (a tag the model writes is shown as text), links
// only to http(s) and relative paths, code blocks highlighted by highlight.js's core with a few languages.
// No HTML from the model reaches the page unescaped; the page's Content-Security-Policy runs no inline script.
import MarkdownIt from 'markdown-it';
import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import diff from 'highlight.js/lib/languages/diff';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import python from 'highlight.js/lib/languages/python';
import rust from 'highlight.js/lib/languages/rust';
import typescript from 'highlight.js/lib/languages/typescript';
import yaml from 'highlight.js/lib/languages/yaml';

const LANGUAGES = { bash, diff, javascript, json, python, rust, typescript, yaml };
for (const [name, lang] of Object.entries(LANGUAGES)) hljs.registerLanguage(name, lang);
hljs.registerAliases(['sh', 'shell', 'zsh', 'console'], { languageName: 'bash' });
hljs.registerAliases(['js', 'jsx', 'mjs', 'cjs'], { languageName: 'javascript' });
hljs.registerAliases(['ts', 'tsx'], { languageName: 'typescript' });
hljs.registerAliases(['py'], { languageName: 'python' });
hljs.registerAliases(['rs'], { languageName: 'rust' });
hljs.registerAliases(['yml'], { languageName: 'yaml' });
hljs.registerAliases(['patch'], { languageName: 'diff' });

/** Code blocks larger than this are shown plain: highlighting them would stall the page. */
const MAX_HIGHLIGHT = 20_000;

const md: MarkdownIt = new MarkdownIt({
  html: false,
  linkify: true,
  breaks: false,
  highlight(code, lang) {
    const name = lang.trim().toLowerCase();
    if (!name || !hljs.getLanguage(name) || code.length > MAX_HIGHLIGHT) return '';
    try {
      // highlight.js escapes the code; its output is only spans with hljs-* classes.
      return hljs.highlight(code, { language: name, ignoreIllegals: true }).value;
    } catch {
      return '';
    }
  },
});

// Links: web pages and relative paths (files of the folder); anything else (javascript:, data:, file:,
// vscode: command links) is text.
md.validateLink = (url: string) => /^(https?:\/\/|\.{0,2}\/|[\w.-]+(\/|\.\w+|#|$))/i.test(url.trim()) && !/^[a-z][\w+.-]*:(?!\/\/)/i.test(url.trim());

/** The model's markdown as HTML. */
export function renderMarkdown(text: string): string {
  return md.render(text);
}
