import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { MAX_ITEMS, RoundLog } from '../../src/model/rounds';
import { roundTree, runNodes, transcriptTitle } from '../../src/model/roundNodes';
import { restoreFor } from '../../src/model/checkpoints';

const WS = 'file:///w/demo';

/** The notifications of a run that plans, edits greet.js, and ends. */
function liveRun(log: RoundLog): void {
  log.status({ workspace: WS, state: 'running', runId: 'r1' }, 'Warm up the greeting');
  log.checkpoint({ workspace: WS, id: 'c1', runId: 'r1', round: 1 });
  log.text({ runId: 'r1', text: 'Let me ' });
  log.text({ runId: 'r1', text: 'plan.' });
  log.toolCall({ workspace: WS, runId: 'r1', id: 't1', name: 'todo', phase: 'started', summary: '1 item' });
  log.toolCall({ workspace: WS, runId: 'r1', id: 't1', name: 'todo', phase: 'finished', output: '[>] #1: Warm up' });
  log.checkpoint({ workspace: WS, id: 'c2', runId: 'r1', round: 2, step: 'Warm up' });
  log.toolCall({ workspace: WS, runId: 'r1', id: 't2', name: 'edit_file', phase: 'started', summary: 'greet.js' });
  log.toolCall({ workspace: WS, runId: 'r1', id: 't2', name: 'edit_file', phase: 'finished', output: 'Error: Text not found', isError: true });
}

test('notifications build runs of rounds, each with its text and tool calls in order', () => {
  const log = new RoundLog();
  liveRun(log);
  assert.equal(log.runs.length, 1);
  const run = log.runs[0];
  assert.equal(run.prompt, 'Warm up the greeting');
  assert.equal(run.state, 'running');
  assert.deepEqual(run.rounds.map((r) => [r.checkpoint, r.round, r.step]), [['c1', 1, undefined], ['c2', 2, 'Warm up']]);
  assert.deepEqual(run.rounds[0].items, [
    { kind: 'text', text: 'Let me plan.' },
    { kind: 'call', id: 't1', name: 'todo', summary: '1 item', state: 'done', output: '[>] #1: Warm up' },
  ]);
  assert.equal(run.rounds[1].items[0].kind === 'call' && run.rounds[1].items[0].state, 'failed');
  log.status({ workspace: WS, state: 'idle', runId: 'r1', reason: 'end_turn' });
  assert.equal(log.runs[0].state, 'idle');
  assert.equal(log.runs[0].reason, 'end_turn');
});

test('a run that ends leaves no tool call running; a call whose start was missed is still listed', () => {
  const log = new RoundLog();
  log.checkpoint({ workspace: WS, id: 'c1', runId: 'r1', round: 1 });
  log.toolCall({ workspace: WS, runId: 'r1', id: 't1', name: 'bash', phase: 'started', summary: 'sleep 100' });
  log.toolCall({ workspace: WS, runId: 'r1', id: 't2', name: 'read_file', phase: 'finished', output: 'x' });
  log.status({ workspace: WS, state: 'idle', runId: 'r1', reason: 'cancelled' });
  const states = log.runs[0].rounds[0].items.map((i) => i.kind === 'call' && [i.name, i.state]);
  assert.deepEqual(states, [['bash', 'failed'], ['read_file', 'done']]);
});

test('without checkpoints the events still land in a round, with nothing to rewind to', () => {
  const log = new RoundLog();
  log.status({ workspace: WS, state: 'running', runId: 'r9' }, 'no store');
  log.toolCall({ workspace: WS, runId: 'r9', id: 't1', name: 'bash', phase: 'started', summary: 'ls' });
  const [run] = runNodes(WS, log);
  assert.equal(run.checkpoint, undefined);
  assert.equal(run.contextValue, 'stepwise.transcript.run');
  assert.equal(run.children?.[0].contextValue, 'stepwise.transcript.round');
  assert.equal(run.children?.[0].children?.[0].checkpoint, undefined);
});

test('a round keeps at most MAX_ITEMS entries and counts the rest', () => {
  const log = new RoundLog();
  log.checkpoint({ workspace: WS, id: 'c1', runId: 'r1', round: 1 });
  for (let i = 0; i < MAX_ITEMS + 5; i++) log.toolCall({ workspace: WS, runId: 'r1', id: `t${i}`, name: 'bash', phase: 'started' });
  assert.equal(log.runs[0].rounds[0].items.length, MAX_ITEMS);
  assert.equal(log.runs[0].rounds[0].omitted, 5);
  const round = runNodes(WS, log)[0].children?.[0];
  assert.match(round?.children?.[MAX_ITEMS].label ?? '', /… 5 more/);
});

test('the server list fills a restarted window: runs and rounds with prompts and files', () => {
  const log = new RoundLog();
  log.checkpoints([
    { id: 'a1', runId: 'r1', round: 1, prompt: 'first task', files: ['a.txt', 'b.txt'] },
    { id: 'a2', runId: 'r1', round: 2, prompt: 'first task', step: 'Write b', files: ['b.txt'] },
    { id: 'b1', runId: 'r2', round: 1, prompt: 'second task', files: [] },
  ]);
  assert.deepEqual(log.runs.map((r) => [r.runId, r.prompt, r.state, r.rounds.length]), [['r1', 'first task', 'idle', 2], ['r2', 'second task', 'idle', 1]]);
  const nodes = runNodes(WS, log);
  assert.equal(nodes[0].label, 'first task');
  assert.equal(nodes[0].checkpoint, 'a1', 'a run rewinds to before its prompt: its first checkpoint');
  assert.equal(nodes[0].expanded, false);
  assert.equal(nodes[1].expanded, true, 'the newest run is open');
  const round2 = nodes[0].children?.[1];
  assert.equal(round2?.label, 'Round 2');
  assert.equal(round2?.description, 'Write b · 1 file after');
  assert.equal(round2?.contextValue, 'stepwise.transcript.round.rewindable');
  assert.match(round2?.tooltip ?? '', /Step in progress: Write b\nRewinding to here puts back:\n {2}b\.txt/);
  assert.match(nodes[1].children?.[0].tooltip ?? '', /puts back no file/);
  log.clear();
  assert.deepEqual(runNodes(WS, log), [], 'a new session lists no runs');
});

