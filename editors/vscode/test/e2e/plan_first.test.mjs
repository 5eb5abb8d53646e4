// End-to-end test of plan first in real VS Code (code-server): Plan First toggled on from the plan view, a run
// plans read-only (its write is refused, nothing changes), ends with the plan in the view and Approve offered;
// clicking Approve starts the run that acts, and its edit lands in the editor. Then a task from the
// Conversation view: it ends plan_ready with Approve / Approve with Fresh Context / Comment under the plan in
// the view; Comment sends the text typed in the view (one more planning round), Approve in the view runs the
// plan and its edit lands. Each approval is said as one ("✓ you approved the plan") in the transcript and the
// view, never as an edit. Screenshots: plan-first/*.png (view-plan-ready-view.png: the view with the buttons).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  LONG,
  SHORT,
  answerInputBox,
  artifacts,
  clearToasts,
  editorText,
  greetPath,
  norm,
  onlyConversation,
  openFile,
  page,
  planRows,
  requests,
  runCommand,
  screenshot,
  step,
  toastText,
  transcriptLog,
  useCodeServer,
  viewFrame,
  waitFor,
  waitStatus,
} from './harness.mjs';

const EDITED = 'Hello, ${name}, planned first!';
const TWICE = 'Hello, ${name}, planned first, TWICE!';

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
  // A task from the Conversation view plans (Plan First is still on).
  { type: 'turn', tool_calls: [{ name: 'todo', input: { items: [{ id: '1', text: 'Say it twice', status: 'pending' }] } }] },
  { type: 'turn', text: 'The second plan is ready.' },
  // Commented on in the view: the plan again.
  { type: 'turn', tool_calls: [{ name: 'todo', input: { items: [{ id: '1', text: 'Say it twice, louder', status: 'pending' }] } }] },
  { type: 'turn', text: 'The plan is revised.' },
  // Approved in the view: the edit.
  { type: 'turn', tool_calls: [{ name: 'edit_file', input: { path: 'greet.js', old_text: EDITED, new_text: TWICE } }] },
  { type: 'turn', text: 'Done again.' },
];

useCodeServer(SCRIPT, { artifacts: 'plan-first', keyViaEnv: true });

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
  // bash too where the read-only sandbox can start (docs/protocol.md "Plan first"), never a tool that writes;
  // `task` runs only the read-only `explore` agent in plan mode (docs/protocol.md "Subagents").
  assert.deepEqual(tools.filter((t) => t !== 'bash'), ['read_file', 'todo', 'diagnostics', 'code_nav', 'task'], 'plan mode offers only what changes nothing (VS Code answers stepwise/query: the read-only code-intelligence tools too)');
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
  // The approval is said as one, not as an edit of the plan.
  await waitFor('the approval in the transcript', async () => transcriptLog(), (t) => t.includes('✓ you approved the plan: 0/1'), SHORT);
  assert.ok(!transcriptLog().includes('you changed the plan'), 'an approval is not an edit');
  await openFile('greet.js');
  await waitFor('the edit in the editor', editorText, (t) => t.includes('planned first!'), LONG);
  await waitFor('the step in progress', planRows, (r) => r.some((x) => x.includes('Change the greeting')), SHORT);
  await screenshot('approved.png');
});

// ---- the Conversation view ------------------------------------------------------------------------------------

let frame;
const planBar = () => frame.locator('.plan-ready');
const planButton = (name) => frame.locator('.plan-ready button', { hasText: new RegExp(`^${name}$`) });
const viewPlan = async () => norm(await frame.locator('.plan-item').allTextContents().then((t) => t.join('\n')));

step('a task from the Conversation view ends plan_ready: the view offers Approve, Approve with Fresh Context, Comment', async () => {
  await clearToasts();
  await runCommand('Stepwise: Focus on Conversation View');
  frame = await viewFrame();
  await onlyConversation();
  assert.equal(await planBar().isVisible(), false, 'no plan waits: no buttons');
  const box = frame.locator('textarea[aria-label="Message for the agent"]');
  await box.click();
  await box.fill('Say it twice');
  await box.press('Enter');
  await waitFor('the view plan run', async () => requests().length, (n) => n >= 7, LONG);
  await planButton('Approve').waitFor({ state: 'visible', timeout: LONG });
  await planButton('Approve with Fresh Context').waitFor({ state: 'visible', timeout: SHORT });
  await planButton('Comment').waitFor({ state: 'visible', timeout: SHORT });
  await waitFor('the plan in the view', viewPlan, (t) => t.includes('Say it twice'), SHORT);
  assert.equal(fs.readFileSync(greetPath, 'utf8').includes('TWICE'), false, 'planning changed greet.js');
});

step('Comment in the view sends the typed text: one more planning round, the buttons again', async () => {
  const box = frame.locator('textarea[aria-label="Message for the agent"]');
  await box.fill('Make it louder');
  await planButton('Comment').click({ timeout: SHORT });
  await waitFor('the comment round', async () => requests().length, (n) => n >= 9, LONG);
  assert.match(JSON.stringify(requests()[7]), /Make it louder/);
  assert.equal(await box.inputValue(), '', 'the comment left the input');
  await waitFor('the revised plan in the view', viewPlan, (t) => t.includes('louder'), LONG);
  await planButton('Approve').waitFor({ state: 'visible', timeout: LONG });
  await clearToasts();
  await screenshot('view-plan-ready.png');
  await page.locator('.part.sidebar').screenshot({ path: path.join(artifacts, 'view-plan-ready-view.png') });
});

step('Approve in the view starts the run that acts; the buttons go; the edit lands', async () => {
  await planButton('Approve').click({ timeout: SHORT });
  await waitFor('the approved run', async () => requests().length, (n) => n >= 11, LONG);
  assert.match(JSON.stringify(requests()[9]), /<plan-approved>/);
  await waitStatus(/stepwise: idle/, LONG);
  // The edit lands in the open editor (unsaved, like the first one).
  await openFile('greet.js');
  await waitFor('the edit in the editor', editorText, (t) => t.includes('planned first, TWICE!'), LONG);
  await planBar().waitFor({ state: 'hidden', timeout: SHORT });
  const notes = async () => norm(await frame.locator('.entry.note.planEdit').allTextContents().then((t) => t.join('\n')));
  await waitFor('the approval in the view', notes, (t) => t.includes('✓ you approved the plan: 0/1'), SHORT);
  assert.ok(!(await notes()).includes('you changed the plan'), 'the view says approved, not changed');
  await screenshot('view-approved.png');
});
