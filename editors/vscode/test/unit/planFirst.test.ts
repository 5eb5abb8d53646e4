import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { approveArguments, commentArguments, planActionCommand, planReady } from '../../src/model/planFirstArgs';

test('a plan waits only after a run that ended plan_ready', () => {
  assert.equal(planReady({ state: 'idle', reason: 'plan_ready' }), true);
  assert.equal(planReady({ state: 'idle', reason: 'end_turn' }), false);
  assert.equal(planReady({ state: 'running' }), false);
  assert.equal(planReady(undefined), false);
});

test('approvePlan and commentPlan arguments', () => {
  assert.deepEqual(approveArguments('file:///w', 3, true), [{ workspace: 'file:///w', clearContext: true, baseRevision: 3 }]);
  assert.deepEqual(approveArguments('file:///w', undefined, false), [{ workspace: 'file:///w', clearContext: false }]);
  assert.deepEqual(commentArguments('file:///w', ' test first ', '2'), [{ workspace: 'file:///w', comments: [{ id: '2', text: 'test first' }] }]);
  assert.deepEqual(commentArguments('file:///w', 'shorter'), [{ workspace: 'file:///w', comments: [{ text: 'shorter' }] }]);
  assert.equal(commentArguments('file:///w', '  '), undefined);
});

test('the Conversation view plan buttons run the plan-first commands for the folder shown', () => {
  assert.deepEqual(planActionCommand('file:///w', 'approve'), { command: 'stepwise.approvePlanNow', args: ['file:///w'] });
  assert.deepEqual(planActionCommand('file:///w', 'approveFresh', 'ignored'), { command: 'stepwise.approvePlanFresh', args: ['file:///w'] });
  assert.deepEqual(planActionCommand('file:///w', 'comment', '  test first '), { command: 'stepwise.commentOnPlan', args: ['file:///w', 'test first'] });
  // No text: the command asks with an input box.
  assert.deepEqual(planActionCommand('file:///w', 'comment', '   '), { command: 'stepwise.commentOnPlan', args: ['file:///w'] });
  assert.deepEqual(planActionCommand('file:///w', 'comment', 42), { command: 'stepwise.commentOnPlan', args: ['file:///w'] });
  // Nothing else, and nothing without a folder.
  assert.equal(planActionCommand('file:///w', 'toggle'), undefined);
  assert.equal(planActionCommand('file:///w', 'constructor'), undefined);
  assert.equal(planActionCommand(undefined, 'approve'), undefined);
});
