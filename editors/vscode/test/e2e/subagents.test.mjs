// End-to-end test of subagents (issue 48) in the Conversation view in real VS Code (code-server): the agent calls
// `task` twice in one response; the mock model answers each child from a script of its own (by its prompt, the
// child's first message). Both task cards are live while the children run (state, round count, latest call), the
// children's calls are not in the conversation's list but inside their card when it is opened; Stop on the card of
// the child that waits on `sleep 30` ends that child alone (its card says cancelled) while the other one goes on
// and finishes (done); a child's question (approval `ask`) shows on its card naming it, the card waiting; after a
// reload the children's calls are under their cards again.
// Screenshots: subagents/*.png (live-view.png is the README's media/screenshots/subagents.png).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  LONG,
  SHORT,
  artifacts,
  norm,
  onlyConversation,
  page,
  requests,
  runCommand,
  screenshot,
  serverLog,
  step,
  useCodeServer,
  viewFrame,
  waitFor,
  waitStatus,
  workspaceDir,
  writeFolderSettings,
} from './harness.mjs';

const TASK = 'Look into the two questions at once';
const task = (id, prompt, description) => ({ id, name: 'task', input: { prompt, description } });
const bash = (command) => ({ type: 'turn', tool_calls: [{ name: 'bash', input: { command } }] });
// The parent: both children in one response, then its answer from their results.
const SCRIPT = [
  { type: 'turn', text: 'Two children will look.', tool_calls: [task('ta', 'CHILD-A: wait for the slow check', 'waits on a slow check'), task('tb', 'CHILD-B: wait for the gate, then count', 'counts after the gate')] },
  { type: 'turn', text: 'Both children reported back.' },
  // The next prompt: a child whose command asks first.
  { type: 'turn', tool_calls: [task('tc', 'CHILD-C: write asked.txt', 'writes asked.txt')] },
  { type: 'turn', text: 'Child C wrote it.' },
];
const ROUTES = [
  // Its command waits until it is stopped; asked once more (no tools) it sums up.
  { key: 'CHILD-A', steps: [bash('sleep 30'), { type: 'turn', text: 'Stopped while the check was still running.' }] },
  // It waits for a file the test makes once A is stopped, then answers.
  { key: 'CHILD-B', steps: [bash('while [ ! -e gate ]; do sleep 0.1; done; echo gate open'), bash('ls | wc -l'), { type: 'turn', text: 'Counted the files.' }] },
  { key: 'CHILD-C', steps: [bash('echo asked > asked.txt'), { type: 'turn', text: 'Wrote asked.txt.' }] },
];

useCodeServer(SCRIPT, { artifacts: 'subagents', keyViaEnv: true, routes: ROUTES, settings: { 'stepwise.approval': 'auto', 'stepwise.diagnostics': 'off' } });

let frame;
const card = (description) => frame.locator('.entries > .card.tool[data-tool="task"]', { hasText: description });
const A = 'waits on a slow check';
const B = 'counts after the gate';
const stateOf = async (description) => norm(await card(description).locator('.sa-state').textContent({ timeout: SHORT }));
const lineOf = async (description) => norm(await card(description).locator('.sa-line').textContent({ timeout: SHORT }));
const latestOf = async (description) => norm(await card(description).locator('.sa-latest').textContent({ timeout: SHORT }));

/** The child's calls as its opened card shows them: [tool, summary]. */
async function childCalls(description) {
  const c = card(description);
  const details = c.locator('details.sa-calls');
  await details.waitFor({ timeout: LONG });
  if ((await details.getAttribute('open')) === null) await details.locator('summary').first().click();
  await c.locator('.sa-children').waitFor({ state: 'visible', timeout: SHORT });
  return c.locator('.sa-children > .card.tool').evaluateAll((cards) => cards.map((x) => [x.getAttribute('data-tool'), x.querySelector('.summary')?.textContent ?? '']));
}

