// End-to-end test of code intelligence through VS Code (issue 36) in real VS Code (code-server) with its built-in
// TypeScript: total.ts has an error already; the scripted model edits it to add a type error; the server asks VS
// Code (`stepwise/query`) for the file's diagnostics before the edit and for those of the version it wrote; the
// model's next request carries a `<diagnostics>` block with the file and line of the new error only (the one from
// before is not new); the edit's card in the Conversation view counts the error and lists its line, which opens its
// place; after a reload the block shows as a diagnostics entry, not as the user's words.
// Screenshots: diagnostics/*.png.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  LONG,
  SHORT,
  artifacts,
  onlyConversation,
  openFile,
  page,
  recordPath,
  runCommand,
  screenshot,
  statusBarText,
  step,
  useCodeServer,
  viewFrame,
  waitFor,
  waitStatus,
  workspaceDir,
} from './harness.mjs';

const TASK = 'Make total a string';
const BEFORE = 'const total: number = 1;\nconst old: number = missing;\nexport { total, old };\n';
const OLD = "Cannot find name 'missing'.";
const ERROR = "Type 'string' is not assignable to type 'number'.";
const SCRIPT = [
  { type: 'turn', tool_calls: [{ name: 'edit_file', input: { path: 'total.ts', old_text: '= 1;', new_text: "= 'one';" } }] },
  { type: 'turn', text: 'Changed it.' },
];

useCodeServer(SCRIPT, { artifacts: 'diagnostics', keyViaEnv: true });

/** The model's requests as the mock recorded them. */
function requests() {
  if (!fs.existsSync(recordPath)) return [];
  return fs.readFileSync(recordPath, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

/** The text blocks of the last user message of a recorded request. */
function lastUserText(request) {
  const messages = request?.body?.messages ?? [];
  const last = messages[messages.length - 1];
  const blocks = Array.isArray(last?.content) ? last.content : [];
  return blocks.map((b) => b.text ?? '').join('\n');
}

let frame;

step("the TypeScript error of the agent's edit reaches the model and shows on its card", async () => {
  fs.writeFileSync(path.join(workspaceDir, 'total.ts'), BEFORE);
  await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: LONG });
  // The file is open in an editor, as the user would have it: VS Code's TypeScript checks it.
  await openFile('total.ts');
  await page.locator('.tab.active', { hasText: 'total.ts' }).waitFor({ timeout: LONG });
  // TypeScript has checked it (its error from before is underlined), as the user would have it before asking.
  await page.locator('.part.editor .monaco-editor .squiggly-error').first().waitFor({ state: 'attached', timeout: LONG });
  await runCommand('Stepwise: Focus on Conversation View');
  frame = await viewFrame();
  await onlyConversation();
  const box = frame.locator('textarea[aria-label="Message for the agent"]');
  await box.click();
  await box.fill(TASK);
  await box.press('Enter');
  await waitStatus(/stepwise: idle/, LONG);

  // The model's second request carries the error with file and line, after the edit's result.
  const sent = await waitFor('the second request to the model', async () => requests(), (r) => r.length >= 2, SHORT);
  const told = lastUserText(sent[1]);
  assert.match(told, /<diagnostics>/, told);
  assert.match(told, new RegExp(`total\\.ts:1:\\d+: error: ${ERROR.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`), told);
  assert.match(told, /<\/diagnostics>/, told);
  assert.ok(!told.includes(OLD), `the error from before is not new: ${told}`);
  assert.doesNotMatch(told, /not compared/, told);

  // The edit's card counts it and lists its line when opened.
  const card = frame.locator('.card.tool[data-tool="edit_file"]');
  await card.locator('.diag-count', { hasText: '⚠ 1' }).waitFor({ timeout: SHORT });
  await card.locator('details.diagnostics summary').click();
  const line = card.locator('ul.diagnostic-lines a', { hasText: ERROR });
  await line.waitFor({ timeout: SHORT });
  assert.match((await line.getAttribute('href')) ?? '', /^total\.ts#L1C\d+$/);
  await screenshot('card.png');
  await page.locator('.part.sidebar').screenshot({ path: path.join(artifacts, 'card-view.png') });
  // The line opens its place: another file in front first, then the line brings total.ts back at line 1, column 7.
  await openFile('greet.js');
  await page.locator('.tab.active', { hasText: 'greet.js' }).waitFor({ timeout: SHORT });
  await line.click();
  await page.locator('.tab.active', { hasText: 'total.ts' }).waitFor({ timeout: SHORT });
  const col = /^total\.ts#L1C(\d+)$/.exec((await line.getAttribute('href')) ?? '')?.[1];
  await waitFor('the cursor at the error', () => statusBarText(), (t) => t.includes(`Ln 1, Col ${col}`), SHORT);
});

step('after a reload the block is a diagnostics entry, not the user\'s words', async () => {
  await page.reload({ timeout: LONG });
  await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: LONG });
  frame = await viewFrame();
  await frame.locator('.turn.user', { hasText: TASK }).waitFor({ timeout: LONG });
  const entry = frame.locator('.entry.note.diagnostics');
  await entry.locator('ul.diagnostic-lines a', { hasText: ERROR }).waitFor({ timeout: LONG });
  assert.equal(await frame.locator('.turn.user').count(), 1, 'only the task is the user\'s');
  await waitFor('the screenshot', () => screenshot('reloaded.png'), (f) => !!f, SHORT);
});
