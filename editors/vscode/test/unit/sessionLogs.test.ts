// Each session's conversation apart: two sessions' events interleave and each lands in its own; a conversation
// read while its run goes on gets what arrived meanwhile, or is read again when the run ends.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import type { Entry } from '../../src/model/conversation';
import { SessionLogs } from '../../src/model/sessionLogs';

const WS = 'file:///w/demo';

test('two sessions running at once: each event goes to the conversation of the session it names', async () => {
  const reads: string[] = [];
  const logs = new SessionLogs(async (ws, session) => {
    reads.push(`${ws} ${session}`);
    return [];
  });
  const main = await logs.log(WS, 'main');
  const s2 = await logs.log(WS, 's2');
  assert.notEqual(main, s2);
  assert.deepEqual(logs.apply(WS, 'main', { type: 'user', kind: 'user', text: 'beta task', runId: 'rb' }), [0]);
  assert.deepEqual(logs.apply(WS, 's2', { type: 'user', kind: 'user', text: 'alpha task', runId: 'ra' }), [0]);
  assert.deepEqual(logs.apply(WS, 'main', { type: 'text', runId: 'rb', text: 'on beta' }), [1]);
  assert.deepEqual(logs.apply(WS, 's2', { type: 'tool', call: { runId: 'ra', id: 't1', name: 'bash', phase: 'started', summary: 'echo alpha' } }), [1]);
  assert.deepEqual(logs.apply(WS, 'main', { type: 'text', runId: 'rb', text: ', still' }), [1], 'streams into its own entry');
  assert.deepEqual(main.entries.map((e) => e.text), ['beta task', 'on beta, still']);
  assert.deepEqual(s2.entries.map((e) => e.text ?? e.tool?.summary), ['alpha task', 'echo alpha']);
  // A run's end fails only its own session's running calls.
  assert.deepEqual(logs.apply(WS, 'main', { type: 'ended', runId: 'rb' }), []);
  assert.equal(s2.entries[1].tool?.state, 'running');
  assert.deepEqual(logs.apply(WS, 's2', { type: 'ended', runId: 'ra' }), [1]);
  assert.equal(s2.entries[1].tool?.state, 'failed');
  assert.deepEqual(reads, [`${WS} main`, `${WS} s2`], 'each read once');
  assert.equal(await logs.log(WS, 's2'), s2);
});

test('a conversation not read yet takes what arrives while it is read; one the server had already is read again at the end; a discarded one is forgotten', async () => {
  let answer: (entries: Entry[]) => void = () => undefined;
  let reads = 0;
  const logs = new SessionLogs(() => {
    reads += 1;
    return new Promise((resolve) => (answer = resolve));
  });
  // Events of a session never shown are not kept here (the server keeps them).
  assert.deepEqual(logs.apply(WS, 's2', { type: 'text', runId: 'r0', text: 'lost?' }), []);
  const reading = logs.log(WS, 's2');
  assert.deepEqual(logs.apply(WS, 's2', { type: 'text', runId: 'r1', text: 'new run' }), []);
  assert.deepEqual(logs.apply(WS, 'main', { type: 'text', runId: 'rm', text: 'other session' }), [], 'another session: not its buffer');
  answer([{ kind: 'user', runId: 'r0', text: 'first task' }]);
  const log = await reading;
  assert.deepEqual(log.entries.map((e) => e.text), ['first task', 'new run']);

  // Read while r2 goes on, and the server's answer has r2 already: the chunks are not doubled, and the run's end
  // asks for a new read.
  logs.forget(WS, 's2');
  const again = logs.log(WS, 's2');
  logs.apply(WS, 's2', { type: 'text', runId: 'r2', text: 'chunk' });
  answer([{ kind: 'user', runId: 'r2', text: 'second task' }, { kind: 'assistant', runId: 'r2', text: 'chunk' }]);
  assert.deepEqual((await again).entries.map((e) => e.text), ['second task', 'chunk']);
  assert.equal(logs.apply(WS, 's2', { type: 'ended', runId: 'r2' }), 'reload');
  assert.equal(logs.known(WS, 's2'), undefined);
  assert.equal(reads, 2);
  // A discarded session's conversation is forgotten with it; the folder's own and another folder's stay.
  for (const session of ['main', 's2']) {
    const reading = logs.log(WS, session);
    answer([]);
    await reading;
  }
  logs.retain(WS, new Set(['main']));
  assert.ok(logs.known(WS, 'main'));
  assert.equal(logs.known(WS, 's2'), undefined);
  logs.clear();
  assert.equal(logs.known(WS, 'main'), undefined);
});
