// End-to-end test of the Transcript view in real VS Code (code-server): after a run that edited an open file,
// the view lists the run and its rounds; "Rewind to Here" on the round's edit_file entry (after the
// confirmation naming the file) puts the buffer back. Then a second run edits it again, and "Rewind to Here"
// on the plan item puts it back too. After a reload the view lists the saved session's runs and rounds again.
import assert from 'node:assert/strict';
import {
  LONG,
  SHORT,
  answerInputBox,
  clearToasts,
  editorText,
  openFile,
  page,
  planRows,
  runCommand,
  screenshot,
  step,
  toastText,
  useCodeServer,
  waitFor,
  waitStatus,
} from './harness.mjs';

const ORIGINAL = 'return `Hello, ${name}!`;';
const EDITED = 'return `Hello, ${name}, welcome back!`;';
const STEP = 'Warm up the greeting';
const EDIT = { name: 'edit_file', input: { path: 'greet.js', old_text: 'Hello, ${name}!', new_text: 'Hello, ${name}, welcome back!' } };
const DONE = { name: 'todo', input: { items: [{ id: '1', text: STEP, status: 'completed' }] } };

const SCRIPT = [
  // Run 1: plan, edit, done.
  { type: 'turn', text: 'I will plan first.', tool_calls: [{ name: 'todo', input: { items: [{ id: '1', text: STEP, status: 'in_progress', activeForm: 'Warming up' }] } }] },
  { type: 'turn', tool_calls: [EDIT] },
  { type: 'turn', tool_calls: [DONE] },
  { type: 'turn', text: 'Done.' },
  // Run 2 (after the rewind the plan's step is in progress again): edit again, done.
  { type: 'turn', tool_calls: [EDIT] },
  { type: 'turn', tool_calls: [DONE] },
  { type: 'turn', text: 'Done again.' },
];

useCodeServer(SCRIPT, { artifacts: 'transcript', keyViaEnv: true });

/** The aria-labels of the Transcript view's rows. */
async function transcriptRows() {
  return page
    .locator('.pane', { has: page.locator('.pane-header', { hasText: /Transcript/i }) })
    .locator('.monaco-list-row')
    .evaluateAll((rows) => rows.map((r) => r.getAttribute('aria-label') ?? ''));
}

/** Answers the rewind confirmation: it must name greet.js. */
async function confirmRewind() {
  const dialog = page.locator('.monaco-dialog-box');
  await dialog.waitFor({ state: 'visible', timeout: SHORT });
  const text = await dialog.textContent();
  assert.match(text, /greet\.js/, `the confirmation names the file: ${text}`);
  assert.match(text, /Files Only/, `the confirmation offers files only: ${text}`);
  await dialog.locator('.monaco-button', { hasText: /^Rewind$/ }).click();
}

step('a run edits the open file; the Transcript view lists its rounds', async () => {
  await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: LONG });
  await page.locator('.part.activitybar [aria-label^="Stepwise"]').first().waitFor({ timeout: LONG });
  await openFile('greet.js');
  await waitFor('greet.js in the editor', editorText, (t) => t.includes(ORIGINAL), SHORT);
  await runCommand('Stepwise: Run Task');
  await answerInputBox('Stepwise: Run Task', STEP);
  await waitStatus(/stepwise: idle 1\/1/, LONG);
  await waitFor('the edit in the editor', editorText, (t) => t.includes(EDITED), SHORT);
  await runCommand('Focus on Transcript View');
  // The run's rounds, with the step in progress and (once the run ended) the file a rewind puts back.
  const rows = await waitFor(
    'the run and round 2 in the Transcript view',
    transcriptRows,
    (r) => r.some((x) => x.startsWith(`run: ${STEP}, 4 rounds · done`)) && r.some((x) => x === `Round 2, ${STEP}, 1 file goes back`),
    LONG,
  );
  assert.ok(rows.some((x) => x.startsWith('Round 1')), `round 1 listed: ${rows}`);
  await screenshot('transcript.png');
});

