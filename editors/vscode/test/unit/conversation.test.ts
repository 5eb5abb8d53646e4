import { test } from 'node:test';
import assert from 'node:assert/strict';

import { CHOICES, choiceOf, questionLine, questionText } from '../../src/model/ask';
import { ConversationLog, entriesOf, parseInput, slashChoices } from '../../src/model/conversation';

test('streamed chunks join one assistant entry; a tool call starts and finishes in one card', () => {
  const log = new ConversationLog();
  assert.equal(log.apply({ type: 'user', kind: 'user', text: 'do it', runId: 'r1' }), 0);
  assert.equal(log.apply({ type: 'text', runId: 'r1', text: 'I will ' }), 1);
  assert.equal(log.apply({ type: 'text', runId: 'r1', text: '**do** it' }), 1);
  assert.equal(log.entries[1].text, 'I will **do** it');
  assert.equal(log.apply({ type: 'tool', call: { runId: 'r1', id: 't1', name: 'bash', phase: 'started', summary: 'ls', step: 'Look' } }), 2);
  assert.equal(log.entries[2].tool?.state, 'running');
  assert.equal(log.apply({ type: 'tool', call: { runId: 'r1', id: 't1', name: 'bash', phase: 'finished', output: 'a.txt', isError: false } }), 2);
  assert.deepEqual(log.entries[2].tool, { id: 't1', name: 'bash', summary: 'ls', output: 'a.txt', isError: false, step: 'Look', state: 'done' });
  // Text after the call is a new entry.
  assert.equal(log.apply({ type: 'text', runId: 'r1', text: 'Done.' }), 3);
});

test('a question goes into its own call\'s card; the answer is kept; a withdrawn one leaves; the run\'s end fails calls left running', () => {
  const log = new ConversationLog();
  log.apply({ type: 'tool', call: { runId: 'r', id: 'a', name: 'bash', phase: 'started', summary: 'rm x' } });
  log.apply({ type: 'tool', call: { runId: 'r', id: 'b', name: 'write_file', phase: 'started', summary: '.env' } });
  // By its callId, not the newest running call.
  assert.equal(log.apply({ type: 'approval', approval: { id: 7, question: { kind: 'command', callId: 'a', command: 'rm x' } } }), 0);
  assert.equal(log.apply({ type: 'answered', id: 7, answer: 'deny' }), 0);
  assert.equal(log.entries[0].approval?.answer, 'deny');
  assert.equal(log.apply({ type: 'approval', approval: { id: 8, question: { kind: 'protectedWrite', callId: 'b', path: '.env' } } }), 1);
  assert.equal(log.apply({ type: 'answered', id: 8, answer: 'withdrawn' }), 1);
  assert.equal(log.entries[1].approval, undefined, 'a withdrawn question leaves the card');
  assert.deepEqual(log.ended('r'), [1, 0]);
  assert.equal(log.entries[0].tool?.state, 'failed');
  // With no call running the question stands alone.
  assert.equal(log.apply({ type: 'approval', approval: { id: 9, question: { kind: 'mcpTool', message: 'q' } } }), 2);
  assert.equal(log.entries[2].kind, 'note');
});

test('each kind of question shows what it concerns, from its fields', () => {
  assert.deepEqual(questionText({ kind: 'unsandboxed', command: 'touch /x', stopped: "touch: '/x': Permission denied", message: 'ignored' }), {
    title: 'The sandbox stopped this command. Run it outside the sandbox?',
    code: 'touch /x',
    detail: "the sandbox stopped: touch: '/x': Permission denied",
  });
  assert.equal(questionText({ kind: 'protectedWrite', path: '.env', why: 'a .env file' }).code, '.env');
  assert.equal(questionText({ kind: 'mcpTool', server: 'fs', tool: 'read' }).title, 'Use the MCP tool read of fs?');
  assert.equal(questionText({ kind: 'command', command: 'ls', message: 'stepwise wants to run' }).code, 'ls');
  assert.equal(questionLine({ kind: 'command', command: 'ls' }, 'demo'), 'stepwise (demo): Run this command? ls');
  assert.deepEqual(CHOICES.map((c) => c.label), ['Allow', 'Allow for Session', 'Deny']);
  assert.equal(choiceOf('Allow for Session'), 'allowSession');
  assert.equal(choiceOf(undefined), undefined);
});

