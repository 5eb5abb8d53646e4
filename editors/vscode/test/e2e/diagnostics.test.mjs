// End-to-end test of code intelligence through VS Code (issue 36) in real VS Code (code-server) with its built-in
// TypeScript: total.ts has an error already; the scripted model edits it to add a type error; the server asks VS
// Code (`stepwise/query`) for the file's diagnostics before the edit and for those of the version it wrote; the
// model's next request carries a `<diagnostics>` block with the file and line of the new error only (the one from
// before is not new); the edit's card in the Conversation view counts the error and lists its line, which opens its
// place; after a reload the block shows as a diagnostics entry, not as the user's words. Then (issue 46) the agent
// reads and edits app.ts, which is in no tab: VS Code is asked for its errors from before the edit (it opens the
// document unshown), so the model is told only the edit's new error, with file and line; the card lists it; the
// file on disk holds the change, the document VS Code opened is saved (not left dirty) and the tabs are as they were.
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
  requests,
  runCommand,
  screenshot,
  serverLog,
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
const APP = 'export const count: number = 1;\nexport const gone: number = missing;\n';
const SCRIPT = [
  { type: 'turn', tool_calls: [{ name: 'edit_file', input: { path: 'total.ts', old_text: '= 1;', new_text: "= 'one';" } }] },
  { type: 'turn', text: 'Changed it.' },
  { type: 'turn', tool_calls: [{ name: 'read_file', input: { path: 'app.ts' } }] },
  { type: 'turn', tool_calls: [{ name: 'edit_file', input: { path: 'app.ts', old_text: 'count: number = 1;', new_text: "count: number = 'one';" } }] },
  { type: 'turn', text: 'Changed app.ts.' },
];

useCodeServer(SCRIPT, { artifacts: 'diagnostics', keyViaEnv: true });

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
  fs.writeFileSync(path.join(workspaceDir, 'app.ts'), APP);
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

/** The labels of the editor tabs, in order. */
async function tabs() {
  return (await page.locator('.part.editor .tab').evaluateAll((all) => all.map((t) => t.getAttribute('aria-label') ?? ''))).map((l) => l.split(',')[0]);
}

/** The dirty tabs' labels. */
async function dirtyTabs() {
  return (await page.locator('.part.editor .tab.dirty').evaluateAll((all) => all.map((t) => t.getAttribute('aria-label') ?? ''))).map((l) => l.split(',')[0]);
}

/** The Explorer's label in the activity bar, which counts every unsaved document (`1 unsaved file`), shown or not. */
async function explorerLabel() {
  return (await page.locator('.part.activitybar [aria-label^="Explorer"]').first().getAttribute('aria-label')) ?? '';
}

step("the error of the agent's edit of a file in no tab reaches the model compared with before; the file is saved, the tabs stay", async () => {
  const before = await tabs();
  assert.ok(!before.some((t) => t.startsWith('app.ts')), `app.ts is in no tab: ${before}`);
  // total.ts keeps the agent's edit of the first step unsaved in its tab, as the user's own edits are.
  const dirtyBefore = await dirtyTabs();
  assert.deepEqual(dirtyBefore, ['total.ts'], 'the first step left its tab unsaved');
  const unsavedBefore = await explorerLabel();
  assert.match(unsavedBefore, /1 unsaved file/, unsavedBefore);
  const box = frame.locator('textarea[aria-label="Message for the agent"]');
  await box.click();
  await box.fill('Make count a string');
  await box.press('Enter');
  await waitStatus(/stepwise: idle/, LONG);

  // The request after the edit carries its error with file and line; the one app.ts had before is not new.
  const sent = await waitFor('the fifth request to the model', async () => requests(), (r) => r.length >= 5, SHORT);
  const told = lastUserText(sent[4]);
  assert.match(told, new RegExp(`app\\.ts:1:\\d+: error: ${ERROR.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`), told);
  assert.ok(!told.includes(OLD), `the error from before is not new: ${told}`);
  assert.doesNotMatch(told, /not compared/, told);
  // VS Code answered, settled, for app.ts's errors before the edit (it opened the document unshown), as it did
  // for total.ts's in the first step.
  const befores = serverLog().match(/the editor answered the diagnostics from before a change for 1 document\(s\) in \d+ ms of the \d+ ms it was allowed \(1 settled\)/g) ?? [];
  assert.equal(befores.length, 2, `asked before each edit:\n${serverLog().slice(-3000)}`);

  // The card of the edit counts the error and lists it.
  const card = frame.locator('.card.tool[data-tool="edit_file"]', { has: frame.locator('code.summary', { hasText: 'app.ts' }) });
  await card.locator('.diag-count', { hasText: '⚠ 1' }).waitFor({ timeout: SHORT });
  await card.locator('details.diagnostics summary').click();
  await card.locator('ul.diagnostic-lines a', { hasText: ERROR }).waitFor({ timeout: SHORT });
  await screenshot('closed-file.png');
  await page.locator('.part.sidebar').screenshot({ path: path.join(artifacts, 'closed-file-card.png') });

  // On disk the file holds the change; VS Code saved the document it opened (its didSave), no document is left
  // unsaved and the tabs are those the user had.
  await waitFor('app.ts on disk', async () => fs.readFileSync(path.join(workspaceDir, 'app.ts'), 'utf8'), (t) => t.includes("count: number = 'one';"), SHORT);
  await waitFor('the didSave of app.ts', async () => serverLog(), (l) => /textDocument\/didSave[\s\S]{0,400}app\.ts/.test(l), SHORT);
  assert.deepEqual(await dirtyTabs(), dirtyBefore, 'no other tab is dirty');
  assert.equal(await explorerLabel(), unsavedBefore, 'no unsaved document more, shown or hidden');
  assert.deepEqual(await tabs(), before, 'the tabs did not change');
});

step('after a reload the block is a diagnostics entry, not the user\'s words', async () => {
  await page.reload({ timeout: LONG });
  await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: LONG });
  frame = await viewFrame();
  await frame.locator('.turn.user', { hasText: TASK }).waitFor({ timeout: LONG });
  // Both runs' blocks (total.ts's, then app.ts's) are entries of their own; only the two prompts are the user's.
  const entries = frame.locator('.entry.note.diagnostics');
  await entries.nth(1).locator('ul.diagnostic-lines a', { hasText: 'app.ts' }).waitFor({ timeout: LONG });
  await entries.nth(0).locator('ul.diagnostic-lines a', { hasText: 'total.ts' }).waitFor({ timeout: LONG });
  const users = await frame.locator('.turn.user').allInnerTexts();
  assert.equal(users.length, 2, `only the prompts are the user's: ${users}`);
  await waitFor('the screenshot', () => screenshot('reloaded.png'), (f) => !!f, SHORT);
});