step('"Rewind to Here" on the edit_file entry of round 2: the buffer goes back', async () => {
  const round = page.locator(`.monaco-list-row[aria-label="Round 2, ${STEP}, 1 file goes back"]`);
  await round.click();
  const call = page.locator('.monaco-list-row[aria-label^="tool call done: edit_file"]');
  await call.waitFor({ state: 'visible', timeout: SHORT });
  await call.click();
  await call.hover();
  await call.locator('.action-label[aria-label="Rewind to Here"]').click();
  await confirmRewind();
  await waitFor('the original line back in the editor', editorText, (t) => t.includes(ORIGINAL), LONG);
  await waitFor('the outcome', toastText, (t) => t.includes('stepwise: rewound 1 file'), SHORT);
  // The conversation went back too: the plan's step is in progress again.
  await waitStatus(/stepwise: idle 0\/1/, SHORT);
  await screenshot('rewound-from-transcript.png');
});

step('"Rewind to Here" on the plan item after a second run: the buffer goes back again', async () => {
  await clearToasts();
  await runCommand('Stepwise: Run Task');
  await answerInputBox('Stepwise: Run Task', 'Warm it up again');
  await waitStatus(/stepwise: idle 1\/1/, LONG);
  await waitFor('the edit in the editor again', editorText, (t) => t.includes(EDITED), SHORT);
  await waitFor('the second run in the Transcript view', transcriptRows, (r) => r.some((x) => x.startsWith('run: Warm it up again')), LONG);
  await runCommand('Stepwise: Show Plan');
  const item = page.locator(`.monaco-list-row[aria-label="completed: ${STEP}"]`);
  await waitFor('the plan item', planRows, (r) => r.includes(`completed: ${STEP}`), SHORT);
  await item.click({ button: 'right' });
  // The menu ignores a click too soon after it opened: pick the entry by pointing at it and pressing Enter.
  const entry = page.locator('.monaco-menu .action-label', { hasText: 'Rewind to Here' });
  await entry.waitFor({ state: 'visible', timeout: SHORT });
  await entry.hover();
  await page.keyboard.press('Enter');
  await confirmRewind();
  await waitFor('the original line back in the editor', editorText, (t) => t.includes(ORIGINAL), LONG);
  await waitFor('the outcome', toastText, (t) => t.includes('stepwise: rewound 1 file'), SHORT);
  await screenshot('rewound-from-plan.png');
});

/** The runs and rounds the view lists, by name (`run: <prompt>`, `Round <n>`). */
async function runsAndRounds() {
  return (await transcriptRows()).filter((x) => /^(run: |Round )/.test(x)).map((x) => x.split(',')[0]);
}

step('after a reload the Transcript view lists the saved session\'s rounds again', async () => {
  // The rewind took the second run's rounds away: the view follows the server's list.
  const before = await waitFor('the view after the rewind', runsAndRounds, (r) => r.length > 0 && !r.includes('run: Warm it up again'), LONG);
  await page.reload({ timeout: LONG });
  await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: LONG });
  // The container was open: the view comes back with it (the palette is only needed when it did not; after a
  // reload code-server's palette sometimes lacks the view's focus command for a while).
  const header = page.locator('.part.sidebar .pane-header', { hasText: /^\s*Transcript/i }).first();
  const shown = await header.waitFor({ state: 'visible', timeout: SHORT }).then(() => header.getAttribute('aria-expanded'), () => null);
  if (shown !== 'true') await runCommand('Focus on Transcript View');
  const after = await waitFor('the same runs and rounds', runsAndRounds, (r) => JSON.stringify(r) === JSON.stringify(before), LONG);
  assert.ok(after.some((x) => x.startsWith('Round ')), `rounds listed: ${after}`);
  await screenshot('reloaded.png');
});
