// End-to-end test of sessions side by side in real VS Code (code-server): the Conversation view's selector
// makes a second session while the folder's own waits for an answer; both run at once (the mock model answers
// each conversation from a script of its own, by its first message), each shows its own conversation and plan,
// the status bar counts them, and a question of the session not in view badges its tab and comes as a
// notification that brings it into view. Then a session made in a worktree of its own changes greet.js there
// (not in the folder) until Apply brings the change into the open editor (in its undo), reviewable in the Changes
// view; Discard asks first while its worktree holds a change not applied; after a reload the sessions and the one
// in view are back. Screenshots: sessions/*.png (sessions-view.png is the README's media/screenshots/sessions.png).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {
  LONG,
  SHORT,
  artifacts,
  editorText,
  greetPath,
  norm,
  onlyConversation,
  openFile,
  page,
  runCommand,
  screenshot,
  statusBarText,
  step,
  useCodeServer,
  viewFrame,
  waitFor,
  waitStatus,
  workspaceDir,
} from './harness.mjs';

const todo = (...items) => ({ type: 'turn', tool_calls: [{ name: 'todo', input: { items: items.map(([id, text, status]) => ({ id, text, status })) } }] });
const bash = (command) => ({ type: 'turn', tool_calls: [{ name: 'bash', input: { command } }] });
const say = (text) => ({ type: 'turn', text });

const BETA = '[beta] write beta.txt';
const ALPHA = '[alpha] wait for the gate, then write alpha.txt';
const GAMMA = '[gamma] make the greeting louder';
const ROUTES = [
  // The folder's own session.
  { key: '[beta]', steps: [todo(['1', 'Write beta.txt', 'in_progress'], ['2', 'Say it is done', 'pending']), bash('echo beta > beta.txt'), todo(['1', 'Write beta.txt', 'completed'], ['2', 'Say it is done', 'completed']), say('Beta is done.')] },
  // Session 2: its first command waits for a file the test makes once another session is in view.
  {
    key: '[alpha]',
    steps: [todo(['1', 'Wait for the gate', 'in_progress']), bash('while [ ! -e gate ]; do sleep 0.1; done; echo gate open'), bash('echo alpha > alpha.txt'), todo(['1', 'Wait for the gate', 'completed']), say('Alpha is done.')],
  },
  // Session 3, in a worktree: greet.js there, then (a second task) README.md.
  {
    key: '[gamma]',
    steps: [
      todo(['1', 'Louder greeting', 'in_progress']),
      { type: 'turn', tool_calls: [{ name: 'edit_file', input: { path: 'greet.js', old_text: 'Hello, ${name}!', new_text: 'HELLO, ${name}!!' } }] },
      todo(['1', 'Louder greeting', 'completed']),
      say('Gamma changed greet.js in its worktree.'),
      { type: 'turn', tool_calls: [{ name: 'edit_file', input: { path: 'README.md', old_text: 'demo', new_text: 'loud demo' } }] },
      say('README too.'),
    ],
  },
];
// Any other conversation would take these: none should.
const SCRIPT = [say('unexpected: a conversation no route names')];

useCodeServer(SCRIPT, { artifacts: 'sessions', keyViaEnv: true, routes: ROUTES, settings: { 'stepwise.approval': 'ask', 'stepwise.diagnostics': 'off' } });

let frame;
const box = () => frame.locator('textarea[aria-label="Message for the agent"]');
const tab = (title) => frame.locator('.session-tab', { has: frame.locator('.title', { hasText: new RegExp(`^${title}$`) }) });
const planTexts = () => frame.locator('.plan-item').allTextContents();

async function send(text) {
  await box().click();
  await box().fill(text);
  await box().press('Enter');
  await frame.locator('.turn.user', { hasText: text }).waitFor({ timeout: LONG });
}

/** A screenshot of the whole window and one of the sidebar (the view). */
async function screenshots(name) {
  await screenshot(`${name}.png`);
  await page.locator('.part.sidebar').screenshot({ path: path.join(artifacts, `${name}-view.png`) });
}

