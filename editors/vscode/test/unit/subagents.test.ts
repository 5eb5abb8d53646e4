// Child agents (`task`, issue 48) in the Conversation view's model: a child's state and calls go on the card of the
// call that made it (never into the list), its question too, naming it; after a reload its saved calls are folded
// under that card again, its state read from the result's last line.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { questionLine, questionText } from '../../src/model/ask';
import { ConversationLog, entriesOf } from '../../src/model/conversation';
import { endLine, latestCall, savedSubagent, stateOf, subagentLine } from '../../src/model/subagents';
import { subagentEndLine, toolCallLines } from '../../src/model/transcript';

const child = (id: string, toolCallId: string, state: string, rounds: number, lastTool?: string) => ({
  type: 'subagent' as const,
  runId: 'r',
  child: { workspace: 'w', session: 'main', runId: 'r', toolCallId, id, description: `does ${id}`, agent: 'general', state: state as 'running', rounds, tokens: 1500, ...(lastTool ? { lastTool } : {}) },
});

test("two children: each one's state and calls go on its own task card, not into the list", () => {
  const log = new ConversationLog();
  assert.equal(log.apply({ type: 'tool', call: { runId: 'r', id: 'ta', name: 'task', phase: 'started', summary: 'general: waits' } }), 0);
  assert.equal(log.apply({ type: 'tool', call: { runId: 'r', id: 'tb', name: 'task', phase: 'started', summary: 'general: answers' } }), 1);
  // A child's call before its child is known has no card to go on: dropped, never in the list.
  assert.equal(log.apply({ type: 'tool', call: { runId: 'r', id: 'x', name: 'bash', phase: 'started', subagent: 'sa-9' } }), undefined);
  assert.equal(log.apply(child('sa-1', 'ta', 'running', 0)), 0);
  assert.equal(log.apply(child('sa-2', 'tb', 'running', 0)), 1);
  assert.equal(log.apply({ type: 'tool', call: { runId: 'r', id: 'c1', name: 'bash', phase: 'started', summary: 'sleep 30', subagent: 'sa-1' } }), 0);
  assert.equal(log.apply(child('sa-1', 'ta', 'running', 1, 'bash')), 0);
  assert.equal(log.apply({ type: 'tool', call: { runId: 'r', id: 'c2', name: 'read_file', phase: 'started', summary: 'a.txt', subagent: 'sa-2' } }), 1);
  assert.equal(log.apply({ type: 'tool', call: { runId: 'r', id: 'c2', name: 'read_file', phase: 'finished', output: 'one', isError: false, subagent: 'sa-2' } }), 1);
  assert.equal(log.entries.length, 2, 'the children\'s calls are not in the list');
  const [a, b] = log.entries.map((e) => e.tool!);
  assert.deepEqual(a.subagent, { id: 'sa-1', description: 'does sa-1', agent: 'general', state: 'running', rounds: 1, lastTool: 'bash', tokens: 1500 });
  assert.deepEqual(a.children?.map((c) => [c.tool?.name, c.tool?.state, c.subagent]), [['bash', 'running', 'sa-1']]);
  assert.deepEqual(b.children?.map((c) => [c.tool?.name, c.tool?.state, c.tool?.output]), [['read_file', 'done', 'one']]);
  assert.equal(latestCall(a.children, a.subagent?.lastTool), 'bash sleep 30');
  assert.equal(subagentLine(a.subagent!), 'sa-1 · 1 round · 1.5k tokens');

  // sa-1 is stopped alone: its card says cancelled, sa-2 goes on to done.
  assert.equal(log.apply(child('sa-1', 'ta', 'cancelled', 2)), 0);
  assert.equal(log.apply(child('sa-2', 'tb', 'done', 2)), 1);
  assert.deepEqual(log.entries.map((e) => e.tool?.subagent?.state), ['cancelled', 'done']);
  // The task call's end: its child's calls left running failed (no `finished` comes for them).
  log.apply({ type: 'tool', call: { runId: 'r', id: 'ta', name: 'task', phase: 'finished', output: 'Stopped.\n\n(subagent sa-1: 2 rounds, 10 tokens, it was cancelled; asked once more, it summarized)' } });
  assert.equal(a.children?.[0].tool?.state, 'failed');
  assert.equal(a.subagent?.state, 'cancelled', 'an ended child keeps its state');
  // The run's end: a task call left running fails, and so does its child, and its calls.
  log.apply(child('sa-2', 'tb', 'running', 3));
  log.apply({ type: 'tool', call: { runId: 'r', id: 'c3', name: 'bash', phase: 'started', subagent: 'sa-2' } });
  assert.deepEqual(log.ended('r'), [1]);
  assert.deepEqual([b.state, b.subagent?.state, b.children?.[1].tool?.state], ['failed', 'failed', 'failed']);
});

test("a task call's end settles a child whose last state the view missed, from the result's line", () => {
  const log = new ConversationLog();
  log.apply({ type: 'tool', call: { runId: 'r', id: 't', name: 'task', phase: 'started', summary: 'explore: look' } });
  log.apply(child('sa-3', 't', 'running', 4));
  log.apply({ type: 'tool', call: { runId: 'r', id: 't', name: 'task', phase: 'finished', output: 'Found it.\n\n(subagent sa-3: 5 rounds, 2048 tokens, done)' } });
  assert.deepEqual(log.entries[0].tool?.subagent, { id: 'sa-3', description: 'does sa-3', agent: 'general', state: 'done', rounds: 5, tokens: 2048 });
});

