// End-to-end test of how long a round waits for VS Code's diagnostics (issue 36), in real VS Code (code-server)
// with its built-in TypeScript, timed by what the server reports it waited (its log line "the editor answered
// diagnostics for N document(s) in M ms of the W ms it was allowed (K settled)"), never by a wall clock:
//  1. a clean TypeScript project, an agent's edit that stays clean: TypeScript publishes nothing when a file
//     stays clean, yet the answer is settled (its server answered for the version) well inside the wait, and the
//     model is told of no error;
//  2. the agent reads a .ts file open in a tab (the editor is asked for its errors from before, in the
//     background), then a shell command breaks it, breaks a .ts file VS Code does not have open, and writes a
//     plain text file: the model's tool result names the read file's error; the editor opens the other .ts file
//     unshown so TypeScript checks it, and its error is listed under the line saying it was not compared with
//     before (the editor cannot check its text from before the command), never as new; the plain text file is
//     settled at once; the round does not wait the deadline;
//  3. a shell command writes a Python file, which no server of this VS Code checks (no Python extension): the
//     editor gives up soon and the model reads `not checked` with the time really waited, never silence;
//  4. a shell command breaks a file open in a tab: the editor is asked for the version its reload of the file
//     gives (not the old text's, which it would answer at once as clean), and the model reads the error.
// Screenshot: settling/shell-card.png (the bash card counting the error a command caused).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { LONG, SHORT, artifacts, onlyConversation, openFile, page, requests, runCommand, screenshot, serverLog, step, useCodeServer, viewFrame, waitFor, waitStatus, workspaceDir } from './harness.mjs';

const ERROR = "Type 'string' is not assignable to type 'number'.";
const SCRIPT = [
  { type: 'turn', tool_calls: [{ name: 'edit_file', input: { path: 'total.ts', old_text: '= 1;', new_text: '= 2;' } }] },
  { type: 'turn', text: 'Changed it.' },
  {
    type: 'turn',
    tool_calls: [
      { name: 'read_file', input: { path: 'lib.ts' } },
      { name: 'bash', input: { command: "sed -i \"s/= 3;/= 'three';/\" lib.ts four.ts && printf 'done\\n' > notes.txt" } },
    ],
  },
  { type: 'turn', text: 'Ran it.' },
  { type: 'turn', tool_calls: [{ name: 'bash', input: { command: "printf 'def f():\\n    return 1\\n' > tool.py" } }] },
  { type: 'turn', text: 'Wrote it.' },
  { type: 'turn', tool_calls: [{ name: 'bash', input: { command: "sed -i \"s/= 2;/= 'two';/\" total.ts" } }] },
  { type: 'turn', text: 'Made it a string.' },
];

useCodeServer(SCRIPT, { artifacts: 'settling', keyViaEnv: true });

/** The text blocks of the last user message of a recorded request. */
function lastUserText(request) {
  const messages = request?.body?.messages ?? [];
  const last = messages[messages.length - 1];
  const blocks = Array.isArray(last?.content) ? last.content : [];
  return blocks.map((b) => b.text ?? '').join('\n');
}

/** The server's reports of the editor's diagnostics answers, in order. */
function answers() {
  return [...serverLog().matchAll(/the editor answered diagnostics for (\d+) document\(s\) in (\d+) ms of the (\d+) ms it was allowed \((\d+) settled\)/g)].map((m) => ({
    documents: Number(m[1]),
    waited: Number(m[2]),
    allowed: Number(m[3]),
    settled: Number(m[4]),
  }));
}

let frame;

async function send(text) {
  const box = frame.locator('textarea[aria-label="Message for the agent"]');
  await box.click();
  await box.fill(text);
  await box.press('Enter');
  await waitStatus(/stepwise: idle/, LONG);
}

step('a clean edit in a clean TypeScript project is answered as checked, inside the wait, not at its end', async () => {
  fs.writeFileSync(path.join(workspaceDir, 'total.ts'), 'const total: number = 1;\nexport { total };\n');
  fs.writeFileSync(path.join(workspaceDir, 'lib.ts'), 'export const three: number = 3;\n');
  fs.writeFileSync(path.join(workspaceDir, 'four.ts'), 'export const four: number = 3;\n');
  await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: LONG });
  await openFile('total.ts');
  await page.locator('.tab.active', { hasText: 'total.ts' }).waitFor({ timeout: LONG });
  await runCommand('Stepwise: Focus on Conversation View');
  frame = await viewFrame();
  await onlyConversation();
  await send('Make total two');

  const sent = await waitFor('the second request to the model', async () => requests(), (r) => r.length >= 2, SHORT);
  const told = lastUserText(sent[1]);
  assert.doesNotMatch(told, /<diagnostics>/, `nothing new and all checked: no block\n${told}`);
  const [first] = await waitFor('the server\'s report of the editor\'s answer', async () => answers(), (a) => a.length >= 1, SHORT);
  assert.equal(first.documents, 1, JSON.stringify(first));
  assert.equal(first.settled, 1, `checked, not given up: ${JSON.stringify(first)}`);
  // TypeScript publishes nothing for a file that stays clean; the answer came from its server's own answer for
  // the version (its start included: this is the window's first), not from the wait running out.
  assert.ok(first.waited < first.allowed, `inside the wait: ${JSON.stringify(first)}`);
});

