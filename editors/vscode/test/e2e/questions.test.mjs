// End-to-end test of the server's questions (`stepwise/ask`) in the Conversation view, with the sandbox on
// (`workspace-write`) and approval "ask": a command the sandbox stopped (a write outside the workspace) asks in
// its own card, naming what the sandbox stopped, and Allow runs it outside (the file is there, the model read
// its output); a write to a protected file (.env) asks in its card and Deny refuses it; a question still open
// when the run is stopped leaves its card. No VS Code notification asks meanwhile.
// Screenshots: questions/*.png.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  LONG,
  SHORT,
  artifacts,
  onlyConversation,
  page,
  recordPath,
  runCommand,
  screenshot,
  step,
  useCodeServer,
  viewFrame,
  waitFor,
  waitStatus,
  workspaceDir,
} from './harness.mjs';

// Outside the workspace (and outside the sandbox's own TMPDIR): the sandbox stops a write there.
const OUTSIDE = fs.mkdtempSync(path.join(os.tmpdir(), 'stepwise-e2e-outside-'));
const MADE = path.join(OUTSIDE, 'made.txt');
const COMMAND = `echo made > ${MADE} && echo wrote it outside`;
const SCRIPT = [
  { type: 'turn', text: 'Writing outside.', tool_calls: [{ name: 'bash', input: { command: COMMAND } }] },
  { type: 'turn', tool_calls: [{ name: 'write_file', input: { path: '.env', content: 'ANTHROPIC_BASE_URL=http://evil\n' } }] },
  { type: 'turn', text: 'Done.' },
  // The second task: a protected write whose question is left open until Stop.
  { type: 'turn', tool_calls: [{ name: 'write_file', input: { path: 'AGENTS.md', content: 'obey\n' } }] },
  { type: 'turn', text: 'never' },
];

useCodeServer(SCRIPT, {
  artifacts: 'questions',
  keyViaEnv: true,
  settings: { 'stepwise.approval': 'ask', 'stepwise.sandbox': 'workspace-write' },
});

let frame;

async function screenshots(name) {
  await screenshot(`${name}.png`);
  await page.locator('.part.sidebar').screenshot({ path: path.join(artifacts, `${name}-view.png`) });
}

/** No VS Code notification asks: the view does. */
async function noToastAsks() {
  assert.equal(await page.locator('.notifications-toasts .notification-toast', { hasText: /stepwise/ }).count(), 0);
}

async function send(text) {
  const box = frame.locator('textarea[aria-label="Message for the agent"]');
  await box.click();
  await box.fill(text);
  await box.press('Enter');
}

step('a command the sandbox stopped asks in its card; Allow runs it outside the sandbox', async () => {
  await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: LONG });
  await page.locator('.part.activitybar [aria-label^="Stepwise"]').first().waitFor({ timeout: LONG });
  await runCommand('Stepwise: Focus on Conversation View');
  frame = await viewFrame();
  await onlyConversation();
  await send('Write a file outside');
  const card = frame.locator('.card.tool[data-tool="bash"]');
  const question = card.locator('.approval[data-kind="unsandboxed"]');
  await question.waitFor({ timeout: LONG });
  assert.match(await question.locator('.question').textContent(), /The sandbox stopped this command\. Run it outside the sandbox\?/);
  assert.equal(await question.locator('pre.concerns').textContent(), COMMAND);
  const detail = await question.locator('.detail').textContent();
  assert.ok(detail.startsWith('the sandbox stopped: ') && detail.includes(MADE), `what the sandbox stopped names the path: ${detail}`);
  for (const label of ['Allow', 'Allow for Session', 'Deny']) {
    assert.equal(await question.locator('button', { hasText: new RegExp(`^${label}$`) }).count(), 1, label);
  }
  assert.ok(!fs.existsSync(MADE), 'nothing ran outside before the answer');
  await waitStatus(/stepwise: waiting/, SHORT);
  await noToastAsks();
  await screenshots('unsandboxed-in-card');
  await question.locator('button', { hasText: /^Allow$/ }).click();
  await card.locator('.approval.answered', { hasText: 'Allowed' }).waitFor({ timeout: LONG });
  await waitFor('the file written outside', () => fs.existsSync(MADE) && fs.readFileSync(MADE, 'utf8'), (t) => t === 'made\n', LONG);
});

step('a protected write asks in its card; Deny refuses it; the model read the command\'s output', async () => {
  const card = frame.locator('.card.tool[data-tool="write_file"]');
  const question = card.locator('.approval[data-kind="protectedWrite"]');
  await question.waitFor({ timeout: LONG });
  assert.equal(await question.locator('pre.concerns').textContent(), '.env');
  assert.match(await question.locator('.detail').textContent(), /\.env/);
  await noToastAsks();
  await screenshots('protected-write-in-card');
  await question.locator('button', { hasText: /^Deny$/ }).click();
  await card.locator('.approval.answered.denied', { hasText: 'Denied' }).waitFor({ timeout: LONG });
  await frame.locator('.assistant', { hasText: 'Done.' }).waitFor({ timeout: LONG });
  await waitStatus(/stepwise: idle/, LONG);
  assert.ok(!fs.existsSync(path.join(workspaceDir, '.env')), '.env was not written');
  const requests = fs.readFileSync(recordPath, 'utf8');
  assert.ok(requests.includes('wrote it outside'), 'the model read the output of the run outside the sandbox');
  assert.ok(requests.includes('denied by the user'), 'the model read the refusal');
  await screenshots('questions-answered');
});

step('a question open when the run is stopped leaves its card', async () => {
  await send('Write the instructions');
  const question = frame.locator('.approval[data-kind="protectedWrite"]', { hasText: 'AGENTS.md' });
  await question.waitFor({ timeout: LONG });
  await frame.locator('button.stop').click();
  await waitStatus(/cancelled/, LONG);
  await question.waitFor({ state: 'detached', timeout: SHORT });
  assert.ok(!fs.existsSync(path.join(workspaceDir, 'AGENTS.md')));
  await noToastAsks();
});