test("a child's question goes on its task card (not a card in the list), naming the child, and is answered there", () => {
  const log = new ConversationLog();
  log.apply({ type: 'tool', call: { runId: 'r', id: 'main-call', name: 'bash', phase: 'started', summary: 'ls' } });
  log.apply({ type: 'tool', call: { runId: 'r', id: 't', name: 'task', phase: 'started', summary: 'general: changes a.txt' } });
  log.apply(child('sa-1', 't', 'running', 1));
  log.apply({ type: 'tool', call: { runId: 'r', id: 'c1', name: 'bash', phase: 'started', summary: 'echo made', subagent: 'sa-1' } });
  const question = { kind: 'command' as const, callId: 'c1', command: 'echo made', subagent: 'sa-1', message: '[subagent sa-1: changes a.txt] stepwise wants to run a shell command in demo: echo made' };
  assert.equal(log.apply({ type: 'approval', approval: { id: 4, question } }), 1);
  assert.equal(log.entries[0].approval, undefined, 'not the running call of the parent');
  assert.equal(log.apply({ type: 'answered', id: 4, answer: 'allow' }), 1);
  assert.equal(log.entries[1].approval?.answer, 'allow');
  assert.deepEqual(questionText(question), { title: 'Run this command?', code: 'echo made', asker: 'sa-1: changes a.txt' });
  assert.equal(questionLine(question, 'demo'), 'stepwise (demo): subagent sa-1: changes a.txt asks: Run this command? echo made');
  // Without the prefix (or another child's): the id alone. A kind unknown here shows the message without it.
  assert.equal(questionText({ kind: 'command', command: 'x', subagent: 'sa-2', message: '[subagent sa-1: y] z' }).asker, 'sa-2');
  assert.deepEqual(questionText({ message: '[subagent sa-5: d] do the new thing?', subagent: 'sa-5' }), { title: 'do the new thing?', asker: 'sa-5: d' });
});

test("after a reload each child's saved calls and text are under its task card, its state from the result's line", () => {
  const entries = entriesOf({
    entries: [
      { kind: 'user', runId: 'r', text: 'two children' },
      { kind: 'tool', runId: 'r', tool: { id: 'ta', name: 'task', summary: 'general: waits', output: 'Stopped.\n\n(subagent sa-1: 2 rounds, 120 tokens, it was cancelled; asked once more, it summarized)', isError: false, step: null } },
      { kind: 'tool', runId: 'r', subagent: 'sa-1', tool: { id: 'c1', name: 'bash', summary: 'sleep 30', output: 'cancelled', isError: true, step: null } },
      { kind: 'assistant', runId: 'r', subagent: 'sa-1', text: 'Stopped while waiting.' },
      { kind: 'tool', runId: 'r', tool: { id: 'tb', name: 'task', summary: 'explore: answers: a: b', output: "B's answer\n\n(subagent sa-2: 1 rounds, 30 tokens, done)", isError: false, step: null } },
      { kind: 'tool', runId: 'r', tool: { id: 'tc', name: 'task', summary: 'general: no such agent', output: 'Error: unknown agent', isError: true, step: null } },
      { kind: 'assistant', runId: 'r', text: 'parent done' },
    ],
  });
  assert.deepEqual(entries.map((e) => e.tool?.name ?? e.kind), ['user', 'task', 'task', 'task', 'assistant'], 'the children are not in the list');
  const [, a, b, c] = entries.map((e) => e.tool!);
  assert.deepEqual(a.subagent, { id: 'sa-1', agent: 'general', description: 'waits', state: 'cancelled', rounds: 2, tokens: 120 });
  assert.deepEqual(a.children?.map((e) => e.tool?.name ?? e.text), ['bash', 'Stopped while waiting.']);
  assert.deepEqual(b.subagent, { id: 'sa-2', agent: 'explore', description: 'answers: a: b', state: 'done', rounds: 1, tokens: 30 });
  assert.equal(b.children, undefined, 'a child without calls has none');
  assert.equal(c.subagent, undefined, 'a task call that made no child has none');
});

test('the result line and its words: how the child ended', () => {
  assert.deepEqual(endLine('text\n\n(subagent sa-12: 30 rounds, 999 tokens, it reached its limit of 30 rounds; asked once more, it summarized)'), {
    id: 'sa-12',
    rounds: 30,
    tokens: 999,
    how: 'it reached its limit of 30 rounds; asked once more, it summarized',
  });
  assert.equal(endLine('no line here'), undefined);
  assert.equal(stateOf('cancelled with the agent that started it'), 'cancelled');
  assert.equal(stateOf('it failed: model error; asked once more, its summary failed: x'), 'failed');
  assert.equal(stateOf('it reached its limit of 30 rounds; asked once more, it summarized'), 'done');
  assert.equal(savedSubagent('general: x', undefined, 'sa-4')?.state, 'failed', 'saved without a result: cut short');
});

test("the transcript indents a child's calls and names it; its end is one line", () => {
  assert.deepEqual(toolCallLines({ workspace: 'w', name: 'bash', phase: 'started', summary: 'ls', subagent: 'sa-1' }), ['  [sa-1] ▶ bash ls']);
  assert.deepEqual(toolCallLines({ workspace: 'w', name: 'bash', phase: 'finished', output: 'a', subagent: 'sa-1' }), ['  [sa-1]   ✓ bash', '      a']);
  assert.equal(subagentEndLine({ id: 'sa-1', state: 'cancelled', rounds: 2, tokens: 1500 }), '  [sa-1] cancelled: 2 rounds, 1.5k tokens');
  assert.equal(subagentEndLine({ id: 'sa-1', state: 'running', rounds: 2, tokens: 1 }), undefined);
});
