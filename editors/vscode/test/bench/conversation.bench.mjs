// Benchmark of the Conversation view's page (dist/webview.js, as bundled) in Chromium: the time to draw a
// restored conversation of 500 rounds (each the model's markdown with a code block and a tool call with its
// output), and then the time per streamed chunk while that conversation is on the page (a chunk redraws only
// its entry). Run after `npm run build`:  node test/bench/conversation.bench.mjs [rounds]
// Environment: CHROMIUM (default /usr/bin/chromium). Prints the medians of 5 runs.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const EXT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const ROUNDS = Number(process.argv[2] ?? 500);
const RUNS = 5;
const CHUNKS = 200;

function conversation(rounds) {
  const entries = [{ kind: 'user', runId: 'r1', text: 'Refactor the parser and keep the tests green' }];
  for (let i = 0; i < rounds; i++) {
    entries.push({
      kind: 'assistant',
      runId: 'r1',
      text: `Round ${i}: the **parser** needs a change in \`parse_${i}\`:\n\n\`\`\`rust\nfn parse_${i}(s: &str) -> Result<u32, Error> {\n    s.trim().parse().map_err(Error::from)\n}\n\`\`\`\n\n- then run the tests\n- and update the plan`,
    });
    entries.push({
      kind: 'tool',
      runId: 'r1',
      tool: { id: `t${i}`, name: i % 2 ? 'bash' : 'edit_file', summary: i % 2 ? 'cargo test -p parser' : `src/parse_${i}.rs`, output: 'test result: ok. 42 passed; 0 failed\n'.repeat(3), isError: false, step: 'Refactor the parser', state: 'done' },
    });
  }
  return entries;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', headless: true, args: ['--no-sandbox', '--disable-gpu'] });
const page = await browser.newPage({ viewport: { width: 420, height: 900 } });
const css = fs.readFileSync(path.join(EXT, 'media/conversation.css'), 'utf8');
const js = fs.readFileSync(path.join(EXT, 'dist/webview.js'), 'utf8');
const entries = conversation(ROUNDS);
const opens = [];
const chunks = [];
for (let run = 0; run < RUNS; run++) {
  await page.setContent(`<!DOCTYPE html><html><head><style>${css}</style></head><body><div id="app"></div></body></html>`);
  await page.evaluate(() => {
    window.__posted = [];
    window.acquireVsCodeApi = () => ({ postMessage: (m) => window.__posted.push(m), getState: () => undefined, setState: () => {} });
  });
  await page.addScriptTag({ content: js });
  // Open: from the message to the frame after it (drawn, laid out, painted).
  opens.push(
    await page.evaluate(async (entries) => {
      const frame = () => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
      const t0 = performance.now();
      window.dispatchEvent(new MessageEvent('message', { data: { type: 'reset', entries, folders: [], busy: true, status: { state: 'running' } } }));
      await frame();
      return performance.now() - t0;
    }, entries),
  );
  // Streaming: a new assistant entry grows by CHUNKS chunks, one per frame.
  chunks.push(
    await page.evaluate(async ({ n, count }) => {
      const frame = () => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
      let text = '';
      const t0 = performance.now();
      for (let i = 0; i < count; i++) {
        text += i % 20 === 19 ? '\n\n```js\nconst x = 1;\n```\n\n' : `word **${i}** `;
        window.dispatchEvent(new MessageEvent('message', { data: { type: 'entry', index: n, entry: { kind: 'assistant', runId: 'r1', text } } }));
        await frame();
      }
      return (performance.now() - t0) / count;
    }, { n: entries.length, count: CHUNKS }),
  );
}
const drawn = await page.locator('.entry').count();
await browser.close();
if (drawn !== entries.length + 1) throw new Error(`expected ${entries.length + 1} entries on the page, found ${drawn}`);
console.log(`conversation view, ${ROUNDS} rounds (${entries.length} entries): open ${median(opens).toFixed(0)} ms (median of ${RUNS}); a streamed chunk ${median(chunks).toFixed(1)} ms per frame (incl. the frame)`);
