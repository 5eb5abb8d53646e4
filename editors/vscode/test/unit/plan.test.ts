import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { Folders } from '../../src/model/folders';
import { buildTree, itemNode, normalizeStatus, planCounts, planSummary, planTitle, statusIcon, type PlanParams } from '../../src/model/plan';

const WS = 'file:///work/demo';
const WS2 = 'file:///work/other';

const plan: PlanParams = {
  workspace: WS,
  items: [
    { id: '1', text: 'Read greet.js', status: 'completed' },
    { id: '2', text: 'Add a farewell', status: 'in_progress', activeForm: 'Adding a farewell' },
    { id: '3', text: 'Run the tests', status: 'pending' },
  ],
  completed: 1,
  total: 3,
};

test('items become tree nodes with status icons, labels and the activeForm', () => {
  const nodes = buildTree([{ uri: WS, name: 'demo' }], new Map([[WS, plan]]));
  assert.equal(nodes.length, 3);
  assert.deepEqual(
    nodes.map((n) => [n.label, n.icon.id, n.description, n.accessibility]),
    [
      ['Read greet.js', 'pass-filled', undefined, 'completed: Read greet.js'],
      ['Add a farewell', 'sync~spin', 'Adding a farewell', 'in progress: Add a farewell, Adding a farewell'],
      ['Run the tests', 'circle-large-outline', undefined, 'pending: Run the tests'],
    ],
  );
  assert.equal(nodes[0].id, `${WS}#1`);
  assert.equal(nodes[1].contextValue, 'stepwise.planItem.in_progress');
  assert.match(nodes[1].tooltip, /#2 · in progress/);
});

test('failed items (tasks planning style) get the error icon', () => {
  const n = itemNode(WS, { id: 4, text: 'Deploy', status: 'failed' });
  assert.deepEqual(n.icon, { id: 'error', color: 'testing.iconFailed' });
  assert.equal(n.description, 'failed');
  assert.equal(n.accessibility, 'failed: Deploy');
  assert.deepEqual(statusIcon('completed'), { id: 'pass-filled', color: 'testing.iconPassed' });
});

test('in-progress item without activeForm says "in progress"', () => {
  assert.equal(itemNode(WS, { id: 1, text: 'x', status: 'in_progress' }).description, 'in progress');
});

test('unknown statuses are normalized', () => {
  assert.equal(normalizeStatus('IN_PROGRESS'), 'in_progress');
  assert.equal(normalizeStatus('in progress'), 'in_progress');
  assert.equal(normalizeStatus('done'), 'completed');
  assert.equal(normalizeStatus('weird'), 'pending');
  assert.equal(normalizeStatus(undefined), 'pending');
});

test('title shows done/total, or just Plan', () => {
  assert.equal(planTitle([plan]), 'Plan 1/3');
  assert.equal(planTitle([]), 'Plan');
  assert.equal(planTitle([{ workspace: WS, items: [], completed: 0, total: 0 }]), 'Plan');
  assert.equal(planTitle([plan, { workspace: WS2, items: [{ id: 1, text: 'a', status: 'completed' }] }]), 'Plan 2/4');
});

test('counts fall back to the items when the server omits them', () => {
  assert.deepEqual(planCounts({ workspace: WS, items: plan.items }), { completed: 1, total: 3 });
  assert.deepEqual(planCounts(undefined), { completed: 0, total: 0 });
});

test('several folders: one node per folder with a plan, done/total as description', () => {
  const store = new Folders();
  store.updatePlan(plan);
  store.updatePlan({ workspace: WS2, items: [], completed: 0, total: 0 });
  const folders = [
    { uri: WS, name: 'demo' },
    { uri: WS2, name: 'other' },
  ];
  const roots = store.roots(folders);
  assert.equal(roots.length, 1);
  assert.equal(roots[0].kind, 'folder');
  assert.equal(roots[0].label, 'demo');
  assert.equal(roots[0].description, '1/3');
  assert.equal(roots[0].children?.length, 3);
  assert.equal(store.title(folders), 'Plan 1/3');
  store.updatePlan({ workspace: WS2, items: [{ id: 'a', text: 'b', status: 'pending' }], completed: 0, total: 1 });
  assert.equal(store.roots(folders).length, 2);
  assert.equal(store.title(folders), 'Plan 1/4');
});

test('an empty plan gives an empty tree (the welcome view shows)', () => {
  const store = new Folders();
  store.updatePlan({ workspace: WS, items: [], completed: 0, total: 0 });
  assert.deepEqual(store.roots([{ uri: WS, name: 'demo' }]), []);
  assert.equal(store.updatePlan({} as PlanParams), false);
});

test('summary mirrors the code lens wording', () => {
  assert.equal(planSummary(plan), '1/3 · Adding a farewell');
  assert.equal(planSummary({ workspace: WS, items: [{ id: 1, text: 'a', status: 'completed' }] }), '1/1 · done');
  assert.equal(planSummary({ workspace: WS, items: [{ id: 1, text: 'a', status: 'pending' }] }), '0/1 · 1 pending');
  assert.equal(planSummary(undefined), 'no plan');
});
