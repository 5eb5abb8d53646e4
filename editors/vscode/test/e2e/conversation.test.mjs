// End-to-end test of the Conversation view in real VS Code (code-server): a task typed into the view's textarea
// runs; the model's streamed reply is drawn as markdown (a bold word in a `strong`, a code block in a `pre`);
// the shell command is a card whose Allow button (approval "ask") lets it run; after a reload the view shows
// the conversation again (from `stepwise.conversation`); `/` and `@` complete in the input; a second task is
// stopped with Stop; Rewind to here on the first turn takes the conversation back to before it.
// Screenshots: conversation/*.png.
import assert from 'node:assert/strict';
import path from 'node:path';
import {
  LONG,
  SHORT,
  artifacts,
  norm,
  onlyConversation,
  page,
  runCommand,
  screenshot,
  step,
  useCodeServer,
  viewFrame,
  waitFor,
  waitStatus,
} from './harness.mjs';

const TASK = 'Count the lines of greet.js';
const SCRIPT = [
  {
    type: 'turn',
    text: 'I will **count** the lines with `wc`:\n\n```js\nconst lines = text.split("\\n").length;\n```\n\n<img src=x onerror="document.title=1">',
    tool_calls: [{ name: 'todo', input: { items: [{ id: '1', text: TASK, status: 'in_progress', activeForm: 'Counting lines' }] } }],
  },
  { type: 'turn', tool_calls: [{ name: 'bash', input: { command: 'wc -l < greet.js' } }] },
  { type: 'turn', tool_calls: [{ name: 'todo', input: { items: [{ id: '1', text: TASK, status: 'completed' }] } }] },
  { type: 'turn', text: 'greet.js has **6** lines.' },
  // The second task hangs until Stop.
  { type: 'hang' },
];

useCodeServer(SCRIPT, { artifacts: 'conversation', keyViaEnv: true, settings: { 'stepwise.approval': 'ask' } });

async function openView() {
  await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: LONG });
  await page.locator('.part.activitybar [aria-label^="Stepwise"]').first().waitFor({ timeout: LONG });
  await runCommand('Stepwise: Focus on Conversation View');
  return viewFrame();
}

let frame;

/** A screenshot of the whole window and one of the sidebar (the view). */
async function screenshots(name) {
  await screenshot(`${name}.png`);
  await page.locator('.part.sidebar').screenshot({ path: path.join(artifacts, `${name}-view.png`) });
}

step('a task typed into the view runs; the reply is drawn as markdown, the command is a card to allow', async () => {
  frame = await openView();
  await onlyConversation();
  const box = frame.locator('textarea[aria-label="Message for the agent"]');
  await box.click();
  await box.fill(TASK);
  await box.press('Enter');
  // The prompt shows as the user's turn; the streamed text as markdown.
  await frame.locator('.turn.user', { hasText: TASK }).waitFor({ timeout: LONG });
  await frame.locator('.assistant strong', { hasText: 'count' }).waitFor({ timeout: LONG });
  // The reply is still streaming when its first words show: wait for the code block's whole line.
  const block = frame.locator('.assistant pre code', { hasText: 'const lines = text.split' }).first();
  await block.waitFor({ timeout: LONG });
  assert.match(await block.textContent(), /const lines = text\.split\("\\n"\)\.length;/);
  assert.ok((await frame.locator('.assistant pre code .hljs-keyword').count()) > 0, 'the code block is highlighted');
  // Raw HTML from the model stays text: no img element, the tag shown as written.
  assert.equal(await frame.locator('.assistant img').count(), 0, 'no <img> from the model');
  assert.match(await frame.locator('.assistant').first().textContent(), /<img src=x onerror=/);
  // The plan is pinned above the conversation.
  await frame.locator('.plan-item.in_progress', { hasText: TASK }).waitFor({ timeout: LONG });
  // The shell command: a card with the command and the approval's buttons.
  const card = frame.locator('.card.tool[data-tool="bash"]');
  await card.waitFor({ timeout: LONG });
  assert.match(norm(await card.locator('.summary').textContent()), /wc -l < greet\.js/);
  const allow = card.locator('.approval button', { hasText: /^Allow$/ });
  await allow.waitFor({ timeout: LONG });
  assert.equal(await card.locator('.approval button', { hasText: /^Allow for Session$/ }).count(), 1);
  assert.equal(await card.locator('.approval button', { hasText: /^Deny$/ }).count(), 1);
  await waitStatus(/stepwise: waiting/, SHORT);
  // No VS Code notification asks meanwhile: the view does.
  assert.equal(await page.locator('.notifications-toasts .notification-toast', { hasText: 'Run this command?' }).count(), 0);
  await screenshots('approval-in-card');
  await allow.click();
  await card.locator('.approval.answered', { hasText: 'Allowed' }).waitFor({ timeout: LONG });
  await frame.locator('.card.tool.done[data-tool="bash"]').waitFor({ timeout: LONG });
  // The output is collapsed in the card; opened it shows the count.
  await card.locator('details.output summary').click();
  await waitFor('the output', () => card.locator('details.output pre').textContent(), (t) => /6/.test(t ?? ''), SHORT);
  await frame.locator('.assistant strong', { hasText: '6' }).waitFor({ timeout: LONG });
  await waitStatus(/stepwise: idle 1\/1/, LONG);
  await frame.locator('.plan-item.completed', { hasText: TASK }).waitFor({ timeout: SHORT });
  await waitFor('the footer with the usage', () => frame.locator('.footer').textContent(), (t) => /tokens/.test(t ?? ''), SHORT);
  await screenshots('conversation');
});

