import { test } from 'node:test';
import assert from 'node:assert/strict';

import { BackgroundTasks, endLine, plainTail, tasksOf } from '../../src/model/background';

const task = (id: string, state = 'running', tail = '') => ({ id, command: `cmd ${id}`, state, running: state === 'running', tail });

test('a payload is checked: entries without an id are dropped, missing parts filled', () => {
  const tasks = tasksOf({ workspace: 'w', tasks: [{ id: 'bg-1', command: 'x', state: 'running', running: true, tail: 'a' }, { command: 'no id' }, null, { id: 'bg-2', running: false }] });
  assert.deepEqual(tasks.map((t) => [t.id, t.state, t.running]), [['bg-1', 'running', true], ['bg-2', 'ended', false]]);
  assert.deepEqual(tasksOf({ tasks: 'nope' }), []);
  assert.deepEqual(tasksOf(undefined), []);
});

test('an end is reported once, also for a task first seen ended', () => {
  const b = new BackgroundTasks();
  assert.deepEqual(b.update([task('bg-1')]), []);
  assert.deepEqual(b.update([task('bg-1', 'killed by the user (SIGTERM)'), task('bg-2', 'exited 3')]).map((t) => t.id), ['bg-1', 'bg-2']);
  assert.deepEqual(b.update([task('bg-1', 'killed by the user (SIGTERM)'), task('bg-2', 'exited 3')]), []);
  assert.equal(endLine(task('bg-2', 'exited 3')), '⏹ bg-2 exited 3: cmd bg-2');
});

test('an ended task stays listed until the next run starts or it is dismissed; a running one always', () => {
  const b = new BackgroundTasks();
  b.update([task('bg-1'), task('bg-2', 'exited 0'), task('bg-3', 'exited 1')]);
  assert.deepEqual(b.shown().map((t) => t.id), ['bg-1', 'bg-2', 'bg-3']);
  assert.equal(b.dismiss('bg-1'), false, 'a running task is not dismissed');
  assert.equal(b.dismiss('bg-2'), true);
  assert.equal(b.dismiss('bg-2'), false, 'twice');
  assert.equal(b.dismiss('bg-9'), false, 'unknown');
  assert.deepEqual(b.shown().map((t) => t.id), ['bg-1', 'bg-3']);
  assert.equal(b.runStarted(), true);
  assert.deepEqual(b.shown().map((t) => t.id), ['bg-1']);
  assert.equal(b.runStarted(), false, 'nothing more to hide');
  // bg-1 ends after the run started: listed until the next one.
  b.update([task('bg-1', 'killed by the user (SIGTERM)'), task('bg-2', 'exited 0'), task('bg-3', 'exited 1')]);
  assert.deepEqual(b.shown().map((t) => [t.id, t.state]), [['bg-1', 'killed by the user (SIGTERM)']]);
  // A new session numbers from bg-1 again: a running bg-1 is shown.
  b.update([task('bg-1')]);
  assert.deepEqual(b.shown().map((t) => t.id), ['bg-1']);
  assert.equal(b.running(), 1);
  b.serverStopped();
  assert.deepEqual(b.shown().map((t) => [t.state, t.running]), [['ended with the server', false]]);
});

test('the tail is shown as text: colour codes dropped, carriage-return overwrites resolved', () => {
  assert.equal(plainTail('\x1b[32mGET /\x1b[0m 200\nprogress 10%\rprogress 99%\r\ndone'), 'GET / 200\nprogress 99%\ndone');
  assert.equal(plainTail('plain\n'), 'plain\n');
});