test('the server list wins: rewound rounds go, seen text and calls stay, the running run stays', () => {
  const log = new RoundLog();
  liveRun(log);
  log.status({ workspace: WS, state: 'idle', runId: 'r1', reason: 'end_turn' });
  log.status({ workspace: WS, state: 'running', runId: 'r2' }, 'next');
  log.checkpoints([
    { id: 'c1', runId: 'r1', round: 1, prompt: 'Warm up the greeting', files: ['greet.js'] },
    { id: 'c2', runId: 'r1', round: 2, prompt: 'Warm up the greeting', step: 'Warm up', files: ['greet.js'] },
  ]);
  assert.deepEqual(log.runs.map((r) => r.runId), ['r1', 'r2']);
  assert.equal(log.runs[0].rounds[0].items.length, 2, 'what the window saw of round 1 is kept');
  assert.deepEqual(log.runs[0].rounds[1].files, ['greet.js']);
  assert.equal(log.runs[0].reason, 'end_turn');
  // A rewind to before round 2 of r1 (its later checkpoints gone); r2 has ended meanwhile.
  log.status({ workspace: WS, state: 'idle', runId: 'r2', reason: 'end_turn' });
  log.checkpoint({ workspace: WS, id: 'd1', runId: 'r2', round: 1 });
  log.checkpoints([{ id: 'c1', runId: 'r1', round: 1, prompt: 'Warm up the greeting', files: ['greet.js'] }]);
  assert.deepEqual(log.runs.map((r) => [r.runId, r.rounds.map((x) => x.checkpoint)]), [['r1', ['c1']]]);
});

test('a list asked for before the running run\'s newest rounds does not drop them', () => {
  const log = new RoundLog();
  log.status({ workspace: WS, state: 'running', runId: 'r1' }, 'task');
  log.checkpoint({ workspace: WS, id: 'c1', runId: 'r1', round: 1 });
  log.checkpoint({ workspace: WS, id: 'c2', runId: 'r1', round: 2 });
  log.checkpoints([{ id: 'c1', runId: 'r1', round: 1, prompt: 'task', files: [] }]);
  assert.deepEqual(log.runs[0].rounds.map((x) => x.checkpoint), ['c1', 'c2']);
  log.status({ workspace: WS, state: 'running', runId: 'r2' }, 'next');
  log.checkpoint({ workspace: WS, id: 'd1', runId: 'r2', round: 1 });
  log.checkpoints([{ id: 'c1', runId: 'r1', round: 1, prompt: 'task', files: [] }]);
  assert.deepEqual(log.runs.map((r) => [r.runId, r.rounds.map((x) => x.checkpoint)]), [['r1', ['c1', 'c2']], ['r2', ['d1']]]);
});

test('children carry their round\'s checkpoint; several folders get a node each', () => {
  const log = new RoundLog();
  liveRun(log);
  const [run] = runNodes(WS, log);
  const [round1, round2] = run.children ?? [];
  assert.deepEqual(round1.children?.map((c) => [c.kind, c.label, c.checkpoint, c.contextValue]), [
    ['text', 'Let me plan.', 'c1', 'stepwise.transcript.text.rewindable'],
    ['call', 'todo 1 item', 'c1', 'stepwise.transcript.call.rewindable'],
  ]);
  assert.equal(round2.children?.[0].description, 'failed');
  assert.equal(round2.children?.[0].accessibility, 'tool call failed: edit_file greet.js');
  assert.equal(run.description, '2 rounds · running');
  const other = new RoundLog();
  const tree = roundTree(
    [{ uri: WS, name: 'demo' }, { uri: 'file:///w/empty', name: 'empty' }],
    (uri) => (uri === WS ? log : other),
  );
  assert.deepEqual(tree.map((n) => [n.kind, n.label, n.children?.length]), [['folder', 'demo', 1]]);
  assert.equal(roundTree([{ uri: WS, name: 'demo' }], () => log)[0].kind, 'run');
});

test('the view\'s title counts the runs and rounds of every folder, so a collapsed view says what it holds', () => {
  assert.equal(transcriptTitle([]), 'Transcript');
  assert.equal(transcriptTitle([undefined, new RoundLog()]), 'Transcript');
  const log = new RoundLog();
  liveRun(log);
  assert.equal(transcriptTitle([log]), 'Transcript 1 run, 2 rounds');
  const other = new RoundLog();
  other.status({ workspace: 'file:///w/other', state: 'running', runId: 'o1' }, 'Another');
  other.checkpoint({ workspace: 'file:///w/other', id: 'o1c', runId: 'o1', round: 1 });
  assert.equal(transcriptTitle([log, other]), 'Transcript 2 runs, 3 rounds');
});

test('the confirmation\'s buttons map to what goes back', () => {
  assert.equal(restoreFor('Rewind'), 'both');
  assert.equal(restoreFor('Files Only'), 'files');
  assert.equal(restoreFor('Conversation Only'), 'conversation');
  assert.equal(restoreFor(undefined), undefined);
});
