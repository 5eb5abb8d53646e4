import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { checkpointForStep, checkpointItem, rewindQuestion, rewindSummary, type Checkpoint } from '../../src/model/checkpoints';

const cps: Checkpoint[] = [
  { id: 'c1', runId: 'r1', round: 1, prompt: 'Add a farewell', time: '2026-11-24T05:00:00Z', files: ['greet.js'] },
  { id: 'c2', runId: 'r1', round: 2, prompt: 'Add a farewell', step: 'Add a farewell function', time: '2026-11-24T05:00:01Z', files: ['greet.js', 'index.js'] },
  { id: 'c3', runId: 'r1', round: 3, prompt: 'Add a farewell', step: 'Add a farewell function', time: '2026-11-24T05:00:02Z', files: [] },
];

test('a checkpoint as a quick-pick entry names the round, the step, the prompt and the files', () => {
  const item = checkpointItem(cps[1]);
  assert.equal(item.label, 'round 2 · Add a farewell function');
  assert.ok(item.description.startsWith('“Add a farewell”'), item.description);
  assert.equal(item.detail, '2 files changed after it: greet.js, index.js');
  assert.equal(checkpointItem(cps[2]).detail, 'no file changed after it');
  assert.equal(checkpointItem({ id: 'x' }).label, 'checkpoint');
});

test('"Rewind to here" on a plan item goes to the first checkpoint of that step', () => {
  assert.equal(checkpointForStep(cps, 'Add a farewell function')?.id, 'c2');
  assert.equal(checkpointForStep(cps, 'Export it'), undefined);
});

test('the confirmation lists the files; the summary names conflicts', () => {
  const q = rewindQuestion(cps[1], 'demo');
  assert.equal(q.message, 'Rewind demo to before round 2 (Add a farewell function)?');
  assert.match(q.detail, /These files go back:\n  greet\.js\n  index\.js/);
  assert.equal(rewindSummary({ files: ['greet.js'], conversation: true, conflicts: [] }), 'stepwise: rewound 1 file; the conversation and the plan are back as they were.');
  assert.equal(rewindSummary({ files: [], conversation: false, conflicts: ['a.txt'] }), 'stepwise: rewound 0 files; left alone, changed since by you: a.txt.');
  assert.equal(rewindSummary(null), 'stepwise: rewound 0 files.');
});