step('after a reload the view shows the conversation again', async () => {
  await page.reload({ timeout: LONG });
  await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: LONG });
  // The view was open: VS Code shows it again after the reload.
  frame = await viewFrame();
  await frame.locator('.turn.user', { hasText: TASK }).waitFor({ timeout: LONG });
  await frame.locator('.assistant strong', { hasText: 'count' }).waitFor({ timeout: LONG });
  await frame.locator('.card.tool[data-tool="bash"]', { hasText: 'wc -l < greet.js' }).waitFor({ timeout: LONG });
  await frame.locator('.assistant strong', { hasText: '6' }).waitFor({ timeout: LONG });
  assert.ok((await frame.locator('.turn.user button.rewind').count()) > 0, 'the turn offers Rewind to here');
  await screenshots('reloaded');
});

step('the input completes / and @; a hanging run is stopped with Stop', async () => {
  const box = frame.locator('textarea[aria-label="Message for the agent"]');
  await box.click();
  await box.fill('');
  await box.type('/re');
  const menu = frame.locator('.suggest');
  await waitFor('the slash commands', () => menu.locator('li').allTextContents(), (l) => l.some((x) => x.startsWith('/review')) && l.some((x) => x.startsWith('/rewind')), SHORT);
  await box.press('Escape');
  await box.fill('');
  await box.type('Explain @gre');
  await menu.locator('li', { hasText: 'greet.js' }).first().waitFor({ timeout: SHORT });
  await box.press('Tab');
  assert.equal(await box.inputValue(), 'Explain @greet.js ');
  await box.type('please');
  await box.press('Enter');
  const stop = frame.locator('button.stop');
  await stop.waitFor({ state: 'visible', timeout: LONG });
  await waitStatus(/stepwise: running/, LONG);
  assert.equal(await frame.locator('button.send').textContent(), 'Steer');
  await stop.click();
  await waitStatus(/cancelled/, LONG);
  await stop.waitFor({ state: 'hidden', timeout: SHORT });
  await frame.locator('.turn.user', { hasText: 'Explain @greet.js please' }).waitFor({ timeout: SHORT });
});

step('Rewind to here on the first turn takes the conversation back to before it', async () => {
  const turn = frame.locator('.turn.user', { hasText: TASK });
  await turn.hover();
  await turn.locator('button.rewind').click();
  const dialog = page.locator('.monaco-dialog-box');
  await dialog.waitFor({ state: 'visible', timeout: SHORT });
  await dialog.locator('.monaco-button', { hasText: /^Rewind$/ }).click();
  // Nothing of the conversation is left (the plan's reset may follow as a note).
  await waitFor('the conversation before the first turn', () => frame.locator('.turn, .assistant, .card').count(), (n) => n === 0, LONG);
});