step('two task calls of one response: both cards are live while their children run', async () => {
  await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: LONG });
  await page.locator('.part.activitybar [aria-label^="Stepwise"]').first().waitFor({ timeout: LONG });
  await runCommand('Stepwise: Focus on Conversation View');
  frame = await viewFrame();
  await onlyConversation();
  const box = frame.locator('textarea[aria-label="Message for the agent"]');
  await box.click();
  await box.fill(TASK);
  await box.press('Enter');

  // Both children run at once: each card shows its state, its round and its latest call (the command it waits on).
  await waitFor("A's latest call", () => latestOf(A), (t) => t === 'latest: bash sleep 30', LONG);
  await waitFor("B's latest call", () => latestOf(B), (t) => t.startsWith('latest: bash while [ ! -e gate ]'), LONG);
  assert.equal(await stateOf(A), 'running');
  assert.equal(await stateOf(B), 'running');
  assert.match(await lineOf(A), /^sa-\d · 1 round · [\d.]+k? tokens$/);
  assert.match(await lineOf(B), /^sa-\d · 1 round · /);
  assert.notEqual((await lineOf(A)).slice(0, 4), (await lineOf(B)).slice(0, 4), 'two children, two ids');
  assert.equal(await card(A).locator('button.sa-stop').count(), 1, 'Stop on a running child');
  // The children's calls are not in the conversation's list.
  assert.equal(await frame.locator('.entries > .card.tool[data-tool="bash"]').count(), 0);
  // Opened, A's card shows its call, running.
  assert.deepEqual(await childCalls(A), [['bash', 'sleep 30']]);
  assert.match((await card(A).locator('.sa-children > .card.tool').getAttribute('class')) ?? '', /\brunning\b/);
  await waitStatus(/stepwise: running/, SHORT);
  await screenshot('live.png');
  await page.locator('.part.sidebar').screenshot({ path: path.join(artifacts, 'live-view.png') });
});

