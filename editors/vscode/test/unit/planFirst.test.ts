import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { approveArguments, commentArguments, planReady } from '../../src/planFirstArgs';

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