test('stepwise.conversation entries are checked; unknown kinds dropped', () => {
  const entries = entriesOf({
    workspace: 'file:///w',
    entries: [
      { kind: 'user', runId: 'r', text: 'hi' },
      { kind: 'tool', runId: 'r', tool: { id: '1', name: 'bash', summary: 'ls', output: 'x', isError: true, step: null } },
      { kind: 'bogus' },
      null,
    ],
  });
  assert.equal(entries.length, 2);
  assert.equal(entries[1].tool?.state, 'failed');
  assert.deepEqual(entriesOf(null), []);
});

test('the input: slash commands with their argument, else text', () => {
  assert.deepEqual(parseInput('/plan add a test'), { slash: 'plan', arg: 'add a test' });
  assert.deepEqual(parseInput('/compact'), { slash: 'compact', arg: '' });
  assert.deepEqual(parseInput('/unknown x'), { text: '/unknown x' });
  assert.deepEqual(parseInput('  fix it  '), { text: 'fix it' });
  assert.equal(parseInput('   '), undefined);
});

test('a prompt the view sent and the run\'s start naming it are one turn', () => {
  const log = new ConversationLog();
  assert.equal(log.apply({ type: 'user', kind: 'user', text: 'fix it' }), 0);
  assert.equal(log.apply({ type: 'user', kind: 'user', text: 'fix it', runId: 'r1' }), 0);
  assert.equal(log.entries[0].runId, 'r1');
  assert.equal(log.apply({ type: 'user', kind: 'user', text: 'fix it', runId: 'r1' }), undefined);
  // A run started elsewhere (Run Task) adds its prompt.
  assert.equal(log.apply({ type: 'user', kind: 'user', text: 'again', runId: 'r2' }), 1);
  assert.equal(log.entries.length, 2);
});

test("a round's diagnostics go on the card of the call that changed the file, the rest on the round's last card", async () => {
  const { ConversationLog: Log, errorCount, diagnosticLines, diagnosticHref, hrefPlace, entriesOf: entries } = await import('../../src/model/conversation');
  const log = new Log();
  log.apply({ type: 'tool', call: { runId: 'r', id: 'e1', name: 'edit_file', phase: 'finished', summary: 'src/a.ts', output: 'ok', isError: false } });
  log.apply({ type: 'tool', call: { runId: 'r', id: 'e2', name: 'bash', phase: 'finished', summary: 'ls', output: 'x', isError: false } });
  const lines = [
    { path: 'src/a.ts', line: 3, column: 7, text: "src/a.ts:3:7: error: Type 'string' is not assignable to type 'number'. (ts)" },
    { path: 'src/b.ts', text: 'src/b.ts: not checked (the editor did not answer in 900 ms)' },
  ];
  assert.equal(log.apply({ type: 'diagnostics', runId: 'r', calls: ['e1', 'e2'], lines }), 1);
  assert.deepEqual(log.changedCards, [0, 1]);
  assert.deepEqual(log.entries[0].tool?.diagnostics, [lines[0]]);
  assert.deepEqual(log.entries[1].tool?.diagnostics, [lines[1]]);
  assert.equal(errorCount(log.entries[0].tool?.diagnostics), 1);
  assert.equal(errorCount(log.entries[1].tool?.diagnostics), 0, 'not checked is not an error');
  assert.equal(diagnosticHref(lines[0]), 'src/a.ts#L3C7');
  assert.deepEqual(hrefPlace('src/a.ts#L3C7'), { line: 3, column: 7 });
  // After a reload the block is an entry of its own kind, its lines read back from the text.
  const [e] = entries({ entries: [{ kind: 'diagnostics', runId: 'r', text: `<diagnostics>\n${lines[0].text}\n${lines[1].text}\n</diagnostics>` }] });
  assert.equal(e.kind, 'diagnostics');
  assert.deepEqual(diagnosticLines(e.text ?? ''), lines);
  // A note about no one file has no link.
  const [note] = diagnosticLines('<diagnostics>\n(2 errors in files outside the workspace not shown)\n</diagnostics>');
  assert.deepEqual(note, { text: '(2 errors in files outside the workspace not shown)' });
  assert.equal(diagnosticHref(note), undefined);
  // Nor does a line naming several files (one a server that could not start would have checked).
  const [several] = diagnosticLines('<diagnostics>\nsrc/a.rs, src/b.rs: not checked (rust-analyzer could not start)\n</diagnostics>');
  assert.deepEqual(several, { text: 'src/a.rs, src/b.rs: not checked (rust-analyzer could not start)' });
  assert.equal(diagnosticHref(several), undefined);
});

