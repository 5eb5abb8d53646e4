// End-to-end test of plan first in real VS Code (code-server): Plan First toggled on from the plan view, a run
// plans read-only (its write is refused, nothing changes), ends with the plan in the view and Approve offered;
// clicking Approve starts the run that acts, and its edit lands in the editor.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import {
  LONG,
  SHORT,
  answerInputBox,
  editorText,
  greetPath,
  openFile,
  page,
  planRows,
  recordPath,
  runCommand,
  screenshot,
  step,
  toastText,
  useCodeServer,
  waitFor,
  waitStatus,
} from './harness.mjs';

const EDITED = 'Hello, ${name}, planned first!';

const SCRIPT = [
  // Planning: a write is tried anyway (refused), then the plan.
  { type: 'turn', tool_calls: [{ name: 'write_file', input: { path: 'greet.js', content: 'gone' } }] },
  {
    type: 'turn',
    tool_calls: [{ name: 'todo', input: { items: [{ id: '1', text: 'Change the greeting', status: 'pending' }] } }],
  },
  { type: 'turn', text: 'The plan is ready.' },
  // Approved: the edit.
  { type: 'turn', tool_calls: [{ name: 'edit_file', input: { path: 'greet.js', old_text: 'Hello, ${name}!', new_text: EDITED } }] },
  { type: 'turn', text: 'Done.' },
];

useCodeServer(SCRIPT, { artifacts: 'plan-first', keyViaEnv: true });

function requests() {
  return fs.existsSync(recordPath) ? fs.readFileSync(recordPath, 'utf8').trim().split('\n').map((l) => JSON.parse(l)) : [];
}

step('Plan First is toggled on and a run plans without changing anything', async () => {
  await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: LONG });
  await page.locator('.part.activitybar [aria-label^="Stepwise"]').first().waitFor({ timeout: LONG });
  const original = fs.readFileSync(greetPath, 'utf8');
  await runCommand('Stepwise: Toggle Plan First');
  await waitFor('Plan First on', toastText, (t) => t.includes('Plan First is on'), SHORT);
  await runCommand('Stepwise: Run Task');
  await answerInputBox('Stepwise: Run Task', 'Make the greeting say it was planned');
  await waitFor('the plan is offered', toastText, (t) => t.includes('is ready; nothing has changed yet'), LONG);
  await waitFor('the plan rows', planRows, (r) => r.includes('pending: Change the greeting'), SHORT);
  assert.equal(fs.readFileSync(greetPath, 'utf8'), original, 'planning changed greet.js');
  const reqs = requests();
  assert.equal(reqs.length, 3);
  const tools = (reqs[0].body?.tools ?? reqs[0].tools ?? []).map((t) => t.name);
  assert.deepEqual(tools, ['read_file', 'todo'], 'plan mode offers only what changes nothing');
  assert.match(JSON.stringify(reqs[1]), /Error: plan mode: write_file/);
  // The Approve action is on the plan view's title too.
  await page.locator('.part.sidebar .actions-container .action-label[aria-label="Approve Plan"]').first().waitFor({ state: 'attached', timeout: SHORT });
  await screenshot('plan-ready.png');
});

step('Approve starts the run that acts; the edit lands', async () => {
  const toast = page.locator('.notifications-toasts .notification-toast', { hasText: 'is ready; nothing has changed yet' });
  await toast.locator('.monaco-button', { hasText: /^Approve$/ }).click({ timeout: SHORT });
  await waitFor('the approved run', async () => requests().length, (n) => n >= 5, LONG);
  await waitStatus(/stepwise: idle/, LONG);
  assert.match(JSON.stringify(requests()[3]), /<plan-approved>/);
  await openFile('greet.js');
  await waitFor('the edit in the editor', editorText, (t) => t.includes('planned first!'), LONG);
  await waitFor('the step in progress', planRows, (r) => r.some((x) => x.includes('Change the greeting')), SHORT);
  await screenshot('approved.png');
});
