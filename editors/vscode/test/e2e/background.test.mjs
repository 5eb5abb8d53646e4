// End-to-end test of background tasks in the Conversation view, in real VS Code (code-server): the scripted
// model starts a ticker that prints a line every 0.2 s and a command that fails at once (`background_run`);
// the view lists both with their command, state and output, the ticker's output updating; Stop ends the
// ticker (killed by the user, its shell gone); the failed one is dismissed; the next run takes the ended
// ticker off the list. Screenshots: background/*.png.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { LONG, SHORT, artifacts, norm, onlyConversation, page, runCommand, screenshot, statusBarText, step, transcriptLog, useCodeServer, viewFrame, waitFor, waitStatus, workspaceDir } from './harness.mjs';

const TICKER = 'echo $$ > ticker.pid; i=0; while true; do i=$((i+1)); echo "tick $i"; sleep 0.2; done';
const FAILING = 'echo "build failed: missing script dev" >&2; exit 3';
const SCRIPT = [
  { type: 'turn', text: 'Starting the ticker.', tool_calls: [{ name: 'background_run', input: { command: TICKER } }] },
  { type: 'turn', tool_calls: [{ name: 'background_run', input: { command: FAILING } }] },
  { type: 'turn', text: 'The ticker runs in the background.' },
  { type: 'turn', text: 'Nothing else to do.' },
];

useCodeServer(SCRIPT, { artifacts: 'background', keyViaEnv: true });

/** Whether process `pid` still runs (a zombie does not). */
function alive(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 1).trim());
  } catch {
    return false;
  }
}

async function screenshots(name) {
  await screenshot(`${name}.png`);
  await page.locator('.part.sidebar').screenshot({ path: path.join(artifacts, `${name}-view.png`) });
}

let frame;
const tickNumber = (t) => Math.max(0, ...[...(t ?? '').matchAll(/tick (\d+)/g)].map((m) => Number(m[1])));

step('the view lists the running task with its output as it prints, and the one that failed', async () => {
  await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: LONG });
  await page.locator('.part.activitybar [aria-label^="Stepwise"]').first().waitFor({ timeout: LONG });
  await runCommand('Stepwise: Focus on Conversation View');
  frame = await viewFrame();
  await onlyConversation();
  const box = frame.locator('textarea[aria-label="Message for the agent"]');
  await box.click();
  await box.fill('Start the ticker in the background');
  await box.press('Enter');
  const ticker = frame.locator('.bg-task[data-task="bg-1"]');
  await ticker.waitFor({ timeout: LONG });
  assert.equal(norm(await ticker.locator('.bg-command').textContent()), TICKER);
  await waitFor('the ticker running, printing', () => ticker.textContent(), (t) => /running/.test(t ?? '') && tickNumber(t) >= 2, LONG);
  const failed = frame.locator('.bg-task[data-task="bg-2"]');
  await waitFor('the failed task with its code and output', () => failed.textContent(), (t) => /exited 3/.test(t ?? '') && /build failed: missing script dev/.test(t ?? ''), LONG);
  assert.match(await failed.getAttribute('class'), /\bfailed\b/);
  // The run ended; the task goes on, and its output keeps coming.
  await waitStatus(/stepwise: idle/, LONG);
  // The status bar counts the task still running after the run (bg-2 has ended).
  await waitStatus(/stepwise: idle.* · 1 background task/, SHORT);
  const seen = tickNumber(await ticker.locator('.bg-tail').textContent());
  await waitFor('newer output', () => ticker.locator('.bg-tail').textContent(), (t) => tickNumber(t) >= seen + 3, SHORT);
  // The output box follows the newest lines (scrolled to its end once they overflow it).
  const followed = (p) => p.scrollHeight > p.clientHeight && p.scrollHeight - p.scrollTop - p.clientHeight < 4;
  await waitFor('the newest output in sight', () => ticker.locator('.bg-tail').evaluate(followed), (v) => v === true, SHORT);
  assert.match(norm(await frame.locator('.background-title').textContent()), /1 running/);
  assert.equal(await ticker.locator('button.bg-stop', { hasText: /^Stop$/ }).count(), 1);
  await screenshots('background-running');
});

step('Stop ends the task: killed by the user, its process gone; it stays listed after the run', async () => {
  const pid = Number(await waitFor('the ticker pid', () => fs.readFileSync(path.join(workspaceDir, 'ticker.pid'), 'utf8').trim(), (p) => /^\d+$/.test(p ?? ''), SHORT));
  assert.ok(alive(pid), `the ticker ${pid} runs before Stop`);
  const ticker = frame.locator('.bg-task[data-task="bg-1"]');
  await ticker.getByRole('button', { name: 'Stop bg-1' }).click();
  await waitFor('the ticker killed', () => ticker.locator('.bg-state').textContent(), (t) => norm(t) === 'killed by the user (SIGTERM)', LONG);
  // Its end between runs sends no status: the status bar follows stepwise/background.
  await waitFor('no task counted in the status bar', statusBarText, (t) => /stepwise: idle/.test(t) && !/background task/.test(t), SHORT);
  assert.ok(!alive(pid), `the ticker's shell ${pid} outlived its Stop`);
  assert.match(await ticker.getAttribute('class'), /\bkilled\b/);
  assert.equal(await ticker.locator('button.bg-stop').count(), 0, 'no Stop on an ended task');
  const last = tickNumber(await ticker.locator('.bg-tail').textContent());
  assert.ok(last >= 5, `its output is still shown: tick ${last}`);
  assert.match(norm(await frame.locator('.background-title').textContent()), /0 running/);
  await waitFor('the end in the transcript', () => transcriptLog(), (t) => /bg-1: killed by the user \(SIGTERM\); none of its processes is left/.test(t), SHORT);
  await screenshots('background');
});

step('an ended task is dismissed; the next run takes the others off the list', async () => {
  const failed = frame.locator('.bg-task[data-task="bg-2"]');
  await failed.getByRole('button', { name: 'Dismiss bg-2' }).click();
  await failed.waitFor({ state: 'detached', timeout: SHORT });
  await frame.locator('.bg-task[data-task="bg-1"]').waitFor({ timeout: SHORT });
  const box = frame.locator('textarea[aria-label="Message for the agent"]');
  await box.click();
  await box.fill('Anything else?');
  await box.press('Enter');
  await frame.locator('.assistant', { hasText: 'Nothing else to do.' }).waitFor({ timeout: LONG });
  await waitFor('no task listed', () => frame.locator('.bg-task').count(), (n) => n === 0, SHORT);
  assert.equal(await frame.locator('section.background').isHidden(), true, 'the section is hidden when empty');
});