test('errors not compared with before go on the card of their file, under the line that says so, counted as errors', async () => {
  const { ConversationLog: Log, errorCount, uncheckedCount } = await import('../../src/model/conversation');
  const log = new Log();
  log.apply({ type: 'tool', call: { runId: 'r', id: 'e1', name: 'edit_file', phase: 'finished', summary: 'app.ts', output: 'ok', isError: false } });
  log.apply({ type: 'tool', call: { runId: 'r', id: 'e2', name: 'edit_file', phase: 'finished', summary: 'b.ts', output: 'ok', isError: false } });
  const head = '(not compared with before: the errors below are in files the round changed whose errors before it are not known)';
  const lines = [
    { path: 'b.ts', line: 1, column: 1, text: "b.ts:1:1: error: Cannot find name 'x'. (ts)" },
    { text: head },
    { path: 'app.ts', line: 2, column: 7, text: "app.ts:2:7: error: Type 'string' is not assignable to type 'number'. (ts)" },
    { text: '(3 more errors not shown; at most 50 are shown)' },
  ];
  log.apply({ type: 'diagnostics', runId: 'r', calls: ['e1', 'e2'], lines });
  assert.deepEqual(log.entries[0].tool?.diagnostics, [lines[1], lines[2]], 'the line above goes with the error after it');
  assert.deepEqual(log.entries[1].tool?.diagnostics, [lines[0], lines[3]], 'a last note goes on the last card');
  assert.equal(errorCount(log.entries[0].tool?.diagnostics), 1);
  assert.equal(uncheckedCount(log.entries[0].tool?.diagnostics), 0, 'a note is no file not checked');
  assert.equal(uncheckedCount([{ path: 'c.ts', text: 'c.ts: not checked (the editor did not answer in 900 ms)' }]), 1);
});

test('a leading / offers the view\'s commands, then the folder\'s skills with their descriptions; a command wins a name', () => {
  const skills = [
    { name: 'release', description: 'How we release' },
    { name: 'review', description: 'a skill named as a command' },
    { name: 'api-2', description: 'Our API conventions' },
  ];
  const all = slashChoices('', skills).map((c) => c.name);
  assert.deepEqual(all, ['compact', 'plan', 'checkpoints', 'rewind', 'review', 'release', 'api-2']);
  assert.deepEqual(slashChoices('re', skills), [
    { name: 'rewind', detail: 'rewind to a checkpoint' },
    { name: 'review', detail: 'review the changes of the last run' },
    { name: 'release', detail: 'How we release' },
  ]);
  assert.deepEqual(slashChoices('api-', skills), [{ name: 'api-2', detail: 'Our API conventions' }]);
  // A skill is sent as text: the server loads it into the turn.
  assert.deepEqual(parseInput('/release 1.2'), { text: '/release 1.2' });
});