step('a shell command that breaks a file the agent read and one VS Code does not have open: the errors reach the model without waiting the deadline', async () => {
  await openFile('lib.ts');
  await page.locator('.tab.active', { hasText: 'lib.ts' }).waitFor({ timeout: LONG });
  assert.equal(await page.locator('.tab', { hasText: 'four.ts' }).count(), 0, 'four.ts is not open in an editor');
  await send('Make three a string');

  const sent = await waitFor('the fourth request to the model', async () => requests(), (r) => r.length >= 4, SHORT);
  const told = lastUserText(sent[3]);
  const escaped = ERROR.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  assert.match(told, new RegExp(`lib\\.ts:1:\\d+: error: ${escaped}`), told);
  assert.doesNotMatch(told, /not checked/, `every file checked: ${told}`);
  // Never claimed as new: listed under the line that says so.
  const head = '(not compared with before: the errors below are in files the round changed whose errors before it are not known)';
  assert.match(told, new RegExp(`${head.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\nfour\\.ts:1:\\d+: error: ${escaped}`), told);
  const all = await waitFor('the server\'s report of the second answer', async () => answers(), (a) => a.length >= 2, SHORT);
  const second = all[all.length - 1];
  assert.equal(second.documents, 3, `lib.ts, four.ts and notes.txt: ${JSON.stringify(second)}`);
  assert.equal(second.settled, 3, JSON.stringify(second));
  assert.ok(second.waited < second.allowed / 2, `not the deadline: ${JSON.stringify(second)}`);

  const card = frame.locator('.card.tool[data-tool="bash"]');
  // Both errors the model was told of, the one not compared with before under its line.
  await card.locator('.diag-count', { hasText: '⚠ 2' }).waitFor({ timeout: SHORT });
  await card.locator('details.diagnostics summary').click();
  await card.locator('ul.diagnostic-lines a', { hasText: ERROR }).first().waitFor({ timeout: SHORT });
  await card.locator('ul.diagnostic-lines li', { hasText: head }).waitFor({ timeout: SHORT });
  await screenshot('shell.png');
  await page.locator('.part.sidebar').screenshot({ path: path.join(artifacts, 'shell-card.png') });
});

step('a file no server of the editor checks is said as not checked, with the time really waited, soon', async () => {
  await send('Write a tool');
  const sent = await waitFor('the sixth request to the model', async () => requests(), (r) => r.length >= 6, SHORT);
  const told = lastUserText(sent[5]);
  const m = /tool\.py: not checked \(the editor did not answer in (\d+) ms\)/.exec(told);
  assert.ok(m, `never silence: ${told}`);
  const all = await waitFor('the server\'s report of the third answer', async () => answers(), (a) => a.length >= 3, SHORT);
  const third = all[all.length - 1];
  assert.equal(third.documents, 1, JSON.stringify(third));
  assert.equal(third.settled, 0, JSON.stringify(third));
  assert.equal(Number(m[1]), third.waited, 'the model reads the time the server reports it waited');
  assert.ok(third.waited < third.allowed / 2, `given up soon, not at the deadline: ${JSON.stringify(third)}`);
});

step('a shell command that breaks a file open in a tab: the error of the text the command left reaches the model', async () => {
  assert.equal(await page.locator('.tab', { hasText: 'total.ts' }).count(), 1, 'total.ts is open in a tab');
  await send('Make total a string');
  const sent = await waitFor('the eighth request to the model', async () => requests(), (r) => r.length >= 8, SHORT);
  const told = lastUserText(sent[7]);
  const escaped = ERROR.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  assert.match(told, new RegExp(`total\\.ts:1:\\d+: error: ${escaped}`), told);
  const all = await waitFor('the server\'s report of the fourth answer', async () => answers(), (a) => a.length >= 4, SHORT);
  const fourth = all[all.length - 1];
  assert.equal(fourth.settled, 1, JSON.stringify(fourth));
  assert.ok(fourth.waited < fourth.allowed / 2, `not the deadline: ${JSON.stringify(fourth)}`);
});
