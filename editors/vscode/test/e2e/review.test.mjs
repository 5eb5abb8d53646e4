// End-to-end test of the review of changes in real VS Code (code-server): a run edits greet.js in two places;
// Stepwise: Review Changes opens its diff editor (left the text before, read-only) and lists it in the Changes
// view under its plan step; the editor marks the unreviewed hunks and the server's lenses offer Keep / Undo;
// Undo on one hunk puts that hunk back in the buffer and leaves the other; after a window reload the Changes view
// lists the run's changes again (asked of the server at start), not its empty-state text. Screenshots: review/*.png.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { LONG, SHORT, answerInputBox, editorText, norm, openFile, page, recordPath, runCommand, screenshot, step, useCodeServer, waitFor, waitStatus } from './harness.mjs';

const STEP = 'Make the greeting louder';
const LOUD = '// A LOUD module for the stepwise end-to-end test.\nfunction greet(name) {\n  return `HELLO, ${name}!!`;\n}\n\nmodule.exports = { greet };\n';
const SCRIPT = [
  { type: 'turn', tool_calls: [{ name: 'todo', input: { items: [{ id: '1', text: STEP, status: 'in_progress' }] } }] },
  // One write that changes two separate lines: two hunks.
  { type: 'turn', tool_calls: [{ name: 'write_file', input: { path: 'greet.js', content: LOUD } }] },
  { type: 'turn', tool_calls: [{ name: 'todo', input: { items: [{ id: '1', text: STEP, status: 'completed' }] } }] },
  { type: 'turn', text: 'Louder now.' },
  // The review comment starts a run.
  { type: 'turn', text: 'Noted.' },
];

useCodeServer(SCRIPT, { artifacts: 'review', keyViaEnv: true });

/** The rows of the Changes view. */
async function changeRows() {
  return page
    .locator('.pane', { has: page.locator('.pane-header', { hasText: /Changes/i }) })
    .locator('.monaco-list-row')
    .evaluateAll((rows) => rows.map((r) => r.getAttribute('aria-label') ?? ''));
}

step('a run edits greet.js in two places; Review Changes opens the diff and the Changes view', async () => {
  await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: LONG });
  await page.locator('.part.activitybar [aria-label^="Stepwise"]').first().waitFor({ timeout: LONG });
  // greet.js is not open during the run (the agent writes it on disk); the review opens it.
  await runCommand('Stepwise: Run Task');
  await answerInputBox('Stepwise: Run Task', STEP);
  await waitStatus(/stepwise: idle 1\/1/, LONG);
  await runCommand('Stepwise: Review Changes');
  // The diff editor: the text before on the left (read-only), the file on the right.
  const diff = page.locator('.monaco-diff-editor').first();
  await diff.waitFor({ state: 'visible', timeout: LONG });
  await waitFor('the before text on the left', () => diff.locator('.editor.original .view-lines').textContent(), (t) => norm(t).includes('A tiny module'), SHORT);
  await waitFor('the new text on the right', () => diff.locator('.editor.modified .view-lines').textContent(), (t) => norm(t).includes('A LOUD module'), SHORT);
  const rows = await waitFor('greet.js under its step in the Changes view', changeRows, (r) => r.some((x) => x.startsWith('step ' + STEP)) && r.some((x) => /^greet\.js, modified, 2 hunks to review/.test(x)), LONG);
  assert.ok(rows.length >= 2, `rows: ${rows}`);
  await screenshot('review.png');
});

step('in the editor, Undo on one hunk (the server\'s lens) puts it back and leaves the other', async () => {
  // Close the diff: the file's own editor (open since the agent's write) comes to the front.
  await runCommand('View: Close Editor');
  await openFile('greet.js');
  await page.locator('.tabs-container .tab.active', { hasText: /^greet\.js/ }).waitFor({ timeout: SHORT });
  const lenses = page.locator('.part.editor .codelens-decoration a', { hasText: /^Undo$/ });
  await waitFor('two Undo lenses', () => lenses.count(), (n) => n === 2, LONG);
  assert.ok((await page.locator('.part.editor .codelens-decoration a', { hasText: /^Keep$/ }).count()) === 2, 'two Keep lenses');
  await screenshot('review-lenses.png');
  await lenses.first().click();
  await waitFor('the first hunk undone, the second kept', editorText, (t) => t.includes('A tiny module') && t.includes('HELLO, ${name}!!'), LONG);
  await waitFor('one hunk left to review', changeRows, (r) => r.some((x) => /^greet\.js, modified, 1 hunk to review/.test(x)), LONG);
  // The editor's own undo brings the agent's line back (the undo was an edit).
  await page.locator('.part.editor .view-lines').first().click();
  await page.keyboard.press('Control+Z');
  await waitFor('Ctrl+Z restores the agent\'s line', editorText, (t) => t.includes('A LOUD module'), SHORT);
  await screenshot('review-undone.png');
});

step('Comment on Change sends the line\'s remark to the agent; Keep in the Changes view marks the file reviewed', async () => {
  // The cursor on the HELLO line (3), then the editor's command.
  await page.locator('.part.editor .view-lines .view-line', { hasText: 'HELLO' }).first().click();
  await runCommand('Stepwise: Comment on Change');
  await answerInputBox('Stepwise: Comment on Change', 'keep the comma quiet');
  const asked = await waitFor(
    'the comment in the model\'s next request',
    () => (fs.existsSync(recordPath) ? fs.readFileSync(recordPath, 'utf8') : ''),
    (t) => /Review comment on greet\.js[^"]*keep the comma quiet/.test(t),
    LONG,
  );
  assert.match(asked, /Review comment on greet\.js \(lines? 3/);
  await waitStatus(/stepwise: idle/, LONG);
  const row = page.locator('.pane', { has: page.locator('.pane-header', { hasText: /Changes/i }) }).locator('.monaco-list-row', { hasText: 'greet.js' });
  await row.hover();
  await row.locator('.action-label[aria-label="Keep Changes"]').click();
  await waitFor('greet.js reviewed', changeRows, (r) => r.some((x) => /^greet\.js, modified, reviewed/.test(x)), LONG);
  await waitFor('no lens left to Undo', () => page.locator('.part.editor .codelens-decoration a', { hasText: /^Undo$/ }).count(), (n) => n === 0, LONG);
  await screenshot('review-kept.png');
});

step('after a reload the Changes view lists the run\'s changes again, not its empty-state text', async () => {
  await page.reload({ timeout: LONG });
  await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: LONG });
  await page.locator('.part.activitybar [aria-label^="Stepwise"]').first().waitFor({ timeout: LONG });
  // The Changes view is open (the review opened it): VS Code shows it again, and it lists greet.js as before.
  await waitFor('greet.js in the Changes view again', changeRows, (r) => r.some((x) => /^greet\.js, modified, reviewed/.test(x)), LONG);
  const empty = page.locator('.pane', { has: page.locator('.pane-header', { hasText: /Changes/i }) }).locator('.welcome-view-content', { hasText: 'What the agent changed in its last run' });
  assert.equal(await empty.count(), 0, 'no empty-state text while the run has changes');
  await screenshot('review-reloaded.png');
});