step('two sessions of one folder run at once, each with its own conversation and plan', async () => {
  // A git repository, so the worktree session below is a git worktree on a branch of its own.
  const git = (...args) => spawnSync('git', ['-c', 'user.name=e2e', '-c', 'user.email=e2e@example.invalid', ...args], { cwd: workspaceDir, encoding: 'utf8' });
  for (const args of [['init', '-q'], ['add', '.'], ['commit', '-q', '-m', 'demo']]) assert.equal(git(...args).status, 0, `git ${args.join(' ')}`);
  await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: LONG });
  await page.locator('.part.activitybar [aria-label^="Stepwise"]').first().waitFor({ timeout: LONG });
  await runCommand('Stepwise: Focus on Conversation View');
  frame = await viewFrame();
  await onlyConversation();
  // The folder's own session, alone.
  await tab('Main').waitFor({ timeout: LONG });
  assert.equal(await tab('Main').getAttribute('aria-selected'), 'true');

  await send(BETA);
  await frame.locator('.plan-item.in_progress', { hasText: 'Write beta.txt' }).waitFor({ timeout: LONG });
  const betaCard = frame.locator('.card.tool[data-tool="bash"]', { hasText: 'echo beta > beta.txt' });
  await betaCard.locator('.approval button', { hasText: /^Allow$/ }).waitFor({ timeout: LONG });
  await waitStatus(/stepwise: waiting/, LONG);

  // New Session while the folder's own waits: an empty conversation in view, the other one's tab beside it.
  await frame.locator('button.session-new').click();
  await waitFor('Session 2 in view', () => tab('Session 2').getAttribute('aria-selected'), (v) => v === 'true', LONG);
  await waitFor('an empty conversation', () => frame.locator('.turn, .card').count(), (n) => n === 0, SHORT);
  assert.equal(await frame.locator('.plan-item').count(), 0, 'no plan yet');
  await send(ALPHA);
  await frame.locator('.plan-item.in_progress', { hasText: 'Wait for the gate' }).waitFor({ timeout: LONG });
  const gateCard = frame.locator('.card.tool[data-tool="bash"]', { hasText: 'while [ ! -e gate ]' });
  await gateCard.locator('.approval button', { hasText: /^Allow$/ }).waitFor({ timeout: LONG });
  assert.equal(await frame.locator('.turn.user', { hasText: BETA }).count(), 0, "the folder's own conversation is not in this one");
  assert.deepEqual((await planTexts()).map(norm).filter((t) => /beta/i.test(t)), [], 'nor its plan');
  // Both run: the status bar counts them; the folder's own question badges its tab.
  await waitStatus(/stepwise: 2 running/, LONG);
  await tab('Main').locator('.badge').waitFor({ timeout: SHORT });
  assert.match(norm(await tab('Main').textContent()), /1\/2|0\/2/);
  await screenshots('sessions');

  // Session 2's command runs (and waits for the gate); the view goes to the folder's own session.
  await gateCard.locator('.approval button', { hasText: /^Allow$/ }).click();
  await gateCard.locator('.approval.answered', { hasText: 'Allowed' }).waitFor({ timeout: LONG });
  await tab('Main').click();
  await frame.locator('.turn.user', { hasText: BETA }).waitFor({ timeout: LONG });
  await frame.locator('.plan-item', { hasText: 'Say it is done' }).waitFor({ timeout: SHORT });
  assert.equal(await frame.locator('.turn.user', { hasText: ALPHA }).count(), 0, "Session 2's conversation is not here");
  assert.equal(await tab('Main').locator('.badge').count(), 0, 'in view: no badge');

  // Session 2 asks again while the folder's own is in view: its tab is badged and a notification offers it.
  fs.writeFileSync(path.join(workspaceDir, 'gate'), '');
  const toast = page.locator('.notifications-toasts .notification-toast', { hasText: 'Session 2 asks' });
  await toast.waitFor({ state: 'visible', timeout: LONG });
  assert.match(norm(await toast.textContent()), /echo alpha > alpha\.txt/);
  await tab('Session 2').locator('.badge').waitFor({ timeout: SHORT });
  assert.equal(await frame.locator('.card.tool', { hasText: 'echo alpha' }).count(), 0, 'its card is in its own conversation');

  // The folder's own question is answered in its card; its run ends.
  await betaCard.locator('.approval button', { hasText: /^Allow$/ }).click();
  await frame.locator('.assistant', { hasText: 'Beta is done.' }).waitFor({ timeout: LONG });
  await frame.locator('.plan-item.completed', { hasText: 'Say it is done' }).waitFor({ timeout: LONG });

  // The notification's button brings Session 2 into view, its question in its card.
  await toast.locator('.monaco-button', { hasText: 'Show Session 2' }).click();
  await waitFor('Session 2 in view', () => tab('Session 2').getAttribute('aria-selected'), (v) => v === 'true', LONG);
  const alphaCard = frame.locator('.card.tool[data-tool="bash"]', { hasText: 'echo alpha > alpha.txt' });
  await alphaCard.locator('.approval button', { hasText: /^Allow$/ }).click();
  await frame.locator('.assistant', { hasText: 'Alpha is done.' }).waitFor({ timeout: LONG });
  await frame.locator('.plan-item.completed', { hasText: 'Wait for the gate' }).waitFor({ timeout: LONG });
  assert.equal(await frame.locator('.assistant', { hasText: 'Beta is done.' }).count(), 0);
  await waitFor('both files written', () => ['beta.txt', 'alpha.txt'].every((f) => fs.existsSync(path.join(workspaceDir, f))), (ok) => ok, SHORT);
  await waitFor('no run in the status bar', statusBarText, (t) => /stepwise: idle/.test(t) && !/running/.test(t), LONG);
});

