// End-to-end test of a window reload in real VS Code (code-server), issue 39: a run changes notes.txt on disk
// and ends with the change waiting for review; "Developer: Reload Window" starts a new extension host and a new
// server while the old one ends; the Conversation view comes back with the run, and so does the Changes view:
// it lists notes.txt with its hunk to review, not its empty-state text. Then the case real VS Code showed: the new
// server starts while the checkpoints' lock is still held (here by `flock`, standing for an old server slow to
// end): the Changes view is empty meanwhile, and lists notes.txt once the lock is let go (the new server takes the
// store over and says so with `stepwise/review`). Screenshots: reload/*.png.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { LONG, SHORT, findFiles, log, page, runCommand, scratch, screenshot, serverLog, step, useCodeServer, viewFrame, waitFor, waitStatus } from './harness.mjs';

const TASK = 'Write the notes';
const SCRIPT = [
  { type: 'turn', text: 'Writing them.', tool_calls: [{ name: 'bash', input: { command: "printf 'first\\nsecond\\n' > notes.txt" } }] },
  { type: 'turn', text: 'The notes are written.' },
];

useCodeServer(SCRIPT, { artifacts: 'reload', keyViaEnv: true });

/** The pids of running `stepwise lsp` processes. */
function serverPids() {
  const ps = spawnSync('ps', ['-ww', '-eo', 'pid=,args='], { encoding: 'utf8' });
  return (ps.stdout ?? '')
    .split('\n')
    .map((l) => l.trim().match(/^(\d+)\s+(.*)$/))
    .filter((m) => m && /\/stepwise lsp( --stdio)?$/.test(m[2]))
    .map((m) => Number(m[1]));
}

/** The rows of the Changes view. */
async function changeRows() {
  return page
    .locator('.pane', { has: page.locator('.pane-header', { hasText: /Changes/i }) })
    .locator('.monaco-list-row')
    .evaluateAll((rows) => rows.map((r) => r.getAttribute('aria-label') ?? ''));
}

const TO_REVIEW = /^notes\.txt, created, (1 hunk )?to review/;
let before = [];

step('a run creates notes.txt; the Changes view lists it to review', async () => {
  await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: LONG });
  await page.locator('.part.activitybar [aria-label^="Stepwise"]').first().waitFor({ timeout: LONG });
  await runCommand('Stepwise: Focus on Conversation View');
  const frame = await viewFrame();
  const box = frame.locator('textarea[aria-label="Message for the agent"]');
  await box.click();
  await box.fill(TASK);
  await box.press('Enter');
  await waitStatus(/stepwise: idle/, LONG);
  await runCommand('Stepwise: Focus on Changes View');
  await waitFor('notes.txt to review in the Changes view', changeRows, (r) => r.some((x) => TO_REVIEW.test(x)), LONG);
  before = serverPids();
  assert.ok(before.length >= 1, 'a server runs');
  await screenshot('before-reload.png');
});

step('after Developer: Reload Window the Conversation and the Changes view come back', async () => {
  await runCommand('Developer: Reload Window');
  await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: LONG });
  await page.locator('.part.activitybar [aria-label^="Stepwise"]').first().waitFor({ timeout: LONG });
  // A new server (the old one ends on its own).
  await waitFor('a new server', async () => serverPids(), (p) => p.some((pid) => !before.includes(pid)), LONG);
  await runCommand('Stepwise: Focus on Conversation View');
  const frame = await viewFrame();
  await frame.locator('.turn.user', { hasText: TASK }).waitFor({ timeout: LONG });
  await runCommand('Stepwise: Focus on Changes View');
  const rows = await waitFor('notes.txt to review in the Changes view again', changeRows, (r) => r.some((x) => TO_REVIEW.test(x)), LONG).catch((e) => {
    log(`server log:\n${serverLog().slice(-4000)}`);
    throw e;
  });
  assert.ok(rows.length >= 2, `rows: ${rows}`);
  const empty = page.locator('.pane', { has: page.locator('.pane-header', { hasText: /Changes/i }) }).locator('.welcome-view-content');
  assert.equal(await empty.count(), 0, 'no empty-state text while changes wait for review');
  // Whether the new server met the old one still holding the checkpoints (then it took them over).
  const met = /checkpoints kept for this process only/.test(serverLog());
  const tookOver = /checkpoints: took over/.test(serverLog());
  log(`the new server met the old one: ${met}; took the store over: ${tookOver}`);
  if (met) assert.ok(tookOver, 'the store was taken over');
  await waitFor('the old server gone', async () => serverPids(), (p) => before.every((pid) => !p.includes(pid)), SHORT);
  await screenshot('after-reload.png');
});

step('a reload while another process still holds the checkpoints: the Changes view lists the changes once it lets go', async () => {
  const [lock] = findFiles(path.join(scratch, 'state'), (n, p) => n === 'lock' && path.basename(path.dirname(p)).endsWith('.checkpoints'));
  assert.ok(lock && fs.existsSync(lock), 'the checkpoints lock file');
  const kept = () => (serverLog().match(/checkpoints kept for this process only/g) ?? []).length;
  const keptBefore = kept();
  // Waits for the lock (the server has it), holds it until its stdin closes.
  const holder = spawn('flock', ['-x', lock, 'cat'], { stdio: ['pipe', 'ignore', 'inherit'] });
  const ended = new Promise((resolve) => holder.on('exit', resolve));
  try {
    before = serverPids();
    await runCommand('Developer: Reload Window');
    await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: LONG });
    await waitFor('a new server', async () => serverPids(), (p) => p.some((pid) => !before.includes(pid)), LONG);
    await waitFor('the new server finding the checkpoints held', async () => kept(), (n) => n > keptBefore, LONG);
    await runCommand('Stepwise: Focus on Changes View');
    const empty = page.locator('.pane', { has: page.locator('.pane-header', { hasText: /Changes/i }) }).locator('.welcome-view-content');
    await empty.waitFor({ state: 'visible', timeout: LONG });
    await screenshot('held.png');
  } finally {
    holder.stdin.end();
  }
  await ended;
  await waitFor('notes.txt to review once the lock is let go', changeRows, (r) => r.some((x) => TO_REVIEW.test(x)), LONG);
  assert.match(serverLog(), /checkpoints: took over/);
  await screenshot('taken-over.png');
});
