// End-to-end test of plan editing in real VS Code (code-server): an item edited in place in the plan view
// reaches the server (its `stepwise/plan` follows) and the model's next request carries the `<plan-edit>`
// block; the plan as a text document is applied on save, a broken rule shown with the document kept.
import assert from 'node:assert/strict';
import {
  LONG,
  SHORT,
  answerInputBox,
  closeConversationView,
  editorText,
  log,
  page,
  planRows,
  requests,
  runCommand,
  screenshot,
  serverLog,
  sleep,
  statusBarText,
  step,
  toastText,
  transcriptLog,
  useCodeServer,
  waitFor,
  waitStatus,
  writeFolderSettings,
} from './harness.mjs';

const SCRIPT = [
  {
    type: 'turn',
    text: 'A plan for the farewell.',
    tool_calls: [
      {
        name: 'todo',
        input: {
          items: [
            { id: '1', text: 'Look at greet.js', status: 'completed' },
            { id: '2', text: 'Add a farewell function', status: 'in_progress', activeForm: 'Adding a farewell function' },
            { id: '3', text: 'Export farewell', status: 'pending' },
          ],
        },
      },
    ],
  },
  { type: 'turn', text: 'Planned.' },
  // The run after the user's edits: the request carries the <plan-edit> block.
  { type: 'turn', text: 'I see your changes.' },
  // A run steered while it waits for the approval of its shell command.
  { type: 'turn', tool_calls: [{ name: 'bash', input: { command: 'wc -l < greet.js' } }] },
  { type: 'turn', text: 'Counted, and I will count the words too.' },
];

useCodeServer(SCRIPT, {
  artifacts: 'plan-edit',
  keyViaEnv: true,
  // Typing the plan document as written: no brackets closed or selections surrounded for us.
  settings: { 'editor.autoClosingBrackets': 'never', 'editor.autoSurround': 'never', 'editor.quickSuggestions': { other: false, comments: false, strings: false }, 'editor.wordBasedSuggestions': 'off' },
});

/** The context menu of a plan view row, and a click on one of its actions. */
async function rowAction(label, action) {
  const row = page.locator(`.part.sidebar .monaco-list-row[aria-label="${label}"]`).first();
  await row.waitFor({ state: 'visible', timeout: SHORT });
  const menu = page.locator('.context-view .monaco-menu');
  for (let attempt = 1; ; attempt++) {
    await row.click({ button: 'right' });
    const item = page.locator('.context-view .action-item', { hasText: action }).first();
    // A right click that lands while the row is drawn again (the plan view refreshes on each
    // `stepwise/plan`) can open a menu without the row's actions, or none: the click is made again.
    try {
      await item.waitFor({ state: 'visible', timeout: 5000 });
    } catch (e) {
      if (attempt >= 3) throw e;
      await page.keyboard.press('Escape');
      continue;
    }
    // The menu ignores a click that comes too soon after it opened.
    await sleep(300);
    await item.locator('.action-menu-item').click();
    try {
      await menu.waitFor({ state: 'hidden', timeout: 2000 });
      return;
    } catch (e) {
      if (attempt >= 3) throw e;
      await page.keyboard.press('Escape');
    }
  }
}

/** Every string inside a recorded model request. */
function strings(v, out = []) {
  if (typeof v === 'string') out.push(v);
  else if (v && typeof v === 'object') for (const x of Object.values(v)) strings(x, out);
  return out;
}

/** Replaces the active editor's text by typing it. */
async function typeDocument(text) {
  await page.locator('.part.editor .view-lines').first().click();
  await page.keyboard.press('Control+A');
  await page.keyboard.press('Delete');
  await page.keyboard.type(text);
}

step('a run makes a plan', async () => {
  await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: LONG });
  // The extension is registered (its container in the activity bar) before its commands are looked for.
  await page.locator('.part.activitybar [aria-label^="Stepwise"]').first().waitFor({ timeout: LONG });
  await runCommand('Stepwise: Run Task');
  await answerInputBox('Stepwise: Run Task', 'Plan a farewell');
  await waitStatus(/stepwise: idle 1\/3/, LONG);
  await waitFor('the plan rows', planRows, (r) => r.includes('pending: Export farewell'), LONG);
});

step('an item edited in the plan view: the server keeps the edit', async () => {
  const before = serverLog().length;
  await rowAction('pending: Export farewell', 'Edit Text');
  await answerInputBox('Stepwise: Edit Plan Item', 'Export farewell and greet');
  await waitFor('the edited row', planRows, (r) => r.includes('pending: Export farewell and greet'), LONG);
  // The server's own notification (traced in the server log) carries the edit, made by the user.
  await waitFor(
    "the server's stepwise/plan with the edit",
    async () => serverLog().slice(before),
    (l) => /Received notification 'stepwise\/plan'[\s\S]*"text": "Export farewell and greet"[\s\S]*"by": "user"/.test(l),
    SHORT,
  );
  // Marked done from the context menu.
  await rowAction('in progress: Add a farewell function, Adding a farewell function', 'Mark Done');
  await waitFor('the item done', planRows, (r) => r.includes('completed: Add a farewell function'), LONG);
  await waitStatus(/stepwise: idle 2\/3/, SHORT);
  await waitFor('the edit in the transcript', async () => transcriptLog(), (t) => t.includes('✎ you changed the plan: 2/3'), SHORT);
  await screenshot('edited.png');
});

