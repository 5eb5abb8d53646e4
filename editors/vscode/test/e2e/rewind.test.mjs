// End-to-end test of checkpoints and rewind in real VS Code (code-server): after the agent edited an open
// file, Stepwise: Show Checkpoints lists the checkpoint before its round with the file; rewinding to it (after
// the confirmation naming the file) puts the buffer back (the transcript says the plan went back with it), and
// Undo brings the agent's edit back.
import assert from 'node:assert/strict';
import {
  LONG,
  SHORT,
  answerInputBox,
  editorText,
  openFile,
  page,
  runCommand,
  screenshot,
  sleep,
  step,
  toastText,
  transcriptLog,
  useCodeServer,
  waitFor,
  waitStatus,
} from './harness.mjs';

const ORIGINAL = 'return `Hello, ${name}!`;';
const EDITED = 'return `Hello, ${name}, welcome back!`;';

const SCRIPT = [
  {
    type: 'turn',
    tool_calls: [{ name: 'todo', input: { items: [{ id: '1', text: 'Warm up the greeting', status: 'in_progress', activeForm: 'Warming up' }] } }],
  },
  { type: 'turn', tool_calls: [{ name: 'edit_file', input: { path: 'greet.js', old_text: 'Hello, ${name}!', new_text: 'Hello, ${name}, welcome back!' } }] },
  { type: 'turn', tool_calls: [{ name: 'todo', input: { items: [{ id: '1', text: 'Warm up the greeting', status: 'completed' }] } }] },
  { type: 'turn', text: 'Done.' },
];

useCodeServer(SCRIPT, { artifacts: 'rewind', keyViaEnv: true });

step('a run edits the open file', async () => {
  await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: LONG });
  await page.locator('.part.activitybar [aria-label^="Stepwise"]').first().waitFor({ timeout: LONG });
  await openFile('greet.js');
  await waitFor('greet.js in the editor', editorText, (t) => t.includes(ORIGINAL), SHORT);
  await runCommand('Stepwise: Run Task');
  await answerInputBox('Stepwise: Run Task', 'Warm up the greeting');
  await waitStatus(/stepwise: idle 1\/1/, LONG);
  await waitFor('the edit in the editor', editorText, (t) => t.includes(EDITED), SHORT);
});

step('rewind to the checkpoint before the edit: the buffer goes back; Undo brings the edit back', async () => {
  await runCommand('Stepwise: Show Checkpoints');
  const row = page.locator('.quick-input-widget .quick-input-list .monaco-list-row', { hasText: 'greet.js' }).first();
  await row.waitFor({ state: 'visible', timeout: LONG });
  const rows = await page.locator('.quick-input-widget .quick-input-list .monaco-list-row').allTextContents();
  assert.ok(rows.some((r) => /round 2/.test(r) && /greet\.js/.test(r)), `the checkpoint before the edit lists greet.js: ${rows}`);
  await page.locator('.quick-input-widget .quick-input-list .monaco-list-row', { hasText: 'round 2' }).first().click();
  const dialog = page.locator('.monaco-dialog-box');
  await dialog.waitFor({ state: 'visible', timeout: SHORT });
  assert.match(await dialog.textContent(), /greet\.js/);
  await screenshot('confirm.png');
  await dialog.locator('.monaco-button', { hasText: /^Rewind$/ }).click();
  await waitFor('the original line back in the editor', editorText, (t) => t.includes(ORIGINAL), LONG);
  await waitFor('the outcome', toastText, (t) => t.includes('stepwise: rewound 1 file'), SHORT);
  // The plan went back with the conversation: said as a rewind, not as the user's edit.
  await waitFor('the rewind in the transcript', async () => transcriptLog(), (t) => t.includes('↶ the plan went back with the rewind: 0/1 · Warming up'), SHORT);
  assert.ok(!transcriptLog().includes('you changed the plan'), 'a rewind is not an edit of the plan');
  await page.locator('.part.editor .view-lines').first().click();
  await page.keyboard.press('Control+Z');
  await waitFor('undo brings the edit back', editorText, (t) => t.includes(EDITED), SHORT);
  await sleep(200);
  await screenshot('rewound.png');
});