step('a session in a worktree changes greet.js there; Apply brings the change into the editor, reviewable', async () => {
  await openFile('greet.js');
  await waitFor('greet.js in the editor', editorText, (t) => t.includes('Hello, ${name}!'), LONG);
  await frame.locator('button.session-new-worktree').click();
  await waitFor('Session 3 in view', () => tab('Session 3').getAttribute('aria-selected'), (v) => v === 'true', LONG);
  const where = frame.locator('.session-bar .worktree');
  await waitFor('its branch', () => where.textContent(), (t) => /stepwise\//.test(t ?? ''), LONG);
  const worktree = await where.getAttribute('title');
  assert.ok(worktree && fs.existsSync(path.join(worktree, 'greet.js')), `the worktree at ${worktree}`);
  await send(GAMMA);
  await frame.locator('.assistant', { hasText: 'Gamma changed greet.js' }).waitFor({ timeout: LONG });
  // Changed in the worktree, not in the folder: neither on disk nor in the open editor.
  await waitFor('greet.js changed in the worktree', () => fs.readFileSync(path.join(worktree, 'greet.js'), 'utf8'), (t) => /HELLO, \$\{name\}!!/.test(t), LONG);
  assert.match(fs.readFileSync(greetPath, 'utf8'), /Hello, \$\{name\}!/);
  assert.ok((await editorText()).includes('Hello, ${name}!'), 'the editor still has the folder\'s text');
  await waitFor('1 file not applied', () => frame.locator('.session-bar').textContent(), (t) => /1 file not applied/.test(norm(t)), LONG);
  assert.match(norm(await tab('Session 3').textContent()), /⎇ 1/);
  await screenshots('worktree');

  await frame.locator('.session-bar button[data-action="apply"]').click();
  await page.locator('.notifications-toasts .notification-toast', { hasText: 'applied greet.js of Session 3 to demo' }).waitFor({ timeout: LONG });
  // In the folder now, as an edit of the open document; the review lists it.
  const diff = page.locator('.monaco-diff-editor').first();
  await diff.waitFor({ state: 'visible', timeout: LONG });
  await waitFor('the text before on the left', () => diff.locator('.editor.original .view-lines').textContent(), (t) => norm(t).includes('Hello, ${name}!'), SHORT);
  await waitFor('the applied text on the right', () => diff.locator('.editor.modified .view-lines').textContent(), (t) => norm(t).includes('HELLO, ${name}!!'), SHORT);
  const rows = () =>
    page
      .locator('.pane', { has: page.locator('.pane-header', { hasText: /Changes/i }) })
      .locator('.monaco-list-row')
      .evaluateAll((r) => r.map((x) => x.getAttribute('aria-label') ?? ''));
  await waitFor('greet.js in the Changes view', rows, (r) => r.some((x) => /^greet\.js, modified, 1 hunk to review/.test(x)), LONG);
  await waitFor('nothing left to apply', () => frame.locator('.session-bar').textContent(), (t) => /nothing to apply/.test(norm(t)), LONG);
  // Behind the diff, the folder's greet.js (open since the start of this step; a tab of the worktree's, if VS Code
  // opened one for the agent's edit, names the worktree's folder) has the applied text, unsaved: an edit.
  await runCommand('View: Close Editor');
  const active = () => page.locator('.tabs-container .tab.active').textContent();
  await waitFor("the folder's greet.js in front", active, (t) => /^greet\.js/.test(norm(t).trim()) && !norm(t).includes(path.basename(worktree)), SHORT);
  await waitFor('the editor has the applied text', editorText, (t) => t.includes('HELLO, ${name}!!'), LONG);
  assert.match(fs.readFileSync(greetPath, 'utf8'), /Hello, \$\{name\}!/, 'not saved yet: an edit of the open document');
  await screenshots('applied');
  await page.locator('.part.editor .view-lines').first().click();
  await page.keyboard.press('Control+Z');
  await waitFor('undo takes the applied change back', editorText, (t) => t.includes('Hello, ${name}!'), SHORT);
  await page.keyboard.press('Control+Shift+Z');
  await waitFor('redo brings it again', editorText, (t) => t.includes('HELLO, ${name}!!'), SHORT);
});

step('Discard asks while the worktree holds a change not applied; after a reload the sessions are back', async () => {
  const worktree = await frame.locator('.session-bar .worktree').getAttribute('title');
  await send('[gamma] and the README');
  await frame.locator('.assistant', { hasText: 'README too.' }).waitFor({ timeout: LONG });
  await waitFor('1 file not applied', () => frame.locator('.session-bar').textContent(), (t) => /1 file not applied/.test(norm(t)), LONG);
  await frame.locator('.session-bar button[data-action="discard"]').click();
  const dialog = page.locator('.monaco-dialog-box');
  await dialog.waitFor({ state: 'visible', timeout: SHORT });
  assert.match(norm(await dialog.textContent()), /Discard Session 3\?.*1 changed file not applied/s);
  await dialog.locator('.monaco-button', { hasText: /^Cancel$/ }).click();
  await dialog.waitFor({ state: 'hidden', timeout: SHORT });
  assert.ok(fs.existsSync(worktree), 'kept');

  await page.reload({ timeout: LONG });
  await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: LONG });
  frame = await viewFrame();
  // The three sessions, Session 3 still in view with its conversation.
  await waitFor('the sessions after the reload', () => frame.locator('.session-tab .title').allTextContents(), (t) => ['Main', 'Session 2', 'Session 3'].every((x) => t.includes(x)), LONG);
  await waitFor('Session 3 in view', () => tab('Session 3').getAttribute('aria-selected'), (v) => v === 'true', LONG);
  await frame.locator('.turn.user', { hasText: GAMMA }).waitFor({ timeout: LONG });
  await screenshots('reloaded');

  await frame.locator('.session-bar button[data-action="discard"]').click();
  await dialog.waitFor({ state: 'visible', timeout: SHORT });
  await dialog.locator('.monaco-button', { hasText: /^Discard$/ }).click();
  await waitFor('Session 3 gone', () => frame.locator('.session-tab .title').allTextContents(), (t) => !t.includes('Session 3'), LONG);
  await waitFor('the folder\'s own in view', () => tab('Main').getAttribute('aria-selected'), (v) => v === 'true', SHORT);
  await frame.locator('.turn.user', { hasText: BETA }).waitFor({ timeout: LONG });
  await waitFor('its worktree removed', () => fs.existsSync(worktree), (exists) => !exists, LONG);
  assert.doesNotMatch(fs.readFileSync(path.join(workspaceDir, 'README.md'), 'utf8'), /loud demo/, 'the discarded change never reached the folder');
});