step("the model's next request carries the edit, once", async () => {
  await runCommand('Stepwise: Run Task');
  await answerInputBox('Stepwise: Run Task', 'Go on');
  await waitFor('the third request', async () => requests().length, (n) => n >= 3, LONG);
  await waitStatus(/stepwise: idle 2\/3/, LONG);
  const all = requests();
  const last = strings(all[all.length - 1]);
  const blocks = last.filter((s) => s.includes('<plan-edit>'));
  assert.equal(blocks.length, 1, `one <plan-edit> block in the last request: ${JSON.stringify(last).slice(0, 2000)}`);
  assert.ok(
    blocks[0].includes('<plan-edit>The user changed the plan. It is now:\n[x] #1: Look at greet.js\n[x] #2: Add a farewell function\n[ ] #3: Export farewell and greet\n'),
    blocks[0],
  );
  assert.ok(!strings(all[1]).some((s) => s.includes('<plan-edit>')), 'no edit before the user made one');
});

step('the plan as a document: a broken rule is shown and the document kept; a good one applied on save', async () => {
  await runCommand('Stepwise: Edit Plan as Text');
  await waitFor('the plan document', editorText, (t) => t.includes('[ ] #3: Export farewell and greet') && t.includes('(2/3 completed)'), LONG);
  await typeDocument('[>] #1: Look at greet.js\n[>] #2: Add a farewell function\n');
  await page.keyboard.press('Control+S');
  await waitFor('the rule in an error', toastText, (t) => t.includes('Only one task can be in_progress at a time'), LONG);
  await sleep(300);
  assert.equal(await page.locator('.part.editor .tab.dirty', { hasText: 'Plan' }).count(), 1, 'the document stays unsaved');
  assert.ok((await editorText()).includes('[>] #2: Add a farewell function'), 'the text is kept');
  assert.ok((await planRows()).includes('pending: Export farewell and greet'), 'the plan did not change');
  await screenshot('plan-document-error.png');

  await typeDocument('[x] #1: Look at greet.js\n[x] #2: Add a farewell function\n[>] #3: Export farewell and greet\n[ ] Write a test\n');
  await page.keyboard.press('Control+S');
  await waitFor('the new item in the plan view', planRows, (r) => r.includes('pending: Write a test') && r.some((x) => x.startsWith('in progress: Export farewell and greet')), LONG);
  await waitFor('the saved document', () => page.locator('.part.editor .tab.dirty', { hasText: 'Plan' }).count(), (n) => n === 0, SHORT);
  // The document shows the plan as the server keeps it: the new item has its id.
  await waitFor('the id of the new item', editorText, (t) => /\[ \] #\d+: Write a test/.test(t), SHORT);
  await waitStatus(/stepwise: idle 2\/4/, SHORT);
  await screenshot('plan-document.png');
});

step('Run Task becomes Steer while a run goes on: the line reaches the model at its next request', async () => {
  const before = serverLog().length;
  writeFolderSettings({ 'stepwise.approval': 'ask' });
  await waitFor('the server to pull approval "ask"', async () => serverLog().slice(before), (l) => /settings for .*"approval":"ask"/.test(l), LONG);
  await closeConversationView();
  await page.locator('.part.editor .view-lines').first().click();
  await page.keyboard.press('Control+W');
  await runCommand('Stepwise: Run Task');
  await answerInputBox('Stepwise: Run Task', 'Count the lines');
  const toast = page.locator('.notifications-toasts .notification-toast', { hasText: 'Run this command?' });
  await toast.waitFor({ state: 'visible', timeout: LONG });
  await waitStatus(/stepwise: waiting/, SHORT);
  const asked = requests().length;
  await runCommand('Stepwise: Run Task');
  await answerInputBox('Stepwise: Steer', 'Count the words too');
  await waitFor('the steer in the transcript', async () => transcriptLog(), (t) => t.includes('» you: Count the words too'), SHORT);
  // The command palette's Escape hid the toast; the request waits in the notification center.
  await runCommand('Notifications: Show Notifications');
  const request = page.locator('.notifications-center .notification-list-item', { hasText: 'Run this command?' }).first();
  await request.waitFor({ state: 'visible', timeout: SHORT });
  await request.locator('.monaco-button', { hasText: /^Allow$/ }).click({ timeout: SHORT });
  await waitFor('the next request', async () => requests().length, (n) => n > asked, LONG);
  await waitStatus(/stepwise: idle/, LONG);
  const all = requests();
  assert.ok(!strings(all[asked - 1]).some((s) => s.includes('Count the words too')), 'not in the request before the steer');
  assert.ok(strings(all[asked]).some((s) => s.includes('Count the words too')), `the steer in the next request: ${JSON.stringify(strings(all[asked])).slice(-1500)}`);
  log('status bar:', await statusBarText());
});