step("Stop on A's card ends that child alone: cancelled, while B goes on and finishes", async () => {
  await card(A).locator('button.sa-stop').click();
  await waitFor("A's card cancelled", () => stateOf(A), (s) => s === 'cancelled', LONG);
  assert.equal(await card(A).locator('button.sa-stop').count(), 0, 'no Stop once it ended');
  // The card stays open across its redraws; its call ended.
  assert.equal(await card(A).locator('details.sa-calls').getAttribute('open'), '');
  await waitFor("A's call ended", () => card(A).locator('.sa-children > .card.tool').getAttribute('class'), (c) => !/\brunning\b/.test(c ?? ''), SHORT);
  // B still runs (its gate is shut), and the run too.
  assert.equal(await stateOf(B), 'running');
  await waitStatus(/stepwise: running/, SHORT);
  await screenshot('a-stopped.png');

  fs.writeFileSync(path.join(workspaceDir, 'gate'), '');
  await waitFor("B's card done", () => stateOf(B), (s) => s === 'done', LONG);
  await frame.locator('.entries > .assistant', { hasText: 'Both children reported back.' }).waitFor({ timeout: LONG });
  await waitStatus(/stepwise: idle/, LONG);
  assert.match(await lineOf(B), /^sa-\d · 3 rounds · /);
  assert.deepEqual((await childCalls(B)).map(([tool]) => tool), ['bash', 'bash']);
  // The parent read A's summary with the line saying it was cancelled, and B's answer.
  const last = requests().filter((r) => JSON.stringify(r.body.messages[0]).includes(TASK)).pop();
  const results = JSON.stringify(last?.body.messages ?? []);
  assert.match(results, /Stopped while the check was still running\.[^"]*\(subagent sa-\d: \d+ rounds, \d+ tokens, it was cancelled/);
  assert.match(results, /Counted the files\.[^"]*\(subagent sa-\d: 3 rounds, \d+ tokens, done\)/);
  await screenshot('ended.png');
  await page.locator('.part.sidebar').screenshot({ path: path.join(artifacts, 'ended-view.png') });
});

step("a child's question shows on its task card naming the child, the card waiting meanwhile", async () => {
  const before = serverLog().length;
  writeFolderSettings({ 'stepwise.approval': 'ask' });
  await waitFor('the server to pull approval "ask"', async () => serverLog().slice(before), (l) => /settings for .*"approval":"ask"/.test(l), LONG);
  const box = frame.locator('textarea[aria-label="Message for the agent"]');
  await box.click();
  await box.fill('Now write the file');
  await box.press('Enter');
  const C = 'writes asked.txt';
  const question = card(C).locator('.approval', { hasText: 'Run this command?' });
  await question.waitFor({ timeout: LONG });
  assert.match(norm(await question.locator('.asker').textContent()), /^subagent sa-\d: writes asked\.txt asks:$/);
  assert.equal(norm(await question.locator('pre.concerns').textContent()), 'echo asked > asked.txt');
  assert.equal(await stateOf(C), 'waiting for you');
  assert.equal(await frame.locator('.entries > .card.tool[data-tool="bash"]').count(), 0, "the child's call is in its card");
  await waitStatus(/stepwise: waiting/, SHORT);
  // Sent after the cards above were opened (the list no longer at its end): the list follows the new turn.
  const allow = question.locator('button', { hasText: /^Allow$/ });
  const inView = async () => {
    const [b, l] = [await allow.boundingBox(), await frame.locator('.entries').boundingBox()];
    return !!b && !!l && b.y >= l.y && b.y + b.height <= l.y + l.height + 1;
  };
  await waitFor("the question's buttons in view", inView, (v) => v, SHORT);
  await screenshot('question.png');
  await page.locator('.part.sidebar').screenshot({ path: path.join(artifacts, 'question-view.png') });
  await allow.click();
  await waitFor("C's card done", () => stateOf(C), (s) => s === 'done', LONG);
  await card(C).locator('.approval.answered', { hasText: 'Allowed' }).waitFor({ timeout: SHORT });
  await frame.locator('.entries > .assistant', { hasText: 'Child C wrote it.' }).waitFor({ timeout: LONG });
  assert.equal(fs.readFileSync(path.join(workspaceDir, 'asked.txt'), 'utf8'), 'asked\n');
});

step("after a reload the children's calls are under their task cards again", async () => {
  await page.reload({ timeout: LONG });
  await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: LONG });
  // The view comes back open (the window keeps its layout).
  frame = await viewFrame();
  await frame.locator('.entries > .assistant', { hasText: 'Both children reported back.' }).waitFor({ timeout: LONG });
  await frame.locator('.entries > .assistant', { hasText: 'Child C wrote it.' }).waitFor({ timeout: LONG });
  assert.equal(await frame.locator('.entries > .card.tool[data-tool="task"]').count(), 3);
  assert.equal(await frame.locator('.entries > .card.tool[data-tool="bash"]').count(), 0, 'not in the list');
  assert.equal(await stateOf(A), 'cancelled');
  assert.equal(await stateOf(B), 'done');
  assert.equal(await stateOf('writes asked.txt'), 'done');
  assert.deepEqual(await childCalls('writes asked.txt'), [['bash', 'echo asked > asked.txt']]);
  assert.deepEqual(await childCalls(A), [['bash', 'sleep 30']]);
  assert.deepEqual(await childCalls(B), [
    ['bash', 'while [ ! -e gate ]; do sleep 0.1; done; echo gate open'],
    ['bash', 'ls | wc -l'],
  ]);
  // And their text.
  await card(B).locator('.sa-children > .assistant', { hasText: 'Counted the files.' }).waitFor({ timeout: SHORT });
  await screenshot('reloaded.png');
  await page.locator('.part.sidebar').screenshot({ path: path.join(artifacts, 'reloaded-view.png') });
});
