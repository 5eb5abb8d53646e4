import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { documentPlanText, editErrorMessage, editItems, editPlanArguments, renderPlan } from '../../src/model/planEdit';
import { steerArguments, validateSteer } from '../../src/model/commands';
import type { PlanItem } from '../../src/model/plan';

const WS = 'file:///w/demo';
const items: PlanItem[] = [
  { id: '1', text: 'Read greet.js', status: 'completed' },
  { id: '2', text: 'Add a farewell', status: 'in_progress', activeForm: 'Adding a farewell' },
  { id: '3', text: 'Export it', status: 'pending' },
];

test('editing an item text keeps the others and drops the stale activeForm', () => {
  assert.deepEqual(editItems(items, '2', 'text', '  Add a warm farewell '), [
    { id: '1', text: 'Read greet.js', status: 'completed' },
    { id: '2', text: 'Add a warm farewell', status: 'in_progress' },
    { id: '3', text: 'Export it', status: 'pending' },
  ]);
  // Nothing to send: empty or unchanged text, an item that is gone.
  assert.equal(editItems(items, '2', 'text', '   '), undefined);
  assert.equal(editItems(items, '2', 'text', 'Add a farewell'), undefined);
  assert.equal(editItems(items, '9', 'delete'), undefined);
  // The input is not changed.
  assert.equal(items[1].text, 'Add a farewell');
});

test('add after inserts a new pending item without an id; delete removes one', () => {
  const added = editItems(items, '1', 'addAfter', 'Write a test');
  assert.deepEqual(added?.map((i) => [i.id, i.text, i.status]), [
    ['1', 'Read greet.js', 'completed'],
    [undefined, 'Write a test', 'pending'],
    ['2', 'Add a farewell', 'in_progress'],
    ['3', 'Export it', 'pending'],
  ]);
  assert.equal(added?.[1].id, undefined);
  assert.ok(!('id' in (added?.[1] ?? {})), 'a new item carries no id');
  assert.deepEqual(editItems(items, '2', 'delete')?.map((i) => i.id), ['1', '3']);
});

test('moving up and down swaps neighbours; not past either end', () => {
  assert.deepEqual(editItems(items, '2', 'up')?.map((i) => i.id), ['2', '1', '3']);
  assert.deepEqual(editItems(items, '2', 'down')?.map((i) => i.id), ['1', '3', '2']);
  assert.equal(editItems(items, '1', 'up'), undefined);
  assert.equal(editItems(items, '3', 'down'), undefined);
});

test('marking an item in progress puts the one in progress back to pending; done and pending', () => {
  assert.deepEqual(editItems(items, '3', 'in_progress')?.map((i) => i.status), ['completed', 'pending', 'in_progress']);
  assert.deepEqual(editItems(items, '2', 'completed')?.map((i) => i.status), ['completed', 'completed', 'pending']);
  assert.deepEqual(editItems(items, '1', 'pending')?.map((i) => i.status), ['pending', 'in_progress', 'pending']);
  assert.equal(editItems(items, '3', 'pending'), undefined, 'already pending');
  // Statuses the server sent in other spellings are normalized.
  // Ids go back as strings, as the server takes them.
  assert.deepEqual(editItems([{ id: 1, text: 'a', status: 'done' }], 1, 'pending'), [{ id: '1', text: 'a', status: 'pending' }]);
});

test('the render form is the todo tool result', () => {
  assert.equal(renderPlan({ workspace: WS, items, completed: 1, total: 3 }), '[x] #1: Read greet.js\n[>] #2: Add a farewell\n[ ] #3: Export it\n\n(1/3 completed)\n');
  assert.equal(renderPlan({ workspace: WS, items: [] }), 'No todos.\n');
  assert.equal(renderPlan(undefined), 'No todos.\n');
  assert.equal(documentPlanText('No todos.\n'), '');
  assert.equal(documentPlanText('[ ] #1: a\n'), '[ ] #1: a\n');
});

test('editPlan arguments carry the items or the text, and the base revision when known', () => {
  assert.deepEqual(editPlanArguments(WS, { items: [{ text: 'a', status: 'pending' }] }, 4), [
    { workspace: WS, items: [{ text: 'a', status: 'pending' }], baseRevision: 4 },
  ]);
  assert.deepEqual(editPlanArguments(WS, { text: '[ ] new' }, undefined), [{ workspace: WS, text: '[ ] new' }]);
  assert.deepEqual(editPlanArguments(WS, { text: '' }, 0), [{ workspace: WS, text: '', baseRevision: 0 }]);
});

test('edit errors: the rule as the server words it; a stale revision says what happened', () => {
  assert.equal(editErrorMessage('Error: Only one task can be in_progress at a time'), 'stepwise: Error: Only one task can be in_progress at a time');
  assert.equal(
    editErrorMessage('The plan changed since revision 1 (it is at revision 2); reload it and edit again'),
    'stepwise: your edit was not applied: The plan changed since revision 1 (it is at revision 2); reload it and edit again',
  );
});

test('steer arguments and validation', () => {
  assert.deepEqual(steerArguments('  fix the parser first ', WS), [{ text: 'fix the parser first', workspace: WS }]);
  assert.equal(steerArguments('  ', WS), undefined);
  assert.deepEqual(steerArguments('x', undefined), [{ text: 'x' }]);
  assert.equal(validateSteer(''), 'Tell the agent what to do differently');
  assert.equal(validateSteer('ok'), undefined);
});
